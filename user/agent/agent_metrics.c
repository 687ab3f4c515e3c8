// SPDX-License-Identifier: MIT
/* Records of the recording turned into Prometheus series, per process and communicator. */
#include "agent/agent_metrics.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/agent_metric_families.h"
#include "agent/metrics.h"
#include "agent/pod_identity.h"
#include "base/fnv_hash.h"
#include "base/log.h"
#include "base/identity_text.h"
#include "base/u64_map.h"
#include "diagnose/pause_tracker.h"
#include "diagnose/progress_model.h"
#include "model/c10d_api.h"
#include "model/nccl_api.h"

/* What a record a probe sent is, for tcheck_probe_hits_total's kind label. */
enum probe_hit_kind { HIT_NCCL_CALL, HIT_TORCH_SCOPE, HIT_TORCH_OP, HIT_PYTHON_CALL, HIT_KINDS };

static const char *const probe_hit_kind_names[HIT_KINDS] = { "nccl_call", "torch_scope", "torch_op",
							     "python_call" };

/*
 * The series each call of a process updates, remembered so that a call
 * finds them without hashing and comparing every label (about a fifth of
 * the agent's time went there): per function called and per communicator,
 * in tables indexed by a hash of the function's name or the communicator
 * (one that lands on a taken entry takes it over). Forgotten whenever the
 * process's labels change.
 */
#define REMEMBERED_FUNCTIONS 32
#define REMEMBERED_COMMS 16

struct function_series {
	char name[64]; /* "": unused */
	struct metrics_handle calls, bytes;
};

struct comm_series {
	uint64_t comm_id; /* 0: unused */
	struct metrics_handle sequence, progress;
};

struct remembered_series {
	struct metrics_handle hits[HIT_KINDS];
	struct function_series functions[REMEMBERED_FUNCTIONS];
	struct comm_series comms[REMEMBERED_COMMS];
};

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
	struct remembered_series remembered; /* series found with the labels as they are now */
};

struct agent_metrics {
	struct metrics_registry *registry;
	const char *containers_dir;
	double retention_seconds;
	int64_t realtime_offset_ns; /* CLOCK_REALTIME - CLOCK_MONOTONIC */
	struct u64_map processes;   /* pid -> process_labels */
	unsigned attached;
	struct agent_metric_families series;
};

static int64_t clock_ns(clockid_t clock)
{
	struct timespec now;

	clock_gettime(clock, &now);
	return (int64_t)now.tv_sec * 1000000000LL + now.tv_nsec;
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
	if (!agent_metric_families_declare(&metrics->series, registry)) {
		agent_metrics_free(metrics);
		return NULL;
	}
	metrics_set(metrics->series.attached_gauge, NULL, 0);
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
	int added;
	struct process_labels *labels =
		u64_map_get_or_add(&metrics->processes, pid, sizeof(*labels), &added);

	if (!labels || !added)
		return labels;
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

/* The process's rank label; its series found so far carry the old one, so they are forgotten. */
static void set_rank(struct process_labels *labels, int32_t rank)
{
	snprintf(labels->rank, sizeof(labels->rank), "%d", rank);
	memset(&labels->remembered, 0, sizeof(labels->remembered));
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
	set_rank(labels, rank);
	labels->rank_width = nranks;
}

static void observe_process(struct agent_metrics *metrics, const struct trace_process *process)
{
	bool known = u64_map_get(&metrics->processes, process->pid) != NULL;
	struct process_labels *labels = labels_of(metrics, process->pid);

	if (!labels)
		return;
	if (process->rank >= 0) {
		set_rank(labels, process->rank);
		labels->rank_width = INT32_MAX;
	}
	if (!known && !process->end_ns)
		metrics->attached++;
	if (process->end_ns && !labels->ended_ns) {
		labels->ended_ns = process->end_ns;
		/* An ended rank waits for nothing: only running ranks localise a stall. */
		metrics_family_remove_series(metrics->series.sequence, "pid", labels->pid);
		metrics_family_remove_series(metrics->series.progress, "pid", labels->pid);
		metrics_family_remove_series(metrics->series.in_flight_sequence, "pid",
					     labels->pid);
		metrics_family_remove_series(metrics->series.in_flight_entry, "pid", labels->pid);
		/* ... and is in no pause. */
		metrics_family_remove_series(metrics->series.pause_seconds, "pid", labels->pid);
		if (known && metrics->attached)
			metrics->attached--;
	}
	metrics_set(metrics->series.attached_gauge, NULL, metrics->attached);
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

/* The remembered series of a function the process called, taken on for it if new; NULL: none. */
static struct function_series *function_series_of(struct process_labels *labels,
						  const char *function)
{
	struct function_series *series;
	size_t length = function ? strlen(function) : 0;

	if (!length || length >= sizeof(series->name))
		return NULL;
	series =
		&labels->remembered.functions[fnv1a_bytes(function, length) % REMEMBERED_FUNCTIONS];
	if (strcmp(series->name, function) != 0) {
		memset(series, 0, sizeof(*series));
		memcpy(series->name, function, length + 1);
	}
	return series;
}

/* The remembered series of one of the process's communicators, taken on for it if new. */
static struct comm_series *comm_series_of(struct process_labels *labels, uint64_t comm_id)
{
	struct comm_series *series =
		&labels->remembered
			 .comms[fnv1a_add_u64(FNV1A_OFFSET_BASIS, comm_id) % REMEMBERED_COMMS];

	if (series->comm_id != comm_id) {
		memset(series, 0, sizeof(*series));
		series->comm_id = comm_id;
	}
	return series;
}

static void observe_call(struct agent_metrics *metrics, struct process_labels *labels,
			 const struct trace_nccl_call *call)
{
	const struct nccl_function *function = call->api;
	const char *values[PROCESS_LABELS + 1];
	struct function_series *by_function;
	struct comm_series *by_comm;
	char comm[IDENTITY_TEXT_SIZE];

	if (call->depth > 0)
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
	by_function = function_series_of(labels, call->function);
	metrics_add_remembered(metrics->series.calls, by_function ? &by_function->calls : NULL,
			       values, 1);
	if (function && nccl_function_is_communication(function) && call->result == 0)
		metrics_add_remembered(metrics->series.bytes,
				       by_function ? &by_function->bytes : NULL, values,
				       call_bytes(call, function));
	if (call->seq < 0 || !call->comm_id || !comm_has_series(labels, call->comm_id))
		return;
	values[PROCESS_LABELS] = identity_text(call->comm_id, comm);
	by_comm = comm_series_of(labels, call->comm_id);
	metrics_set_remembered(metrics->series.sequence, &by_comm->sequence, values,
			       (double)call->seq);
	metrics_set_remembered(metrics->series.progress, &by_comm->progress, values,
			       (double)((int64_t)call->entry_ns + metrics->realtime_offset_ns) /
				       1e9);
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
	metrics_set(metrics->series.in_flight, values, (double)requests);
	metrics_set(metrics->series.bytes_in_flight, values, (double)bytes);
}

void agent_metrics_findings(struct agent_metrics *metrics, unsigned hangs, unsigned slowdowns,
			    unsigned mismatches, unsigned crashes)
{
	const char *hang[] = { "hang" }, *slowdown[] = { "slowdown" }, *mismatch[] = { "mismatch" };

	metrics_set(metrics->series.findings, hang, hangs);
	metrics_set(metrics->series.findings, slowdown, slowdowns);
	metrics_set(metrics->series.findings, mismatch, mismatches);
	metrics_set(metrics->series.crashes, NULL, crashes);
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
	metrics_add(metrics->series.violations, values, 1);
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
	metrics_observe(metrics->series.steps, values, seconds);
	if (expected_seconds > 0)
		metrics_set(metrics->series.expected_step, values, expected_seconds);
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
		metrics_unset(metrics->series.in_flight_sequence, values);
		metrics_unset(metrics->series.in_flight_entry, values);
		return;
	}
	if (!comm_has_series(labels, comm->comm_id))
		return;
	metrics_set(metrics->series.in_flight_sequence, values, (double)rank->last.seq);
	metrics_set(metrics->series.in_flight_entry, values,
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
	metrics_add(metrics->series.pauses, values, 1);
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
			metrics_set(metrics->series.pause_seconds, values,
				    (double)(now_ns - stretch->start_ns) / 1e9);
		else
			metrics_unset(metrics->series.pause_seconds, values);
	}
}

void agent_metrics_pauses(struct agent_metrics *metrics, const struct pause_tracker *pauses,
			  uint64_t now_ns)
{
	for (unsigned i = 0; i < pauses->count && i < PAUSE_MAX_PROCESSES; i++)
		if (pauses->processes[i].pid) /* 0: a forgotten process's slot */
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
	metrics_add(metrics->series.attach_failures, values, 1);
}

/* One record the probes sent by a process at training step 'step' (-1 unknown). */
static void observe_probe_hit(struct agent_metrics *metrics, struct process_labels *labels,
			      int32_t step, enum probe_hit_kind kind)
{
	const char *values[PROCESS_LABELS + 1];

	fill_values(labels, values);
	values[PROCESS_LABELS] = probe_hit_kind_names[kind];
	metrics_add_remembered(metrics->series.probe_hits, &labels->remembered.hits[kind], values,
			       1);
	if (step > labels->step) {
		labels->step = step;
		metrics_set(metrics->series.training_step, values, step);
	}
}

static enum probe_hit_kind python_hit_kind(const struct trace_python_call *call)
{
	return call->flags & TRACE_PYTHON_TORCH_SCOPE ? HIT_TORCH_SCOPE
	       : call->flags & TRACE_PYTHON_TORCH_OP  ? HIT_TORCH_OP
						      : HIT_PYTHON_CALL;
}

void agent_metrics_observe(struct agent_metrics *metrics, const struct trace_record *record)
{
	struct process_labels *labels;

	switch (record->kind) {
	case TRACE_RECORD_PYTHON_CALL:
		labels = labels_of(metrics, record->python_call.pid);
		if (labels)
			observe_probe_hit(metrics, labels, record->python_call.step,
					  python_hit_kind(&record->python_call));
		break;
	case TRACE_RECORD_PROCESS:
		observe_process(metrics, &record->process);
		break;
	case TRACE_RECORD_NCCL_CALL:
		labels = labels_of(metrics, record->call.pid);
		if (!labels)
			break;
		observe_probe_hit(metrics, labels, record->call.step, HIT_NCCL_CALL);
		observe_call(metrics, labels, &record->call);
		break;
	case TRACE_RECORD_COMMUNICATOR:
		labels = labels_of(metrics, record->communicator.pid);
		if (labels)
			learn_rank(labels, record->communicator.rank, record->communicator.nranks);
		break;
	case TRACE_RECORD_ARRIVAL:
		/*
		 * The rank read on arrival (RANK, a communicator's, or a c10d group's
		 * for a spawned gloo worker); any communicator read later, of any
		 * width, takes its place.
		 */
		labels = labels_of(metrics, record->arrival.pid);
		if (labels)
			learn_rank(labels, record->arrival.rank,
				   record->arrival.nranks > 0 ? record->arrival.nranks : 1);
		break;
	case TRACE_RECORD_NETWORK:
		observe_network(metrics, &record->network);
		break;
	case TRACE_RECORD_STATS:
		metrics_set(metrics->series.drops, NULL, (double)record->stats.ringbuf_drops);
		metrics_set(metrics->series.process_drops, NULL,
			    (double)record->stats.process_drops);
		metrics_set(metrics->series.python_lost, NULL,
			    (double)record->stats.python_events_lost);
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
