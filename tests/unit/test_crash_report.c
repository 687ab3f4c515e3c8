// SPDX-License-Identifier: MIT
/*
 * Tests of the flight recorder and crash reports on hand-built call
 * streams: a process's last calls, step and Python event, how it ended,
 * and where its peers stood, each known by construction.
 */
#include <jansson.h>
#include <signal.h>
#include <string.h>

#include "diagnose/crash_report.h"
#include "diagnose/flight_recorder.h"
#include "diagnose/job_diagnosis.h"
#include "diagnose/progress_model.h"
#include "unit.h"

#define COMM 0x4242000000000001ull

static struct trace_nccl_call all_reduce(uint32_t pid, int rank, int64_t seq, uint64_t entry_ns,
					 bool open)
{
	struct trace_nccl_call call;

	memset(&call, 0, sizeof(call));
	call.function = "ncclAllReduce";
	call.api = nccl_function_by_name(call.function);
	call.entry_ns = entry_ns;
	call.duration_ns = open ? 0 : 1000;
	call.pid = pid;
	call.tid = pid;
	call.param_count = 7;
	call.params[2] = 256;
	call.comm = 0x5000;
	call.comm_id = COMM;
	call.rank = rank;
	call.nranks = 2;
	call.seq = seq;
	call.step = (int32_t)seq;
	call.flags = open ? TRACE_CALL_OPEN : 0;
	return call;
}

/* The ring keeps the last calls oldest first; a call seen open and then returned is one. */
UNIT_TEST(crash_report, flight_ring_keeps_the_last_calls)
{
	static struct flight_recorder flights;
	const struct flight_process *process;
	struct trace_nccl_call call;

	flight_recorder_init(&flights, 4);
	for (int64_t seq = 0; seq < 10; seq++) {
		call = all_reduce(100, 0, seq, 1000 + (uint64_t)seq, false);
		flight_recorder_call(&flights, &call);
	}
	call = all_reduce(100, 0, 10, 2000, true);
	flight_recorder_call(&flights, &call);
	flight_recorder_call(&flights, &call);
	process = flight_recorder_find(&flights, 100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(process);
	CU_ASSERT_EQUAL_FATAL(process->count, 4);
	for (unsigned i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(flight_process_call(process, i, 4)->seq, 7 + (int64_t)i);
	CU_ASSERT_TRUE(flight_process_call(process, 3, 4)->open);
	CU_ASSERT_EQUAL(flight_process_call(process, 3, 4)->count, 256);
	call.flags = 0;
	flight_recorder_call(&flights, &call);
	CU_ASSERT_FALSE(flight_process_call(process, 3, 4)->open);
	CU_ASSERT_EQUAL(process->count, 4);
	CU_ASSERT_PTR_NULL(flight_recorder_find(&flights, 101));
	flight_recorder_free(&flights);
}

/* One ncclBcast as the probes report it, the library's inner ncclBroadcast included. */
static struct trace_nccl_call bcast_call(const char *function, uint32_t depth, uint64_t entry_ns,
					 bool open)
{
	struct trace_nccl_call call = all_reduce(100, 0, depth ? -1 : 3, entry_ns, open);

	call.function = function;
	call.api = nccl_function_by_name(function);
	call.depth = depth;
	return call;
}

/*
 * The ring holds what the program called: the ncclBroadcast that ncclBcast
 * makes inside the library is left out, whether the outer call was seen open
 * at a tick (it enters the ring before the inner call returns) or not.
 */
UNIT_TEST(crash_report, flight_ring_leaves_out_inner_library_calls)
{
	static struct flight_recorder flights;
	const struct flight_process *process;
	struct trace_nccl_call outer_open = bcast_call("ncclBcast", 0, 2000, true);
	struct trace_nccl_call inner = bcast_call("ncclBroadcast", 1, 2100, false);
	struct trace_nccl_call outer = bcast_call("ncclBcast", 0, 2000, false);
	struct trace_nccl_call after = all_reduce(100, 0, 4, 3000, false);

	for (int seen_open = 0; seen_open < 2; seen_open++) {
		flight_recorder_init(&flights, 2);
		if (seen_open)
			flight_recorder_call(&flights, &outer_open);
		flight_recorder_call(&flights, &inner);
		flight_recorder_call(&flights, &outer);
		flight_recorder_call(&flights, &after);
		process = flight_recorder_find(&flights, 100);
		CU_ASSERT_PTR_NOT_NULL_FATAL(process);
		CU_ASSERT_EQUAL(process->count, 2);
		CU_ASSERT_STRING_EQUAL(flight_process_call(process, 0, 2)->function, "ncclBcast");
		CU_ASSERT_FALSE(flight_process_call(process, 0, 2)->open);
		CU_ASSERT_STRING_EQUAL(flight_process_call(process, 1, 2)->function,
				       "ncclAllReduce");
		flight_recorder_free(&flights);
	}
}

/*
 * Records that arrive late take their place by entry time: a tick's look at
 * a call long returned and pushed out of the ring does not come back in, a
 * returned call is not reopened by it, and a long call that returns after
 * later ones sits before them.
 */
UNIT_TEST(crash_report, flight_ring_keeps_entry_order_whatever_the_arrival)
{
	static struct flight_recorder flights;
	const struct flight_process *process;
	struct trace_nccl_call call, stale;

	flight_recorder_init(&flights, 3);
	stale = all_reduce(100, 0, 0, 1000, true);
	call = all_reduce(100, 0, 0, 1000, false);
	flight_recorder_call(&flights, &call);
	for (int64_t seq = 1; seq < 4; seq++) {
		call = all_reduce(100, 0, seq, 1000 + 10 * (uint64_t)seq, false);
		flight_recorder_call(&flights, &call);
	}
	flight_recorder_call(&flights, &stale);
	process = flight_recorder_find(&flights, 100);
	CU_ASSERT_PTR_NOT_NULL_FATAL(process);
	for (unsigned i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL(flight_process_call(process, i, 3)->seq, 1 + (int64_t)i);
		CU_ASSERT_FALSE(flight_process_call(process, i, 3)->open);
	}
	/* seq 3 seen open again after it returned: it stays returned. */
	stale = all_reduce(100, 0, 3, 1030, true);
	flight_recorder_call(&flights, &stale);
	CU_ASSERT_FALSE(flight_process_call(process, 2, 3)->open);
	/* seq 5 returns before seq 4, which began first. */
	call = all_reduce(100, 0, 5, 1050, false);
	flight_recorder_call(&flights, &call);
	call = all_reduce(100, 0, 4, 1040, false);
	flight_recorder_call(&flights, &call);
	for (unsigned i = 0; i < 3; i++)
		CU_ASSERT_EQUAL(flight_process_call(process, i, 3)->seq, 3 + (int64_t)i);
	flight_recorder_free(&flights);
}

/*
 * Rank 1 (pid 101) dies of SIGSEGV at step 5 after its all-reduce seq 4;
 * rank 0 is inside all-reduce seq 5: the report says so, with rank 1's
 * last Python event and calls.
 */
UNIT_TEST(crash_report, signal_death_with_peers_standing)
{
	static struct flight_recorder flights;
	static struct crash_report report;
	struct progress_model *model = progress_model_new(NULL);
	struct trace_python_call python;
	struct trace_process process;
	int64_t step;
	char text[2048];
	json_t *object;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	flight_recorder_init(&flights, 0);
	for (int64_t seq = 0; seq <= 5; seq++)
		for (int rank = 0; rank < 2; rank++) {
			struct trace_nccl_call call;

			if (rank == 1 && seq == 5)
				continue;
			call = all_reduce(100 + (uint32_t)rank, rank, seq, 1000000 * (uint64_t)seq,
					  rank == 0 && seq == 5);
			progress_model_add_call(model, &call, &step);
			flight_recorder_call(&flights, &call);
		}
	memset(&python, 0, sizeof(python));
	python.pid = 101;
	python.entry_ns = 4500000;
	python.step = 5;
	python.stage = TRACE_STAGE_TRAIN;
	python.qualified_name = "Model.forward";
	flight_recorder_python(&flights, &python);

	memset(&process, 0, sizeof(process));
	process.pid = 101;
	process.rank = 1;
	process.end_ns = 6000000;
	process.exit_code = SIGSEGV | 0x80;
	CU_ASSERT_TRUE(trace_exit_crashed(process.exit_code, false));
	CU_ASSERT_FALSE(trace_exit_crashed(0, true));
	crash_report_fill(model, &flights, &process, &report);
	CU_ASSERT_EQUAL(report.signal, SIGSEGV);
	CU_ASSERT_TRUE(report.core_dumped);
	CU_ASSERT_EQUAL(report.step, 5);
	CU_ASSERT_STRING_EQUAL(report.last_python, "Model.forward");
	CU_ASSERT_EQUAL_FATAL(report.call_count, 5);
	CU_ASSERT_EQUAL(report.calls[4].seq, 4);
	CU_ASSERT_EQUAL_FATAL(report.comm_count, 1);
	CU_ASSERT_EQUAL(report.comms[0].ranks[0].pid, 100);
	CU_ASSERT_EQUAL(report.comms[0].ranks[0].seq, 5);
	CU_ASSERT_TRUE(report.comms[0].ranks[0].inside);
	CU_ASSERT_EQUAL(report.comms[0].ranks[1].seq, 4);
	CU_ASSERT_FALSE(report.comms[0].ranks[1].inside);
	crash_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text,
				      "process 101 (job rank 1) died of SIGSEGV (core dumped) "
				      "at step 5"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "rank 0 at ncclAllReduce seq 5 (inside)"));
	object = crash_report_json(&report);
	CU_ASSERT_PTR_NOT_NULL_FATAL(object);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "kind")), "crash");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "reason")), "signal");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "signal")), "SIGSEGV");
	CU_ASSERT_EQUAL(json_array_size(json_object_get(object, "last_calls")), 5);
	json_decref(object);
	progress_model_free(model);
	flight_recorder_free(&flights);
}

/* Exit statuses and kills: what wait() says, in words. */
UNIT_TEST(crash_report, exit_status_and_kill)
{
	static struct flight_recorder flights;
	static struct crash_report report;
	struct progress_model *model = progress_model_new(NULL);
	struct trace_process process;
	char text[1024];

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	flight_recorder_init(&flights, 0);
	memset(&process, 0, sizeof(process));
	process.pid = 7;
	process.rank = -1;
	process.exit_code = 1 << 8;
	crash_report_fill(model, &flights, &process, &report);
	CU_ASSERT_EQUAL(report.signal, 0);
	CU_ASSERT_EQUAL(report.exit_status, 1);
	CU_ASSERT_EQUAL(report.step, -1);
	CU_ASSERT_EQUAL(report.call_count, 0);
	crash_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "exited with status 1"));
	process.exit_code = SIGKILL;
	crash_report_fill(model, &flights, &process, &report);
	crash_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "was killed (SIGKILL"));
	progress_model_free(model);
	flight_recorder_free(&flights);
}

/* Feeds a process record as the recorder writes one: started (end_ns 0), or ended. */
static void feed_process(struct job_diagnosis *diagnosis, uint32_t pid, uint32_t parent_pid,
			 int32_t rank, int32_t wait_status, uint64_t end_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_PROCESS };

	record.process.pid = pid;
	record.process.parent_pid = parent_pid;
	record.process.rank = rank;
	record.process.local_rank = record.process.world_size = -1;
	record.process.exit_code = end_ns ? wait_status : -1;
	record.process.start_ns = 1000;
	record.process.end_ns = end_ns;
	record.process.command = "test";
	job_diagnosis_record(diagnosis, &record, 0);
}

/*
 * Which ends are the job's crashes: a non-zero exit of the command the
 * tracer started, of a rank, or of a process whose calls were followed; any
 * fatal signal; not the non-zero exit of a helper the job ran (no rank, no
 * call followed), such as `mountpoint -q`.
 */
UNIT_TEST(crash_report, helpers_failing_are_not_crashes)
{
	struct trace_record python = { .kind = TRACE_RECORD_PYTHON_CALL };
	struct progress_options options = { 0 };
	struct job_diagnosis *diagnosis;
	char *text = NULL;
	size_t text_size = 0;
	FILE *out = open_memstream(&text, &text_size);

	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	diagnosis = job_diagnosis_new(&options, out, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(diagnosis);
	/* The command the tracer started (its parent, 1, is not traced), and a helper of it. */
	feed_process(diagnosis, 200, 1, -1, 0, 0);
	feed_process(diagnosis, 201, 200, -1, 0, 0);
	feed_process(diagnosis, 201, 200, -1, 1 << 8, 5000);
	CU_ASSERT_EQUAL(job_diagnosis_crash_count(diagnosis), 0);
	/* A helper that dies of a signal is reported. */
	feed_process(diagnosis, 202, 200, -1, 0, 0);
	feed_process(diagnosis, 202, 200, -1, SIGSEGV, 5100);
	CU_ASSERT_EQUAL(job_diagnosis_crash_count(diagnosis), 1);
	/* A rank. */
	feed_process(diagnosis, 203, 200, 1, 0, 0);
	feed_process(diagnosis, 203, 200, 1, 1 << 8, 5200);
	CU_ASSERT_EQUAL(job_diagnosis_crash_count(diagnosis), 2);
	/* A worker without a rank whose Python was followed, and a helper of it that succeeds. */
	feed_process(diagnosis, 204, 200, -1, 0, 0);
	python.python_call.pid = 204;
	python.python_call.step = 3;
	python.python_call.qualified_name = "train.step";
	python.python_call.file = "train.py";
	python.python_call.entry_ns = 2000;
	job_diagnosis_record(diagnosis, &python, 0);
	feed_process(diagnosis, 205, 204, -1, 0, 0);
	feed_process(diagnosis, 205, 204, -1, 0, 5300);
	feed_process(diagnosis, 204, 200, -1, 2 << 8, 5400);
	CU_ASSERT_EQUAL(job_diagnosis_crash_count(diagnosis), 3);
	/* The command itself. */
	feed_process(diagnosis, 200, 1, -1, 1 << 8, 5500);
	CU_ASSERT_EQUAL(job_diagnosis_crash_count(diagnosis), 4);
	job_diagnosis_finish(diagnosis);
	fclose(out);
	CU_ASSERT_PTR_NULL(strstr(text, "process 201 "));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "process 202 (no job rank) died of SIGSEGV"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "process 203 (job rank 1) exited with status 1"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "process 204 (no job rank) exited with status 2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "process 200 (no job rank) exited with status 1"));
	free(text);
	job_diagnosis_free(diagnosis);
}

/* An NCCL call that returned an error, or a poll that found one: what and from where. */
UNIT_TEST(crash_report, nccl_errors_returned_and_polled)
{
	static struct flight_recorder flights;
	static struct crash_report report;
	struct progress_model *model = progress_model_new(NULL);
	struct trace_nccl_call call = all_reduce(100, 0, 3, 5000, false);
	char text[1024];
	json_t *object;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	flight_recorder_init(&flights, 0);
	CU_ASSERT_EQUAL(crash_nccl_error_of(&call), 0);
	call.result = NCCL_RESULT_IN_PROGRESS;
	CU_ASSERT_EQUAL(crash_nccl_error_of(&call), 0);
	call.result = 6; /* ncclRemoteError */
	CU_ASSERT_EQUAL(crash_nccl_error_of(&call), 6);
	memset(&call, 0, sizeof(call));
	call.function = "ncclCommGetAsyncError";
	call.api = nccl_function_by_name(call.function);
	call.pid = 100;
	call.out_value = 6;
	CU_ASSERT_EQUAL(crash_nccl_error_of(&call), 0); /* the value was not read */
	call.flags = TRACE_CALL_OUT_VALUE_VALID;
	CU_ASSERT_EQUAL(crash_nccl_error_of(&call), 6);
	crash_report_fill_nccl_error(model, &flights, &call, 6, 3, &report);
	crash_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "process 100 (job rank 3) got ncclRemoteError from "
					    "ncclCommGetAsyncError"));
	object = crash_report_json(&report);
	CU_ASSERT_PTR_NOT_NULL_FATAL(object);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "reason")), "nccl_error");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "nccl_error")),
			       "ncclRemoteError");
	CU_ASSERT_TRUE(json_is_null(json_object_get(object, "exit_status")));
	json_decref(object);
	progress_model_free(model);
	flight_recorder_free(&flights);
}

/* Makes python the record of a ValueError with its message and two frames, innermost first. */
static void set_value_error(struct trace_python_call *python, uint32_t flags, const char *message,
			    const char *innermost, const char *outer)
{
	python->flags = flags;
	python->qualified_name = "ValueError";
	python->arg_count = 1;
	python->args[0] = (struct trace_python_arg){ .name = "message",
						     .type = TRACE_VALUE_STR,
						     .text = message };
	python->py_stack.depth = 2;
	python->py_stack.frames[0] = innermost;
	python->py_stack.frames[1] = outer;
}

/* An uncaught exception the process printed: kept apart from its calls, given by the report. */
UNIT_TEST(crash_report, uncaught_exception_is_reported)
{
	static struct flight_recorder flights;
	static struct crash_report report;
	struct progress_model *model = progress_model_new(NULL);
	struct trace_python_call python;
	struct trace_process process;
	char text[2048];
	json_t *object, *exception;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	flight_recorder_init(&flights, 0);
	memset(&python, 0, sizeof(python));
	python.pid = 55;
	python.entry_ns = 100;
	python.step = 4;
	python.qualified_name = "torch.nn.modules.module.Module._call_impl";
	flight_recorder_python(&flights, &python);
	python.entry_ns = 200;
	set_value_error(&python, TRACE_PYTHON_RAISED | TRACE_PYTHON_UNCAUGHT, "bad shape at step 4",
			"Model.forward", "train");
	flight_recorder_python(&flights, &python);
	memset(&process, 0, sizeof(process));
	process.pid = 55;
	process.rank = 0;
	process.exit_code = 1 << 8;
	crash_report_fill(model, &flights, &process, &report);
	/* The exception record is no Python call: the last one stays the module call. */
	CU_ASSERT_STRING_EQUAL(report.last_python, "torch.nn.modules.module.Module._call_impl");
	CU_ASSERT_STRING_EQUAL(report.exception.type, "ValueError");
	crash_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "uncaught ValueError: bad shape at step 4, raised in "
					    "Model.forward"));
	object = crash_report_json(&report);
	CU_ASSERT_PTR_NOT_NULL_FATAL(object);
	exception = json_object_get(object, "exception");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(exception, "type")), "ValueError");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(exception, "message")),
			       "bad shape at step 4");
	CU_ASSERT_EQUAL(json_array_size(json_object_get(exception, "python_stack")), 2);
	CU_ASSERT_TRUE(json_is_false(json_object_get(exception, "handled_at_exit")));
	json_decref(object);
	progress_model_free(model);
	flight_recorder_free(&flights);
}

/*
 * A worker whose launcher caught its exception and called sys.exit(1)
 * (torch.multiprocessing.spawn): the exception is the end's cause, said as
 * caught, not as uncaught, and the exit is not put down to an uncaught one.
 */
UNIT_TEST(crash_report, exception_handled_at_exit_is_reported)
{
	static struct flight_recorder flights;
	static struct crash_report report;
	struct progress_model *model = progress_model_new(NULL);
	struct trace_python_call python;
	struct trace_process process;
	char text[2048];
	json_t *object, *exception;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	flight_recorder_init(&flights, 0);
	memset(&python, 0, sizeof(python));
	python.pid = 56;
	python.entry_ns = 100;
	set_value_error(
		&python, TRACE_PYTHON_RAISED | TRACE_PYTHON_UNCAUGHT | TRACE_PYTHON_HANDLED_AT_EXIT,
		"batch 3 failed its check", "check_batch", "torch.multiprocessing.spawn._wrap");
	flight_recorder_python(&flights, &python);
	memset(&process, 0, sizeof(process));
	process.pid = 56;
	process.rank = -1;
	process.exit_code = 1 << 8;
	crash_report_fill(model, &flights, &process, &report);
	crash_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "exited with status 1 (sys.exit in a handler)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "; exception ValueError: batch 3 failed its check, "
					    "raised in check_batch (caught by a handler"));
	CU_ASSERT_PTR_NULL(strstr(text, "uncaught"));
	object = crash_report_json(&report);
	CU_ASSERT_PTR_NOT_NULL_FATAL(object);
	exception = json_object_get(object, "exception");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(exception, "type")), "ValueError");
	CU_ASSERT_TRUE(json_is_true(json_object_get(exception, "handled_at_exit")));
	CU_ASSERT_STRING_EQUAL(
		json_string_value(json_array_get(json_object_get(exception, "python_stack"), 0)),
		"check_batch");
	json_decref(object);
	progress_model_free(model);
	flight_recorder_free(&flights);
}
