// SPDX-License-Identifier: MIT
/* The agent's Prometheus series: their names, help texts, labels and order. */
#include "agent/agent_metric_families.h"

/* The label names of series per function, per communicator and per process. */
static const char *const function_label_names[] = { "pid",	 "rank",      "pod",
						    "namespace", "container", "function" };
static const char *const comm_label_names[] = { "pid",	     "rank",	  "pod",
						"namespace", "container", "comm" };
static const char *const process_label_names[] = { "pid", "rank", "pod", "namespace", "container" };

/* NCCL calls by function, and each communicator's last call. */
static void declare_call_series(struct agent_metric_families *families,
				struct metrics_registry *registry)
{
	families->calls =
		metrics_declare(registry, "tcheck_nccl_calls_total", "NCCL API calls by function.",
				METRICS_COUNTER, function_label_names, 6);
	families->bytes =
		metrics_declare(registry, "tcheck_nccl_bytes_total",
				"Bytes named by NCCL communication calls (count times the "
				"datatype's size), by function.",
				METRICS_COUNTER, function_label_names, 6);
	families->sequence = metrics_declare(
		registry, "tcheck_collective_sequence",
		"Sequence number of the last communication call this rank issued on a "
		"communicator (comm: the identity all its ranks share).",
		METRICS_GAUGE, comm_label_names, 6);
	families->progress = metrics_declare(
		registry, "tcheck_collective_last_progress_timestamp_seconds",
		"When this rank last issued a communication call on a communicator (Unix time).",
		METRICS_GAUGE, comm_label_names, 6);
}

/* The processes followed, and the events lost on the way to the agent. */
static void declare_coverage_series(struct agent_metric_families *families,
				    struct metrics_registry *registry)
{
	families->attached_gauge = metrics_declare(registry, "tcheck_attached_processes",
						   "Training processes the agent follows now.",
						   METRICS_GAUGE, NULL, 0);
	families->drops = metrics_declare(registry, "tcheck_ringbuf_drops_total",
					  "Events lost because the kernel-to-agent ring buffer "
					  "was full.",
					  METRICS_COUNTER, NULL, 0);
	families->process_drops =
		metrics_declare(registry, "tcheck_process_notices_lost_total",
				"Process start and exit notices lost.", METRICS_COUNTER, NULL, 0);
	families->python_lost = metrics_declare(
		registry, "tcheck_python_events_lost_total",
		"Python calls, torch scopes and torch operators the agent knows it missed.",
		METRICS_COUNTER, NULL, 0);
}

/* RDMA work requests in flight, per process. */
static void declare_network_series(struct agent_metric_families *families,
				   struct metrics_registry *registry)
{
	families->in_flight =
		metrics_declare(registry, "tcheck_work_requests_in_flight",
				"RDMA work requests posted and signalled but not completed yet.",
				METRICS_GAUGE, process_label_names, PROCESS_LABELS);
	families->bytes_in_flight =
		metrics_declare(registry, "tcheck_work_request_bytes_in_flight",
				"Bytes of RDMA work requests posted but not completed yet.",
				METRICS_GAUGE, process_label_names, PROCESS_LABELS);
}

/* What the detectors and the rules found, and the step times they measure. */
static void declare_finding_series(struct agent_metric_families *families,
				   struct metrics_registry *registry)
{
	static const char *const finding_labels[] = { "kind" };
	static const char *const violation_labels[] = { "pid",	     "rank",	  "pod",
							"namespace", "container", "rule",
							"relation",  "function" };
	/* From a fast data-parallel step to a slow pipeline-parallel one, and a stall. */
	static const double step_buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					       0.1,   0.25,   0.5,   1,	   2.5,	  5,
					       10,    25,     60,    120,  300 };
	families->findings =
		metrics_declare(registry, "tcheck_findings_total",
				"Hangs, slowdowns and mismatched collectives the detectors "
				"reported, by kind; crashes are tcheck_crashes_total.",
				METRICS_COUNTER, finding_labels, 1);
	families->crashes = metrics_declare(
		registry, "tcheck_crashes_total",
		"Traced processes that died of a signal or exited with a non-zero status.",
		METRICS_COUNTER, NULL, 0);
	families->violations = metrics_declare(
		registry, "tcheck_violations_total",
		"Calls that violated a rule of the rules file (rule: its position in the file's "
		"rules list; relation and function: the rule's).",
		METRICS_COUNTER, violation_labels, 8);
	families->steps = metrics_declare_histogram(
		registry, "tcheck_step_duration_seconds",
		"Step time of a rank on a communicator: between its arrivals at the collectives "
		"that end two consecutive steps (the step is the period of the communicator's "
		"collectives).",
		comm_label_names, 6, step_buckets, sizeof(step_buckets) / sizeof(step_buckets[0]));
	families->expected_step =
		metrics_declare(registry, "tcheck_step_expected_duration_seconds",
				"The step time learned on a communicator (the slowdown "
				"detector's reference); absent while it is learned.",
				METRICS_GAUGE, comm_label_names, 6);
}

/* Probes the kernel refused: last, so the series keep the order scrapers have seen. */
static void declare_attach_failure_series(struct agent_metric_families *families,
					  struct metrics_registry *registry)
{
	static const char *const library_labels[] = { "library" };

	families->attach_failures = metrics_declare(
		registry, "tcheck_probe_attach_failures_total",
		"Probe attachments the kernel refused, by library (file name up to .so): calls "
		"in it are not seen.",
		METRICS_COUNTER, library_labels, 1);
}

/*
 * The collective each rank is inside now (entered, not returned): a rank
 * blocked in sequence n while another never entered it is what the alert
 * rules compare. Declared last, like the series before it, for the order.
 */
static void declare_in_flight_series(struct agent_metric_families *families,
				     struct metrics_registry *registry)
{
	families->in_flight_sequence = metrics_declare(
		registry, "tcheck_collective_in_flight_sequence",
		"Sequence number of the communication call this rank is inside now on a "
		"communicator (entered, not returned); absent while it is inside none.",
		METRICS_GAUGE, comm_label_names, 6);
	families->in_flight_entry = metrics_declare(
		registry, "tcheck_collective_in_flight_entry_timestamp_seconds",
		"When this rank entered the communication call it is inside now on a "
		"communicator (Unix time); absent while it is inside none.",
		METRICS_GAUGE, comm_label_names, 6);
}

/*
 * What the probes sent, by kind, and the step each process reached: their
 * ratio is the probe hits a step. Declared after the series above, for the order.
 */
static void declare_probe_hit_series(struct agent_metric_families *families,
				     struct metrics_registry *registry)
{
	static const char *const hit_label_names[] = { "pid",	    "rank",	 "pod",
						       "namespace", "container", "kind" };

	families->probe_hits = metrics_declare(
		registry, "tcheck_probe_hits_total",
		"Records the probes sent, by kind (nccl_call, python_call, torch_scope, torch_op).",
		METRICS_COUNTER, hit_label_names, 6);
	families->training_step =
		metrics_declare(registry, "tcheck_training_step",
				"The highest training step (the step marker's count) the process's "
				"records carried.",
				METRICS_GAUGE, process_label_names, PROCESS_LABELS);
}

/*
 * Pauses: ranks that lag their peers at work of their own (a checkpoint,
 * data loading), by what they are doing (pause_cause_name: five values).
 * Declared last, for the order.
 */
static void declare_pause_series(struct agent_metric_families *families,
				 struct metrics_registry *registry)
{
	static const char *const pause_labels[] = { "pid",	 "rank",      "pod",
						    "namespace", "container", "doing" };
	families->pauses = metrics_declare(
		registry, "tcheck_pauses_total",
		"Pauses reported: a rank lagged its peers while doing something of its own "
		"(doing: file_io, io_wait, computing, or recurring where it paused before) "
		"and came back; no hang, no slowdown.",
		METRICS_COUNTER, pause_labels, 6);
	families->pause_seconds = metrics_declare(
		registry, "tcheck_pause_in_progress_seconds",
		"How long this rank has been in a pause its peers wait for (since its last "
		"communication call), held back from a hang because of what it is doing; "
		"absent while it is in none.",
		METRICS_GAUGE, pause_labels, 6);
}

static bool every_series_declared(const struct agent_metric_families *families)
{
	return families->pauses && families->pause_seconds && families->probe_hits &&
	       families->training_step && families->in_flight_sequence &&
	       families->in_flight_entry && families->violations && families->steps &&
	       families->expected_step && families->attach_failures && families->in_flight &&
	       families->bytes_in_flight && families->findings && families->crashes &&
	       families->calls && families->bytes && families->sequence && families->progress &&
	       families->attached_gauge && families->drops && families->process_drops &&
	       families->python_lost;
}

bool agent_metric_families_declare(struct agent_metric_families *families,
				   struct metrics_registry *registry)
{
	/* The exposition lists the series in the order they are declared. */
	declare_call_series(families, registry);
	declare_coverage_series(families, registry);
	declare_network_series(families, registry);
	declare_finding_series(families, registry);
	declare_attach_failure_series(families, registry);
	declare_in_flight_series(families, registry);
	declare_probe_hit_series(families, registry);
	declare_pause_series(families, registry);
	return every_series_declared(families);
}
