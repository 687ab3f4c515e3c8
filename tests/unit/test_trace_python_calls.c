// SPDX-License-Identifier: MIT
/* Tests of the Python call records of the trace format: every field round trips, raw bodies decode,
 * malformed ones are errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "trace/trace_format.h"
#include "trace/trace_reader.h"
#include "trace/trace_record_kinds.h"
#include "trace/trace_writer.h"
#include "raw_traces.h"
#include "sample_records.h"
#include "scratch_files.h"
#include "unit.h"

/* A Python call body as raw bytes, referring to the given string ids. */
static void raw_python_call(struct bytes *payload, uint32_t name_id, uint32_t file_id,
			    size_t length)
{
	struct bytes body = { 0 };

	memset(bytes_extend(&body, length), 0, length);
	if (length >= TRACE_FORMAT_PYTHON_SIZE) {
		trace_format_put_u64(body.data + TRACE_FORMAT_PYTHON_ENTRY_NS_AT, 9000);
		trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_PID_AT, 88);
		trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_FIRST_LINE_AT, 42);
		trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_STEP_AT, UINT32_MAX);
		trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT, name_id);
		trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_FILE_AT, file_id);
	}
	raw_record(payload, TRACE_RECORD_PYTHON_CALL, &body);
	free(body.data);
}

UNIT_TEST(trace_format, python_calls_round_trip_with_every_field)
{
	const char *path = scratch_path("python.trace");
	static const struct trace_python_call extremes[] = {
		{ .entry_ns = UINT64_MAX,
		  .duration_ns = UINT64_MAX - 1,
		  .pid = UINT32_MAX,
		  .tid = UINT32_MAX - 1,
		  .depth = UINT32_MAX,
		  .flags = TRACE_PYTHON_RAISED | TRACE_PYTHON_TORCH_SCOPE | 0x80000000U,
		  .first_line = INT32_MIN,
		  .step = INT32_MAX,
		  .qualified_name = "nn.Module.\xff\xfe",
		  .file = "/srv/models/\xe2\x82\xac.py" },
		{ .entry_ns = 1,
		  .duration_ns = 0,
		  .pid = 1,
		  .tid = 1,
		  .depth = 0,
		  .flags = 0,
		  .first_line = 0,
		  .step = 0,
		  .qualified_name = NULL,
		  .file = NULL },
		{ .entry_ns = 3000,
		  .duration_ns = 40,
		  .pid = 7,
		  .tid = 8,
		  .depth = 2,
		  .flags = TRACE_PYTHON_TORCH_SCOPE,
		  .first_line = -1,
		  .step = -1,
		  .qualified_name = "ProfilerStep#7",
		  .file = "" },
	};
	const unsigned extreme_count = sizeof(extremes) / sizeof(extremes[0]);
	char error[ERROR_SIZE] = "";
	const struct trace_reader_stats *stats;
	struct trace_writer_stats written;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_reader *reader;
	struct trace_record record;
	unsigned total = 0, python_count = 0;
	int status;

	/*
	 * Every field at its extremes, then Python calls and the other kinds
	 * interleaved two to a chunk: the names and files defined in the first
	 * chunks are reused by id in the later ones.
	 */
	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, 2, 0), 0);
	for (unsigned i = 0; i < extreme_count; i++) {
		record = (struct trace_record){ .kind = TRACE_RECORD_PYTHON_CALL };
		record.python_call = extremes[i];
		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	for (unsigned i = 0; i < 60; i++) {
		if (i % 2) {
			record = (struct trace_record){ .kind = TRACE_RECORD_PYTHON_CALL };
			record.python_call = sample_python_call(i, i / 2 % 4);
		} else {
			record = sample_record(i / 2);
		}
		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	trace_writer_get_stats(writer, &written);
	CU_ASSERT_EQUAL(written.chunks, (extreme_count + 60) / 2);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_PTR_NULL(trace_reader_note(reader));
	while ((status = trace_reader_next(reader, &record)) > 0) {
		struct trace_record expected = { .kind = TRACE_RECORD_PYTHON_CALL };
		unsigned later = total - extreme_count;

		if (total < extreme_count)
			expected.python_call = extremes[total];
		else if (later % 2)
			expected.python_call = sample_python_call(later, later / 2 % 4);
		else
			expected = sample_record(later / 2);
		CU_ASSERT(records_equal(&expected, &record));
		if (record.kind == TRACE_RECORD_PYTHON_CALL)
			python_count++;
		total++;
	}
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(total, extreme_count + 60);
	stats = trace_reader_stats(reader);
	CU_ASSERT_EQUAL(stats->records_by_kind[TRACE_RECORD_PYTHON_CALL], python_count);
	/* The 30 interleaved samples 0..29 hold Python calls of their own: kind 5 of the mix. */
	CU_ASSERT_EQUAL(python_count,
			extreme_count + 30 + (30 + SAMPLE_KINDS - 1 - 5) / SAMPLE_KINDS);
	CU_ASSERT_EQUAL(stats->unknown_records, 0);
	trace_reader_close(reader);

	/* The chunk of the first two records is filed under the Python calls' entry times. */
	{
		struct bytes whole = read_whole_file(path);
		size_t chunk = TRACE_FORMAT_FILE_FIXED_SIZE +
			       trace_format_get_u32(whole.data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);

		CU_ASSERT_EQUAL(
			trace_format_get_u64(whole.data + chunk + TRACE_FORMAT_CHUNK_FIRST_NS_AT),
			1);
		CU_ASSERT_EQUAL(
			trace_format_get_u64(whole.data + chunk + TRACE_FORMAT_CHUNK_LAST_NS_AT),
			UINT64_MAX);
		free(whole.data);
	}
	unlink(path);
}

UNIT_TEST(trace_format, malformed_python_calls_are_errors)
{
	char error[ERROR_SIZE] = "", expected[120];
	struct bytes payload = { 0 };
	long records;

	/* Shorter than its fixed fields. */
	raw_string(&payload, 1, "train.step");
	raw_python_call(&payload, 1, 0, TRACE_FORMAT_PYTHON_SIZE - 1);
	CU_ASSERT(read_crafted(&payload, 2, 0, &records, error) < 0);
	snprintf(expected, sizeof(expected), "python_call record of %d bytes, shorter than the %d",
		 TRACE_FORMAT_PYTHON_SIZE - 1, TRACE_FORMAT_PYTHON_SIZE);
	CU_ASSERT(strstr(error, expected) != NULL);
	CU_ASSERT(strstr(error, "record 1") != NULL);

	/* A file name id that was never defined. */
	payload.length = 0;
	raw_string(&payload, 1, "train.step");
	raw_python_call(&payload, 1, 9, TRACE_FORMAT_PYTHON_SIZE);
	CU_ASSERT(read_crafted(&payload, 2, 0, &records, error) < 0);
	CU_ASSERT_EQUAL(records, 0);
	CU_ASSERT(strstr(error, "string id 9") != NULL);

	/* A qualified name id that was never defined. */
	payload.length = 0;
	raw_python_call(&payload, 3, 0, TRACE_FORMAT_PYTHON_SIZE);
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "string id 3") != NULL);

	/* Fields a newer writer appends after the 1.2 context are skipped. */
	payload.length = 0;
	raw_string(&payload, 1, "train.step");
	raw_string(&payload, 2, "/app/train.py");
	raw_python_call(&payload, 1, 2, TRACE_FORMAT_PYTHON_CONTEXT_SIZE + 4 + 4 + 20);
	CU_ASSERT_EQUAL(read_crafted(&payload, 3, 0, &records, error), 0);
	CU_ASSERT_EQUAL(records, 1);

	/* A context cut before its stack. */
	payload.length = 0;
	raw_string(&payload, 1, "train.step");
	raw_python_call(&payload, 1, 0, TRACE_FORMAT_PYTHON_SIZE + 4);
	CU_ASSERT(read_crafted(&payload, 2, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "cut context") != NULL);
	free(payload.data);
}

/* A 1.2 Python call body: the 1.1 fields, then the context, laid out by hand. */
static void raw_python_call_with_context(struct bytes *payload, uint32_t stack_depth,
					 uint32_t argument_type)
{
	struct bytes body = { 0 };
	unsigned char *at;
	double lr = 0.125;
	uint64_t lr_bits;

	memcpy(&lr_bits, &lr, sizeof(lr_bits));
	memset(bytes_extend(&body, TRACE_FORMAT_PYTHON_SIZE), 0, TRACE_FORMAT_PYTHON_SIZE);
	trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_STEP_AT, 5);
	trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT, 1);
	at = bytes_extend(&body, 12 + 4 + 4 * 2 + 4 + 16 * 3);
	trace_format_put_u32(at, TRACE_STAGE_EVAL);
	trace_format_put_u32(at + 4, 3);	    /* rank */
	trace_format_put_u32(at + 8, 4);	    /* world size */
	trace_format_put_u32(at + 12, stack_depth); /* two frames */
	trace_format_put_u32(at + 16, 2);
	trace_format_put_u32(at + 20, 1);
	trace_format_put_u32(at + 24, 3); /* three arguments */
	trace_format_put_u32(at + 28, 3); /* "lr" */
	trace_format_put_u32(at + 32, argument_type);
	trace_format_put_u64(at + 36, lr_bits);
	trace_format_put_u32(at + 44, 4); /* "closure", None */
	trace_format_put_u32(at + 48, TRACE_VALUE_NONE);
	trace_format_put_u32(at + 60, 2); /* "__main__.train", a str naming string 2 */
	trace_format_put_u32(at + 64, TRACE_VALUE_STR);
	trace_format_put_u64(at + 68, 2);
	raw_record(payload, TRACE_RECORD_PYTHON_CALL, &body);
	free(body.data);
}

UNIT_TEST(trace_format, python_call_context_from_raw_bytes)
{
	const char *path = scratch_path("python-context.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 };
	struct trace_reader *reader;
	struct trace_record record;
	const struct trace_python_call *call = &record.python_call;
	long records;

	raw_string(&payload, 1, "torch.optim.sgd.SGD.step");
	raw_string(&payload, 2, "__main__.train");
	raw_string(&payload, 3, "lr");
	raw_string(&payload, 4, "closure");
	raw_python_call_with_context(&payload, 2, TRACE_VALUE_FLOAT);
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, &payload, 5, (uint32_t)payload.length, 0);
	write_file(path, file.data, file.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL_FATAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(call->step, 5);
	CU_ASSERT_EQUAL(call->stage, TRACE_STAGE_EVAL);
	CU_ASSERT_EQUAL(call->rank, 3);
	CU_ASSERT_EQUAL(call->world_size, 4);
	CU_ASSERT_EQUAL_FATAL(call->py_stack.depth, 2);
	CU_ASSERT_STRING_EQUAL(call->py_stack.frames[0], "__main__.train");
	CU_ASSERT_STRING_EQUAL(call->py_stack.frames[1], "torch.optim.sgd.SGD.step");
	CU_ASSERT_EQUAL_FATAL(call->arg_count, 3);
	CU_ASSERT_STRING_EQUAL(call->args[0].name, "lr");
	CU_ASSERT_EQUAL(call->args[0].type, TRACE_VALUE_FLOAT);
	CU_ASSERT_DOUBLE_EQUAL(call->args[0].real, 0.125, 0);
	CU_ASSERT_STRING_EQUAL(call->args[1].name, "closure");
	CU_ASSERT_EQUAL(call->args[1].type, TRACE_VALUE_NONE);
	CU_ASSERT_STRING_EQUAL(call->args[2].name, "__main__.train");
	CU_ASSERT_STRING_EQUAL(call->args[2].text, "__main__.train");
	trace_reader_close(reader);

	/* A stack deeper than the body holds, and an argument of no known type. */
	payload.length = 0;
	raw_string(&payload, 1, "torch.optim.sgd.SGD.step");
	raw_string(&payload, 2, "__main__.train");
	raw_string(&payload, 3, "lr");
	raw_string(&payload, 4, "closure");
	raw_python_call_with_context(&payload, 1000, TRACE_VALUE_FLOAT);
	CU_ASSERT(read_crafted(&payload, 5, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "too short for its Python stack") != NULL);
	payload.length = 0;
	raw_string(&payload, 1, "torch.optim.sgd.SGD.step");
	raw_string(&payload, 2, "__main__.train");
	raw_string(&payload, 3, "lr");
	raw_string(&payload, 4, "closure");
	raw_python_call_with_context(&payload, 2, 77);
	CU_ASSERT(read_crafted(&payload, 5, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "unknown type") != NULL);
	free(payload.data);
	free(file.data);
	unlink(path);
}

UNIT_TEST(trace_format, python_call_fields_from_raw_bytes)
{
	const char *path = scratch_path("python-raw.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 };
	struct trace_reader *reader;
	struct trace_record record;

	/* Bytes laid out by hand from the format's table, not by the writer. */
	raw_string(&payload, 1, "train.step");
	raw_string(&payload, 2, "/app/train.py");
	raw_python_call(&payload, 1, 2, TRACE_FORMAT_PYTHON_SIZE);
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, &payload, 3, (uint32_t)payload.length, 0);
	write_file(path, file.data, file.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL_FATAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(record.kind, TRACE_RECORD_PYTHON_CALL);
	CU_ASSERT_EQUAL(record.python_call.entry_ns, 9000);
	CU_ASSERT_EQUAL(record.python_call.duration_ns, 0);
	CU_ASSERT_EQUAL(record.python_call.pid, 88);
	CU_ASSERT_EQUAL(record.python_call.first_line, 42);
	CU_ASSERT_EQUAL(record.python_call.step, -1);
	/* A 1.1 body: no context, so rank and world size are unknown. */
	CU_ASSERT_EQUAL(record.python_call.rank, -1);
	CU_ASSERT_EQUAL(record.python_call.world_size, -1);
	CU_ASSERT_EQUAL(record.python_call.stage, TRACE_STAGE_UNKNOWN);
	CU_ASSERT_EQUAL(record.python_call.arg_count, 0);
	CU_ASSERT_STRING_EQUAL(record.python_call.qualified_name, "train.step");
	CU_ASSERT_STRING_EQUAL(record.python_call.file, "/app/train.py");
	CU_ASSERT_STRING_EQUAL(trace_record_kind_name(TRACE_RECORD_PYTHON_CALL), "python_call");
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 0);
	trace_reader_close(reader);
	free(payload.data);
	free(file.data);
	unlink(path);
}
