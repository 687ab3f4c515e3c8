// SPDX-License-Identifier: MIT
/* Reports of traced processes that died; see crash_report.h. */
#include "diagnose/crash_report.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "base/job_rank_text.h"

#include "export/export_jsonl.h"
#include "model/nccl_api.h"

static const char *signal_name(int number)
{
	static const struct {
		int number;
		const char *name;
	} names[] = {
		{ SIGHUP, "SIGHUP" },	{ SIGINT, "SIGINT" },	{ SIGQUIT, "SIGQUIT" },
		{ SIGILL, "SIGILL" },	{ SIGTRAP, "SIGTRAP" }, { SIGABRT, "SIGABRT" },
		{ SIGBUS, "SIGBUS" },	{ SIGFPE, "SIGFPE" },	{ SIGKILL, "SIGKILL" },
		{ SIGUSR1, "SIGUSR1" }, { SIGSEGV, "SIGSEGV" }, { SIGUSR2, "SIGUSR2" },
		{ SIGPIPE, "SIGPIPE" }, { SIGALRM, "SIGALRM" }, { SIGTERM, "SIGTERM" },
		{ SIGXCPU, "SIGXCPU" }, { SIGXFSZ, "SIGXFSZ" }, { SIGSYS, "SIGSYS" },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].number == number)
			return names[i].name;
	return NULL;
}

/* "signal", "killed", "exit" or "nccl_error": how the process ended, for machines. */
static const char *reason_of(const struct crash_report *report)
{
	if (report->error_function)
		return "nccl_error";
	if (report->signal == SIGKILL)
		return "killed";
	return report->signal ? "signal" : "exit";
}

/* The same, for people. */
static void describe_end(const struct crash_report *report, char *text, size_t size)
{
	const char *name = signal_name(report->signal);
	const char *error = nccl_result_name(report->error_result);

	if (report->error_function && error)
		snprintf(text, size, "got %s from %s", error, report->error_function);
	else if (report->error_function)
		snprintf(text, size, "got NCCL error %d from %s", report->error_result,
			 report->error_function);
	else if (report->signal == SIGKILL)
		snprintf(text, size,
			 "was killed (SIGKILL: kill -9 from outside, or the OOM killer)");
	else if (report->signal && name)
		snprintf(text, size, "died of %s%s", name,
			 report->core_dumped ? " (core dumped)" : "");
	else if (report->signal)
		snprintf(text, size, "died of signal %d%s", report->signal,
			 report->core_dumped ? " (core dumped)" : "");
	else
		snprintf(text, size, "exited with status %d%s", report->exit_status,
			 report->exception.handled_at_exit ? " (sys.exit in a handler)"
			 : report->exit_status == 1 && report->last_python[0]
				 ? " (as an uncaught Python exception ends one)"
				 : "");
}

static void take_standing(const struct progress_model *model, uint32_t pid,
			  struct crash_report *report)
{
	for (unsigned i = 0; i < model->comm_count && report->comm_count < CRASH_COMMS_MAX; i++) {
		const struct progress_comm *comm = &model->comms[i];
		struct crash_comm *out;
		bool member = false;

		for (int32_t r = 0; r < comm->nranks; r++)
			member |= comm->ranks[r].pid == pid;
		if (!member)
			continue;
		out = &report->comms[report->comm_count++];
		out->comm_id = comm->comm_id;
		out->nranks = comm->nranks;
		for (int32_t r = 0; r < comm->nranks; r++) {
			const struct progress_rank *rank = &comm->ranks[r];

			out->ranks[r] = (struct crash_rank){
				.rank = r,
				.job_rank = -1,
				.pid = rank->present ? rank->pid : 0,
				.function = rank->present ? rank->last.function : NULL,
				.seq = rank->present ? rank->last.seq : -1,
				.inside = rank->present && rank->last.open,
				.finished = rank->finished,
			};
		}
	}
}

int32_t crash_nccl_error_of(const struct trace_nccl_call *call)
{
	int32_t polled = (int32_t)(uint32_t)call->out_value;

	if (call->result != NCCL_RESULT_SUCCESS && call->result != NCCL_RESULT_IN_PROGRESS &&
	    !(call->flags & TRACE_CALL_OPEN))
		return call->result;
	if (call->api && call->api->kind == NCCL_KIND_ERROR_QUERY &&
	    (call->flags & TRACE_CALL_OUT_VALUE_VALID) && polled != NCCL_RESULT_SUCCESS &&
	    polled != NCCL_RESULT_IN_PROGRESS)
		return polled;
	return 0;
}

void crash_report_fill_nccl_error(const struct progress_model *model,
				  const struct flight_recorder *flights,
				  const struct trace_nccl_call *call, int32_t result,
				  int32_t job_rank, struct crash_report *report)
{
	struct trace_process process = { .pid = call->pid,
					 .rank = job_rank,
					 .exit_code = 0,
					 .end_ns = call->entry_ns + call->duration_ns };

	crash_report_fill(model, flights, &process, report);
	report->error_function = call->function;
	report->error_result = result;
}

void crash_report_fill(const struct progress_model *model, const struct flight_recorder *flights,
		       const struct trace_process *process, struct crash_report *report)
{
	const struct flight_process *flight = flight_recorder_find(flights, process->pid);

	memset(report, 0, sizeof(*report));
	report->pid = process->pid;
	report->job_rank = process->rank;
	report->ended_ns = process->end_ns;
	report->wait_status = process->exit_code;
	report->signal = trace_exit_signal(process->exit_code);
	report->core_dumped = trace_exit_core_dumped(process->exit_code);
	report->exit_status = trace_exit_status(process->exit_code);
	report->step = -1;
	if (flight) {
		report->step = flight->step;
		report->stage = flight->stage;
		snprintf(report->last_python, sizeof(report->last_python), "%s",
			 flight->last_python);
		report->exception = flight->exception;
		for (unsigned i = 0; i < flight->count; i++)
			report->calls[report->call_count++] =
				*flight_process_call(flight, i, flights->ring_size);
	}
	take_standing(model, process->pid, report);
}

void crash_report_text(const struct crash_report *report, char *text, size_t size)
{
	char end[128], job_rank[JOB_RANK_TEXT_SIZE];
	int written;
	size_t used;

	describe_end(report, end, sizeof(end));
	written = snprintf(text, size, "crash: process %u (%s) %s", report->pid,
			   job_rank_text(report->job_rank, job_rank), end);
	used = written > 0 ? (size_t)written : 0;
	if (report->step >= 0 && used < size) {
		written = snprintf(text + used, size - used, " at step %d", report->step);
		used += written > 0 ? (size_t)written : 0;
	}
	if (report->exception.type[0] && used < size) {
		written =
			snprintf(text + used, size - used, "; %s %s%s%s%s%s",
				 report->exception.handled_at_exit ? "exception" : "uncaught",
				 report->exception.type, report->exception.message[0] ? ": " : "",
				 report->exception.message,
				 report->exception.frame_count ? ", raised in " : "",
				 report->exception.frame_count ? report->exception.frames[0] : "");
		used += written > 0 ? (size_t)written : 0;
	}
	if (report->exception.type[0] && report->exception.handled_at_exit && used < size) {
		written = snprintf(text + used, size - used,
				   " (caught by a handler that then exited)");
		used += written > 0 ? (size_t)written : 0;
	}
	if (report->last_python[0] && used < size) {
		written = snprintf(text + used, size - used, "; last in Python: %s",
				   report->last_python);
		used += written > 0 ? (size_t)written : 0;
	}
	if (report->call_count && used < size) {
		const struct flight_call *last = &report->calls[report->call_count - 1];

		written =
			snprintf(text + used, size - used, "; its last call: %s seq %" PRId64 "%s",
				 last->function ? last->function : "?", last->seq,
				 last->open ? " (inside it)" : "");
		used += written > 0 ? (size_t)written : 0;
	}
	for (unsigned c = 0; c < report->comm_count && used < size; c++) {
		const struct crash_comm *comm = &report->comms[c];

		written = snprintf(text + used, size - used, "; communicator 0x%016" PRIx64 ":",
				   comm->comm_id);
		used += written > 0 ? (size_t)written : 0;
		for (int32_t r = 0; r < comm->nranks && used < size; r++) {
			const struct crash_rank *rank = &comm->ranks[r];

			if (rank->function)
				written = snprintf(text + used, size - used,
						   "%s rank %d at %s seq %" PRId64 "%s",
						   r ? "," : "", r, rank->function, rank->seq,
						   rank->inside ? " (inside)" : "");
			else
				written = snprintf(text + used, size - used, "%s rank %d not seen",
						   r ? "," : "", r);
			used += written > 0 ? (size_t)written : 0;
		}
	}
}

static json_t *call_json(const struct flight_call *call)
{
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:b}", "function",
			 export_json_text(call->function ? call->function : ""), "comm_id",
			 call->comm_id ? export_json_identity(call->comm_id) : json_null(), "seq",
			 export_json_known_or_null(call->seq), "count",
			 export_json_unsigned(call->count), "ts_ns",
			 export_json_unsigned(call->entry_ns), "dur_ns",
			 export_json_unsigned(call->duration_ns), "step",
			 export_json_known_or_null(call->step), "open", call->open);
}

static json_t *comm_json(const struct crash_comm *comm)
{
	json_t *ranks = json_array();

	for (int32_t r = 0; ranks && r < comm->nranks; r++) {
		const struct crash_rank *rank = &comm->ranks[r];

		json_array_append_new(
			ranks,
			json_pack("{s:i, s:o, s:o, s:o, s:o, s:b, s:b}", "rank", (json_int_t)r,
				  "job_rank", export_json_known_or_null(rank->job_rank), "pid",
				  rank->pid ? json_integer(rank->pid) : json_null(),
				  "last_function",
				  rank->function ? export_json_text(rank->function) : json_null(),
				  "last_seq", export_json_known_or_null(rank->seq), "inside",
				  rank->inside, "finished", rank->finished));
	}
	return json_pack("{s:o, s:i, s:o}", "comm_id", export_json_identity(comm->comm_id),
			 "nranks", (json_int_t)comm->nranks, "ranks", ranks ? ranks : json_null());
}

/*
 * {"type", "message", "python_stack", "handled_at_exit"}, or null when no
 * exception was seen to end the process.
 */
static json_t *exception_json(const struct flight_exception *exception)
{
	json_t *stack = json_array();

	if (!exception->type[0]) {
		json_decref(stack);
		return json_null();
	}
	for (unsigned i = 0; stack && i < exception->frame_count; i++)
		json_array_append_new(stack, json_string(exception->frames[i]));
	return json_pack("{s:s, s:o, s:o, s:b}", "type", exception->type, "message",
			 exception->message[0] ? json_string(exception->message) : json_null(),
			 "python_stack", stack ? stack : json_null(), "handled_at_exit",
			 exception->handled_at_exit);
}

json_t *crash_report_json(const struct crash_report *report)
{
	const char *name = signal_name(report->signal);
	json_t *calls = json_array(), *comms = json_array(), *object;

	for (unsigned i = 0; calls && i < report->call_count; i++)
		json_array_append_new(calls, call_json(&report->calls[i]));
	for (unsigned i = 0; comms && i < report->comm_count; i++)
		json_array_append_new(comms, comm_json(&report->comms[i]));
	object = json_pack(
		"{s:s, s:I, s:o, s:o, s:s, s:o, s:b, s:o, s:o, s:o, s:o, s:o, s:o}", "kind",
		"crash", "pid", (json_int_t)report->pid, "job_rank",
		export_json_known_or_null(report->job_rank), "ended_ns",
		export_json_unsigned(report->ended_ns), "reason", reason_of(report), "signal",
		report->signal ? (name ? json_string(name) : json_integer(report->signal))
			       : json_null(),
		"core_dumped", report->core_dumped, "exit_status",
		report->signal || report->error_function ? json_null()
							 : json_integer(report->exit_status),
		"step", export_json_known_or_null(report->step), "stage",
		export_json_stage(report->stage), "last_python",
		report->last_python[0] ? json_string(report->last_python) : json_null(),
		"last_calls", calls ? calls : json_null(), "communicators",
		comms ? comms : json_null());
	if (object)
		json_object_set_new(object, "exception", exception_json(&report->exception));
	if (object && report->error_function) {
		const char *error = nccl_result_name(report->error_result);

		json_object_set_new(object, "nccl_function", json_string(report->error_function));
		json_object_set_new(object, "nccl_error",
				    error ? json_string(error)
					  : json_integer(report->error_result));
	}
	return object;
}
