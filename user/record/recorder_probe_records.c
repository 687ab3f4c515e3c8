// SPDX-License-Identifier: MIT
/*
 * What the probes send, turned into the recorder's records: calls built
 * with their Python context, process notices, Python events, c10d
 * collectives, RDMA contexts, and the calls still in flight.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/system_clock.h"
#include "network/work_requests.h"
#include "probe/library_discovery.h"
#include "probe/nccl_comm_layout.h"
#include "probe/probe_session.h"
#include "python/python_call_context.h"
#include "python/python_tracer.h"
#include "record/c10d_calls.h"
#include "record/call_builder.h"
#include "record/open_calls.h"
#include "record/recorder_state.h"

/* Calls in flight read at one tick: a thread has at most TCHECK_MAX_NESTING. */
#define OPEN_CALLS_MAX 1024

/* Reads identity, rank and size of a communicator from the library's memory. */
void recorder_resolve_communicator(void *context, uint32_t pid, uint64_t handle,
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
		/* Kept as long as the recorder: the call builder holds it with the communicator. */
		communicator->note = string_interner_intern(&recorder->notes, error);
		if (!communicator->note)
			communicator->note = "the communicator's identity could not be read "
					     "(out of memory)";
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

/* The Python tracer's state for a process: NULL for none, or no process. */
static struct python_process *python_of(const struct traced_process *process)
{
	return process ? process->stages.python : NULL;
}

/* The Python side of a raw call, where its process's Python is followed; NULL otherwise. */
static const struct trace_python_context *python_context_of(struct recorder *recorder,
							    struct traced_process *process,
							    const struct tcheck_call_record *raw,
							    struct trace_python_context *context)
{
	if (!recorder->python ||
	    !python_call_context_read(recorder->python, python_of(process), raw, context))
		return NULL;
	return context;
}

/* --freeze-on-crash stopped this process: which one, and how to go on. */
static void say_frozen(const struct tcheck_python_exception_record *exception)
{
	uint32_t pid = exception->header.pid;
	const char *where = exception->flags & TCHECK_EXCEPTION_HANDLED_AT_EXIT
				    ? "as it calls sys.exit with a failure after catching its"
				    : "before printing its uncaught";

	log_warning("process %u is stopped %s %.*s "
		    "(--freeze-on-crash): inspect it (py-spy dump --pid %u, gdb -p %u), "
		    "then kill -CONT %u lets it finish, kill %u ends it",
		    pid, where, (int)sizeof(exception->type_name), exception->type_name, pid, pid,
		    pid, pid);
}

/* A c10d collective entered: a call of its process group, with the process's step and stage. */
static void take_c10d_call(struct recorder *recorder, const struct tcheck_c10d_call_record *record)
{
	uint32_t pid = record->header.pid;
	struct traced_process *process;
	struct trace_python_context python = { .step = -1 };
	bool known;

	process = recorder_adopt_process(recorder, pid);
	if (!process) {
		log_warning("a c10d call of process %u is lost: it could not be traced", pid);
		return;
	}
	known = !python_tracer_meta(process->stages.python, record->header.timestamp_ns,
				    &python.step, &python.stage);
	if (c10d_calls_add(recorder->c10d, &process->stages.c10d, record, process->record.rank,
			   process->record.world_size, known ? &python : NULL) == -ENOMEM)
		log_warning("process %u: out of memory for its c10d calls", pid);
}

/* A torch operator's record, made whole where it was sent short (no Python caller). */
static void take_torch_op(struct recorder *recorder, struct python_process *process,
			  const void *data, size_t size)
{
	struct tcheck_torch_op_record whole;

	if (size > sizeof(whole))
		size = sizeof(whole);
	memcpy(&whole, data, size);
	memset((char *)&whole + size, 0, sizeof(whole) - size);
	python_tracer_handle_op(recorder->python, process, &whole);
}

int recorder_handle_probe_record(void *context, const void *data, size_t size)
{
	const struct tcheck_record_header *header = data;
	const struct tcheck_process_record *notice = data;
	struct recorder *recorder = context;
	const struct tcheck_call_record *call;
	struct tcheck_call_record whole;
	struct trace_python_context python;
	struct traced_process *process;
	char error[512];

	if (size < sizeof(*header))
		return 0;
	switch (header->type) {
	case TCHECK_RECORD_CALL:
		call = call_record_whole(data, size, &whole);
		if (!call)
			return 0;
		/*
		 * One look-up finds the process and the builder's state for it. A
		 * child the registry does not know (its fork notice was lost: ring
		 * buffer full) is introduced by its calls, as by its Python events;
		 * with --no-follow a child is not traced, so its calls are left out.
		 */
		process = process_registry_find(&recorder->processes, header->pid);
		if (!process && !recorder->options->follow_children)
			return 0;
		if (!process && !(process = recorder_add_process(recorder, header->pid, 0))) {
			log_warning("a call of process %u is lost: out of memory", header->pid);
			return 0;
		}
		if (call_builder_add(recorder->builder, &process->stages.call_builder, call,
				     python_context_of(recorder, process, call, &python)))
			log_warning("a call record of process %u could not be decoded",
				    header->pid);
		return 0;
	case TCHECK_RECORD_PROCESS_FORK:
		if (!recorder->options->follow_children)
			return 0;
		process = recorder_add_process(recorder, notice->child_pid, header->pid);
		if (process)
			recorder_image_started(recorder, process, header->timestamp_ns, false,
					       notice->python_from_start);
		return 0;
	case TCHECK_RECORD_PROCESS_EXEC:
		/* A new image: new libraries, new environment, no communicators. */
		process = process_registry_find(&recorder->processes, header->pid);
		if (process)
			recorder_end_image(recorder, process, header->timestamp_ns);
		process = recorder_add_process(recorder, header->pid, 0);
		if (process) {
			recorder_image_started(recorder, process, header->timestamp_ns, true,
					       notice->python_from_start);
			recorder_refresh_process(recorder, process);
			process_registry_take_exec_command(process, notice);
			process_registry_take_exec_environment(process, notice);
			recorder_write_process(recorder, process);
		}
		/* The new image's libraries need a look too. */
		__attribute__((fallthrough));
	case TCHECK_RECORD_LIBRARY_CHANGE:
		process = process_registry_find(&recorder->processes, header->pid);
		/*
		 * A process whose Python is followed (or not asked for) loads
		 * extension modules by the hundred at import: one scan of its
		 * maps once the batch is read stands for all of them. Nothing in
		 * the batch needs it: only probes the scan attaches could send.
		 */
		if (process && header->type == TCHECK_RECORD_LIBRARY_CHANGE &&
		    (!recorder->python || process->python_followed_ns)) {
			process->libraries_changed = true;
			recorder->libraries_changed = true;
			return 0;
		}
		/* libpython is mapped by the loader after exec: look again now. */
		recorder_scan_libraries(recorder, header->pid, process);
		return 0;
	case TCHECK_RECORD_PROCESS_EXIT:
		recorder_end_process(recorder, header->pid, notice->exit_code);
		return 0;
	case TCHECK_RECORD_PYTHON_CALL:
		process = recorder_adopt_process(recorder, header->pid);
		if (recorder->python && size >= sizeof(struct tcheck_python_record))
			python_tracer_handle(recorder->python, python_of(process), data);
		return 0;
	case TCHECK_RECORD_VERBS_CONTEXT:
		if (work_requests_handle_record(recorder->work_requests, data, size, error,
						sizeof(error)))
			log_warning("%s", error);
		return 0;
	case TCHECK_RECORD_PYTHON_EXCEPTION:
		process = recorder_adopt_process(recorder, header->pid);
		if (recorder->python && size >= sizeof(struct tcheck_python_exception_record))
			python_tracer_handle_exception(recorder->python, python_of(process), data);
		if (recorder->options->freeze_on_crash &&
		    size >= sizeof(struct tcheck_python_exception_record))
			say_frozen(data);
		return 0;
	case TCHECK_RECORD_TORCH_SCOPE:
		process = recorder_adopt_process(recorder, header->pid);
		if (recorder->python && size >= sizeof(struct tcheck_torch_scope_record))
			python_tracer_handle_scope(recorder->python, python_of(process), data);
		return 0;
	case TCHECK_RECORD_PROCESS_GROUP:
		process = recorder_adopt_process(recorder, header->pid);
		if (!process || size < sizeof(struct tcheck_process_group_record))
			return 0;
		if (c10d_calls_group_built(recorder->c10d, &process->stages.c10d, data))
			log_warning("process %u: out of memory for its process groups",
				    header->pid);
		recorder_take_process_group_rank(recorder, process, data);
		return 0;
	case TCHECK_RECORD_STORE_PREFIX:
		process = recorder_adopt_process(recorder, header->pid);
		if (process && size >= sizeof(struct tcheck_store_prefix_record) &&
		    c10d_calls_store_prefix(recorder->c10d, &process->stages.c10d, data))
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
		process = recorder_adopt_process(recorder, header->pid);
		if (recorder->python && size >= TCHECK_TORCH_OP_RECORD_SHORT_BYTES)
			take_torch_op(recorder, python_of(process), data, size);
		return 0;
	default:
		return 0;
	}
}

static int take_open_call(void *context, const struct tcheck_call_record *record)
{
	struct recorder *recorder = context;

	if (!process_registry_find(&recorder->processes, record->header.pid) ||
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
void recorder_read_open_calls(struct recorder *recorder, bool in_flight)
{
	struct trace_python_context python;

	recorder->open_call_count = 0;
	if (open_calls_read(probe_session_open_calls_fd(recorder->session), monotonic_ns(),
			    take_open_call, recorder) < 0 &&
	    !in_flight)
		log_warning("the calls still open could not be read: %s", strerror(errno));
	probe_session_drain(recorder->session);
	recorder->reading_calls_in_flight = in_flight;
	for (size_t i = 0; i < recorder->open_call_count; i++) {
		const struct tcheck_call_record *call = &recorder->open_calls[i];
		/* In the registry: take_open_call kept only the calls of traced processes. */
		struct traced_process *process =
			process_registry_find(&recorder->processes, call->header.pid);

		if (process)
			(void)call_builder_add(recorder->builder, &process->stages.call_builder,
					       call,
					       python_context_of(recorder, process, call, &python));
	}
	recorder->reading_calls_in_flight = 0;
}
