// SPDX-License-Identifier: MIT
/* Records of the recording turned into Prometheus series, per process and communicator. */
#include "agent/agent_metrics.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/metrics.h"
#include "agent/pod_identity.h"
#include "base/log.h"
#include "base/identity_text.h"
#include "base/u64_map.h"
#include "diagnose/pause_tracker.h"
#include "diagnose/progress_model.h"
#include "model/c10d_api.h"
#include "model/nccl_api.h"

enum process_label { LABEL_PID, LABEL_RANK, LABEL_POD, LABEL_NAMESPACE, LABEL_CONTAINER };
#define PROCESS_LABELS 5

struct process_labels {
	char pid[16];
	char rank[16];
	/* Size of the communicator that gave rank: 0 none, INT32_MAX RANK (environment). */
	int32_t rank_width;
	struct pod_identity pod;
	uint64_t ended_ns;	/* 0 while it runs */
	int32_t step;		/* the highest training step its records carried, -1 none */
	struct u64_map comms;	/* communicators with series of their own (value: the labels) */
	bool comms_full_said;	/* the log named the communicators left without series */
	bool rank_unknown_said; /* the log said why its calls are labelled rank="unknown" */
};

struct agent_metrics {
	struct metrics_registry *registry;
	const char *containers_dir;
	double retention_seconds;
	int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	struct u64_map processes;   /* pid -> process_labels */
	unsigned attached;
	struct metrics_family *calls, *bytes, *sequence, *progress, *attached_gauge, *drops,
		*process_drops, *python_lost, *in_flight, *bytes_in_flight, *findings, *crashes,
		*violations, *steps, *expected_step, *attach_failures, *in_flight_sequence,
		*in_flight_entry, *probe_hits, *training_step, *pauses, *pause_seconds;
};

static int64_t clock_ns(clockid_t clock)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/* The label names of series per function, per communicator and per process. */
static const char *const function_label_names[] = { "pid",	 "rank",      "pod",
						    "namespace", "container", "function" };
static const char *const comm_label_names[] = { "pid",	     "rank",	  "pod",
						"namespace", "container", "comm" };
static const char *const process_label_names[] = { "pid", "rank", "pod", "namespace", "container" };

/* NCCL calls by function, and each communicator's last call. */
static void declare_call_series(struct agent_metrics *metrics)
{
	struct metrics_registry *registry = metrics->registry;

	metrics->calls =
		metrics_declare(registry, "tcheck_nccl_calls_total", "NCCL API calls by function.",
				METRICS_COUNTER, function_label_names, 6);
	metrics->bytes = metrics_declare(registry, "tcheck_nccl_bytes_total",
					 "Bytes named by NCCL communication calls (count times the "
					 "datatype's size), by function.",
					 METRICS_COUNTER, function_label_names, 6);
	metrics->sequence = metrics_declare(
		registry, "tcheck_collective_sequence",
		"Sequence number of the last communication call this rank issued on a "
		"communicator (comm: the identity all its ranks share).",
		METRICS_GAUGE, comm_label_names, 6);
	metrics->progress = metrics_declare(
		registry, "tcheck_collective_last_progress_timestamp_seconds",
		"When this rank last issued a communication call on a communicator (Unix time).",
		METRICS_GAUGE, comm_label_names, 6);
}

/* The processes followed, and the events lost on the way to the agent. */
static void declare_coverage_series(struct agent_metrics *metrics)
{
	struct metrics_registry *registry = metrics->registry;

	metrics->attached_gauge = metrics_declare(registry, "tcheck_attached_processes",
						  "Training processes the agent follows now.",
						  METRICS_GAUGE, NULL, 0);
	metrics->drops = metrics_declare(registry, "tcheck_ringbuf_drops_total",
					 "Events lost because the kernel-to-agent ring buffer "
					 "was full.",
					 METRICS_COUNTER, NULL, 0);
	metrics->process_drops =
		metrics_declare(registry, "tcheck_process_notices_lost_total",
				"Process start and exit notices lost.", METRICS_COUNTER, NULL, 0);
	metrics->python_lost = metrics_declare(
		registry, "tcheck_python_events_lost_total",
		"Python calls, torch scopes and torch operators the agent knows it missed.",
		METRICS_COUNTER, NULL, 0);
}

/* RDMA work requests in flight, per process. */
static void declare_network_series(struct agent_metrics *metrics)
{
	struct metrics_registry *registry = metrics->registry;

	metrics->in_flight =
		metrics_declare(registry, "tcheck_work_requests_in_flight",
				"RDMA work requests posted and signalled but not completed yet.",
				METRICS_GAUGE, process_label_names, PROCESS_LABELS);
	metrics->bytes_in_flight =
		metrics_declare(registry, "tcheck_work_request_bytes_in_flight",
				"Bytes of RDMA work requests posted but not completed yet.",
				METRICS_GAUGE, process_label_names, PROCESS_LABELS);
}

/* What the detectors and the rules found, and the step times they measure. */
static void declare_finding_series(struct agent_metrics *metrics)
{
	static const char *const finding_labels[] = { "kind" };
	static const char *const violation_labels[] = { "pid",	     "rank",	  "pod",
							"namespace", "container", "rule",
							"relation",  "function" };
	/* From a fast data-parallel step to a slow pipeline-parallel one, and a stall. */
	static const double step_buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
					       0.1,   0.25,   0.5,   1,	   2.5,	  5,
					       10,    25,     60,    120,  300 };
	struct metrics_registry *registry = metrics->registry;

	metrics->findings =
		metrics_declare(registry, "tcheck_findings_total",
				"Hangs, slowdowns and mismatched collectives the detectors "
				"reported, by kind; crashes are tcheck_crashes_total.",
				METRICS_COUNTER, finding_labels, 1);
	metrics->crashes = metrics_declare(
		registry, "tcheck_crashes_total",
		"Traced processes that died of a signal or exited with a non-zero status.",
		METRICS_COUNTER, NULL, 0);
	metrics->violations = metrics_declare(
		registry, "tcheck_violations_total",
		"Calls that violated a rule of the rules file (rule: its position in the file's "
		"rules list; relation and function: the rule's).",
		METRICS_COUNTER, violation_labels, 8);
	metrics->steps = metrics_declare_histogram(
		registry, "tcheck_step_duration_seconds",
		"Step time of a rank on a communicator: between its arrivals at the collectives "
		"that end two consecutive steps (the step is the period of the communicator's "
		"collectives).",
		comm_label_names, 6, step_buckets, sizeof(step_buckets) / sizeof(step_buckets[0]));
	metrics->expected_step =
		metrics_declare(registry, "tcheck_step_expected_duration_seconds",
				"The step time learned on a communicator (the slowdown "
				"detector's reference); absent while it is learned.",
				METRICS_GAUGE, comm_label_names, 6);
}

/* Probes the kernel refused: last, so the series keep the order scrapers have seen. */
static void declare_attach_failure_series(struct agent_metrics *metrics)
{
	static const char *const library_labels[] = { "library" };

	metrics->attach_failures = metrics_declare(
		metrics->registry, "tcheck_probe_attach_failures_total",
		"Probe attachments the kernel refused, by library (file name up to .so): calls "
		"in it are not seen.",
		METRICS_COUNTER, library_labels, 1);
}

/*
 * The collective each rank is inside now (entered, not returned): a rank
 * blocked in sequence n while another never entered it is what the alert
 * rules compare. Declared last, like the series before it, for the order.
 */
static void declare_in_flight_series(struct agent_metrics *metrics)
{
	struct metrics_registry *registry = metrics->registry;

	metrics->in_flight_sequence = metrics_declare(
		registry, "tcheck_collective_in_flight_sequence",
		"Sequence number of the communication call this rank is inside now on a "
		"communicator (entered, not returned); absent while it is inside none.",
		METRICS_GAUGE, comm_label_names, 6);
	metrics->in_flight_entry = metrics_declare(
		registry, "tcheck_collective_in_flight_entry_timestamp_seconds",
		"When this rank entered the communication call it is inside now on a "
		"communicator (Unix time); absent while it is inside none.",
		METRICS_GAUGE, comm_label_names, 6);
}

/*
 * What the probes sent, by kind, and the step each process reached: their
 * ratio is the probe hits a step. Declared after the series above, for the order.
 */
static void declare_probe_hit_series(struct agent_metrics *metrics)
{
	static const char *const hit_label_names[] = { "pid",	    "rank",	 "pod",
						       "namespace", "container", "kind" };

	metrics->probe_hits = metrics_declare(
		metrics->registry, "tcheck_probe_hits_total",
		"Records the probes sent, by kind (nccl_call, python_call, torch_scope, torch_op).",
		METRICS_COUNTER, hit_label_names, 6);
	metrics->training_step =
		metrics_declare(metrics->registry, "tcheck_training_step",
				"The highest training step (the step marker's count) the process's "
				"records carried.",
				METRICS_GAUGE, process_label_names, PROCESS_LABELS);
}

/*
 * Pauses: ranks that lag their peers at work of their own (a checkpoint,
 * data loading), by what they are doing (pause_cause_name: five values).
 * Declared last, for the order.
 */
static void declare_pause_series(struct agent_metrics *metrics)
{
	static const char *const pause_labels[] = { "pid",	 "rank",      "pod",
						    "namespace", "container", "doing" };
	struct metrics_registry *registry = metrics->registry;

	metrics->pauses = metrics_declare(
		registry, "tcheck_pauses_total",
		"Pauses reported: a rank lagged its peers while doing something of its own "
		"(doing: file_io, io_wait, computing, or recurring where it paused before) "
		"and came back; no hang, no slowdown.",
		METRICS_COUNTER, pause_labels, 6);
	metrics->pause_seconds = metrics_declare(
		registry, "tcheck_pause_in_progress_seconds",
		"How long this rank has been in a pause its peers wait for (since its last "
		"communication call), held back from a hang because of what it is doing; "
		"absent while it is in none.",
		METRICS_GAUGE, pause_labels, 6);
}

static bool every_series_declared(const struct agent_metrics *metrics)
{
	return metrics->pauses && metrics->pause_seconds && metrics->probe_hits &&
	       metrics->training_step && metrics->in_flight_sequence && metrics->in_flight_entry &&
	       metrics->violations && metrics->steps && metrics->expected_step &&
	       metrics->attach_failures && metrics->in_flight && metrics->bytes_in_flight &&
	       metrics->findings && metrics->crashes && metrics->calls && metrics->bytes &&
	       metrics->sequence && metrics->progress && metrics->attached_gauge &&
	       metrics->drops && metrics->process_drops && metrics->python_lost;
}

struct agent_metrics *agent_metrics_new(struct metrics_registry *registry,
					const char *containers_dir, double retention_seconds)
{
	struct agent_metrics *metrics = calloc(1, sizeof(*metrics));

	if (!metrics)
		return NULL;
	metrics->registry = registry;
	metrics->containers_dir = containers_dir;
	metrics->retention_seconds = retention_seconds;
	metrics->realtime_offset_ns = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	u64_map_init(&metrics->processes);
	/* The exposition lists the series in the order they are declared. */
	declare_call_series(metrics);
	declare_coverage_series(metrics);
	declare_network_series(metrics);
	declare_finding_series(metrics);
	declare_attach_failure_series(metrics);
	declare_in_flight_series(metrics);
	declare_probe_hit_series(metrics);
	declare_pause_series(metrics);
	if (!every_series_declared(metrics)) {
		agent_metrics_free(metrics);
		return NULL;
	}
	metrics_set(metrics->attached_gauge, NULL, 0);
	return metrics;
}

static void free_labels(struct process_labels *labels)
{
	u64_map_free(&labels->comms);
	free(labels);
}

void agent_metrics_free(struct agent_metrics *metrics)
{
	uint64_t key;
	void *value;

	if (!metrics)
		return;
	for (size_t i = 0; u64_map_next(&metrics->processes, &i, &key, &value);)
		free_labels(value);
	u64_map_free(&metrics->processes);
	free(metrics);
}

static struct process_labels *labels_of(struct agent_metrics *metrics, uint32_t pid)
{
	struct process_labels *labels = u64_map_get(&metrics->processes, pid);

	if (labels)
		return labels;
	labels = calloc(1, sizeof(*labels));
	if (!labels || u64_map_put(&metrics->processes, pid, labels)) {
		free(labels);
		return NULL;
	}
	snprintf(labels->pid, sizeof(labels->pid), "%u", pid);
	snprintf(labels->rank, sizeof(labels->rank), "unknown");
	labels->step = -1;
	u64_map_init(&labels->comms);
	pod_identity_of_process((pid_t)pid, metrics->containers_dir, &labels->pod);
	return labels;
}

/*
 * Whether communicator comm_id of a process has series of its own (sequence,
 * last progress, in flight, step times: 25 a communicator): the first
 * AGENT_METRICS_MAX_COMMS it used do, so that a program creating
 * communicators without end cannot grow the exposition without end.
 */
static bool comm_has_series(struct process_labels *labels, uint64_t comm_id)
{
	if (u64_map_get(&labels->comms, comm_id))
		return true;
	if (labels->comms.count >= AGENT_METRICS_MAX_COMMS) {
		if (!labels->comms_full_said)
			log_warning(
				"process %s used more than %d communicators: the others have no "
				"series of their own (the detectors still judge them)",
				labels->pid, AGENT_METRICS_MAX_COMMS);
		labels->comms_full_said = true;
		return false;
	}
	return u64_map_put(&labels->comms, comm_id, labels) == 0;
}

static void fill_values(const struct process_labels *labels, const char *values[])
{
	values[LABEL_PID] = labels->pid;
	values[LABEL_RANK] = labels->rank;
	values[LABEL_POD] = labels->pod.pod;
	values[LABEL_NAMESPACE] = labels->pod.namespace;
	values[LABEL_CONTAINER] = labels->pod.container;
}

/*
 * A process with no RANK in its environment (a torch.multiprocessing.spawn
 * worker) takes its rank on its widest communicator, as job_snapshot does;
 * those read on arrival come before its calls, so its series carry it.
 */
static void learn_rank(struct process_labels *labels, int32_t rank, int32_t nranks)
{
	if (rank < 0 || nranks <= labels->rank_width)
		return;
	snprintf(labels->rank, sizeof(labels->rank), "%d", rank);
	labels->rank_width = nranks;
}

static void observe_process(struct agent_metrics *metrics, const struct trace_process *process)
{
	bool known = u64_map_get(&metrics->processes, process->pid) != NULL;
	struct process_labels *labels = labels_of(metrics, process->pid);

	if (!labels)
		return;
	if (process->rank >= 0) {
		snprintf(labels->rank, sizeof(labels->rank), "%d", process->rank);
		labels->rank_width = INT32_MAX;
	}
	if (!known && !process->end_ns)
		metrics->attached++;
	if (process->end_ns && !labels->ended_ns) {
		labels->ended_ns = process->end_ns;
		/* An ended rank waits for nothing: only running ranks localise a stall. */
		metrics_family_remove_series(metrics->sequence, "pid", labels->pid);
		metrics_family_remove_series(metrics->progress, "pid", labels->pid);
		metrics_family_remove_series(metrics->in_flight_sequence, "pid", labels->pid);
		metrics_family_remove_series(metrics->in_flight_entry, "pid", labels->pid);
		/* ... and is in no pause. */
		metrics_family_remove_series(metrics->pause_seconds, "pid", labels->pid);
		if (known && metrics->attached)
			metrics->attached--;
	}
	metrics_set(metrics->attached_gauge, NULL, metrics->attached);
}

/*
 * Bytes a communication call names: its count times its datatype's size (a
 * c10d call: its first tensor's elements times its torch dtype's size).
 */
static double call_bytes(const struct trace_nccl_call *call, const struct nccl_function *function)
{
	int count = nccl_param_find(function, NCCL_PARAM_SIZE);
	int datatype = nccl_param_find(function, NCCL_PARAM_DATATYPE);
	int torch_dtype = nccl_param_find(function, NCCL_PARAM_TORCH_DTYPE);
	int type = datatype >= 0 ? datatype : torch_dtype;
	size_t element_size;

	if (count < 0 || type < 0 || (uint32_t)count >= call->param_count ||
	    (uint32_t)type >= call->param_count)
		return 0;
	element_size = datatype >= 0 ? nccl_datatype_size((int64_t)call->params[type])
				     : torch_scalar_type_size((int64_t)call->params[type]);
	return (double)call->params[count] * (double)element_size;
}

static void observe_call(struct agent_metrics *metrics, const struct trace_nccl_call *call)
{
	const struct nccl_function *function = call->api;
	struct process_labels *labels = labels_of(metrics, call->pid);
	const char *values[PROCESS_LABELS + 1];
	char comm[IDENTITY_TEXT_SIZE];

	if (!labels || call->depth > 0)
		return; /* NCCL's calls to itself are not the application's */
	learn_rank(labels, call->rank, call->nranks);
	/* Said at a collective or send: by then a communicator has been made or read. */
	if (!labels->rank_width && !labels->rank_unknown_said && function &&
	    nccl_function_is_communication(function)) {
		labels->rank_unknown_said = true;
		log_warning("process %s: rank unknown: RANK is not in its environment (a "
			    "torch.multiprocessing.spawn worker, or a script that sets it later) "
			    "and none of its communicators read so far gave its rank",
			    labels->pid);
	}
	fill_values(labels, values);
	values[PROCESS_LABELS] = call->function;
	metrics_add(metrics->calls, values, 1);
	if (function && nccl_function_is_communication(function) && call->result == 0)
		metrics_add(metrics->bytes, values, call_bytes(call, function));
	if (call->seq < 0 || !call->comm_id || !comm_has_series(labels, call->comm_id))
		return;
	values[PROCESS_LABELS] = identity_text(call->comm_id, comm);
	metrics_set(metrics->sequence, values, (double)call->seq);
	metrics_set(metrics->progress, values,
		    (double)((int64_t)call->entry_ns + metrics->realtime_offset_ns) / 1e9);
}

static void observe_network(struct agent_metrics *metrics,
			    const struct trace_network_sample *sample)
{
	struct process_labels *labels = labels_of(metrics, sample->pid);
	const char *values[PROCESS_LABELS];
	uint64_t requests = sample->requests_signalled > sample->completions
				    ? sample->requests_signalled - sample->completions
				    : 0;
	uint64_t bytes = sample->bytes_posted > sample->bytes_completed
				 ? sample->bytes_posted - sample->bytes_completed
				 : 0;

	if (!labels || labels->ended_ns)
		return;
	fill_values(labels, values);
	metrics_set(metrics->in_flight, values, (double)requests);
	metrics_set(metrics->bytes_in_flight, values, (double)bytes);
}

void agent_metrics_findings(struct agent_metrics *metrics, unsigned hangs, unsigned slowdowns,
			    unsigned mismatches, unsigned crashes)
{
	const char *hang[] = { "hang" }, *slowdown[] = { "slowdown" }, *mismatch[] = { "mismatch" };

	metrics_set(metrics->findings, hang, hangs);
	metrics_set(metrics->findings, slowdown, slowdowns);
	metrics_set(metrics->findings, mismatch, mismatches);
	metrics_set(metrics->crashes, NULL, crashes);
}

void agent_metrics_violation(struct agent_metrics *metrics, uint32_t pid, const char *rule,
			     const char *relation, const char *function)
{
	struct process_labels *labels = labels_of(metrics, pid);
	const char *values[PROCESS_LABELS + 3];

	if (!labels)
		return;
	fill_values(labels, values);
	values[PROCESS_LABELS] = rule;
	values[PROCESS_LABELS + 1] = relation;
	values[PROCESS_LABELS + 2] = function;
	metrics_add(metrics->violations, values, 1);
}

void agent_metrics_step(struct agent_metrics *metrics, uint32_t pid, uint64_t comm_id,
			double seconds, double expected_seconds)
{
	struct process_labels *labels = labels_of(metrics, pid);
	const char *values[PROCESS_LABELS + 1];
	char comm[IDENTITY_TEXT_SIZE];

	if (!labels || labels->ended_ns || !comm_has_series(labels, comm_id))
		return;
	fill_values(labels, values);
	values[PROCESS_LABELS] = identity_text(comm_id, comm);
	metrics_observe(metrics->steps, values, seconds);
	if (expected_seconds > 0)
		metrics_set(metrics->expected_step, values, expected_seconds);
}

/* One rank of a communicator: its in-flight series set while it is inside a call, else removed. */
static void rank_in_flight(struct agent_metrics *metrics, const struct progress_comm *comm,
			   const struct progress_rank *rank)
{
	struct process_labels *labels = labels_of(metrics, rank->pid);
	const char *values[PROCESS_LABELS + 1];
	char comm_label[IDENTITY_TEXT_SIZE];

	if (!labels || labels->ended_ns)
		return;
	fill_values(labels, values);
	values[PROCESS_LABELS] = identity_text(comm->comm_id, comm_label);
	if (!rank->last.open || rank->finished || rank->last.seq < 0) {
		metrics_unset(metrics->in_flight_sequence, values);
		metrics_unset(metrics->in_flight_entry, values);
		return;
	}
	if (!comm_has_series(labels, comm->comm_id))
		return;
	metrics_set(metrics->in_flight_sequence, values, (double)rank->last.seq);
	metrics_set(metrics->in_flight_entry, values,
		    (double)((int64_t)rank->last.entry_ns + metrics->realtime_offset_ns) / 1e9);
}

void agent_metrics_in_flight(struct agent_metrics *metrics, const struct progress_model *model)
{
	for (unsigned c = 0; c < model->comm_count; c++) {
		const struct progress_comm *comm = &model->comms[c];

		if (!comm->comm_id)
			continue;
		for (int r = 0; r < PROGRESS_MAX_RANKS; r++)
			if (comm->ranks[r].present)
				rank_in_flight(metrics, comm, &comm->ranks[r]);
	}
}

void agent_metrics_pause(struct agent_metrics *metrics, const struct pause_finding *pause)
{
	struct process_labels *labels = labels_of(metrics, pause->pid);
	const char *values[PROCESS_LABELS + 1];

	if (!labels)
		return;
	fill_values(labels, values);
	values[PROCESS_LABELS] = pause_cause_name(pause->cause);
	metrics_add(metrics->pauses, values, 1);
}

/*
 * What a held stretch is doing so far: idle, it was held for the rank's
 * pattern of pauses (recurring).
 */
static enum pause_cause held_cause(const struct pause_stretch *stretch, uint64_t now_ns)
{
	enum pause_cause cause = pause_stretch_cause(stretch, now_ns);

	return cause == PAUSE_IDLE ? PAUSE_RECURRING : cause;
}

/* One process's pause gauge: at most one series, the one of what it is doing now. */
static void process_pause(struct agent_metrics *metrics, const struct pause_process *process,
			  uint64_t now_ns)
{
	struct process_labels *labels = labels_of(metrics, process->pid);
	const char *values[PROCESS_LABELS + 1];
	const struct pause_stretch *stretch = &process->current;
	bool paused = stretch->held && now_ns > stretch->start_ns;
	enum pause_cause doing = paused ? held_cause(stretch, now_ns) : PAUSE_IDLE;

	if (!labels || labels->ended_ns)
		return;
	fill_values(labels, values);
	for (enum pause_cause cause = PAUSE_IDLE; cause <= PAUSE_RECURRING; cause++) {
		values[PROCESS_LABELS] = pause_cause_name(cause);
		if (paused && cause == doing)
			metrics_set(metrics->pause_seconds, values,
				    (double)(now_ns - stretch->start_ns) / 1e9);
		else
			metrics_unset(metrics->pause_seconds, values);
	}
}

void agent_metrics_pauses(struct agent_metrics *metrics, const struct pause_tracker *pauses,
			  uint64_t now_ns)
{
	for (unsigned i = 0; i < pauses->count && i < PAUSE_MAX_PROCESSES; i++)
		process_pause(metrics, &pauses->processes[i], now_ns);
}

void agent_metrics_library_name(const char *path, char *name, size_t size)
{
	const char *base = strrchr(path, '/'), *so;
	size_t length;

	base = base ? base + 1 : path;
	so = strstr(base, ".so");
	length = so ? (size_t)(so - base) + 3 : strlen(base);
	if (!length || !size) {
		snprintf(name, size, "unknown");
		return;
	}
	snprintf(name, size, "%.*s", (int)length, base);
}

void agent_metrics_attach_failure(struct agent_metrics *metrics, const char *path)
{
	char name[128];
	const char *values[1] = { name };

	agent_metrics_library_name(path, name, sizeof(name));
	metrics_add(metrics->attach_failures, values, 1);
}

/* One record the probes sent by process 'pid' at training step 'step' (-1 unknown). */
static void observe_probe_hit(struct agent_metrics *metrics, uint32_t pid, int32_t step,
			      const char *kind)
{
	struct process_labels *labels = labels_of(metrics, pid);
	const char *values[PROCESS_LABELS + 1];

	if (!labels)
		return;
	fill_values(labels, values);
	values[PROCESS_LABELS] = kind;
	metrics_add(metrics->probe_hits, values, 1);
	if (step > labels->step) {
		labels->step = step;
		metrics_set(metrics->training_step, values, step);
	}
}

static const char *python_hit_kind(const struct trace_python_call *call)
{
	return call->flags & TRACE_PYTHON_TORCH_SCOPE ? "torch_scope"
	       : call->flags & TRACE_PYTHON_TORCH_OP  ? "torch_op"
						      : "python_call";
}

void agent_metrics_observe(struct agent_metrics *metrics, const struct trace_record *record)
{
	switch (record->kind) {
	case TRACE_RECORD_PYTHON_CALL:
		observe_probe_hit(metrics, record->python_call.pid, record->python_call.step,
				  python_hit_kind(&record->python_call));
		break;
	case TRACE_RECORD_PROCESS:
		observe_process(metrics, &record->process);
		break;
	case TRACE_RECORD_NCCL_CALL:
		observe_probe_hit(metrics, record->call.pid, record->call.step, "nccl_call");
		observe_call(metrics, &record->call);
		break;
	case TRACE_RECORD_COMMUNICATOR: {
		struct process_labels *labels = labels_of(metrics, record->communicator.pid);

		if (labels)
			learn_rank(labels, record->communicator.rank, record->communicator.nranks);
		break;
	}
	case TRACE_RECORD_ARRIVAL: {
		/*
		 * The rank read on arrival (RANK, a communicator's, or a c10d group's
		 * for a spawned gloo worker); any communicator read later, of any
		 * width, takes its place.
		 */
		struct process_labels *labels = labels_of(metrics, record->arrival.pid);

		if (labels)
			learn_rank(labels, record->arrival.rank,
				   record->arrival.nranks > 0 ? record->arrival.nranks : 1);
		break;
	}
	case TRACE_RECORD_NETWORK:
		observe_network(metrics, &record->network);
		break;
	case TRACE_RECORD_STATS:
		metrics_set(metrics->drops, NULL, (double)record->stats.ringbuf_drops);
		metrics_set(metrics->process_drops, NULL, (double)record->stats.process_drops);
		metrics_set(metrics->python_lost, NULL, (double)record->stats.python_events_lost);
		break;
	default:
		break;
	}
}

void agent_metrics_expire(struct agent_metrics *metrics, uint64_t now_ns)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&metrics->processes, &i, &key, &value);) {
		struct process_labels *labels = value;

		if (!labels->ended_ns ||
		    (double)(now_ns - labels->ended_ns) / 1e9 < metrics->retention_seconds)
			continue;
		metrics_remove_series(metrics->registry, "pid", labels->pid);
		free_labels(u64_map_remove(&metrics->processes, key));
		i = 0; /* the map changed under the walk: start again */
	}
}

unsigned agent_metrics_attached(const struct agent_metrics *metrics)
{
	return metrics->attached;
}
