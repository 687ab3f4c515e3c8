// SPDX-License-Identifier: MIT
/* Exports a trace as Chrome Trace Event JSON for Perfetto, one event at a time. */
#include "export/export_perfetto.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "base/string_interner.h"
#include "base/u64_map.h"
#include "model/nccl_api.h"

/* Track numbers for processes whose preferred one is taken: clear of ranks and pids. */
#define SPILL_TRACK_BASE 0x40000000LL
/* The track of the recorder's own counters. */
#define RECORDER_TRACK 0x7ffffff0LL
/* Keeps the metadata object small however many libraries a trace lists. */
#define MAX_LIBRARIES_LISTED 1024
/* The thread number of each process's step track, clear of real thread ids. */
#define STEP_TRACK_TID 0x7ffffffeLL
/* The most of a command line a process's track name shows (its end cut to "..."). */
#define TRACK_COMMAND_BYTES 200

struct perfetto_export {
	FILE *out;
	unsigned flags;
	int wrote_event;
	struct u64_map ranks;	    /* OS pid -> rank, from process records */
	struct u64_map tracks;	    /* OS pid -> track number */
	struct u64_map used_tracks; /* track number -> OS pid */
	struct u64_map threads;	    /* pid << 32 | tid -> named */
	struct u64_map processes;   /* OS pid -> 1, every process a record names */
	struct u64_map commands;    /* OS pid -> its command line, kept in command_texts */
	struct string_interner command_texts;
	bool commands_read_ahead; /* commands hold each process's last one from the start */
	int recorder_named;
	json_t *libraries;
	struct u64_map step_slots; /* OS pid -> index in steps + 1 */
	struct process_steps *steps;
	size_t step_count, step_capacity;
};

/* The step a process is in, from the step its Python events carry, for its step track. */
struct process_steps {
	uint32_t pid;
	int32_t step;	   /* the step in progress */
	uint64_t start_ns; /* its first event */
	uint64_t last_ns;  /* the end of its latest event */
};

/* A number kept in a u64_map as number + 1: the map's values are never NULL. */
static int number_put(struct u64_map *map, uint64_t key, int64_t number)
{
	return u64_map_put(map, key, (void *)(uintptr_t)(number + 1));
}

/* Whether key is in the map; its number in *number when asked. */
static bool number_find(const struct u64_map *map, uint64_t key, int64_t *number)
{
	void *found = u64_map_get(map, key);

	if (found && number)
		*number = (int64_t)(uintptr_t)found - 1;
	return found != NULL;
}

/* Digits a timestamp needs to keep nanoseconds when written in microseconds. */
static int microsecond_digits(uint64_t nanoseconds)
{
	int digits = 1;

	for (uint64_t whole = nanoseconds / 1000; whole >= 10; whole /= 10)
		digits++;
	return digits + 3;
}

/* Writes one array element; consumes the reference. Returns 0 or a negative errno. */
static int emit(struct perfetto_export *export, json_t *event, int precision)
{
	int err;

	if (!event)
		return -ENOMEM;
	err = export_json_write(export->out, export->wrote_event ? ",\n" : "", event,
				JSON_COMPACT | JSON_REAL_PRECISION(precision > 17 ? 17 : precision),
				"");
	json_decref(event);
	export->wrote_event = 1;
	return err;
}

static int emit_metadata(struct perfetto_export *export, const char *name, int64_t track,
			 int64_t tid, json_t *args)
{
	json_t *event;

	if (!args)
		return -ENOMEM;
	event = json_pack("{s:s, s:s, s:I, s:I, s:o}", "name", name, "ph", "M", "pid",
			  (json_int_t)track, "tid", (json_int_t)tid, "args", args);
	return emit(export, event, 0);
}

/*
 * A process's track is named by its rank, pid and the command it runs (the
 * traced program's own command line, as ps shows it), cut to fit.
 */
static int emit_process_names(struct perfetto_export *export, int64_t track, uint32_t pid,
			      int64_t rank)
{
	const char *command = u64_map_get(&export->commands, pid);
	char name[TRACK_COMMAND_BYTES + 64];
	int used, err;

	if (rank >= 0)
		used = snprintf(name, sizeof(name), "rank %" PRId64 " (pid %" PRIu32 ")", rank,
				pid);
	else
		used = snprintf(name, sizeof(name), "pid %" PRIu32, pid);
	if (command && *command)
		snprintf(name + used, sizeof(name) - (size_t)used, ": %.*s%s", TRACK_COMMAND_BYTES,
			 command, strlen(command) > TRACK_COMMAND_BYTES ? "..." : "");
	/* A command line is bytes, cut anywhere: made valid UTF-8. */
	err = emit_metadata(export, "process_name", track, 0,
			    json_pack("{s:o}", "name", export_json_text(name)));
	if (err || rank < 0)
		return err;
	return emit_metadata(export, "process_sort_index", track, 0,
			     json_pack("{s:I}", "sort_index", (json_int_t)rank));
}

/*
 * Keeps a process's command line; a command that changes (an exec) renames
 * its track when it has one. Returns 0 or -ENOMEM.
 */
static int keep_command(struct perfetto_export *export, const struct trace_process *process)
{
	const char *kept;
	int64_t track, rank = -1;

	if (!process->command || !*process->command)
		return 0;
	kept = string_interner_intern(&export->command_texts, process->command);
	if (!kept)
		return -ENOMEM;
	if (u64_map_get(&export->commands, process->pid) == kept)
		return 0;
	if (u64_map_put(&export->commands, process->pid, (void *)kept))
		return -ENOMEM;
	if (!number_find(&export->tracks, process->pid, &track))
		return 0;
	number_find(&export->ranks, process->pid, &rank);
	return emit_process_names(export, track, process->pid, rank);
}

/*
 * The track number of a process: its rank when known, else its pid. A
 * second process claiming the same number (a restarted rank, a second
 * job) gets its pid, or failing that a number from the spill range.
 */
static int track_of(struct perfetto_export *export, uint32_t pid, int64_t *track)
{
	int64_t rank = -1, candidate;
	int err;

	if (number_find(&export->tracks, pid, track))
		return 0;
	number_find(&export->ranks, pid, &rank);
	candidate = rank >= 0 ? rank : (int64_t)pid;
	if (rank >= 0 && number_find(&export->used_tracks, (uint64_t)candidate, NULL))
		candidate = pid;
	if (number_find(&export->used_tracks, (uint64_t)candidate, NULL))
		candidate = SPILL_TRACK_BASE + pid;
	while (number_find(&export->used_tracks, (uint64_t)candidate, NULL))
		candidate++;

	err = number_put(&export->tracks, pid, candidate);
	if (!err)
		err = number_put(&export->used_tracks, (uint64_t)candidate, pid);
	if (!err)
		err = emit_process_names(export, candidate, pid, rank);
	*track = candidate;
	return err;
}

static int name_thread(struct perfetto_export *export, int64_t track, uint32_t pid, uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	char name[48];
	int err;

	if (number_find(&export->threads, key, NULL))
		return 0;
	err = number_put(&export->threads, key, 1);
	if (err)
		return err;
	if (tid == pid)
		snprintf(name, sizeof(name), "main thread (tid %" PRIu32 ")", tid);
	else
		snprintf(name, sizeof(name), "tid %" PRIu32, tid);
	return emit_metadata(export, "thread_name", track, tid, json_pack("{s:s}", "name", name));
}

static json_t *call_event_args(const struct trace_nccl_call *call)
{
	const char *result_name = nccl_result_name(call->result);
	json_t *args = export_json_call_args(call);

	if (!args)
		return NULL;
	if (json_object_set_new(args, "comm_id", export_json_identity(call->comm_id)) ||
	    json_object_set_new(args, "seq", export_json_known_or_null(call->seq)) ||
	    json_object_set_new(args, "ret",
				result_name ? json_string(result_name)
					    : json_integer(call->result))) {
		json_decref(args);
		return NULL;
	}
	return args;
}

static int emit_call(struct perfetto_export *export, const struct trace_nccl_call *call)
{
	int precision = microsecond_digits(call->entry_ns);
	int64_t track;
	json_t *args;
	int err;

	if (microsecond_digits(call->duration_ns) > precision)
		precision = microsecond_digits(call->duration_ns);
	err = track_of(export, call->pid, &track);
	if (!err)
		err = name_thread(export, track, call->pid, call->tid);
	if (err)
		return err;
	args = call_event_args(call);
	if (!args)
		return -ENOMEM;
	return emit(export,
		    json_pack("{s:o, s:s, s:s, s:f, s:f, s:I, s:I, s:o}", "name",
			      export_json_text(call->function), "cat", "nccl", "ph", "X", "ts",
			      (double)call->entry_ns / 1000.0, "dur",
			      (double)call->duration_ns / 1000.0, "pid", (json_int_t)track, "tid",
			      (json_int_t)call->tid, "args", args),
		    precision);
}

/* A Python function or torch scope, on the same process and thread track as NCCL calls. */
/* A marker on a process's track, e.g. a communicator appearing or the process exiting. */
static int emit_instant(struct perfetto_export *export, uint32_t pid, uint64_t timestamp_ns,
			const char *name, const char *category, json_t *args)
{
	int64_t track;
	int err;

	if (!args)
		return -ENOMEM;
	err = track_of(export, pid, &track);
	if (err) {
		json_decref(args);
		return err;
	}
	return emit(export,
		    json_pack("{s:s, s:s, s:s, s:s, s:f, s:I, s:I, s:o}", "name", name, "cat",
			      category, "ph", "i", "s", "p", "ts", (double)timestamp_ns / 1000.0,
			      "pid", (json_int_t)track, "tid", (json_int_t)pid, "args", args),
		    microsecond_digits(timestamp_ns));
}

/* A finished step as a slice on its process's step track, named once. */
static int emit_step(struct perfetto_export *export, const struct process_steps *steps,
		     uint64_t end_ns)
{
	int64_t track;
	char name[32];
	int err = track_of(export, steps->pid, &track);
	uint64_t key = (uint64_t)steps->pid << 32 | (uint32_t)STEP_TRACK_TID;

	if (!err && !number_find(&export->threads, key, NULL)) {
		err = number_put(&export->threads, key, 1);
		if (!err)
			err = emit_metadata(export, "thread_name", track, STEP_TRACK_TID,
					    json_pack("{s:s}", "name", "steps"));
		if (!err)
			err = emit_metadata(export, "thread_sort_index", track, STEP_TRACK_TID,
					    json_pack("{s:i}", "sort_index", -1));
	}
	if (err)
		return err;
	snprintf(name, sizeof(name), "step %d", steps->step);
	return emit(export,
		    json_pack("{s:s, s:s, s:s, s:f, s:f, s:I, s:I, s:{s:i}}", "name", name, "cat",
			      "step", "ph", "X", "ts", (double)steps->start_ns / 1000.0, "dur",
			      (double)(end_ns - steps->start_ns) / 1000.0, "pid", (json_int_t)track,
			      "tid", (json_int_t)STEP_TRACK_TID, "args", "step", steps->step),
		    microsecond_digits(end_ns));
}

/*
 * Follows the step of a process's Python events: a step runs from its
 * first event to the next step's first; a late event of an earlier step
 * (from another CPU's buffer) moves nothing back.
 */
static int follow_step(struct perfetto_export *export, const struct trace_python_call *call)
{
	struct process_steps *steps;
	int64_t slot;
	uint64_t end_ns = call->entry_ns + call->duration_ns;
	int err;

	if (call->step < 0 || export->flags & EXPORT_CALLS_ONLY)
		return 0;
	if (!number_find(&export->step_slots, call->pid, &slot)) {
		if (growable_array_room_for_one((void **)&export->steps, export->step_count,
						&export->step_capacity, sizeof(*export->steps)))
			return -ENOMEM;
		export->steps[export->step_count] =
			(struct process_steps){ .pid = call->pid,
						.step = call->step,
						.start_ns = call->entry_ns,
						.last_ns = end_ns };
		return number_put(&export->step_slots, call->pid, (int64_t)++ export->step_count);
	}
	/* A slot is only ever made with its entry: steps is not NULL here. */
	steps = export->steps ? &export->steps[slot - 1] : NULL;
	if (!steps)
		return -EINVAL;
	if (call->step > steps->step) {
		uint64_t boundary =
			call->entry_ns > steps->start_ns ? call->entry_ns : steps->start_ns;

		err = emit_step(export, steps, boundary);
		if (err)
			return err;
		steps->step = call->step;
		steps->start_ns = boundary;
	}
	if (end_ns > steps->last_ns)
		steps->last_ns = end_ns;
	return 0;
}

/* The steps still open at the end of the trace, up to their last event. */
static int finish_steps(struct perfetto_export *export)
{
	for (size_t i = 0; i < export->step_count; i++) {
		int err = emit_step(export, &export->steps[i], export->steps[i].last_ns);

		if (err)
			return err;
	}
	return 0;
}

/*
 * A torch operator: recorded at its entry only (no return probe on C++
 * functions), so a moment on its thread with its arguments (tensor
 * identities, shapes, digests, scalars such as alpha) unless a duration is
 * known.
 */
static int emit_torch_op(struct perfetto_export *export, const struct trace_python_call *call,
			 int64_t track, json_t *arguments)
{
	int precision = microsecond_digits(call->entry_ns);

	if (!arguments)
		return -ENOMEM;
	if (call->duration_ns)
		return emit(export,
			    json_pack("{s:o, s:s, s:s, s:f, s:f, s:I, s:I, s:{s:o, s:o}}", "name",
				      export_json_text(call->qualified_name), "cat", "torch_op",
				      "ph", "X", "ts", (double)call->entry_ns / 1000.0, "dur",
				      (double)call->duration_ns / 1000.0, "pid", (json_int_t)track,
				      "tid", (json_int_t)call->tid, "args", "arguments", arguments,
				      "step", export_json_known_or_null(call->step)),
			    precision > microsecond_digits(call->duration_ns)
				    ? precision
				    : microsecond_digits(call->duration_ns));
	return emit(export,
		    json_pack("{s:o, s:s, s:s, s:s, s:f, s:I, s:I, s:{s:o, s:o}}", "name",
			      export_json_text(call->qualified_name), "cat", "torch_op", "ph", "i",
			      "s", "t", "ts", (double)call->entry_ns / 1000.0, "pid",
			      (json_int_t)track, "tid", (json_int_t)call->tid, "args", "arguments",
			      arguments, "step", export_json_known_or_null(call->step)),
		    precision);
}

static int emit_python_call(struct perfetto_export *export, const struct trace_python_call *call)
{
	int torch_scope = (call->flags & TRACE_PYTHON_TORCH_SCOPE) != 0;
	char name[128];
	int precision = microsecond_digits(call->entry_ns);
	int64_t track;
	json_t *args;
	int err;

	/* The exception that ends a process is a moment, not a call: a crash mark. */
	if (call->flags & TRACE_PYTHON_UNCAUGHT) {
		snprintf(name, sizeof(name), "crash: %s%s%s",
			 call->flags & TRACE_PYTHON_HANDLED_AT_EXIT ? "" : "uncaught ",
			 call->qualified_name,
			 call->flags & TRACE_PYTHON_HANDLED_AT_EXIT ? " (caught, then sys.exit)"
								    : "");
		return emit_instant(export, call->pid, call->entry_ns, name, "crash",
				    export_json_python_args(call));
	}
	if (microsecond_digits(call->duration_ns) > precision)
		precision = microsecond_digits(call->duration_ns);
	err = follow_step(export, call);
	if (!err)
		err = track_of(export, call->pid, &track);
	if (!err)
		err = name_thread(export, track, call->pid, call->tid);
	if (err)
		return err;
	if (call->flags & TRACE_PYTHON_TORCH_OP)
		return emit_torch_op(export, call, track, export_json_python_args(call));
	args = json_pack("{s:o, s:o, s:b, s:o}", "file", export_json_text(call->file), "line",
			 export_json_known_or_null(call->first_line), "raised",
			 (call->flags & TRACE_PYTHON_RAISED) != 0, "step",
			 export_json_known_or_null(call->step));
	/* The primitive arguments the probe read, by parameter name. */
	if (args && call->arg_count &&
	    json_object_set_new(args, "arguments", export_json_python_args(call))) {
		json_decref(args);
		args = NULL;
	}
	if (!args)
		return -ENOMEM;
	return emit(export,
		    json_pack("{s:o, s:s, s:s, s:f, s:f, s:I, s:I, s:o}", "name",
			      export_json_text(call->qualified_name), "cat",
			      torch_scope ? "torch_scope" : "python", "ph", "X", "ts",
			      (double)call->entry_ns / 1000.0, "dur",
			      (double)call->duration_ns / 1000.0, "pid", (json_int_t)track, "tid",
			      (json_int_t)call->tid, "args", args),
		    precision);
}

static int emit_communicator(struct perfetto_export *export, const struct trace_record *record)
{
	const struct trace_communicator *comm = &record->communicator;

	if (!comm->seen_ns)
		return 0;
	return emit_instant(export, comm->pid, comm->seen_ns, "communicator", "communicator",
			    export_json_record(record));
}

/*
 * Whether a process did the job's own work (trace_exit_crashed): it has a
 * rank (its own record's is already in export->ranks), it has a track (its
 * calls were followed), or its parent is not traced (the command the tracer
 * started or attached to).
 */
static bool does_job_work(const struct perfetto_export *export, const struct trace_process *process)
{
	return number_find(&export->ranks, process->pid, NULL) ||
	       number_find(&export->tracks, process->pid, NULL) ||
	       !number_find(&export->processes, process->parent_pid, NULL);
}

static int emit_process(struct perfetto_export *export, const struct trace_record *record)
{
	const struct trace_process *process = &record->process;
	char name[96];
	bool crashed;
	int err;

	if (process->rank >= 0 && !number_find(&export->ranks, process->pid, NULL)) {
		err = number_put(&export->ranks, process->pid, process->rank);
		if (err)
			return err;
	}
	/* Judged before it is known: the command the tracer started has no traced parent. */
	crashed = process->end_ns &&
		  trace_exit_crashed(process->exit_code, does_job_work(export, process));
	if (!number_find(&export->processes, process->pid, NULL)) {
		err = number_put(&export->processes, process->pid, 1);
		if (err)
			return err;
	}
	if (!export->commands_read_ahead) {
		err = keep_command(export, process);
		if (err)
			return err;
	}
	if (export->flags & EXPORT_CALLS_ONLY || !process->end_ns)
		return 0;
	/* A death the crash report gives (docs/crash-reports.md): marked as a crash. */
	if (trace_exit_signal(process->exit_code))
		snprintf(name, sizeof(name), "crash: %s (signal %d)",
			 strsignal(trace_exit_signal(process->exit_code)),
			 trace_exit_signal(process->exit_code));
	else if (crashed)
		snprintf(name, sizeof(name), "crash: exit status %d",
			 trace_exit_status(process->exit_code));
	else if (process->exit_code >= 0)
		snprintf(name, sizeof(name), "process exited (status %d)",
			 trace_exit_status(process->exit_code));
	else
		snprintf(name, sizeof(name), "process exited");
	return emit_instant(export, process->pid, process->end_ns, name,
			    crashed ? "crash" : "process", export_json_record(record));
}

static int emit_stats(struct perfetto_export *export, const struct trace_stats *stats)
{
	int err;

	if (!stats->timestamp_ns)
		return 0;
	if (!export->recorder_named) {
		export->recorder_named = 1;
		err = emit_metadata(export, "process_name", RECORDER_TRACK, 0,
				    json_pack("{s:s}", "name", "tcheck-bpf recorder"));
		if (err)
			return err;
	}
	return emit(export,
		    json_pack("{s:s, s:s, s:f, s:I, s:I, s:{s:o, s:o, s:o, s:o, s:o, s:o}}", "name",
			      "tcheck-bpf losses", "ph", "C", "ts",
			      (double)stats->timestamp_ns / 1000.0, "pid",
			      (json_int_t)RECORDER_TRACK, "tid", (json_int_t)0, "args",
			      "ringbuf_drops", export_json_unsigned(stats->ringbuf_drops),
			      "unmatched_returns", export_json_unsigned(stats->unmatched_returns),
			      "nesting_overflows", export_json_unsigned(stats->nesting_overflows),
			      "process_drops", export_json_unsigned(stats->process_drops),
			      "filtered", export_json_unsigned(stats->filtered),
			      "python_events_lost",
			      export_json_unsigned(stats->python_events_lost)),
		    microsecond_digits(stats->timestamp_ns));
}

static int list_library(struct perfetto_export *export, const struct trace_record *record)
{
	if (json_array_size(export->libraries) >= MAX_LIBRARIES_LISTED)
		return 0;
	return json_array_append_new(export->libraries, export_json_record(record)) ? -ENOMEM : 0;
}

static int export_record(struct perfetto_export *export, const struct trace_record *record)
{
	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		return emit_call(export, &record->call);
	case TRACE_RECORD_PROCESS:
		return emit_process(export, record);
	case TRACE_RECORD_COMMUNICATOR:
		return export->flags & EXPORT_CALLS_ONLY ? 0 : emit_communicator(export, record);
	case TRACE_RECORD_LIBRARY:
		return list_library(export, record);
	case TRACE_RECORD_STATS:
		return export->flags & EXPORT_CALLS_ONLY ? 0 : emit_stats(export, &record->stats);
	case TRACE_RECORD_PYTHON_CALL:
		return emit_python_call(export, &record->python_call);
	case TRACE_RECORD_NETWORK:
	case TRACE_RECORD_ACTIVITY:
	case TRACE_RECORD_ARRIVAL:
		return 0;
	}
	return 0;
}

/*
 * Learns every process's rank and last command line before any track is
 * named; 0 when done or not possible (a pipe: then tracks are renamed as
 * commands come).
 */
static int collect_processes(struct perfetto_export *export, struct trace_reader *reader)
{
	struct trace_record record;
	int status = trace_reader_rewind(reader);

	if (status == -ESPIPE)
		return 0;
	if (status)
		return status;
	while ((status = trace_reader_next(reader, &record)) > 0) {
		if (record.kind != TRACE_RECORD_PROCESS)
			continue;
		if (keep_command(export, &record.process))
			return -ENOMEM;
		if (record.process.rank < 0 ||
		    number_find(&export->ranks, record.process.pid, NULL))
			continue;
		if (number_put(&export->ranks, record.process.pid, record.process.rank))
			return -ENOMEM;
	}
	if (status < 0)
		return status;
	export->commands_read_ahead = true;
	return trace_reader_rewind(reader);
}

static json_t *metadata_object(struct trace_reader *reader, json_t *libraries)
{
	const struct trace_header *header = trace_reader_header(reader);
	const char *truncated = trace_reader_truncated(reader);

	return json_pack("{s:s, s:I, s:o, s:o, s:s, s:o, s:o, s:o, s:o, s:O}", "tool", "tcheck-bpf",
			 "format_version", (json_int_t)header->format_version, "hostname",
			 export_json_text(header->hostname), "boot_id",
			 export_json_text(header->boot_id), "clock", "CLOCK_MONOTONIC",
			 "anchor_monotonic_ns", export_json_unsigned(header->anchor_monotonic_ns),
			 "anchor_realtime_ns", export_json_unsigned(header->anchor_realtime_ns),
			 "command_line", export_json_text(header->command_line), "truncated",
			 truncated ? export_json_text(truncated) : json_null(), "libraries",
			 libraries);
}

static int write_document(struct perfetto_export *export, struct trace_reader *reader,
			  int *reader_failed)
{
	struct trace_record record;
	json_t *metadata;
	int status, err;

	errno = 0;
	if (fputs("{\"traceEvents\":[\n", export->out) == EOF)
		return errno ? -errno : -EIO;
	while ((status = trace_reader_next(reader, &record)) > 0) {
		err = export_record(export, &record);
		if (err)
			return err;
	}
	if (status < 0) {
		*reader_failed = 1;
		return status;
	}
	err = finish_steps(export);
	if (err)
		return err;
	metadata = metadata_object(reader, export->libraries);
	if (!metadata)
		return -ENOMEM;
	err = export_json_write(export->out,
				"\n],\n\"displayTimeUnit\":\"ns\",\n\"metadata\":", metadata,
				JSON_COMPACT, "}\n");
	json_decref(metadata);
	errno = 0;
	if (!err && fflush(export->out))
		err = errno ? -errno : -EIO;
	return err;
}

int export_perfetto(struct trace_reader *reader, FILE *out, unsigned flags, char *error,
		    size_t error_size)
{
	struct perfetto_export export = { .out = out, .flags = flags };
	int reader_failed = 0, err;

	export.libraries = json_array();
	err = export.libraries ? collect_processes(&export, reader) : -ENOMEM;
	if (err && err != -ENOMEM)
		reader_failed = 1;
	if (!err)
		err = write_document(&export, reader, &reader_failed);

	if (err && reader_failed)
		error_format(error, error_size, "%s", trace_reader_error(reader));
	else if (err == -ENOMEM)
		error_format(error, error_size,
			     "out of memory while exporting the trace for Perfetto");
	else if (err)
		error_format(
			error, error_size,
			"could not write the Perfetto export: %s; check the free space and the "
			"output file",
			strerror(-err));
	json_decref(export.libraries);
	u64_map_free(&export.ranks);
	u64_map_free(&export.tracks);
	u64_map_free(&export.used_tracks);
	u64_map_free(&export.threads);
	u64_map_free(&export.processes);
	u64_map_free(&export.commands);
	string_interner_destroy(&export.command_texts);
	u64_map_free(&export.step_slots);
	free(export.steps);
	return err;
}
