// SPDX-License-Identifier: MIT
/* The record/attach loop: probes, processes, communicators, trace file. */
#include "record/recorder.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/command_text.h"
#include "base/fnv_hash.h"
#include "base/log.h"
#include "base/output_file.h"
#include "base/system_clock.h"
#include "base/u64_map.h"
#include "diagnose/job_diagnosis.h"
#include "model/nccl_api.h"
#include "network/work_requests.h"
#include "record/process_activity.h"
#include "probe/library_discovery.h"
#include "probe/nccl_comm_layout.h"
#include "probe/probe_session.h"
#include "probe/process_maps.h"
#include "python/python_call_context.h"
#include "python/python_losses.h"
#include "python/python_tracer.h"
#include "record/c10d_calls.h"
#include "record/call_builder.h"
#include "record/job_snapshot.h"
#include "record/live_status.h"
#include "record/open_calls.h"
#include "trace/trace_writer.h"

#define POLL_INTERVAL_MS 100
#define FLUSH_INTERVAL_NS 200000000ULL
#define STATUS_INTERVAL_NS 1000000000ULL
#define RESCAN_INTERVAL_NS 500000000ULL
#define DEFAULT_RING_BUFFER_BYTES (16u << 20)
/*
 * Python tracing sends a burst of records while ranks import torch (each code
 * object met for the first time): four torch 1.13 ranks importing at once on
 * 2 CPUs overflowed 16 MiB (about 75,000 records lost, Optimizer.step scopes
 * among them); 64 MiB lost none.
 */
#define DEFAULT_PYTHON_RING_BUFFER_BYTES (64u << 20)
/* Calls in flight read at one tick: a thread has at most TCHECK_MAX_NESTING. */
#define OPEN_CALLS_MAX 1024

struct traced_process {
	struct trace_process record;
	char *command;
	int alive;
};

struct recorder {
	const struct recorder_options *options;
	struct probe_session *session;
	struct library_discovery *discovery;
	struct call_builder *builder;
	struct c10d_calls *c10d;      /* PyTorch's own collectives, as calls */
	struct python_tracer *python; /* NULL unless --python */
	struct work_requests *work_requests;
	struct trace_writer *writer;
	struct live_status status;
	struct u64_map processes; /* pid -> traced_process */
	struct u64_map notes;	  /* FNV-1a of a communicator note -> the note, kept to the end */
	unsigned alive_count;
	uint64_t processes_seen; /* every process traced, alive or not */
	pid_t command_pid;
	int command_status;
	int command_exited;
	int command_released; /* the started command was let through to its exec */
	int failed;
	uint64_t calls;
	uint64_t c10d_calls;	/* PyTorch's own collectives (gloo) */
	uint64_t python_events; /* Python calls, torch scopes and operators written */
	uint64_t python_lost;	/* those the kernel or the tracer is known to have missed */
	/* Reading the calls in flight for the detectors only: they are not written. */
	int reading_calls_in_flight;
	uint64_t open_calls_written;	       /* calls left open at the end, kept in the trace */
	struct tcheck_call_record *open_calls; /* OPEN_CALLS_MAX, read from the map, then handed */
	size_t open_call_count;
};

static volatile sig_atomic_t stop_requested;

static void request_stop(int signal_number)
{
	(void)signal_number;
	stop_requested = 1;
}

static int write_record(struct recorder *recorder, const struct trace_record *record)
{
	const struct recorder_observer *observer = recorder->options->observer;

	if (observer && observer->record)
		observer->record(observer->context, record);
	if (recorder->options->diagnosis)
		job_diagnosis_record(recorder->options->diagnosis, record, 0);
	if (!recorder->writer || recorder->failed)
		return 0;
	if (trace_writer_add(recorder->writer, record)) {
		/* Keep the target running; stop recording and say why. */
		log_error("cannot write the trace %s: %s", recorder->options->output_path,
			  trace_writer_error(recorder->writer));
		recorder->failed = 1;
		stop_requested = 1;
	}
	return 0;
}

/* A call still in flight, for the detectors only: its record comes when it ends. */
static int emit_in_flight(void *context, const struct trace_record *record)
{
	struct recorder *recorder = context;

	if (recorder->options->diagnosis)
		job_diagnosis_record(recorder->options->diagnosis, record, 0);
	return 0;
}

static int emit_built_record(void *context, const struct trace_record *record)
{
	struct recorder *recorder = context;

	if (record->kind == TRACE_RECORD_PYTHON_CALL)
		recorder->python_events++;
	if (recorder->reading_calls_in_flight) {
		/* Still in flight: the detectors see who is inside what; the trace gets the return.
		 */
		if (recorder->options->diagnosis)
			job_diagnosis_record(recorder->options->diagnosis, record, 0);
		return 0;
	}
	if (record->kind == TRACE_RECORD_NCCL_CALL && (record->call.flags & TRACE_CALL_OPEN))
		recorder->open_calls_written++;
	if (record->kind == TRACE_RECORD_NCCL_CALL) {
		/* Calls outside the nccl.h table are PyTorch's own collectives (c10d). */
		if (record->call.api && nccl_function_index(record->call.api) < 0)
			recorder->c10d_calls++;
		else
			recorder->calls++;
		/* Only the live line counts calls per function. */
		if (recorder->options->live_status)
			live_status_count(&recorder->status, record->call.api);
	}
	return write_record(recorder, record);
}

static int emit_library(void *context, const struct trace_library *library)
{
	struct trace_record record = { .kind = TRACE_RECORD_LIBRARY };

	record.library = *library;
	return write_record(context, &record);
}

/*
 * A communicator's note, kept as long as the recorder: the call builder holds
 * it with the communicator. Equal notes are kept once.
 */
static const char *keep_note(struct recorder *recorder, const char *text)
{
	uint64_t hash = fnv1a_string(text);
	char *kept = u64_map_get(&recorder->notes, hash);

	if (kept && strcmp(kept, text) == 0)
		return kept;
	if (kept)
		return "the communicator's identity could not be read (its note is lost)";
	kept = strdup(text);
	if (!kept || u64_map_put(&recorder->notes, hash, kept)) {
		free(kept);
		return "the communicator's identity could not be read (out of memory)";
	}
	return kept;
}

/* Reads identity, rank and size of a communicator from the library's memory. */
static void resolve_communicator(void *context, uint32_t pid, uint64_t handle,
				 struct trace_communicator *communicator)
{
	struct recorder *recorder = context;
	struct nccl_comm_layout layout;
	struct nccl_comm_values values;
	const char *library;
	char error[400];

	library = library_discovery_nccl_path(recorder->discovery, (pid_t)pid);
	if (!library) {
		communicator->origin = TRACE_COMM_UNKNOWN;
		communicator->note =
			"no NCCL library with debug information was found in the process";
		return;
	}
	if (nccl_comm_layout_find(library, &layout, error, sizeof(error)) ||
	    nccl_comm_read((pid_t)pid, handle, &layout, &values, error, sizeof(error))) {
		communicator->origin = TRACE_COMM_UNKNOWN;
		communicator->note = keep_note(recorder, error);
		return;
	}
	communicator->origin = TRACE_COMM_RECOVERED;
	if (values.valid & NCCL_COMM_HAS_COMM_HASH) {
		communicator->comm_id = values.comm_hash;
		communicator->nccl_comm_hash = values.comm_hash;
	}
	communicator->rank = values.rank;
	communicator->nranks = values.nranks;
	/* Not values.op_count: it has moved on since the call; the probe read it at entry. */
	communicator->note = "";
}

static void write_process(struct recorder *recorder, const struct traced_process *process)
{
	struct trace_record record = { .kind = TRACE_RECORD_PROCESS };

	record.process = process->record;
	record.process.command = process->command ? process->command : "";
	write_record(recorder, &record);
}

/* Reads what /proc says of a process: command, rank, world size. */
static void refresh_process(struct recorder *recorder, struct traced_process *process)
{
	struct process_info info;
	char error[256];

	if (process_info_read((pid_t)process->record.pid, &info, error, sizeof(error))) {
		log_debug("%s", error);
		return;
	}
	free(process->command);
	/* The started command before its exec still shows tcheck-bpf's own command line. */
	if (!recorder->command_released && (pid_t)process->record.pid == recorder->command_pid) {
		char command[4096];

		process->command = strdup(command_text_join(command, sizeof(command), INT_MAX,
							    recorder->options->command));
	} else {
		process->command = strdup(info.command ? info.command : "");
	}
	process->record.rank = info.rank;
	process->record.local_rank = info.local_rank;
	process->record.world_size = info.world_size;
	process_info_free(&info);
}

/*
 * The arguments the exec record carries: read as the image started, they
 * name a process that ended before /proc could be read (a helper run by a
 * shell), where /proc gives its parent's command, "" or its name alone.
 * /proc's is kept when it is the same command given whole past the
 * record's limit.
 */
static void take_exec_command(struct traced_process *process,
			      const struct tcheck_process_record *notice)
{
	size_t length = notice->command_length;
	char *command;

	if (!length || length > sizeof(notice->command))
		return;
	while (length && notice->command[length - 1] == '\0')
		length--;
	command = malloc(length + 1);
	if (!command)
		return;
	/* NUL-separated arguments: strndup would stop at the first. */
	for (size_t i = 0; i < length; i++)
		command[i] = notice->command[i] ? notice->command[i] : ' ';
	command[length] = '\0';
	if (notice->command_cut && process->command &&
	    strncmp(process->command, command, length) == 0) {
		free(command);
		return;
	}
	free(process->command);
	process->command = command;
}

/* A process group's rank and size stand in for the RANK and WORLD_SIZE the environment lacked. */
static void take_process_group_rank(struct recorder *recorder,
				    const struct tcheck_process_group_record *record)
{
	struct traced_process *process = u64_map_get(&recorder->processes, record->header.pid);
	int32_t rank = -1, world_size = -1;

	if (!recorder->python ||
	    !python_tracer_handle_process_group(recorder->python, record, &rank, &world_size))
		return;
	if (!process || process->record.rank >= 0)
		return;
	process->record.rank = rank;
	process->record.world_size = world_size;
	write_process(recorder, process);
}

/* A process that runs a CPython the tracer cannot follow is said so, once. */
static void follow_python(struct recorder *recorder, uint32_t pid)
{
	char error[512];

	if (recorder->python &&
	    python_tracer_add_process(recorder->python, (pid_t)pid, error, sizeof(error)) < 0)
		log_warning("process %u: %s", pid, error);
}

/*
 * The closing line of a Python recording: what was recorded, from how many
 * of the Python processes seen, and a warning when --python found none, so a
 * trace is never quietly empty of Python.
 */
static void report_python_coverage(const struct recorder *recorder)
{
	struct python_tracer_losses losses;
	uint32_t seen;

	python_tracer_get_losses(recorder->python, &losses);
	seen = losses.followed_processes + losses.refused_processes;
	log_notice("%llu Python calls, torch scopes and operators recorded from %u of %u Python "
		   "process%s, %llu lost",
		   (unsigned long long)recorder->python_events,
		   losses.followed_processes - losses.unprobed_processes, seen,
		   seen == 1 ? "" : "es", (unsigned long long)recorder->python_lost);
	if (seen == 0)
		log_warning("Python tracing was asked for, but none of the %llu processes traced "
			    "ran a CPython interpreter this tool could find: the trace holds no "
			    "Python calls (tcheck-bpf -vv says what each process maps)",
			    (unsigned long long)recorder->processes_seen);
	/* The default marker missing is a program without an optimizer: no warning. */
	if (recorder->options->step_marker && recorder->python_events > 0 && losses.step_marks == 0)
		log_warning(
			"the step marker '%s' matched no call or torch scope: every event is at "
			"step 0, and step-based rules and step times have nothing to go on. "
			"CPython 3.11+ shows only the Python calls entered from C (a function "
			"called from Python code is not seen); a torch scope such as "
			"'Optimizer.step#' (the default) or 'Optimizer.zero_grad#' marks steps "
			"on every Python",
			python_tracer_step_marker(recorder->python));
}

static struct traced_process *add_process(struct recorder *recorder, uint32_t pid,
					  uint32_t parent_pid)
{
	struct traced_process *process = u64_map_get(&recorder->processes, pid);
	char error[512];

	if (process)
		return process;
	process = calloc(1, sizeof(*process));
	if (!process || u64_map_put(&recorder->processes, pid, process)) {
		free(process);
		return NULL;
	}
	process->record.pid = pid;
	process->record.parent_pid = parent_pid;
	process->record.rank = process->record.local_rank = process->record.world_size = -1;
	process->record.exit_code = -1;
	process->record.start_ns = monotonic_ns();
	process->alive = 1;
	recorder->alive_count++;
	recorder->processes_seen++;
	if (probe_session_trace_process(recorder->session, pid))
		log_warning("cannot add process %u to the traced set", pid);
	refresh_process(recorder, process);
	/* Before NCCL's probes: their first calls already name their Python caller. */
	follow_python(recorder, pid);
	if (library_discovery_scan_process(recorder->discovery, (pid_t)pid, error, sizeof(error)) <
	    0)
		log_debug("process %u: %s", pid, error);
	write_process(recorder, process);
	return process;
}

static void write_network_sample(void *context, const struct trace_network_sample *sample)
{
	struct trace_record record = { .kind = TRACE_RECORD_NETWORK };

	record.network = *sample;
	write_record(context, &record);
}

static void end_process(struct recorder *recorder, uint32_t pid, int exit_code)
{
	struct traced_process *process = u64_map_get(&recorder->processes, pid);

	if (!process || !process->alive)
		return;
	process->alive = 0;
	recorder->alive_count--;
	process->record.end_ns = monotonic_ns();
	process->record.exit_code = exit_code;
	/* Its c10d calls still waiting on their work end with it, open. */
	if (c10d_calls_end(recorder->c10d, pid, process->record.end_ns) == -ENOMEM)
		log_warning("process %u: out of memory for its c10d calls", pid);
	library_discovery_forget_process(recorder->discovery, (pid_t)pid);
	write_process(recorder, process);
	work_requests_forget_process(recorder->work_requests, pid, process->record.end_ns,
				     write_network_sample, recorder);
}

/*
 * A traced process the recorder never heard of: its fork and exec notices
 * were lost (ring buffer full). Its Python events introduce it, so the rest
 * of them are recorded.
 */
static void adopt_process(struct recorder *recorder, uint32_t pid)
{
	if (recorder->python && !u64_map_get(&recorder->processes, pid))
		add_process(recorder, pid, 0);
}

/* The Python side of a raw call, where its process's Python is followed; NULL otherwise. */
static const struct trace_python_context *python_context_of(struct recorder *recorder,
							    const struct tcheck_call_record *raw,
							    struct trace_python_context *context)
{
	if (!recorder->python || !python_call_context_read(recorder->python, raw, context))
		return NULL;
	return context;
}

/* --freeze-on-crash stopped this process: which one, and how to go on. */
static void say_frozen(const struct tcheck_python_exception_record *exception)
{
	uint32_t pid = exception->header.pid;

	log_warning("process %u is stopped before printing its uncaught %.*s "
		    "(--freeze-on-crash): inspect it (py-spy dump --pid %u, gdb -p %u), "
		    "then kill -CONT %u lets it finish, kill %u ends it",
		    pid, (int)sizeof(exception->type_name), exception->type_name, pid, pid, pid,
		    pid);
}

/* A c10d collective entered: a call of its process group, with the process's step and stage. */
static void take_c10d_call(struct recorder *recorder, const struct tcheck_c10d_call_record *record)
{
	uint32_t pid = record->header.pid;
	struct traced_process *process;
	struct trace_python_context python = { .step = -1 };
	bool known;

	adopt_process(recorder, pid);
	process = u64_map_get(&recorder->processes, pid);
	known = recorder->python &&
		!python_tracer_meta(recorder->python, pid, record->header.timestamp_ns,
				    &python.step, &python.stage);
	if (c10d_calls_add(recorder->c10d, record, process ? process->record.rank : -1,
			   process ? process->record.world_size : -1,
			   known ? &python : NULL) == -ENOMEM)
		log_warning("process %u: out of memory for its c10d calls", pid);
}

static int handle_probe_record(void *context, const void *data, size_t size)
{
	const struct tcheck_record_header *header = data;
	const struct tcheck_process_record *notice = data;
	struct recorder *recorder = context;
	struct trace_python_context python;
	struct traced_process *process;
	char error[512];

	if (size < sizeof(*header))
		return 0;
	switch (header->type) {
	case TCHECK_RECORD_CALL:
		if (size < sizeof(struct tcheck_call_record))
			return 0;
		if (call_builder_add(recorder->builder, data,
				     python_context_of(recorder, data, &python)))
			log_warning("a call record of process %u could not be decoded",
				    header->pid);
		return 0;
	case TCHECK_RECORD_PROCESS_FORK:
		if (recorder->options->follow_children)
			add_process(recorder, notice->child_pid, header->pid);
		return 0;
	case TCHECK_RECORD_PROCESS_EXEC:
		/* A new image: new libraries, new environment, no communicators. */
		call_builder_forget_process(recorder->builder, header->pid);
		if (c10d_calls_end(recorder->c10d, header->pid, header->timestamp_ns) == -ENOMEM)
			log_warning("process %u: out of memory for its c10d calls", header->pid);
		c10d_calls_forget_process(recorder->c10d, header->pid);
		if (recorder->python)
			python_tracer_forget_process(recorder->python, (pid_t)header->pid);
		process = add_process(recorder, header->pid, 0);
		if (process) {
			refresh_process(recorder, process);
			take_exec_command(process, notice);
			write_process(recorder, process);
		}
		/* The new image's libraries need a look too. */
		__attribute__((fallthrough));
	case TCHECK_RECORD_LIBRARY_CHANGE:
		if (library_discovery_scan_process(recorder->discovery, (pid_t)header->pid, error,
						   sizeof(error)) < 0)
			log_debug("process %u: %s", header->pid, error);
		/* libpython is mapped by the loader after exec: look again now. */
		follow_python(recorder, header->pid);
		return 0;
	case TCHECK_RECORD_PROCESS_EXIT:
		end_process(recorder, header->pid, notice->exit_code);
		return 0;
	case TCHECK_RECORD_PYTHON_CALL:
		adopt_process(recorder, header->pid);
		if (recorder->python && size >= sizeof(struct tcheck_python_record))
			python_tracer_handle(recorder->python, data);
		return 0;
	case TCHECK_RECORD_VERBS_CONTEXT:
		if (work_requests_handle_record(recorder->work_requests, data, size, error,
						sizeof(error)))
			log_warning("%s", error);
		return 0;
	case TCHECK_RECORD_PYTHON_EXCEPTION:
		adopt_process(recorder, header->pid);
		if (recorder->python && size >= sizeof(struct tcheck_python_exception_record))
			python_tracer_handle_exception(recorder->python, data);
		if (recorder->options->freeze_on_crash &&
		    size >= sizeof(struct tcheck_python_exception_record))
			say_frozen(data);
		return 0;
	case TCHECK_RECORD_TORCH_SCOPE:
		adopt_process(recorder, header->pid);
		if (recorder->python && size >= sizeof(struct tcheck_torch_scope_record))
			python_tracer_handle_scope(recorder->python, data);
		return 0;
	case TCHECK_RECORD_PROCESS_GROUP:
		if (size >= sizeof(struct tcheck_process_group_record)) {
			if (c10d_calls_group_built(recorder->c10d, data))
				log_warning("process %u: out of memory for its process groups",
					    header->pid);
			take_process_group_rank(recorder, data);
		}
		return 0;
	case TCHECK_RECORD_STORE_PREFIX:
		if (size >= sizeof(struct tcheck_store_prefix_record) &&
		    c10d_calls_store_prefix(recorder->c10d, data))
			log_warning("process %u: out of memory for its c10d stores", header->pid);
		return 0;
	case TCHECK_RECORD_C10D_CALL:
		if (size >= sizeof(struct tcheck_c10d_call_record))
			take_c10d_call(recorder, data);
		return 0;
	case TCHECK_RECORD_C10D_WORK:
		if (size >= sizeof(struct tcheck_c10d_work_record) &&
		    c10d_calls_work(recorder->c10d, data) == -ENOMEM)
			log_warning("process %u: out of memory for its c10d calls", header->pid);
		return 0;
	case TCHECK_RECORD_TORCH_OP:
		adopt_process(recorder, header->pid);
		if (recorder->python && size >= sizeof(struct tcheck_torch_op_record))
			python_tracer_handle_op(recorder->python, data);
		return 0;
	default:
		return 0;
	}
}

/* The Python events the kernel or the tracer is known to have missed; 0 without Python tracing. */
static int take_open_call(void *context, const struct tcheck_call_record *record)
{
	struct recorder *recorder = context;

	if (!u64_map_get(&recorder->processes, record->header.pid) ||
	    recorder->open_call_count == OPEN_CALLS_MAX)
		return 0;
	if (!recorder->open_calls &&
	    !(recorder->open_calls = malloc(OPEN_CALLS_MAX * sizeof(*recorder->open_calls))))
		return 1;
	recorder->open_calls[recorder->open_call_count++] = *record;
	return 0;
}

/*
 * The calls the traced threads are inside: to the detectors while the job
 * runs ('in_flight'), to the trace as open calls when recording ends. The
 * ring buffer is read after the map: a call returned before its thread
 * entered the one now open, so the calls before each open one are all in.
 */
static void read_open_calls(struct recorder *recorder, bool in_flight)
{
	struct trace_python_context python;

	recorder->open_call_count = 0;
	if (open_calls_read(probe_session_open_calls_fd(recorder->session), monotonic_ns(),
			    take_open_call, recorder) < 0 &&
	    !in_flight)
		log_warning("the calls still open could not be read: %s", strerror(errno));
	probe_session_drain(recorder->session);
	recorder->reading_calls_in_flight = in_flight;
	for (size_t i = 0; i < recorder->open_call_count; i++)
		(void)call_builder_add(
			recorder->builder, &recorder->open_calls[i],
			python_context_of(recorder, &recorder->open_calls[i], &python));
	recorder->reading_calls_in_flight = 0;
}

static uint64_t python_events_lost(const struct recorder *recorder, const uint64_t *counters)
{
	struct python_tracer_losses losses;

	if (!recorder->python)
		return 0;
	python_tracer_get_losses(recorder->python, &losses);
	return python_losses_events(&losses, counters[TCHECK_COUNTER_PYTHON_DROPS]);
}

/*
 * What every live traced process is doing, one activity sample each,
 * before the statistics record: the detectors judge a lagging rank on
 * them, live and in the trace alike.
 */
static void write_activity_samples(struct recorder *recorder, uint64_t now_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_ACTIVITY };
	size_t position = 0;
	uint64_t pid;
	void *value;

	while (u64_map_next(&recorder->processes, &position, &pid, &value)) {
		const struct traced_process *process = value;

		if (process->alive &&
		    process_activity_read((uint32_t)pid, now_ns, &record.activity) == 0)
			write_record(recorder, &record);
	}
}

static void write_stats(struct recorder *recorder, const uint64_t *counters)
{
	struct trace_record record = { .kind = TRACE_RECORD_STATS };

	record.stats.timestamp_ns = monotonic_ns();
	record.stats.calls = counters[TCHECK_COUNTER_CALLS];
	record.stats.ringbuf_drops = counters[TCHECK_COUNTER_RINGBUF_DROPS];
	record.stats.unmatched_returns = counters[TCHECK_COUNTER_UNMATCHED_RETURNS];
	record.stats.nesting_overflows = counters[TCHECK_COUNTER_NESTING_OVERFLOWS];
	record.stats.filtered = counters[TCHECK_COUNTER_FILTERED];
	record.stats.process_drops = counters[TCHECK_COUNTER_PROCESS_DROPS];
	record.stats.python_events_lost = python_events_lost(recorder, counters);
	write_record(recorder, &record);
}

static int check_work_request_file(void *context, const char *host_path, uint32_t pid)
{
	return work_requests_check_file(context, host_path, pid);
}

/* Processes can end unseen (the exit notice was dropped): ask the kernel. */
static void check_liveness(struct recorder *recorder)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&recorder->processes, &i, &key, &value);) {
		struct traced_process *process = value;

		if (process->alive && kill((pid_t)process->record.pid, 0) && errno == ESRCH)
			end_process(recorder, process->record.pid, -1);
	}
}

static void rescan_libraries(struct recorder *recorder)
{
	char error[512];
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&recorder->processes, &i, &key, &value);) {
		struct traced_process *process = value;

		if (!process->alive)
			continue;
		library_discovery_scan_process(recorder->discovery, (pid_t)process->record.pid,
					       error, sizeof(error));
		follow_python(recorder, process->record.pid);
	}
}

/* Processes the observer found since the last look (the agent's discovery). */
static void add_discovered(struct recorder *recorder)
{
	const struct recorder_observer *observer = recorder->options->observer;
	pid_t found[256], added[256];
	size_t count, added_count = 0;

	if (!observer || !observer->discover)
		return;
	count = observer->discover(observer->context, found, sizeof(found) / sizeof(found[0]));
	for (size_t i = 0; i < count; i++) {
		struct traced_process *process = u64_map_get(&recorder->processes, found[i]);

		if (process && process->alive)
			continue;
		added[added_count++] = found[i];
		if (process) { /* the pid was reused by a new process */
			u64_map_remove(&recorder->processes, found[i]);
			call_builder_forget_process(recorder->builder, (uint32_t)found[i]);
			if (recorder->python)
				python_tracer_forget_process(recorder->python, found[i]);
			free(process->command);
			free(process);
		}
		add_process(recorder, (uint32_t)found[i], 0);
	}
	/* A job found already stuck makes no call to see: read where it stands. */
	if (added_count)
		job_snapshot_log_arrival(added, added_count, false, emit_built_record, recorder);
}

/* Starts the command stopped at a pipe so the probes are in place first. */
static int start_command(struct recorder *recorder, int *release_fd)
{
	char *const *command = recorder->options->command;
	int gate[2];
	char go;

	if (pipe(gate)) {
		log_error("cannot create a pipe to start %s: %s", command[0], strerror(errno));
		return -1;
	}
	recorder->command_pid = fork();
	if (recorder->command_pid < 0) {
		log_error("cannot start %s: %s", command[0], strerror(errno));
		return -1;
	}
	if (recorder->command_pid == 0) {
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(127);
		close(gate[0]);
		execvp(command[0], command);
		fprintf(stderr, "tcheck-bpf: error: cannot run %s: %s\n", command[0],
			strerror(errno));
		_exit(127);
	}
	close(gate[0]);
	*release_fd = gate[1];
	return 0;
}

static void reap_command(struct recorder *recorder)
{
	int status;

	if (recorder->command_pid <= 0 || recorder->command_exited)
		return;
	if (waitpid(recorder->command_pid, &status, WNOHANG) == recorder->command_pid) {
		recorder->command_exited = 1;
		recorder->command_status = status;
	}
}

static int finished(struct recorder *recorder, uint64_t started_ns)
{
	const struct recorder_options *options = recorder->options;

	if (stop_requested)
		return 1;
	if (options->duration_seconds > 0 &&
	    (double)(monotonic_ns() - started_ns) / 1e9 >= options->duration_seconds)
		return 1;
	if (options->until_stopped)
		return 0;
	if (options->command)
		return recorder->command_exited && recorder->alive_count == 0;
	return recorder->alive_count == 0;
}

static int open_outputs(struct recorder *recorder)
{
	const struct recorder_options *options = recorder->options;
	struct trace_header header;
	char error[512];

	if (!options->output_path)
		return 0;
	if (trace_header_init_local(&header, options->argc, options->argv, error, sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	recorder->writer = trace_writer_open(
		options->output_path, &header,
		options->replace_output ? 0 : OUTPUT_FILE_REFUSE_EXISTING, error, sizeof(error));
	if (!recorder->writer) {
		log_error("%s", error);
		return -1;
	}
	return 0;
}

static int set_up(struct recorder *recorder, int *release_fd)
{
	const struct recorder_options *options = recorder->options;
	struct probe_session_config config = {
		.ring_buffer_bytes = options->ring_buffer_bytes ? options->ring_buffer_bytes
				     : options->python		? DEFAULT_PYTHON_RING_BUFFER_BYTES
								: DEFAULT_RING_BUFFER_BYTES,
		.python = options->python,
		.torch_ops =
			options->python && (options->torch_op_count > 0 || options->training_ops),
		.freeze_on_crash = options->freeze_on_crash,
	};
	char error[512];

	for (size_t i = 0; i < options->pid_count; i++) {
		if (process_check(options->pids[i], error, sizeof(error))) {
			log_error("%s", error);
			return -1;
		}
		if (process_is_kernel_thread(options->pids[i])) {
			log_error("pid %d is a kernel thread: it runs no program that could load "
				  "NCCL; give the pid of a training process",
				  (int)options->pids[i]);
			return -1;
		}
	}
	recorder->session =
		probe_session_new(&config, handle_probe_record, recorder, error, sizeof(error));
	if (!recorder->session) {
		log_error("%s", error);
		return -1;
	}
	if (options->observer && options->observer->attach_failed)
		probe_session_on_attach_failure(recorder->session, options->observer->attach_failed,
						options->observer->context);
	if (open_outputs(recorder))
		return -1;
	/*
	 * A job already stuck makes no call to see: read where it stands before
	 * any probe is attached, into the trace and the detectors.
	 */
	if (options->pid_count)
		job_snapshot_log_arrival(options->pids, options->pid_count,
					 options->follow_children, emit_built_record, recorder);
	recorder->discovery = library_discovery_new(recorder->session, emit_library, recorder);
	recorder->work_requests = work_requests_new(recorder->session);
	if (recorder->discovery && recorder->work_requests)
		library_discovery_set_file_hook(recorder->discovery, check_work_request_file,
						recorder->work_requests);
	recorder->builder = call_builder_new(emit_built_record, resolve_communicator, recorder);
	recorder->c10d = c10d_calls_new(emit_built_record, emit_in_flight, recorder);
	if (options->python)
		recorder->python = python_tracer_new(recorder->session, options->python_prefixes,
						     emit_built_record, recorder);
	if (recorder->python) {
		python_tracer_set_step_marker(recorder->python, options->step_marker);
		python_tracer_set_torch_ops(recorder->python, options->torch_ops,
					    options->torch_op_count);
		python_tracer_watch_training(recorder->python, options->training_ops);
	}
	if (!recorder->discovery || !recorder->builder || !recorder->c10d ||
	    !recorder->work_requests || (options->python && !recorder->python)) {
		log_error("out of memory");
		return -1;
	}
	if (options->nccl_library &&
	    library_discovery_add_path(recorder->discovery, options->nccl_library, 0, error,
				       sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	if (options->command) {
		library_discovery_scan_command(recorder->discovery, options->command[0], error,
					       sizeof(error));
		if (start_command(recorder, release_fd))
			return -1;
		add_process(recorder, (uint32_t)recorder->command_pid, (uint32_t)getpid());
	}
	for (size_t i = 0; i < options->pid_count; i++) {
		add_process(recorder, (uint32_t)options->pids[i], 0);
		if (options->follow_children) {
			pid_t *children = NULL;
			size_t count = 0;

			if (process_children(options->pids[i], true, &children, &count, error,
					     sizeof(error)) == 0)
				for (size_t j = 0; j < count; j++)
					add_process(recorder, (uint32_t)children[j],
						    (uint32_t)options->pids[i]);
			free(children);
		}
	}
	if (!options->command && !options->until_stopped &&
	    !library_discovery_library_count(recorder->discovery))
		log_warning("no NCCL library is mapped yet; probes will be attached when one is "
			    "loaded (or name it with --nccl-lib)");
	return 0;
}

static void tear_down(struct recorder *recorder)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&recorder->processes, &i, &key, &value);) {
		struct traced_process *process = value;

		free(process->command);
		free(process);
	}
	u64_map_free(&recorder->processes);
	for (size_t i = 0; u64_map_next(&recorder->notes, &i, &key, &value);)
		free(value);
	u64_map_free(&recorder->notes);
	call_builder_free(recorder->builder);
	c10d_calls_free(recorder->c10d);
	python_tracer_free(recorder->python);
	library_discovery_free(recorder->discovery);
	work_requests_free(recorder->work_requests);
	probe_session_free(recorder->session);
	free(recorder->open_calls);
}

static void report_losses(struct recorder *recorder, const uint64_t *counters)
{
	uint64_t lost =
		counters[TCHECK_COUNTER_RINGBUF_DROPS] + counters[TCHECK_COUNTER_NESTING_OVERFLOWS];

	if (lost)
		log_warning("%llu calls were lost (ring buffer full: %llu, nested too deep: %llu); "
			    "raise --ring-buffer-mb",
			    (unsigned long long)lost,
			    (unsigned long long)counters[TCHECK_COUNTER_RINGBUF_DROPS],
			    (unsigned long long)counters[TCHECK_COUNTER_NESTING_OVERFLOWS]);
	if (counters[TCHECK_COUNTER_PROCESS_DROPS])
		log_warning("%llu process notices were lost",
			    (unsigned long long)counters[TCHECK_COUNTER_PROCESS_DROPS]);
	if (recorder->python)
		python_losses_report(recorder->python, counters[TCHECK_COUNTER_PYTHON_DROPS]);
	recorder->python_lost = python_events_lost(recorder, counters);
}

static void run_loop(struct recorder *recorder)
{
	uint64_t started_ns = monotonic_ns(), last_flush = started_ns, last_status = started_ns;
	uint64_t last_rescan = started_ns, counters[TCHECK_COUNTER_COUNT];

	live_status_init(&recorder->status, started_ns);
	while (!finished(recorder, started_ns)) {
		uint64_t now;

		int poll_ms = recorder->options->diagnosis
				      ? job_diagnosis_tick_interval_ms(recorder->options->diagnosis)
				      : POLL_INTERVAL_MS;

		bool read_failed = probe_session_poll(recorder->session, poll_ms) < 0;

		if (read_failed && !stop_requested)
			log_warning("reading the ring buffer failed: %s", strerror(errno));
		reap_command(recorder);
		now = monotonic_ns();
		if (!read_failed && recorder->options->observer &&
		    recorder->options->observer->polled)
			recorder->options->observer->polled(recorder->options->observer->context,
							    now);
		if (c10d_calls_tick(recorder->c10d, now) == -ENOMEM)
			log_warning("out of memory for the c10d calls");
		if (recorder->options->diagnosis) {
			read_open_calls(recorder, true);
			job_diagnosis_tick(recorder->options->diagnosis, now);
		}
		if (now - last_rescan >= RESCAN_INTERVAL_NS) {
			check_liveness(recorder);
			add_discovered(recorder);
			rescan_libraries(recorder);
			last_rescan = now;
		}
		if (now - last_flush >= FLUSH_INTERVAL_NS) {
			probe_session_counters(recorder->session, counters);
			write_activity_samples(recorder, now);
			write_stats(recorder, counters);
			work_requests_sample(recorder->work_requests, now, write_network_sample,
					     recorder);
			if (recorder->writer)
				trace_writer_flush(recorder->writer);
			last_flush = now;
		}
		if (recorder->options->live_status && now - last_status >= STATUS_INTERVAL_NS) {
			probe_session_counters(recorder->session, counters);
			live_status_print(
				&recorder->status, stdout, now, counters, recorder->alive_count,
				(unsigned)call_builder_communicator_count(recorder->builder));
			work_requests_print_live(recorder->work_requests, stdout);
			last_status = now;
		}
	}
	/* Everything the kernel already holds belongs in the trace, and what is still open. */
	probe_session_drain(recorder->session);
	read_open_calls(recorder, false);
	if (recorder->python)
		python_tracer_end(recorder->python);
	if (c10d_calls_end(recorder->c10d, 0, monotonic_ns()) == -ENOMEM)
		log_warning("out of memory for the c10d calls");
	probe_session_counters(recorder->session, counters);
	write_stats(recorder, counters);
	work_requests_sample(recorder->work_requests, monotonic_ns(), write_network_sample,
			     recorder);
	report_losses(recorder, counters);
	if (recorder->options->diagnosis)
		job_diagnosis_finish(recorder->options->diagnosis);
}

static int command_exit_status(const struct recorder *recorder)
{
	if (!recorder->command_exited)
		return 0;
	if (WIFEXITED(recorder->command_status))
		return WEXITSTATUS(recorder->command_status);
	return 128 + WTERMSIG(recorder->command_status);
}

int recorder_run(const struct recorder_options *options)
{
	struct recorder recorder = { .options = options, .command_pid = -1 };
	struct sigaction action = { .sa_handler = request_stop };
	int release_fd = -1, result = 0;
	char error[512];

	u64_map_init(&recorder.processes);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (set_up(&recorder, &release_fd)) {
		result = 1;
		/* Nothing was recorded: no trace file is left to look like one. */
		trace_writer_discard(recorder.writer);
		recorder.writer = NULL;
		/* Never leave a started command waiting at its gate. */
		if (recorder.command_pid > 0) {
			kill(recorder.command_pid, SIGKILL);
			waitpid(recorder.command_pid, NULL, 0);
		}
		goto out;
	}
	if (release_fd >= 0) {
		recorder.command_released = 1;
		if (write(release_fd, "g", 1) != 1)
			log_error("cannot start %s", options->command[0]);
		close(release_fd);
		release_fd = -1;
	}
	log_notice("tracing %u process%s, %zu NCCL librar%s probed%s", recorder.alive_count,
		   recorder.alive_count == 1 ? "" : "es",
		   library_discovery_library_count(recorder.discovery),
		   library_discovery_library_count(recorder.discovery) == 1 ? "y" : "ies",
		   options->command || options->duration_seconds > 0 ? "" : "; Ctrl-C to detach");
	run_loop(&recorder);
	if (options->command && !recorder.command_exited) {
		/* Stopped early by the user: the command keeps running, untouched. */
		log_notice("detached; %s (pid %d) keeps running", options->command[0],
			   recorder.command_pid);
	}
	result = options->command ? command_exit_status(&recorder) : 0;
	if (recorder.failed)
		result = 1;
	if (recorder.c10d_calls)
		log_notice("%llu NCCL calls recorded, and %llu of PyTorch's c10d collectives%s%s",
			   (unsigned long long)recorder.calls,
			   (unsigned long long)recorder.c10d_calls,
			   options->output_path ? " to " : "",
			   options->output_path ? options->output_path : "");
	else
		log_notice("%llu NCCL calls recorded%s%s", (unsigned long long)recorder.calls,
			   options->output_path ? " to " : "",
			   options->output_path ? options->output_path : "");
	if (recorder.open_calls_written)
		log_notice("%llu of them never returned (a thread blocked or ended inside): "
			   "kept as open calls",
			   (unsigned long long)recorder.open_calls_written);
	if (recorder.python)
		report_python_coverage(&recorder);
out:
	if (release_fd >= 0)
		close(release_fd);
	if (recorder.writer && trace_writer_close(recorder.writer, error, sizeof(error))) {
		log_error("%s", error);
		result = 1;
	}
	tear_down(&recorder);
	return result;
}
