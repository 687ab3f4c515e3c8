// SPDX-License-Identifier: MIT
/* Tests of the JSON Lines and Perfetto exporters: every field parsed back and checked. */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "export/export_jsonl.h"
#include "export/export_perfetto.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"
#include "scratch_files.h"
#include "unit.h"

#define ERROR_SIZE 640

enum sample {
	SAMPLE_ALL_REDUCE,
	SAMPLE_INIT_RANK,
	SAMPLE_ASYNC_ERROR,
	SAMPLE_SEND,
	SAMPLE_REDUCE,
	SAMPLE_UNKNOWN_FUNCTION,
	SAMPLE_UNRANKED_CALL,
	SAMPLE_RESTARTED_RANK_CALL,
	SAMPLE_PROCESS,
	SAMPLE_RESTARTED_RANK,
	SAMPLE_COMMUNICATOR,
	SAMPLE_LIBRARY,
	SAMPLE_STATS,
	SAMPLE_PYTHON_CALL,
	SAMPLE_TORCH_SCOPE,
	SAMPLE_COUNT,
};

#define SAMPLE_CALLS 8
#define SAMPLE_PYTHON_CALLS 2

static struct trace_record make_call(const char *function, uint32_t pid, uint32_t tid,
				     uint64_t entry_ns, uint64_t duration_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_NCCL_CALL };

	record.call = (struct trace_nccl_call){
		.entry_ns = entry_ns,
		.duration_ns = duration_ns,
		.pid = pid,
		.tid = tid,
		.function = function,
		.api = nccl_function_by_name(function),
		.rank = -1,
		.nranks = -1,
		.seq = -1,
	};
	return record;
}

/* Calls come before the process records, as when a process's rank is learnt late. */
static void sample_records(struct trace_record records[SAMPLE_COUNT])
{
	struct trace_nccl_call *call;

	records[SAMPLE_ALL_REDUCE] =
		make_call("ncclAllReduce", 1000, 1001, 123456789012345ULL, 2500);
	call = &records[SAMPLE_ALL_REDUCE].call;
	call->group_depth = 1;
	call->param_count = 7;
	memcpy(call->params,
	       (uint64_t[]){ 0x7f0000001000ULL, 0x7f0000002000ULL, 1024, 7, 0, 0x555500001111ULL,
			     0 },
	       7 * sizeof(uint64_t));
	call->comm = 0x555500001111ULL;
	call->comm_id = 0xdeadbeefcafef00dULL;
	call->rank = 3;
	call->nranks = 8;
	call->seq = 42;

	records[SAMPLE_INIT_RANK] = make_call("ncclCommInitRank", 1000, 1000, 100000, 999);
	call = &records[SAMPLE_INIT_RANK].call;
	call->flags = TRACE_CALL_OUT_VALUE_VALID | TRACE_CALL_UNIQUE_ID_VALID;
	call->param_count = 4;
	/* The upper half of an int register is garbage the exporter must drop. */
	memcpy(call->params,
	       (uint64_t[]){ 0x7ffd00000010ULL, 0xffffffff00000008ULL, 0x8000000000000001ULL, 3 },
	       4 * sizeof(uint64_t));
	call->out_value = 0x555500002222ULL;
	call->unique_id_hash = 0x8000000000000001ULL;
	call->comm = 0x555500002222ULL;

	records[SAMPLE_ASYNC_ERROR] = make_call("ncclCommGetAsyncError", 1000, 1001, 200000, 10);
	call = &records[SAMPLE_ASYNC_ERROR].call;
	call->flags = TRACE_CALL_OUT_VALUE_VALID;
	call->param_count = 2;
	call->params[0] = 0x555500001111ULL;
	call->params[1] = 0x7ffd00000020ULL;
	call->out_value = 6;

	records[SAMPLE_SEND] = make_call("ncclSend", 1000, 1002, 300000, 20);
	call = &records[SAMPLE_SEND].call;
	call->result = 5;
	call->param_count = 6;
	memcpy(call->params,
	       (uint64_t[]){ 0xffff800000000000ULL, 16, 99, 0xfffffffffffffffeULL, 0x5555ULL, 0 },
	       6 * sizeof(uint64_t));
	call->seq = 0;

	records[SAMPLE_REDUCE] = make_call("ncclReduce", 1000, 1001, 400000, 30);
	call = &records[SAMPLE_REDUCE].call;
	call->result = 77;
	call->param_count = 8;
	memcpy(call->params, (uint64_t[]){ 1, 2, 3, 7, 5, 0, 0x5555ULL, 0 }, 8 * sizeof(uint64_t));

	records[SAMPLE_UNKNOWN_FUNCTION] = make_call("ncclFutureCall", 1000, 1001, 500000, 40);
	call = &records[SAMPLE_UNKNOWN_FUNCTION].call;
	call->param_count = 2;
	call->params[0] = 11;
	call->params[1] = 0xffffffffffffffffULL;

	records[SAMPLE_UNRANKED_CALL] = make_call("ncclGroupStart", 3000, 3001, 600000, 1);
	records[SAMPLE_RESTARTED_RANK_CALL] = make_call("ncclGroupEnd", 2000, 2000, 700000, 1);

	records[SAMPLE_PROCESS] = (struct trace_record){
		.kind = TRACE_RECORD_PROCESS,
		.process = { .pid = 1000,
			     .parent_pid = 999,
			     .rank = 3,
			     .local_rank = 3,
			     .world_size = 8,
			     .exit_code = 0,
			     .start_ns = 50000,
			     .end_ns = 900000,
			     .command = "python \xff train.py" },
	};
	records[SAMPLE_RESTARTED_RANK] = records[SAMPLE_PROCESS];
	records[SAMPLE_RESTARTED_RANK].process.pid = 2000;
	records[SAMPLE_RESTARTED_RANK].process.parent_pid = 0;
	records[SAMPLE_RESTARTED_RANK].process.exit_code = -1;
	records[SAMPLE_RESTARTED_RANK].process.end_ns = 0;
	records[SAMPLE_RESTARTED_RANK].process.command = "python train.py";

	records[SAMPLE_COMMUNICATOR] = (struct trace_record){
		.kind = TRACE_RECORD_COMMUNICATOR,
		.communicator = { .pid = 1000,
				  .origin = TRACE_COMM_SPLIT,
				  .handle = 0x555500003333ULL,
				  .comm_id = 0x0123456789abcdefULL,
				  .parent_comm_id = 0xdeadbeefcafef00dULL,
				  .rank = 1,
				  .nranks = 4,
				  .color = 2,
				  .split_index = 0,
				  .nccl_comm_hash = 0,
				  .seq_base = 0,
				  .seen_ns = 250000,
				  .note = "" },
	};
	records[SAMPLE_LIBRARY] = (struct trace_record){
		.kind = TRACE_RECORD_LIBRARY,
		.library = { .pid = 1000,
			     .functions_attached = 27,
			     .attached_ns = 60000,
			     .path = "/usr/lib/libnccl.so.2",
			     .build_id = "abcdef" },
	};
	records[SAMPLE_STATS] = (struct trace_record){
		.kind = TRACE_RECORD_STATS,
		.stats = { .timestamp_ns = 800000,
			   .calls = 8,
			   .ringbuf_drops = 1,
			   .unmatched_returns = 2,
			   .nesting_overflows = 3,
			   .filtered = 4,
			   .process_drops = 5,
			   .python_events_lost = 6 },
	};
	/* A Python function around the ncclAllReduce, on its thread, left by an exception. */
	records[SAMPLE_PYTHON_CALL] = (struct trace_record){
		.kind = TRACE_RECORD_PYTHON_CALL,
		.python_call = { .entry_ns = 123456789012000ULL,
				 .duration_ns = 5000,
				 .pid = 1000,
				 .tid = 1001,
				 .depth = 2,
				 .flags = TRACE_PYTHON_RAISED,
				 .first_line = 120,
				 .step = -1,
				 .qualified_name = "torch.distributed.all_reduce",
				 .file = "/usr/lib/python3/torch/distributed/c10d.py",
				 .stage = TRACE_STAGE_EVAL,
				 .rank = 3,
				 .world_size = 4,
				 .py_stack = { .depth = 2,
					       .frames = { "__main__.Trainer.sync",
							   "__main__.main" } },
				 .arg_count = 5,
				 .args = { { .name = "async_op",
					     .type = TRACE_VALUE_BOOL,
					     .integer = 1 },
					   { .name = "group", .type = TRACE_VALUE_NONE },
					   { .name = "scale",
					     .type = TRACE_VALUE_FLOAT,
					     .real = 0.5 },
					   { .name = "bucket",
					     .type = TRACE_VALUE_INT,
					     .integer = -7 },
					   { .name = "op",
					     .type = TRACE_VALUE_STR,
					     .text = "sum" } } },
	};
	records[SAMPLE_TORCH_SCOPE] = (struct trace_record){
		.kind = TRACE_RECORD_PYTHON_CALL,
		.python_call = { .entry_ns = 150000,
				 .duration_ns = 600000,
				 .pid = 1000,
				 .tid = 1000,
				 .depth = 0,
				 .flags = TRACE_PYTHON_TORCH_SCOPE,
				 .first_line = -1,
				 .step = 5,
				 .qualified_name = "ProfilerStep#5",
				 .file = "" },
	};
}

/* The closing chunk a closed trace ends with: its header and body. */
#define CLOSING_CHUNK_SIZE (TRACE_FORMAT_CHUNK_HEADER_SIZE + TRACE_FORMAT_CLOSING_SIZE)

static void write_sample_trace(const char *path, unsigned per_chunk)
{
	struct trace_record records[SAMPLE_COUNT];
	char error[ERROR_SIZE] = "";
	struct trace_header header = { 0 };
	struct trace_writer *writer;

	strcpy(header.hostname, "node-3");
	strcpy(header.boot_id, "boot-id-3");
	strcpy(header.command_line, "tcheck-bpf record");
	header.anchor_monotonic_ns = 40000;
	header.anchor_realtime_ns = 1700000000000000000ULL;
	sample_records(records);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, per_chunk, 0), 0);
	for (int i = 0; i < SAMPLE_COUNT; i++)
		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &records[i]), 0);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
}

typedef int (*exporter_function)(struct trace_reader *, FILE *, unsigned, char *, size_t);

/* Runs an exporter on 'path' into memory; returns the text (caller frees). */
static char *export_text(exporter_function exporter, const char *path, unsigned flags, int *status,
			 char *error, int *truncated)
{
	struct trace_reader *reader = trace_reader_open(path, error, ERROR_SIZE);
	char *text = NULL;
	size_t length = 0;
	FILE *out;

	CU_ASSERT_FATAL(reader != NULL);
	out = open_memstream(&text, &length);
	CU_ASSERT_FATAL(out != NULL);
	*status = exporter(reader, out, flags, error, ERROR_SIZE);
	fclose(out);
	if (truncated)
		*truncated = trace_reader_truncated(reader) != NULL;
	trace_reader_close(reader);
	return text;
}

/* Splits JSON Lines into parsed objects; returns how many. */
static size_t parse_lines(const char *text, json_t **objects, size_t capacity)
{
	size_t count = 0;

	while (text && *text && count < capacity) {
		const char *end = strchr(text, '\n');
		json_error_t parse_error;

		CU_ASSERT_PTR_NOT_NULL_FATAL(end);
		objects[count] = json_loadb(text, (size_t)(end - text), 0, &parse_error);
		CU_ASSERT_PTR_NOT_NULL_FATAL(objects[count]);
		count++;
		text = end + 1;
	}
	return count;
}

static void free_objects(json_t **objects, size_t count)
{
	for (size_t i = 0; i < count; i++)
		json_decref(objects[i]);
}

static int has_string(const json_t *object, const char *key, const char *value)
{
	const json_t *member = json_object_get(object, key);

	return json_is_string(member) && strcmp(json_string_value(member), value) == 0;
}

static int has_integer(const json_t *object, const char *key, json_int_t value)
{
	const json_t *member = json_object_get(object, key);

	return json_is_integer(member) && json_integer_value(member) == value;
}

static int has_null(const json_t *object, const char *key)
{
	return json_is_null(json_object_get(object, key));
}

static int has_boolean(const json_t *object, const char *key, int value)
{
	const json_t *member = json_object_get(object, key);

	return json_is_boolean(member) && json_is_true(member) == !!value;
}

static int is_call_kind(const json_t *object)
{
	return has_string(object, "kind", "nccl") || has_string(object, "kind", "py") ||
	       has_string(object, "kind", "torch_scope");
}

UNIT_TEST(exports, jsonl_calls)
{
	const char *path = scratch_path("calls.trace");
	char error[ERROR_SIZE] = "";
	json_t *lines[SAMPLE_COUNT + 2], *args;
	size_t count;
	int status;
	char *text;

	write_sample_trace(path, 4);
	text = export_text(export_jsonl, path, 0, &status, error, NULL);
	CU_ASSERT_EQUAL(status, 0);
	count = parse_lines(text, lines, SAMPLE_COUNT + 2);
	CU_ASSERT_EQUAL_FATAL(count, SAMPLE_COUNT + 1);

	CU_ASSERT(has_string(lines[0], "kind", "header"));
	CU_ASSERT(has_string(lines[0], "hostname", "node-3"));
	CU_ASSERT(has_string(lines[0], "boot_id", "boot-id-3"));
	CU_ASSERT(has_integer(lines[0], "anchor_monotonic_ns", 40000));
	CU_ASSERT(has_integer(lines[0], "anchor_realtime_ns", 1700000000000000000LL));
	CU_ASSERT(has_integer(lines[0], "format_version", 1));

	/* ncclAllReduce: every top-level field and every parameter. */
	CU_ASSERT(has_string(lines[1], "kind", "nccl"));
	CU_ASSERT(has_string(lines[1], "name", "ncclAllReduce"));
	CU_ASSERT(has_integer(lines[1], "pid", 1000));
	CU_ASSERT(has_integer(lines[1], "tid", 1001));
	CU_ASSERT(has_integer(lines[1], "ts_ns", 123456789012345LL));
	CU_ASSERT(has_integer(lines[1], "dur_ns", 2500));
	CU_ASSERT(has_integer(lines[1], "ret", 0));
	CU_ASSERT(has_string(lines[1], "ret_name", "ncclSuccess"));
	CU_ASSERT(has_integer(lines[1], "depth", 0));
	CU_ASSERT(has_integer(lines[1], "group_depth", 1));
	CU_ASSERT(has_string(lines[1], "comm_id", "0xdeadbeefcafef00d"));
	CU_ASSERT(has_integer(lines[1], "comm", 0x555500001111LL));
	CU_ASSERT(has_integer(lines[1], "rank", 3));
	CU_ASSERT(has_integer(lines[1], "nranks", 8));
	CU_ASSERT(has_integer(lines[1], "seq", 42));
	CU_ASSERT(has_null(lines[1], "unique_id_hash"));
	args = json_object_get(lines[1], "args");
	CU_ASSERT_EQUAL(json_object_size(args), 7);
	CU_ASSERT(has_integer(args, "sendbuff", 0x7f0000001000LL));
	CU_ASSERT(has_integer(args, "recvbuff", 0x7f0000002000LL));
	CU_ASSERT(has_integer(args, "count", 1024));
	CU_ASSERT(has_string(args, "datatype", "ncclFloat32"));
	CU_ASSERT(has_string(args, "op", "ncclSum"));
	CU_ASSERT(has_integer(args, "comm", 0x555500001111LL));
	CU_ASSERT(has_integer(args, "stream", 0));

	/* ncclCommInitRank: the new communicator, the id hash, truncated ints, unknowns. */
	args = json_object_get(lines[2], "args");
	CU_ASSERT(has_integer(args, "comm", 0x7ffd00000010LL));
	CU_ASSERT(has_integer(args, "comm_out", 0x555500002222LL));
	CU_ASSERT(has_integer(args, "nranks", 8));
	CU_ASSERT(has_string(args, "commId", "0x8000000000000001"));
	CU_ASSERT(has_integer(args, "rank", 3));
	CU_ASSERT(has_string(lines[2], "unique_id_hash", "0x8000000000000001"));
	CU_ASSERT(has_null(lines[2], "comm_id"));
	CU_ASSERT(has_null(lines[2], "rank"));
	CU_ASSERT(has_null(lines[2], "nranks"));
	CU_ASSERT(has_null(lines[2], "seq"));
	CU_ASSERT(has_integer(lines[2], "flags", 3));

	/* ncclCommGetAsyncError: the error written through the pointer, by name. */
	args = json_object_get(lines[3], "args");
	CU_ASSERT(has_integer(args, "comm", 0x555500001111LL));
	CU_ASSERT(has_string(args, "asyncError", "ncclRemoteError"));

	/* ncclSend: an address past INT64_MAX, an unknown datatype, a negative int. */
	args = json_object_get(lines[4], "args");
	CU_ASSERT(has_string(args, "sendbuff", "18446603336221196288"));
	CU_ASSERT(has_integer(args, "count", 16));
	CU_ASSERT(has_integer(args, "datatype", 99));
	CU_ASSERT(has_integer(args, "peer", -2));
	CU_ASSERT(has_integer(lines[4], "seq", 0));
	CU_ASSERT(has_string(lines[4], "ret_name", "ncclInvalidUsage"));
	CU_ASSERT(has_null(lines[4], "comm"));

	/* ncclReduce: a per-communicator op, an unknown result. */
	args = json_object_get(lines[5], "args");
	CU_ASSERT(has_string(args, "op", "ncclPreMulSum"));
	CU_ASSERT(has_integer(args, "root", 0));
	CU_ASSERT(has_integer(lines[5], "ret", 77));
	CU_ASSERT(has_null(lines[5], "ret_name"));

	/* A function this build does not know: raw values in order. */
	args = json_object_get(lines[6], "args");
	CU_ASSERT(has_integer(args, "arg0", 11));
	CU_ASSERT(has_string(args, "arg1", "18446744073709551615"));
	CU_ASSERT_EQUAL(json_object_size(json_object_get(lines[7], "args")), 0);

	free_objects(lines, count);
	free(text);
	unlink(path);
}

UNIT_TEST(exports, jsonl_other_records)
{
	const char *path = scratch_path("others.trace");
	char error[ERROR_SIZE] = "";
	json_t *lines[SAMPLE_COUNT + 2];
	const json_t *line;
	size_t count;
	int status;
	char *text;

	write_sample_trace(path, 100);
	text = export_text(export_jsonl, path, 0, &status, error, NULL);
	CU_ASSERT_EQUAL(status, 0);
	count = parse_lines(text, lines, SAMPLE_COUNT + 2);
	CU_ASSERT_EQUAL_FATAL(count, SAMPLE_COUNT + 1);

	line = lines[1 + SAMPLE_PROCESS];
	CU_ASSERT(has_string(line, "kind", "process"));
	CU_ASSERT(has_integer(line, "pid", 1000));
	CU_ASSERT(has_integer(line, "parent_pid", 999));
	CU_ASSERT(has_integer(line, "rank", 3));
	CU_ASSERT(has_integer(line, "local_rank", 3));
	CU_ASSERT(has_integer(line, "world_size", 8));
	CU_ASSERT(has_integer(line, "exit_code", 0));
	CU_ASSERT(has_integer(line, "start_ns", 50000));
	CU_ASSERT(has_integer(line, "end_ns", 900000));
	/* The byte that is not UTF-8 became U+FFFD. */
	CU_ASSERT(has_string(line, "command", "python \xef\xbf\xbd train.py"));
	line = lines[1 + SAMPLE_RESTARTED_RANK];
	CU_ASSERT(has_null(line, "parent_pid"));
	CU_ASSERT(has_null(line, "exit_code"));
	CU_ASSERT(has_null(line, "end_ns"));

	line = lines[1 + SAMPLE_COMMUNICATOR];
	CU_ASSERT(has_string(line, "kind", "communicator"));
	CU_ASSERT(has_string(line, "origin", "split"));
	CU_ASSERT(has_integer(line, "handle", 0x555500003333LL));
	CU_ASSERT(has_string(line, "comm_id", "0x0123456789abcdef"));
	CU_ASSERT(has_string(line, "parent_comm_id", "0xdeadbeefcafef00d"));
	CU_ASSERT(has_integer(line, "rank", 1));
	CU_ASSERT(has_integer(line, "nranks", 4));
	CU_ASSERT(has_integer(line, "color", 2));
	CU_ASSERT(has_integer(line, "split_index", 0));
	CU_ASSERT(has_null(line, "nccl_comm_hash"));
	CU_ASSERT(has_integer(line, "seq_base", 0));
	CU_ASSERT(has_integer(line, "seen_ns", 250000));
	CU_ASSERT(has_string(line, "note", ""));

	line = lines[1 + SAMPLE_LIBRARY];
	CU_ASSERT(has_string(line, "kind", "library"));
	CU_ASSERT(has_integer(line, "functions_attached", 27));
	CU_ASSERT(has_integer(line, "attached_ns", 60000));
	CU_ASSERT(has_string(line, "path", "/usr/lib/libnccl.so.2"));
	CU_ASSERT(has_string(line, "build_id", "abcdef"));

	line = lines[1 + SAMPLE_STATS];
	CU_ASSERT(has_string(line, "kind", "stats"));
	CU_ASSERT(has_integer(line, "timestamp_ns", 800000));
	CU_ASSERT(has_integer(line, "calls", 8));
	CU_ASSERT(has_integer(line, "ringbuf_drops", 1));
	CU_ASSERT(has_integer(line, "unmatched_returns", 2));
	CU_ASSERT(has_integer(line, "nesting_overflows", 3));
	CU_ASSERT(has_integer(line, "filtered", 4));
	CU_ASSERT(has_integer(line, "process_drops", 5));
	CU_ASSERT(has_integer(line, "python_events_lost", 6));
	free_objects(lines, count);
	free(text);

	/* Calls only: no header, nothing but calls, NCCL's and Python's. */
	text = export_text(export_jsonl, path, EXPORT_CALLS_ONLY, &status, error, NULL);
	CU_ASSERT_EQUAL(status, 0);
	count = parse_lines(text, lines, SAMPLE_COUNT + 2);
	CU_ASSERT_EQUAL(count, SAMPLE_CALLS + SAMPLE_PYTHON_CALLS);
	for (size_t i = 0; i < count; i++)
		CU_ASSERT(is_call_kind(lines[i]));
	CU_ASSERT(has_string(lines[count - 2], "kind", "py"));
	CU_ASSERT(has_string(lines[count - 1], "kind", "torch_scope"));
	free_objects(lines, count);
	free(text);
	unlink(path);
}

UNIT_TEST(exports, jsonl_python_calls)
{
	const char *path = scratch_path("python.trace");
	char error[ERROR_SIZE] = "";
	json_t *lines[SAMPLE_COUNT + 2];
	const json_t *line, *stack, *args;
	size_t count;
	int status;
	char *text;

	write_sample_trace(path, 2);
	text = export_text(export_jsonl, path, 0, &status, error, NULL);
	CU_ASSERT_EQUAL(status, 0);
	count = parse_lines(text, lines, SAMPLE_COUNT + 2);
	CU_ASSERT_EQUAL_FATAL(count, SAMPLE_COUNT + 1);

	/* A Python function: exactly these fields, a line, no step, raised. */
	line = lines[1 + SAMPLE_PYTHON_CALL];
	CU_ASSERT_EQUAL(json_object_size(line), 16);
	CU_ASSERT(has_string(line, "kind", "py"));
	CU_ASSERT(has_string(line, "name", "torch.distributed.all_reduce"));
	CU_ASSERT(has_string(line, "file", "/usr/lib/python3/torch/distributed/c10d.py"));
	CU_ASSERT(has_integer(line, "line", 120));
	CU_ASSERT(has_integer(line, "pid", 1000));
	CU_ASSERT(has_integer(line, "tid", 1001));
	CU_ASSERT(has_integer(line, "ts_ns", 123456789012000LL));
	CU_ASSERT(has_integer(line, "dur_ns", 5000));
	CU_ASSERT(has_integer(line, "depth", 2));
	CU_ASSERT(has_boolean(line, "raised", 1));
	CU_ASSERT(has_null(line, "step"));
	CU_ASSERT(has_string(line, "stage", "eval"));
	CU_ASSERT(has_integer(line, "rank", 3));
	CU_ASSERT(has_integer(line, "world_size", 4));
	stack = json_object_get(line, "py_stack");
	CU_ASSERT_FATAL(json_is_array(stack) && json_array_size(stack) == 2);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(stack, 0)),
			       "__main__.Trainer.sync");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_array_get(stack, 1)), "__main__.main");
	args = json_object_get(line, "args");
	CU_ASSERT_EQUAL_FATAL(json_object_size(args), 5);
	CU_ASSERT(has_boolean(args, "async_op", 1));
	CU_ASSERT(has_null(args, "group"));
	CU_ASSERT(json_real_value(json_object_get(args, "scale")) == 0.5);
	CU_ASSERT(has_integer(args, "bucket", -7));
	CU_ASSERT(has_string(args, "op", "sum"));

	/* A torch scope: its own kind, no line, a step, not raised. */
	line = lines[1 + SAMPLE_TORCH_SCOPE];
	CU_ASSERT_EQUAL(json_object_size(line), 16);
	CU_ASSERT(has_string(line, "kind", "torch_scope"));
	CU_ASSERT(has_string(line, "name", "ProfilerStep#5"));
	CU_ASSERT(has_string(line, "file", ""));
	CU_ASSERT(has_null(line, "line"));
	CU_ASSERT(has_integer(line, "pid", 1000));
	CU_ASSERT(has_integer(line, "tid", 1000));
	CU_ASSERT(has_integer(line, "ts_ns", 150000));
	CU_ASSERT(has_integer(line, "dur_ns", 600000));
	CU_ASSERT(has_integer(line, "depth", 0));
	CU_ASSERT(has_boolean(line, "raised", 0));
	CU_ASSERT(has_integer(line, "step", 5));
	CU_ASSERT(has_null(line, "stage"));
	CU_ASSERT_EQUAL(json_array_size(json_object_get(line, "py_stack")), 0);
	CU_ASSERT_EQUAL(json_object_size(json_object_get(line, "args")), 0);
	free_objects(lines, count);
	free(text);
	unlink(path);
}

/* The first event of phase 'phase' named 'name' on track 'pid' (any when pid < 0). */
static const json_t *find_event(const json_t *events, const char *phase, const char *name,
				json_int_t pid)
{
	size_t index;
	const json_t *event;

	json_array_foreach(events, index, event)
	{
		if (has_string(event, "ph", phase) && has_string(event, "name", name) &&
		    (pid < 0 || has_integer(event, "pid", pid)))
			return event;
	}
	return NULL;
}

static size_t count_phase(const json_t *events, const char *phase)
{
	size_t index, count = 0;
	const json_t *event;

	json_array_foreach(events, index, event)
	{
		if (has_string(event, "ph", phase))
			count++;
	}
	return count;
}

static double distance_from_zero(double value)
{
	return value < 0 ? -value : value;
}

static double number_of(const json_t *object, const char *key)
{
	return json_number_value(json_object_get(object, key));
}

UNIT_TEST(exports, perfetto_document)
{
	const char *path = scratch_path("perfetto.trace");
	char error[ERROR_SIZE] = "";
	const json_t *events, *event, *args, *metadata;
	json_error_t parse_error;
	json_t *document;
	int status;
	char *text;

	write_sample_trace(path, 3);
	text = export_text(export_perfetto, path, 0, &status, error, NULL);
	CU_ASSERT_EQUAL_FATAL(status, 0);
	document = json_loads(text, 0, &parse_error);
	CU_ASSERT_PTR_NOT_NULL_FATAL(document);
	CU_ASSERT(has_string(document, "displayTimeUnit", "ns"));
	metadata = json_object_get(document, "metadata");
	CU_ASSERT(has_string(metadata, "hostname", "node-3"));
	CU_ASSERT(has_string(metadata, "boot_id", "boot-id-3"));
	CU_ASSERT(has_integer(metadata, "anchor_monotonic_ns", 40000));
	CU_ASSERT(has_integer(metadata, "anchor_realtime_ns", 1700000000000000000LL));
	CU_ASSERT(has_null(metadata, "truncated"));
	CU_ASSERT_EQUAL(json_array_size(json_object_get(metadata, "libraries")), 1);
	events = json_object_get(document, "traceEvents");
	CU_ASSERT_FATAL(json_is_array(events));
	/* And one step slice: the torch scope's step 5 (tests/unit/test_perfetto_steps.c). */
	CU_ASSERT_EQUAL(count_phase(events, "X"), SAMPLE_CALLS + SAMPLE_PYTHON_CALLS + 1);

	/* The rank from the process record that came after the calls numbers the track. */
	event = find_event(events, "X", "ncclAllReduce", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_string(event, "cat", "nccl"));
	CU_ASSERT(has_integer(event, "tid", 1001));
	CU_ASSERT(json_is_real(json_object_get(event, "ts")));
	CU_ASSERT(distance_from_zero(number_of(event, "ts") * 1000.0 - 123456789012345.0) < 0.5);
	CU_ASSERT(distance_from_zero(number_of(event, "dur") - 2.5) < 1e-9);
	CU_ASSERT(strstr(text, "\"ts\":123456789012.345,") != NULL);
	args = json_object_get(event, "args");
	CU_ASSERT(has_string(args, "datatype", "ncclFloat32"));
	CU_ASSERT(has_string(args, "op", "ncclSum"));
	CU_ASSERT(has_integer(args, "count", 1024));
	CU_ASSERT(has_string(args, "comm_id", "0xdeadbeefcafef00d"));
	CU_ASSERT(has_integer(args, "seq", 42));
	CU_ASSERT(has_string(args, "ret", "ncclSuccess"));

	event = find_event(events, "X", "ncclCommInitRank", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(distance_from_zero(number_of(event, "ts") - 100.0) < 1e-9);
	CU_ASSERT(distance_from_zero(number_of(event, "dur") - 0.999) < 1e-9);
	CU_ASSERT(has_null(json_object_get(event, "args"), "seq"));
	CU_ASSERT(has_integer(json_object_get(event, "args"), "comm_out", 0x555500002222LL));
	event = find_event(events, "X", "ncclReduce", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_integer(json_object_get(event, "args"), "ret", 77));

	event = find_event(events, "M", "process_name", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	/* Named by the process's own command line, its stray byte made U+FFFD. */
	CU_ASSERT(has_string(json_object_get(event, "args"), "name",
			     "rank 3 (pid 1000): python \xef\xbf\xbd train.py"));
	event = find_event(events, "M", "process_sort_index", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_integer(json_object_get(event, "args"), "sort_index", 3));
	event = find_event(events, "M", "thread_name", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(json_is_integer(json_object_get(event, "tid")));

	/* A second process with the same rank keeps its own track, under its pid. */
	event = find_event(events, "X", "ncclGroupEnd", 2000);
	CU_ASSERT_PTR_NOT_NULL(event);
	event = find_event(events, "M", "process_name", 2000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_string(json_object_get(event, "args"), "name",
			     "rank 3 (pid 2000): python train.py"));
	/* A process with no rank is numbered and named by its pid, without a sort index. */
	CU_ASSERT_PTR_NOT_NULL(find_event(events, "X", "ncclGroupStart", 3000));
	event = find_event(events, "M", "process_name", 3000);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_string(json_object_get(event, "args"), "name", "pid 3000"));
	CU_ASSERT_PTR_NULL(find_event(events, "M", "process_sort_index", 3000));

	/* Markers and counters. */
	event = find_event(events, "i", "communicator", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(distance_from_zero(number_of(event, "ts") - 250.0) < 1e-9);
	CU_ASSERT_PTR_NOT_NULL(find_event(events, "i", "process exited (status 0)", 3));
	event = find_event(events, "C", "tcheck-bpf losses", -1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_integer(json_object_get(event, "args"), "ringbuf_drops", 1));
	CU_ASSERT(has_integer(json_object_get(event, "args"), "python_events_lost", 6));

	/* Python calls: slices on the rank's track and the thread of the NCCL calls. */
	event = find_event(events, "X", "torch.distributed.all_reduce", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_string(event, "cat", "python"));
	CU_ASSERT(has_integer(event, "tid", 1001));
	CU_ASSERT(distance_from_zero(number_of(event, "ts") * 1000.0 - 123456789012000.0) < 0.5);
	CU_ASSERT(distance_from_zero(number_of(event, "dur") - 5.0) < 1e-9);
	args = json_object_get(event, "args");
	CU_ASSERT_EQUAL(json_object_size(args), 5);
	CU_ASSERT(has_string(json_object_get(args, "arguments"), "op", "sum"));
	CU_ASSERT(has_integer(json_object_get(args, "arguments"), "bucket", -7));
	CU_ASSERT(has_string(args, "file", "/usr/lib/python3/torch/distributed/c10d.py"));
	CU_ASSERT(has_integer(args, "line", 120));
	CU_ASSERT(has_boolean(args, "raised", 1));
	CU_ASSERT(has_null(args, "step"));
	event = find_event(events, "X", "ProfilerStep#5", 3);
	CU_ASSERT_PTR_NOT_NULL_FATAL(event);
	CU_ASSERT(has_string(event, "cat", "torch_scope"));
	CU_ASSERT(has_integer(event, "tid", 1000));
	CU_ASSERT(distance_from_zero(number_of(event, "ts") - 150.0) < 1e-9);
	CU_ASSERT(distance_from_zero(number_of(event, "dur") - 600.0) < 1e-9);
	args = json_object_get(event, "args");
	CU_ASSERT(has_string(args, "file", ""));
	CU_ASSERT(has_null(args, "line"));
	CU_ASSERT(has_boolean(args, "raised", 0));
	CU_ASSERT(has_integer(args, "step", 5));
	/* Nowhere else: no track of their own. */
	CU_ASSERT_PTR_NULL(find_event(events, "M", "process_name", 1000));
	json_decref(document);
	free(text);

	/* Calls only: slices and their names, nothing else. */
	text = export_text(export_perfetto, path, EXPORT_CALLS_ONLY, &status, error, NULL);
	CU_ASSERT_EQUAL_FATAL(status, 0);
	document = json_loads(text, 0, &parse_error);
	CU_ASSERT_PTR_NOT_NULL_FATAL(document);
	events = json_object_get(document, "traceEvents");
	CU_ASSERT_EQUAL(count_phase(events, "X"), SAMPLE_CALLS + SAMPLE_PYTHON_CALLS);
	CU_ASSERT_PTR_NOT_NULL(find_event(events, "X", "ProfilerStep#5", 3));
	CU_ASSERT_EQUAL(count_phase(events, "X") + count_phase(events, "M"),
			json_array_size(events));
	json_decref(document);
	free(text);
	unlink(path);
}

UNIT_TEST(exports, perfetto_from_a_pipe_reads_once)
{
	const char *path = scratch_path("pipe-source.trace");
	const char *fifo = scratch_path("pipe.fifo");
	char error[ERROR_SIZE] = "";
	json_error_t parse_error;
	json_t *document;
	int status, child_status;
	pid_t child;
	char *text;

	write_sample_trace(path, 100);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		FILE *source = fopen(path, "rb"), *sink = fopen(fifo, "wb");
		char block[4096];
		size_t got;

		while (source && sink && (got = fread(block, 1, sizeof(block), source)) > 0)
			fwrite(block, 1, got, sink);
		/* _exit() skips stdio's buffers: flush them first. */
		if (sink)
			fclose(sink);
		_exit(0);
	}
	text = export_text(export_perfetto, fifo, 0, &status, error, NULL);
	waitpid(child, &child_status, 0);
	CU_ASSERT_EQUAL_FATAL(status, 0);
	document = json_loads(text, 0, &parse_error);
	CU_ASSERT_PTR_NOT_NULL_FATAL(document);
	/* Read once, the rank came too late to number the track: the pid does. */
	CU_ASSERT_PTR_NOT_NULL(
		find_event(json_object_get(document, "traceEvents"), "X", "ncclAllReduce", 1000));
	/* The Python calls follow the NCCL calls of their process onto that track. */
	CU_ASSERT_PTR_NOT_NULL(find_event(json_object_get(document, "traceEvents"), "X",
					  "torch.distributed.all_reduce", 1000));
	json_decref(document);
	free(text);
	unlink(fifo);
	unlink(path);
}

UNIT_TEST(exports, truncated_and_damaged_traces)
{
	const char *path = scratch_path("cut.trace");
	char error[ERROR_SIZE] = "";
	struct trace_reader_stats full_stats;
	struct trace_reader *reader;
	struct trace_record record;
	json_t *lines[SAMPLE_COUNT + 2];
	json_error_t parse_error;
	json_t *document;
	int status, truncated;
	struct stat file_status;
	size_t count;
	char *text;
	FILE *file;

	write_sample_trace(path, 5);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	while (trace_reader_next(reader, &record) > 0)
		;
	full_stats = *trace_reader_stats(reader);
	trace_reader_close(reader);
	CU_ASSERT_EQUAL_FATAL(full_stats.chunks, 3);

	/* Cut inside the last chunk of records: the first two chunks (ten records) export. */
	CU_ASSERT_EQUAL(stat(path, &file_status), 0);
	CU_ASSERT_EQUAL(truncate(path, file_status.st_size - CLOSING_CHUNK_SIZE - 10), 0);
	text = export_text(export_jsonl, path, 0, &status, error, &truncated);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_TRUE(truncated);
	count = parse_lines(text, lines, SAMPLE_COUNT + 2);
	CU_ASSERT_EQUAL(count, 1 + 10);
	free_objects(lines, count);
	free(text);
	text = export_text(export_perfetto, path, 0, &status, error, &truncated);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_TRUE(truncated);
	document = json_loads(text, 0, &parse_error);
	CU_ASSERT_PTR_NOT_NULL_FATAL(document);
	CU_ASSERT(json_is_string(
		json_object_get(json_object_get(document, "metadata"), "truncated")));
	json_decref(document);
	free(text);

	/* Damage in the last chunk of records: that chunk is lost, the rest exports. */
	write_sample_trace(path, 5);
	file = fopen(path, "r+b");
	CU_ASSERT_FATAL(file != NULL);
	fseek(file, -CLOSING_CHUNK_SIZE - 30, SEEK_END);
	fputc('!', file);
	fclose(file);
	text = export_text(export_jsonl, path, 0, &status, error, NULL);
	CU_ASSERT_EQUAL(status, 0);
	count = parse_lines(text, lines, SAMPLE_COUNT + 2);
	CU_ASSERT_EQUAL(count, 1 + 10);
	free_objects(lines, count);
	free(text);
	text = export_text(export_perfetto, path, 0, &status, error, NULL);
	CU_ASSERT_EQUAL(status, 0);
	free(text);
	unlink(path);
}

UNIT_TEST(exports, output_errors_are_reported)
{
	const char *path = scratch_path("full.trace");
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	FILE *full = fopen("/dev/full", "w");

	if (!full)
		return;
	write_sample_trace(path, 100);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT(export_jsonl(reader, full, 0, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "No space left") != NULL);
	trace_reader_close(reader);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT(export_perfetto(reader, full, 0, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "Perfetto") != NULL);
	trace_reader_close(reader);
	fclose(full);
	unlink(path);
}
