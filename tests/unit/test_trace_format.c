// SPDX-License-Identifier: MIT
/* Tests of the trace file format: round trips, chunking, and files cut short or damaged. */
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
#include "trace/trace_writer.h"
#include "scratch_files.h"
#include "unit.h"

#define ERROR_SIZE 640

/* A growable byte buffer for building and cutting files. */
struct bytes {
	unsigned char *data;
	size_t length;
	size_t capacity;
};

static unsigned char *bytes_extend(struct bytes *buffer, size_t length)
{
	if (buffer->length + length > buffer->capacity) {
		buffer->capacity = (buffer->length + length) * 2 + 64;
		buffer->data = realloc(buffer->data, buffer->capacity);
		if (!buffer->data)
			abort();
	}
	buffer->length += length;
	return buffer->data + buffer->length - length;
}

static void bytes_append(struct bytes *buffer, const void *data, size_t length)
{
	if (!length)
		return;
	memcpy(bytes_extend(buffer, length), data, length);
}

static void bytes_put_u16(struct bytes *buffer, uint16_t value)
{
	trace_format_put_u16(bytes_extend(buffer, 2), value);
}

static void bytes_put_u32(struct bytes *buffer, uint32_t value)
{
	trace_format_put_u32(bytes_extend(buffer, 4), value);
}

static void bytes_put_u64(struct bytes *buffer, uint64_t value)
{
	trace_format_put_u64(bytes_extend(buffer, 8), value);
}

static void write_file(const char *path, const unsigned char *data, size_t length)
{
	FILE *file = fopen(path, "wb");

	CU_ASSERT_FATAL(file != NULL);
	CU_ASSERT_FATAL(fwrite(data, 1, length, file) == length);
	fclose(file);
}

static struct bytes read_whole_file(const char *path)
{
	struct bytes content = { 0 };
	unsigned char block[4096];
	FILE *file = fopen(path, "rb");
	size_t got;

	CU_ASSERT_FATAL(file != NULL);
	while ((got = fread(block, 1, sizeof(block), file)) > 0)
		bytes_append(&content, block, got);
	fclose(file);
	return content;
}

/* A trace file written from raw bytes, to reach states the writer never produces. */
static void raw_file_header(struct bytes *file, uint32_t major, uint32_t minor)
{
	static const char *const strings[] = { "testhost", "boot-0001", "tcheck-bpf record" };
	size_t start = file->length;
	uLong crc;

	bytes_append(file, TRACE_FORMAT_FILE_MAGIC, TRACE_FORMAT_FILE_MAGIC_SIZE);
	bytes_put_u32(file, major);
	bytes_put_u32(file, minor);
	bytes_put_u32(file, 0); /* body length, set below */
	bytes_put_u32(file, 0); /* checksum, set below */
	bytes_put_u64(file, 1000);
	bytes_put_u64(file, 2000);
	for (int i = 0; i < 3; i++) {
		bytes_put_u32(file, (uint32_t)strlen(strings[i]));
		bytes_append(file, strings[i], strlen(strings[i]));
	}
	trace_format_put_u32(file->data + start + TRACE_FORMAT_FILE_BODY_LENGTH_AT,
			     (uint32_t)(file->length - start - TRACE_FORMAT_FILE_FIXED_SIZE));
	crc = crc32(0L, file->data + start, TRACE_FORMAT_FILE_CRC_AT);
	crc = crc32(crc, file->data + start + TRACE_FORMAT_FILE_FIXED_SIZE,
		    (uInt)(file->length - start - TRACE_FORMAT_FILE_FIXED_SIZE));
	trace_format_put_u32(file->data + start + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);
}

static void raw_record(struct bytes *payload, unsigned kind, const struct bytes *body)
{
	bytes_put_u16(payload, (uint16_t)kind);
	bytes_put_u16(payload, 0);
	bytes_put_u32(payload, (uint32_t)body->length);
	bytes_append(payload, body->data, body->length);
}

static void raw_string(struct bytes *payload, uint32_t id, const char *text)
{
	struct bytes body = { 0 };

	bytes_put_u32(&body, id);
	bytes_append(&body, text, strlen(text));
	raw_record(payload, TRACE_FORMAT_KIND_STRING, &body);
	free(body.data);
}

/* A call body referring to 'function_id', with 'extra' bytes a newer writer might append. */
static void raw_call(struct bytes *payload, uint32_t function_id, uint32_t param_count,
		     size_t extra)
{
	struct bytes body = { 0 };

	memset(bytes_extend(&body, TRACE_FORMAT_CALL_FIXED_SIZE + 8 * param_count + extra), 0,
	       TRACE_FORMAT_CALL_FIXED_SIZE + 8 * param_count + extra);
	trace_format_put_u64(body.data + TRACE_FORMAT_CALL_ENTRY_NS_AT, 5000);
	trace_format_put_u32(body.data + TRACE_FORMAT_CALL_PID_AT, 77);
	trace_format_put_u32(body.data + TRACE_FORMAT_CALL_FUNCTION_AT, function_id);
	trace_format_put_u32(body.data + TRACE_FORMAT_CALL_PARAM_COUNT_AT, param_count);
	for (uint32_t i = 0; i < param_count; i++)
		trace_format_put_u64(body.data + TRACE_FORMAT_CALL_PARAMS_AT + 8 * i, 100 + i);
	raw_record(payload, TRACE_RECORD_NCCL_CALL, &body);
	free(body.data);
}

static void raw_chunk(struct bytes *file, const struct bytes *payload, uint32_t record_count,
		      uint32_t payload_length, uint32_t flags)
{
	unsigned char *header = bytes_extend(file, TRACE_FORMAT_CHUNK_HEADER_SIZE);

	memcpy(header, TRACE_FORMAT_CHUNK_MAGIC, TRACE_FORMAT_CHUNK_MAGIC_SIZE);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT, payload_length);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT, record_count);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT,
			     (uint32_t)crc32(0L, payload->data, (uInt)payload->length));
	trace_format_put_u64(header + TRACE_FORMAT_CHUNK_FIRST_NS_AT, 0);
	trace_format_put_u64(header + TRACE_FORMAT_CHUNK_LAST_NS_AT, 0);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_FLAGS_AT, flags);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_HEADER_CRC_AT,
			     (uint32_t)crc32(0L, header, TRACE_FORMAT_CHUNK_HEADER_CRC_AT));
	bytes_append(file, payload->data, payload->length);
}

static void test_header(struct trace_header *header)
{
	memset(header, 0, sizeof(*header));
	strcpy(header->hostname, "node-17.cluster");
	strcpy(header->boot_id, "6f1f7c62-3a4e-4f43-9d35-2a1b0c9e8d7f");
	header->anchor_monotonic_ns = 123456789012345ULL;
	header->anchor_realtime_ns = 1700000000123456789ULL;
	strcpy(header->command_line, "tcheck-bpf record -o run.trace -- torchrun train.py");
}

static const char *const function_names[] = { "ncclAllReduce", "ncclSend", "ncclCommInitRank" };
static const char *const python_names[] = { "torch.optim.sgd.SGD.step", "train.Trainer.run_step",
					    "torch.nn.modules.module.Module._call_impl" };

/* The kinds sample_record() cycles through. */
#define SAMPLE_KINDS 9

/* A Python call or torch scope for sample 'index', its shape chosen by 'variant'. */
static struct trace_python_call sample_python_call(unsigned index, unsigned variant)
{
	int torch_scope = variant & 2;

	return (struct trace_python_call){
		.entry_ns = 2000000000ULL + index * 1000ULL,
		.duration_ns = 700 + index,
		.pid = 4000 + index % 3,
		.tid = 5000 + index,
		.depth = index % 5,
		.flags = (variant & 1 ? TRACE_PYTHON_RAISED : 0) |
			 (torch_scope ? TRACE_PYTHON_TORCH_SCOPE : 0),
		.first_line = torch_scope ? -1 : (int32_t)(10 + index),
		.step = variant == 1 ? -1 : (int32_t)index,
		.qualified_name = torch_scope ? "ProfilerStep#7" : python_names[index % 3],
		.file = torch_scope ? (variant & 1 ? NULL : "") : "/opt/app/train.py",
		.stage = index % 3,
		.rank = variant == 3 ? -1 : (int32_t)(index % 8),
		.world_size = variant == 3 ? -1 : 8,
		.py_stack = { .depth = index % (TRACE_PY_STACK_MAX + 1),
			      .frames = { python_names[0], python_names[1], python_names[2],
					  "__main__.main", "__main__.<module>", "a.b", "c.d",
					  "e.f" } },
		.arg_count = torch_scope ? 0 : 5,
		.args = { { .name = "lr", .type = TRACE_VALUE_FLOAT, .real = 0.25 / (index + 1) },
			  { .name = "momentum",
			    .type = TRACE_VALUE_INT,
			    .integer = -(int64_t)index * 1000003 },
			  { .name = "nesterov", .type = TRACE_VALUE_BOOL, .integer = index & 1 },
			  { .name = "foreach", .type = TRACE_VALUE_NONE },
			  { .name = "mode",
			    .type = TRACE_VALUE_STR,
			    .text = index & 1 ? "max" : "" } },
	};
}

/* Record 'index' of a deterministic mix of every kind, with values that use every bit. */
static struct trace_record sample_record(unsigned index)
{
	static char command[64], note[64], path[64];
	struct trace_record record;

	memset(&record, 0, sizeof(record));
	switch (index % SAMPLE_KINDS) {
	case 0:
		record.kind = TRACE_RECORD_NCCL_CALL;
		record.call = (struct trace_nccl_call){
			.entry_ns = 1000000000ULL + index * 1000ULL,
			.duration_ns = 500 + index,
			.pid = 4000 + index % 3,
			.tid = 5000 + index,
			.function = function_names[index % 3],
			.result = index % 7 == 0 ? -3 : 0,
			.depth = index % 2,
			.group_depth = index % 4,
			.flags = TRACE_CALL_OUT_VALUE_VALID,
			.param_count = 7,
			.params = { 0x7f0000001000ULL + index, 0xffffffffffffffffULL, 1024, 7, 0,
				    0x5555aaaa0000ULL, 0 },
			.out_value = 0x8000000000000000ULL | index,
			.unique_id_hash = 0xfedcba9876543210ULL,
			.comm = 0x5555aaaa0000ULL,
			.comm_id = 0x123456789abcdef0ULL + index,
			.rank = (int32_t)(index % 8),
			.nranks = 8,
			.seq = index % 3 ? (int64_t)index : -1,
			.step = index % 5 ? (int32_t)index / 6 : -1,
			.stage = TRACE_STAGE_TRAIN,
			.py_stack = { .depth = index % 3,
				      .frames = { "torch.distributed.all_reduce",
						  "__main__.train" } },
		};
		break;
	case 1:
		snprintf(command, sizeof(command), "python train.py --step %u", index);
		record.kind = TRACE_RECORD_PROCESS;
		record.process = (struct trace_process){
			.pid = 4000 + index,
			.parent_pid = index % 2 ? 3999 : 0,
			.rank = (int32_t)index - 3,
			.local_rank = -1,
			.world_size = 8,
			.exit_code = -1,
			.start_ns = 999 + index,
			.end_ns = UINT64_MAX - index,
			.command = command,
		};
		break;
	case 2:
		note[0] = '\0';
		if (index % 4)
			snprintf(note, sizeof(note), "note %u", index);
		record.kind = TRACE_RECORD_COMMUNICATOR;
		record.communicator = (struct trace_communicator){
			.pid = 4000 + index,
			.origin = TRACE_COMM_SPLIT,
			.handle = 0x5555aaaa0000ULL + index,
			.comm_id = 0xa5a5a5a5a5a5a5a5ULL,
			.parent_comm_id = 0x5a5a5a5a5a5a5a5aULL,
			.rank = 2,
			.nranks = -1,
			.color = -7,
			.split_index = index,
			.nccl_comm_hash = 0x1111222233334444ULL,
			.seq_base = -5,
			.seen_ns = 77777 + index,
			.note = index % 8 == 2 ? NULL : note,
		};
		break;
	case 3:
		snprintf(path, sizeof(path), "/opt/nccl/lib%u/libnccl.so.2", index % 2);
		record.kind = TRACE_RECORD_LIBRARY;
		record.library = (struct trace_library){
			.pid = index,
			.functions_attached = 27,
			.attached_ns = 31337 + index,
			.path = path,
			.build_id = index % 2 ? "" : "0123456789abcdef0123456789abcdef01234567",
		};
		break;
	case 5:
		record.kind = TRACE_RECORD_PYTHON_CALL;
		record.python_call = sample_python_call(index, index / SAMPLE_KINDS % 4);
		break;
	case 6:
		record.kind = TRACE_RECORD_NETWORK;
		record.network = (struct trace_network_sample){
			.timestamp_ns = 77777 + index,
			.pid = 4000000000U - index,
			.source = 1 + index % 2,
			.requests_posted = UINT64_MAX - index,
			.requests_signalled = 1ULL << 40,
			.completions = 3,
			.completion_errors = 4,
			.bytes_posted = 5ULL << 33,
			.bytes_completed = 6,
			.last_post_ns = index % 3 ? 7 : 0,
			.last_completion_ns = UINT64_MAX,
		};
		break;
	case 7:
		record.kind = TRACE_RECORD_ACTIVITY;
		record.activity = (struct trace_activity_sample){
			.timestamp_ns = 99999 + index,
			.pid = 4000000000U - index,
			.threads = 17,
			.threads_running = 2,
			.threads_io_wait = index % 2,
			.cpu_ns = UINT64_MAX - index,
			.read_bytes = 1ULL << 41,
			.write_bytes = 5ULL << 33,
			.read_chars = 9,
			.write_chars = UINT64_MAX,
		};
		break;
	case 8:
		record.kind = TRACE_RECORD_ARRIVAL;
		record.arrival = (struct trace_arrival_state){
			.timestamp_ns = 55555 + index,
			.pid = 4000000000U - index,
			.rank = index % 2 ? -1 : (int32_t)index,
			.flags = TRACE_ARRIVAL_LAGGING | TRACE_ARRIVAL_RANK,
			.nranks = 4,
			.seq = index % 3 ? -1 : INT64_MAX - index,
			.comm_hash = UINT64_MAX - index,
			.collective = "c10d::allreduce",
			.blocked_in = index % 2 ? "" : "gloo::AllreduceRing::run",
			.waiting = "0, 2, 3",
			.doing = "in Python train (job.py, def at line 12)",
			.missed = index % 2 ? "ProcessGroupGloo::allreduce" : "",
			.py_stack = { .depth = index % 2 ? 0 : 2,
				      .frames = { "__main__.train", "__main__.main" } },
		};
		break;
	default:
		record.kind = TRACE_RECORD_STATS;
		record.stats = (struct trace_stats){
			.timestamp_ns = 88888 + index,
			.calls = index,
			.ringbuf_drops = 1,
			.unmatched_returns = 2,
			.nesting_overflows = 3,
			.filtered = 4,
			.process_drops = UINT64_MAX,
			.python_events_lost = 5 + index,
		};
		break;
	}
	return record;
}

static int same_text(const char *written, const char *read)
{
	return read && strcmp(written ? written : "", read) == 0;
}

static int same_stack(const struct trace_python_stack *x, const struct trace_python_stack *y)
{
	if (x->depth != y->depth)
		return 0;
	for (uint32_t i = 0; i < x->depth; i++)
		if (!same_text(x->frames[i], y->frames[i]))
			return 0;
	return 1;
}

static int same_args(const struct trace_python_call *x, const struct trace_python_call *y)
{
	if (x->arg_count != y->arg_count)
		return 0;
	for (uint32_t i = 0; i < x->arg_count; i++) {
		const struct trace_python_arg *a = &x->args[i], *b = &y->args[i];

		if (!same_text(a->name, b->name) || a->type != b->type)
			return 0;
		if ((a->type == TRACE_VALUE_INT || a->type == TRACE_VALUE_BOOL) &&
		    a->integer != b->integer)
			return 0;
		if (a->type == TRACE_VALUE_FLOAT && memcmp(&a->real, &b->real, sizeof(a->real)))
			return 0;
		if (a->type == TRACE_VALUE_STR && !same_text(a->text, b->text))
			return 0;
	}
	return 1;
}

static int records_equal(const struct trace_record *a, const struct trace_record *b)
{
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case TRACE_RECORD_NCCL_CALL: {
		const struct trace_nccl_call *x = &a->call, *y = &b->call;

		return x->entry_ns == y->entry_ns && x->duration_ns == y->duration_ns &&
		       x->pid == y->pid && x->tid == y->tid &&
		       same_text(x->function, y->function) && x->result == y->result &&
		       x->depth == y->depth && x->group_depth == y->group_depth &&
		       x->flags == y->flags && x->param_count == y->param_count &&
		       memcmp(x->params, y->params, sizeof(x->params[0]) * x->param_count) == 0 &&
		       x->out_value == y->out_value && x->unique_id_hash == y->unique_id_hash &&
		       x->comm == y->comm && x->comm_id == y->comm_id && x->rank == y->rank &&
		       x->nranks == y->nranks && x->seq == y->seq && x->step == y->step &&
		       x->stage == y->stage && same_stack(&x->py_stack, &y->py_stack);
	}
	case TRACE_RECORD_PROCESS: {
		const struct trace_process *x = &a->process, *y = &b->process;

		return x->pid == y->pid && x->parent_pid == y->parent_pid && x->rank == y->rank &&
		       x->local_rank == y->local_rank && x->world_size == y->world_size &&
		       x->exit_code == y->exit_code && x->start_ns == y->start_ns &&
		       x->end_ns == y->end_ns && same_text(x->command, y->command);
	}
	case TRACE_RECORD_COMMUNICATOR: {
		const struct trace_communicator *x = &a->communicator, *y = &b->communicator;

		return x->pid == y->pid && x->origin == y->origin && x->handle == y->handle &&
		       x->comm_id == y->comm_id && x->parent_comm_id == y->parent_comm_id &&
		       x->rank == y->rank && x->nranks == y->nranks && x->color == y->color &&
		       x->split_index == y->split_index && x->nccl_comm_hash == y->nccl_comm_hash &&
		       x->seq_base == y->seq_base && x->seen_ns == y->seen_ns &&
		       same_text(x->note, y->note);
	}
	case TRACE_RECORD_LIBRARY: {
		const struct trace_library *x = &a->library, *y = &b->library;

		return x->pid == y->pid && x->functions_attached == y->functions_attached &&
		       x->attached_ns == y->attached_ns && same_text(x->path, y->path) &&
		       same_text(x->build_id, y->build_id);
	}
	case TRACE_RECORD_STATS:
		return memcmp(&a->stats, &b->stats, sizeof(a->stats)) == 0;
	case TRACE_RECORD_NETWORK:
		return memcmp(&a->network, &b->network, sizeof(a->network)) == 0;
	case TRACE_RECORD_ACTIVITY:
		return memcmp(&a->activity, &b->activity, sizeof(a->activity)) == 0;
	case TRACE_RECORD_ARRIVAL: {
		const struct trace_arrival_state *x = &a->arrival, *y = &b->arrival;

		return x->timestamp_ns == y->timestamp_ns && x->pid == y->pid &&
		       x->rank == y->rank && x->flags == y->flags && x->nranks == y->nranks &&
		       x->seq == y->seq && x->comm_hash == y->comm_hash &&
		       same_text(x->collective, y->collective) &&
		       same_text(x->blocked_in, y->blocked_in) &&
		       same_text(x->waiting, y->waiting) && same_text(x->doing, y->doing) &&
		       same_text(x->missed, y->missed) && same_stack(&x->py_stack, &y->py_stack);
	}
	case TRACE_RECORD_PYTHON_CALL: {
		const struct trace_python_call *x = &a->python_call, *y = &b->python_call;

		return x->entry_ns == y->entry_ns && x->duration_ns == y->duration_ns &&
		       x->pid == y->pid && x->tid == y->tid && x->depth == y->depth &&
		       x->flags == y->flags && x->first_line == y->first_line &&
		       x->step == y->step && same_text(x->qualified_name, y->qualified_name) &&
		       same_text(x->file, y->file) && x->stage == y->stage && x->rank == y->rank &&
		       x->world_size == y->world_size && same_stack(&x->py_stack, &y->py_stack) &&
		       same_args(x, y);
	}
	}
	return 0;
}

/* Writes sample records 0..count-1, flushing after every 'per_chunk' of them. */
static void write_samples(const char *path, unsigned count, unsigned per_chunk,
			  uint64_t *chunk_ends, unsigned *chunk_end_count)
{
	char error[ERROR_SIZE] = "";
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_writer_stats stats;

	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, per_chunk, 0), 0);
	/* These tests reach into the records' bytes: compression has tests of its own. */
	CU_ASSERT_EQUAL(trace_writer_set_compression(writer, false), 0);
	if (chunk_end_count)
		*chunk_end_count = 0;
	for (unsigned i = 0; i < count; i++) {
		struct trace_record record = sample_record(i);

		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
		trace_writer_get_stats(writer, &stats);
		if (chunk_ends && (i + 1) % per_chunk == 0)
			chunk_ends[(*chunk_end_count)++] = stats.bytes;
	}
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
}

/* Reads every record; returns how many matched samples 0..n in order, or -1 on a mismatch. */
static long read_and_compare(struct trace_reader *reader, int *status)
{
	struct trace_record record;
	long matched = 0;

	while ((*status = trace_reader_next(reader, &record)) > 0) {
		struct trace_record expected = sample_record((unsigned)matched);

		if (!records_equal(&expected, &record))
			return -1;
		matched++;
	}
	return matched;
}

UNIT_TEST(trace_format, round_trip_of_every_record_kind)
{
	const char *path = scratch_path("round-trip.trace");
	char error[ERROR_SIZE] = "";
	const struct trace_reader_stats *stats;
	const struct trace_header *read_header;
	struct trace_header header;
	struct trace_reader *reader;
	int status;

	write_samples(path, 4 * SAMPLE_KINDS, 1000, NULL, NULL);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	test_header(&header);
	read_header = trace_reader_header(reader);
	CU_ASSERT_EQUAL(read_header->format_version, TRACE_FORMAT_VERSION_MAJOR);
	CU_ASSERT_STRING_EQUAL(read_header->hostname, header.hostname);
	CU_ASSERT_STRING_EQUAL(read_header->boot_id, header.boot_id);
	CU_ASSERT_STRING_EQUAL(read_header->command_line, header.command_line);
	CU_ASSERT_EQUAL(read_header->anchor_monotonic_ns, header.anchor_monotonic_ns);
	CU_ASSERT_EQUAL(read_header->anchor_realtime_ns, header.anchor_realtime_ns);

	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 4 * SAMPLE_KINDS);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &(struct trace_record){ 0 }), 0);
	CU_ASSERT_PTR_NULL(trace_reader_truncated(reader));
	CU_ASSERT_PTR_NULL(trace_reader_note(reader));
	stats = trace_reader_stats(reader);
	CU_ASSERT_EQUAL(stats->records, 4 * SAMPLE_KINDS);
	for (unsigned kind = TRACE_RECORD_NCCL_CALL; kind <= TRACE_FORMAT_LAST_KNOWN_KIND; kind++)
		CU_ASSERT_EQUAL(stats->records_by_kind[kind], 4);
	CU_ASSERT_EQUAL(stats->chunks, 1);
	CU_ASSERT_EQUAL(stats->unknown_records, 0);
	CU_ASSERT_FALSE(stats->truncated);
	/* The reader keeps the last stats record: the recording's loss counters. */
	for (unsigned index = 4 * SAMPLE_KINDS; index-- > 0;) {
		struct trace_record last = sample_record(index);

		if (last.kind != TRACE_RECORD_STATS)
			continue;
		CU_ASSERT_EQUAL(memcmp(&stats->recorded_counters, &last.stats, sizeof(last.stats)),
				0);
		break;
	}
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, stats_of_format_1_2_have_no_python_losses)
{
	const char *path = scratch_path("stats-1.2.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 }, body = { 0 };
	struct trace_reader *reader;
	struct trace_record record;

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 2);
	memset(bytes_extend(&body, TRACE_FORMAT_STATS_SIZE), 0, TRACE_FORMAT_STATS_SIZE);
	trace_format_put_u64(body.data + TRACE_FORMAT_STATS_RINGBUF_DROPS_AT, 9);
	trace_format_put_u64(body.data + TRACE_FORMAT_STATS_PROCESS_DROPS_AT, 2);
	raw_record(&payload, TRACE_RECORD_STATS, &body);
	raw_chunk(&file, &payload, 1, (uint32_t)payload.length, 0);
	write_file(path, file.data, file.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(record.kind, TRACE_RECORD_STATS);
	CU_ASSERT_EQUAL(record.stats.ringbuf_drops, 9);
	CU_ASSERT_EQUAL(record.stats.process_drops, 2);
	CU_ASSERT_EQUAL(record.stats.python_events_lost, 0);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->recorded_counters.ringbuf_drops, 9);
	CU_ASSERT_PTR_NULL(trace_reader_note(reader));
	trace_reader_close(reader);
	free(body.data);
	free(payload.data);
	free(file.data);
	unlink(path);
}

UNIT_TEST(trace_format, many_chunks_and_interned_strings)
{
	const char *path = scratch_path("many-chunks.trace");
	char error[ERROR_SIZE] = "";
	struct trace_writer_stats written;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_reader *reader;
	struct trace_record record;
	unsigned count = 0;
	int status;

	/* One call per chunk: later chunks must reuse the ids the first ones defined. */
	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, 1, 0), 0);
	for (unsigned i = 0; i < 300; i++) {
		record = sample_record(0);
		record.call.function = function_names[i % 3];
		record.call.seq = i;
		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	trace_writer_get_stats(writer, &written);
	CU_ASSERT_EQUAL(written.chunks, 300);
	CU_ASSERT_EQUAL(written.strings, 3);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	while ((status = trace_reader_next(reader, &record)) > 0) {
		CU_ASSERT_STRING_EQUAL(record.call.function, function_names[count % 3]);
		CU_ASSERT_EQUAL(record.call.seq, count);
		count++;
	}
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(count, 300);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->chunks, 300);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->strings, 3);
	trace_reader_close(reader);

	/* Mixed kinds, several per chunk, over many chunks. */
	write_samples(path, 1000, 7, NULL, NULL);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 1000);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->chunks, (1000 + 6) / 7);
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, chunk_byte_limit)
{
	const char *path = scratch_path("byte-limit.trace");
	char error[ERROR_SIZE] = "";
	struct trace_writer_stats written;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_reader *reader;
	int status;

	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, 0, 1024), 0);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, 0, TRACE_WRITER_MAX_CHUNK_BYTES + 1),
			-EINVAL);
	for (unsigned i = 0; i < 200; i++) {
		struct trace_record record = sample_record(i);

		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	trace_writer_get_stats(writer, &written);
	/* Each chunk closes at the first record that takes it past 1 KiB. */
	CU_ASSERT(written.chunks >= 200 * 100 / 2048);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 200);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT(trace_reader_stats(reader)->chunks >= written.chunks);
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, flushed_chunks_survive_a_writer_that_never_closes)
{
	const char *path = scratch_path("killed.trace");
	char error[ERROR_SIZE] = "";
	struct trace_writer_stats written;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_reader *reader;
	struct stat status_before;
	int status;

	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	for (unsigned i = 0; i < 10; i++) {
		struct trace_record record = sample_record(i);

		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	/* Nothing reaches the file before a flush: never half a chunk. */
	CU_ASSERT_EQUAL(stat(path, &status_before), 0);
	trace_writer_get_stats(writer, &written);
	CU_ASSERT_EQUAL((uint64_t)status_before.st_size, written.bytes);
	CU_ASSERT_EQUAL(trace_writer_flush(writer), 0);
	CU_ASSERT_EQUAL(trace_writer_flush(writer), 0);
	trace_writer_get_stats(writer, &written);
	CU_ASSERT_EQUAL(written.chunks, 1);

	/* Read while the writer is still open, as after a kill -9. */
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 10);
	CU_ASSERT_EQUAL(status, 0);
	/* Whole chunks, but no closing one: the reader says when the last record was written. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_truncated(reader));
	CU_ASSERT(strstr(trace_reader_truncated(reader), "was not closed by its recorder") != NULL);
	CU_ASSERT(strstr(trace_reader_truncated(reader), "its last record was written at") != NULL);
	CU_ASSERT_TRUE(trace_reader_stats(reader)->unclosed);
	CU_ASSERT_FALSE(trace_reader_stats(reader)->truncated);
	trace_reader_close(reader);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);

	/* Closed: nothing to say. */
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 10);
	CU_ASSERT_PTR_NULL(trace_reader_truncated(reader));
	CU_ASSERT_FALSE(trace_reader_stats(reader)->unclosed);
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, cut_at_every_byte_offset)
{
	const char *path = scratch_path("three-chunks.trace");
	const char *cut_path = scratch_path("cut.trace");
	uint64_t chunk_ends[3];
	unsigned chunk_end_count;
	struct bytes whole;
	size_t header_size;

	/* Two chunks hold a Python call (samples 5 and 11), one of them a raised one. */
	write_samples(path, 12, 4, chunk_ends, &chunk_end_count);
	CU_ASSERT_EQUAL_FATAL(chunk_end_count, 3);
	whole = read_whole_file(path);
	/* Then the closing chunk. */
	CU_ASSERT_EQUAL_FATAL(whole.length, chunk_ends[2] + TRACE_FORMAT_CHUNK_HEADER_SIZE +
						    TRACE_FORMAT_CLOSING_SIZE);
	header_size = TRACE_FORMAT_FILE_FIXED_SIZE +
		      trace_format_get_u32(whole.data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);

	for (size_t cut = 0; cut <= whole.length; cut++) {
		char error[ERROR_SIZE] = "";
		struct trace_reader *reader;
		long expected = 0, matched;
		int at_boundary = cut == header_size, closed = cut == whole.length, status;

		for (unsigned i = 0; i < chunk_end_count; i++) {
			if (cut >= chunk_ends[i])
				expected += 4;
			if (cut == chunk_ends[i])
				at_boundary = 1;
		}
		write_file(cut_path, whole.data, cut);
		reader = trace_reader_open(cut_path, error, sizeof(error));
		if (cut < header_size) {
			CU_ASSERT_PTR_NULL(reader);
			CU_ASSERT(strstr(error, cut_path) != NULL);
			trace_reader_close(reader);
			continue;
		}
		CU_ASSERT_FATAL(reader != NULL);
		matched = read_and_compare(reader, &status);
		CU_ASSERT_EQUAL(status, 0);
		CU_ASSERT_EQUAL(matched, expected);
		/* Cut anywhere short of the end, the trace was not closed. */
		CU_ASSERT_EQUAL(trace_reader_truncated(reader) != NULL, !closed);
		CU_ASSERT_EQUAL(trace_reader_stats(reader)->truncated, !at_boundary && !closed);
		CU_ASSERT_EQUAL(trace_reader_stats(reader)->unclosed, at_boundary);
		CU_ASSERT_STRING_EQUAL(trace_reader_error(reader), "");
		if (!at_boundary && !closed)
			CU_ASSERT(strstr(trace_reader_truncated(reader), "before that chunk is "
									 "complete") != NULL);
		if (at_boundary)
			CU_ASSERT(strstr(trace_reader_truncated(reader), "not closed") != NULL);
		trace_reader_close(reader);
	}
	free(whole.data);
	unlink(cut_path);
	unlink(path);
}

/* Opens 'path' and reads to the end; returns the final status and the records read. */
static int read_all(const char *path, long *records, char *error, size_t error_size)
{
	struct trace_reader *reader = trace_reader_open(path, error, error_size);
	struct trace_record record;
	int status;

	*records = 0;
	if (!reader)
		return -errno;
	while ((status = trace_reader_next(reader, &record)) > 0)
		(*records)++;
	snprintf(error, error_size, "%s", trace_reader_error(reader));
	/* The error stays: reading again gives the same answer. */
	if (status < 0)
		CU_ASSERT_EQUAL(trace_reader_next(reader, &record), status);
	/* Damage read past is no error, but the damage is said: here, as one. */
	if (status == 0 && trace_reader_damage(reader)) {
		snprintf(error, error_size, "%s", trace_reader_damage(reader));
		status = -EBADMSG;
	}
	trace_reader_close(reader);
	return status;
}

UNIT_TEST(trace_format, damaged_middle_chunk_is_named)
{
	const char *path = scratch_path("damaged.trace");
	char error[ERROR_SIZE] = "", expected[64];
	uint64_t chunk_ends[3];
	unsigned chunk_end_count;
	struct bytes whole;
	long records;

	write_samples(path, 9, 3, chunk_ends, &chunk_end_count);
	whole = read_whole_file(path);

	/* A byte of chunk 1's payload. */
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_HEADER_SIZE + 5] ^= 0x10;
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	/* That chunk is lost, and only that one: the reader goes on at chunk 2. */
	CU_ASSERT_EQUAL(records, 6);
	snprintf(expected, sizeof(expected), "chunk 1 at byte offset %llu",
		 (unsigned long long)chunk_ends[0]);
	CU_ASSERT(strstr(error, expected) != NULL);
	CU_ASSERT(strstr(error, "checksum") != NULL);
	CU_ASSERT(strstr(error, path) != NULL);
	CU_ASSERT(strstr(error, "losing 16 records (string definitions counted) written between") !=
		  NULL);
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_HEADER_SIZE + 5] ^= 0x10;

	/* A byte of chunk 1's header. */
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT] ^= 0x01;
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT_EQUAL(records, 6);
	CU_ASSERT(strstr(error, expected) != NULL);
	CU_ASSERT(strstr(error, "damaged header") != NULL);
	CU_ASSERT(strstr(error, "losing an unknown number of records") != NULL);
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT] ^= 0x01;

	/* The chunk signature. */
	whole.data[chunk_ends[1]] = 'X';
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT_EQUAL(records, 6);
	CU_ASSERT(strstr(error, "chunk 2") != NULL);
	CU_ASSERT(strstr(error, "signature") != NULL);
	whole.data[chunk_ends[1]] = 'C';

	/* The file header. */
	whole.data[TRACE_FORMAT_FILE_FIXED_SIZE + 20] ^= 0x40;
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "damaged file header") != NULL);
	free(whole.data);
	unlink(path);
}

UNIT_TEST(trace_format, not_a_trace)
{
	const char *path = scratch_path("not-a-trace.txt");
	static const char text[] = "this is a text file, long enough to hold a header\n";
	char error[ERROR_SIZE] = "", expected[200];
	long records;

	write_file(path, (const unsigned char *)text, sizeof(text) - 1);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	snprintf(expected, sizeof(expected), "%s is not a tcheck-bpf trace", path);
	CU_ASSERT(strstr(error, expected) != NULL);

	write_file(path, (const unsigned char *)text, 0);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "is empty") != NULL);

	CU_ASSERT_EQUAL(read_all(scratch_path("missing.trace"), &records, error, sizeof(error)),
			-ENOENT);
	CU_ASSERT(strstr(error, "missing.trace") != NULL);
	CU_ASSERT(strstr(error, "No such file") != NULL);
	unlink(path);
}

UNIT_TEST(trace_format, newer_major_version_is_refused)
{
	const char *path = scratch_path("version-2.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 };
	long records;

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR + 1, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT_EQUAL(read_all(path, &records, error, sizeof(error)), -EPROTONOSUPPORT);
	CU_ASSERT(strstr(error, "version 2.0") != NULL);
	CU_ASSERT(strstr(error, "newer tcheck-bpf") != NULL);
	free(file.data);
	unlink(path);
}

UNIT_TEST(trace_format, newer_minor_version_skips_unknown_kinds)
{
	const char *path = scratch_path("minor.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 }, future = { 0 };
	struct trace_reader *reader;
	struct trace_record record;
	char expected_version[32];

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR + 3);
	bytes_append(&future, "python frame", 12);
	raw_string(&payload, 1, "ncclAllReduce");
	raw_record(&payload, 99, &future);
	/* A known kind with fields appended by a newer writer. */
	raw_call(&payload, 1, 2, 24);
	raw_record(&payload, 100, &(struct bytes){ 0 });
	raw_chunk(&file, &payload, 4, (uint32_t)payload.length, 0);
	write_file(path, file.data, file.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_PTR_NOT_NULL(trace_reader_note(reader));
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(record.kind, TRACE_RECORD_NCCL_CALL);
	CU_ASSERT_STRING_EQUAL(record.call.function, "ncclAllReduce");
	CU_ASSERT_EQUAL(record.call.param_count, 2);
	CU_ASSERT_EQUAL(record.call.params[1], 101);
	CU_ASSERT_EQUAL(record.call.pid, 77);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->unknown_records, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_note(reader));
	CU_ASSERT(strstr(trace_reader_note(reader), "2 records") != NULL);
	snprintf(expected_version, sizeof(expected_version), "%d.%d", TRACE_FORMAT_VERSION_MAJOR,
		 TRACE_FORMAT_VERSION_MINOR + 3);
	CU_ASSERT(strstr(trace_reader_note(reader), expected_version) != NULL);
	trace_reader_close(reader);
	free(future.data);
	free(payload.data);
	free(file.data);
	unlink(path);
}

/* A file header with its checksum made to match, whatever the fields say. */
static void reseal_file_header(struct bytes *file)
{
	uint32_t body_length = trace_format_get_u32(file->data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	size_t covered = body_length < file->length - TRACE_FORMAT_FILE_FIXED_SIZE
				 ? body_length
				 : file->length - TRACE_FORMAT_FILE_FIXED_SIZE;
	uLong crc = crc32(0L, file->data, TRACE_FORMAT_FILE_CRC_AT);

	crc = crc32(crc, file->data + TRACE_FORMAT_FILE_FIXED_SIZE, (uInt)covered);
	trace_format_put_u32(file->data + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);
}

UNIT_TEST(trace_format, damaged_file_headers)
{
	const char *path = scratch_path("bad-header.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 };
	long records;

	raw_file_header(&file, 0, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "version 0") != NULL);

	file.length = 0;
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 0);
	trace_format_put_u32(file.data + TRACE_FORMAT_FILE_BODY_LENGTH_AT, 3);
	reseal_file_header(&file);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "file header of 3 bytes") != NULL);

	/* The host name's length runs past the end of the header body. */
	file.length = 0;
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 0);
	trace_format_put_u32(
		file.data + TRACE_FORMAT_FILE_FIXED_SIZE + TRACE_FORMAT_HEADER_STRINGS_AT, 1000);
	reseal_file_header(&file);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "strings overrun") != NULL);

	/* The body is longer than the file. */
	file.length = 0;
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 0);
	file.length -= 5;
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "ends inside its file header") != NULL);

	CU_ASSERT_EQUAL(read_all("/tmp", &records, error, sizeof(error)), -EISDIR);
	CU_ASSERT(strstr(error, "is a directory") != NULL);
	free(file.data);
	unlink(path);
}

/* Feeds 'length' bytes of 'data' through a named pipe and reads them as a trace. */
static int read_through_pipe(const unsigned char *data, size_t length, long *records,
			     int *truncated, char *error)
{
	const char *fifo = scratch_path("trace.fifo");
	struct trace_reader *reader;
	struct trace_record record;
	int status, child_status;
	pid_t child;

	unlink(fifo);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		int fd = open(fifo, O_WRONLY);

		if (fd >= 0 && write(fd, data, length) == (ssize_t)length)
			_exit(0);
		_exit(1);
	}
	*records = 0;
	reader = trace_reader_open(fifo, error, ERROR_SIZE);
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_rewind(reader), -ESPIPE);
	while ((status = trace_reader_next(reader, &record)) > 0)
		(*records)++;
	*truncated = trace_reader_truncated(reader) != NULL;
	trace_reader_close(reader);
	waitpid(child, &child_status, 0);
	unlink(fifo);
	return status;
}

UNIT_TEST(trace_format, reading_from_a_pipe)
{
	const char *path = scratch_path("pipe.trace");
	char error[ERROR_SIZE] = "";
	uint64_t chunk_ends[3];
	unsigned chunk_end_count;
	struct bytes whole;
	int truncated;
	long records;

	write_samples(path, 9, 3, chunk_ends, &chunk_end_count);
	whole = read_whole_file(path);
	CU_ASSERT_EQUAL(read_through_pipe(whole.data, whole.length, &records, &truncated, error),
			0);
	CU_ASSERT_EQUAL(records, 9);
	CU_ASSERT_FALSE(truncated);
	/* Cut inside the last payload: no file size to check first, the read comes up short. */
	CU_ASSERT_EQUAL(
		read_through_pipe(whole.data, chunk_ends[2] - 3, &records, &truncated, error), 0);
	CU_ASSERT_EQUAL(records, 6);
	CU_ASSERT_TRUE(truncated);
	free(whole.data);
	unlink(path);
}

/* Writes a one-chunk file around 'payload' and reads it; returns the status. */
static int read_crafted(const struct bytes *payload, uint32_t record_count, uint32_t flags,
			long *records, char *error)
{
	const char *path = scratch_path("crafted.trace");
	struct bytes file = { 0 };
	int status;

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, payload, record_count, (uint32_t)payload->length, flags);
	write_file(path, file.data, file.length);
	status = read_all(path, records, error, ERROR_SIZE);
	free(file.data);
	unlink(path);
	return status;
}

UNIT_TEST(trace_format, chunk_claiming_a_huge_payload)
{
	const char *path = scratch_path("huge.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 };
	long records;

	raw_string(&payload, 1, "ncclSend");
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, &payload, 1, 0xfffffff0U, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "chunk 0") != NULL);
	CU_ASSERT(strstr(error, "4294967280 bytes") != NULL);

	/* Within the limit but past the end of the file: a cut chunk, not an allocation. */
	free(file.data);
	file = (struct bytes){ 0 };
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, &payload, 1, TRACE_FORMAT_MAX_CHUNK_PAYLOAD, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT_EQUAL(read_all(path, &records, error, sizeof(error)), 0);

	CU_ASSERT(read_crafted(&payload, 1000, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "claims 1000 records") != NULL);
	free(payload.data);
	free(file.data);
	unlink(path);
}

UNIT_TEST(trace_format, malformed_records_are_errors)
{
	char error[ERROR_SIZE] = "";
	struct bytes payload = { 0 };
	long records;

	/* A string id used but never defined. */
	raw_string(&payload, 1, "ncclAllReduce");
	raw_call(&payload, 5, 0, 0);
	CU_ASSERT(read_crafted(&payload, 2, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "string id 5") != NULL);
	CU_ASSERT(strstr(error, "chunk 0") != NULL);
	CU_ASSERT(strstr(error, "record 1") != NULL);

	/* A string defined out of order. */
	payload.length = 0;
	raw_string(&payload, 2, "ncclAllReduce");
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "defines string id 2 where id 1 comes next") != NULL);

	/* More records counted than present, and fewer. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	raw_call(&payload, 1, 0, 0);
	CU_ASSERT(read_crafted(&payload, 3, 0, &records, error) < 0);
	CU_ASSERT_EQUAL(records, 1);
	CU_ASSERT(strstr(error, "holds 2 records but its header says 3") != NULL);
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);

	/* A record longer than what is left of the chunk. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	trace_format_put_u32(payload.data + TRACE_FORMAT_RECORD_LENGTH_AT, 5000);
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "claims 5000 bytes") != NULL);

	/* A call too short for the parameters it claims. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	raw_call(&payload, 1, 3, 0);
	trace_format_put_u32(payload.data + payload.length - 24 - TRACE_FORMAT_CALL_FIXED_SIZE +
				     TRACE_FORMAT_CALL_PARAM_COUNT_AT,
			     4000000000U);
	CU_ASSERT(read_crafted(&payload, 2, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "too short") != NULL);

	/* A known kind shorter than its fixed fields. */
	payload.length = 0;
	raw_record(&payload, TRACE_RECORD_STATS, &(struct bytes){ 0 });
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "stats record of 0 bytes") != NULL);

	/* Bytes after the last record that do not make a record header. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	bytes_put_u32(&payload, 0);
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "cut off") != NULL);

	/* A chunk using a feature this version does not have. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	CU_ASSERT_EQUAL(read_crafted(&payload, 1, 0x4, &records, error), -EPROTONOSUPPORT);
	CU_ASSERT(strstr(error, "newer tcheck-bpf") != NULL);
	free(payload.data);
}

UNIT_TEST(trace_format, random_records_never_crash_the_reader)
{
	char error[ERROR_SIZE];
	struct bytes payload = { 0 };
	unsigned seed = 12345;
	long records;

	/* Valid checksums around random contents reach every check past them. */
	for (int round = 0; round < 300; round++) {
		unsigned record_count = 0;

		payload.length = 0;
		raw_string(&payload, 1, "ncclAllReduce");
		record_count++;
		for (int i = 0; i < 1 + round % 6; i++) {
			struct bytes body = { 0 };
			unsigned kind =
				(unsigned)rand_r(&seed) % (TRACE_FORMAT_LAST_KNOWN_KIND + 2);
			size_t length = (size_t)rand_r(&seed) % 140;

			for (size_t b = 0; b < length; b++) {
				unsigned char byte = (unsigned char)rand_r(&seed);

				/* Small string ids and counts reach the decoders more often. */
				bytes_append(&body, &byte, 1);
			}
			if (kind == TRACE_RECORD_PYTHON_CALL &&
			    length >= TRACE_FORMAT_PYTHON_SIZE && rand_r(&seed) % 2) {
				trace_format_put_u32(
					body.data + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT, 1);
				trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_FILE_AT,
						     (uint32_t)rand_r(&seed) % 3);
			} else if (length >= TRACE_FORMAT_CALL_FIXED_SIZE && rand_r(&seed) % 2) {
				trace_format_put_u32(body.data + TRACE_FORMAT_CALL_FUNCTION_AT, 1);
				trace_format_put_u32(body.data + TRACE_FORMAT_CALL_PARAM_COUNT_AT,
						     (uint32_t)rand_r(&seed) % 12);
			}
			raw_record(&payload, kind, &body);
			record_count++;
			free(body.data);
		}
		if (round % 5 == 0)
			payload.length -= (size_t)rand_r(&seed) % 9;
		read_crafted(&payload, record_count, 0, &records, error);
	}
	free(payload.data);
}

UNIT_TEST(trace_format, rewind_reads_the_trace_again)
{
	const char *path = scratch_path("rewind.trace");
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	struct trace_record record;
	const char *first_function;
	int status;

	write_samples(path, 50, 4, NULL, NULL);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	first_function = record.call.function;
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), -1);
	CU_ASSERT_EQUAL(trace_reader_rewind(reader), 0);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 50);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->records, 50);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->chunks, 13);
	/* Strings from the first pass are still the same memory. */
	CU_ASSERT_STRING_EQUAL(first_function, "ncclAllReduce");
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, writer_errors_are_sentences)
{
	char error[ERROR_SIZE] = "";
	struct trace_header header;
	struct trace_record record = sample_record(0);
	struct trace_writer *writer;

	test_header(&header);
	writer = trace_writer_new("/nonexistent-directory/x.trace", &header, error, sizeof(error));
	CU_ASSERT_PTR_NULL(writer);
	CU_ASSERT_EQUAL(errno, ENOENT);
	CU_ASSERT(strstr(error, "/nonexistent-directory/x.trace") != NULL);
	CU_ASSERT(strstr(error, "No such file") != NULL);

	writer = trace_writer_new(scratch_path("invalid.trace"), &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	record.call.param_count = NCCL_MAX_PARAMS + 1;
	CU_ASSERT_EQUAL(trace_writer_add(writer, &record), -EINVAL);
	CU_ASSERT(strstr(trace_writer_error(writer), "parameters") != NULL);
	record.kind = (enum trace_record_kind)42;
	CU_ASSERT_EQUAL(trace_writer_add(writer, &record), -EINVAL);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
	unlink(scratch_path("invalid.trace"));

	/* A full disk: the writer stops and says why. */
	writer = trace_writer_new("/dev/full", &header, error, sizeof(error));
	if (writer)
		trace_writer_close(writer, error, sizeof(error));
	else
		CU_ASSERT(strstr(error, "/dev/full") != NULL);
}

UNIT_TEST(trace_format, long_strings_are_cut_to_the_limit)
{
	const char *path = scratch_path("long-string.trace");
	char error[ERROR_SIZE] = "";
	struct trace_header header;
	struct trace_record record = sample_record(1);
	struct trace_writer *writer;
	struct trace_reader *reader;
	char *command = malloc(TRACE_FORMAT_MAX_STRING + 100);

	if (!command) {
		CU_FAIL("out of memory");
		return;
	}
	memset(command, 'x', TRACE_FORMAT_MAX_STRING + 99);
	command[TRACE_FORMAT_MAX_STRING + 99] = '\0';
	record.process.command = command;
	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(strlen(record.process.command), TRACE_FORMAT_MAX_STRING);
	trace_reader_close(reader);
	free(command);
	unlink(path);
}

UNIT_TEST(trace_format, local_header)
{
	char *const arguments[] = { "tcheck-bpf", "record", "-o", "x.trace", NULL };
	char error[ERROR_SIZE] = "";
	struct trace_header header;

	CU_ASSERT_EQUAL(trace_header_init_local(&header, 4, arguments, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(header.format_version, TRACE_FORMAT_VERSION_MAJOR);
	CU_ASSERT(header.hostname[0] != '\0');
	CU_ASSERT_STRING_EQUAL(header.command_line, "tcheck-bpf record -o x.trace");
	CU_ASSERT(header.anchor_monotonic_ns > 0);
	/* Later than 2020: the wall clock part is a real date. */
	CU_ASSERT(header.anchor_realtime_ns > 1577836800ULL * 1000000000ULL);
	if (access("/proc/sys/kernel/random/boot_id", R_OK) == 0)
		CU_ASSERT_EQUAL(strlen(header.boot_id), 36);

	CU_ASSERT_EQUAL(trace_header_init_local(&header, 0, NULL, error, sizeof(error)), 0);
	CU_ASSERT(header.command_line[0] != '\0');
}

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

/*
 * Rewrites every record of kind 'from' as kind 'to' and reseals the
 * checksums: how a file looks to a reader that does not know 'from'.
 */
static unsigned relabel_kind(struct bytes *file, unsigned from, unsigned to)
{
	size_t chunk = TRACE_FORMAT_FILE_FIXED_SIZE +
		       trace_format_get_u32(file->data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	unsigned relabelled = 0;

	while (chunk + TRACE_FORMAT_CHUNK_HEADER_SIZE <= file->length) {
		unsigned char *header = file->data + chunk;
		unsigned char *payload = header + TRACE_FORMAT_CHUNK_HEADER_SIZE;
		uint32_t payload_length =
			trace_format_get_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT);
		size_t position = 0;

		while (position + TRACE_FORMAT_RECORD_HEADER_SIZE <= payload_length) {
			unsigned char *record = payload + position;

			if (trace_format_get_u16(record + TRACE_FORMAT_RECORD_KIND_AT) == from) {
				trace_format_put_u16(record + TRACE_FORMAT_RECORD_KIND_AT,
						     (uint16_t)to);
				relabelled++;
			}
			position += TRACE_FORMAT_RECORD_HEADER_SIZE +
				    trace_format_get_u32(record + TRACE_FORMAT_RECORD_LENGTH_AT);
		}
		trace_format_put_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT,
				     (uint32_t)crc32(0L, payload, payload_length));
		trace_format_put_u32(header + TRACE_FORMAT_CHUNK_HEADER_CRC_AT,
				     (uint32_t)crc32(0L, header, TRACE_FORMAT_CHUNK_HEADER_CRC_AT));
		chunk += TRACE_FORMAT_CHUNK_HEADER_SIZE + payload_length;
	}
	return relabelled;
}

/* Gives the file another minor format version and reseals the file header's checksum. */
static void set_minor_version(struct bytes *file, uint32_t minor)
{
	uint32_t body_length = trace_format_get_u32(file->data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	uLong crc;

	trace_format_put_u32(file->data + TRACE_FORMAT_FILE_MINOR_AT, minor);
	crc = crc32(0L, file->data, TRACE_FORMAT_FILE_CRC_AT);
	crc = crc32(crc, file->data + TRACE_FORMAT_FILE_FIXED_SIZE, body_length);
	trace_format_put_u32(file->data + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);
}

/* Of this reader's own format, a kind it does not know is damage, never a newer writer's. */
static void expect_note(const char *path, const struct bytes *whole, const char *words)
{
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	struct trace_record record;

	write_file(path, whole->data, whole->length);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	while (trace_reader_next(reader, &record) > 0)
		;
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_note(reader));
	if (!strstr(trace_reader_note(reader), words))
		fprintf(stderr, "\nexpected '%s' in: %s\n", words, trace_reader_note(reader));
	CU_ASSERT(strstr(trace_reader_note(reader), words) != NULL);
	trace_reader_close(reader);
}

UNIT_TEST(trace_format, an_unknown_kind_in_a_known_format_is_not_called_newer)
{
	const char *path = scratch_path("unknown-kind-known-format.trace");
	struct bytes whole;

	write_samples(path, 10 * SAMPLE_KINDS, 4, NULL, NULL);
	whole = read_whole_file(path);
	CU_ASSERT_EQUAL(
		relabel_kind(&whole, TRACE_RECORD_PYTHON_CALL, TRACE_FORMAT_LAST_KNOWN_KIND + 1),
		10);
	expect_note(path, &whole, "10 records of a kind that format does not have");
	set_minor_version(&whole, 1);
	expect_note(path, &whole,
		    "(trace format 1.1, which this tcheck-bpf reads) holds 10 records of a kind "
		    "that format does not have: skipped; the file may be damaged");
	set_minor_version(&whole, TRACE_FORMAT_VERSION_MINOR + 1);
	expect_note(path, &whole, "was written by a newer tcheck-bpf");
	free(whole.data);
	unlink(path);
}

UNIT_TEST(trace_format, a_reader_without_python_calls_skips_them)
{
	const char *path = scratch_path("python-unknown.trace");
	unsigned unknown_kind = TRACE_FORMAT_LAST_KNOWN_KIND + 1, relabelled;
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	struct trace_record record;
	struct bytes whole;
	unsigned sample = 0;
	int status;

	/*
	 * A reader of format 1.0 sees a Python call as this one sees a kind
	 * past the last it knows: give the Python calls such a kind.
	 */
	write_samples(path, 10 * SAMPLE_KINDS, 4, NULL, NULL);
	whole = read_whole_file(path);
	relabelled = relabel_kind(&whole, TRACE_RECORD_PYTHON_CALL, unknown_kind);
	CU_ASSERT_EQUAL(relabelled, 10);
	set_minor_version(&whole, TRACE_FORMAT_VERSION_MINOR + 1);
	write_file(path, whole.data, whole.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	while ((status = trace_reader_next(reader, &record)) > 0) {
		struct trace_record expected;

		if (sample % SAMPLE_KINDS == 5)
			sample++;
		expected = sample_record(sample++);
		CU_ASSERT(records_equal(&expected, &record));
	}
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->records, 10 * (SAMPLE_KINDS - 1));
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->unknown_records, 10);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->records_by_kind[TRACE_RECORD_PYTHON_CALL], 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_note(reader));
	CU_ASSERT(strstr(trace_reader_note(reader), "10 records") != NULL);
	CU_ASSERT(strstr(trace_reader_note(reader), "newer tcheck-bpf") != NULL);
	trace_reader_close(reader);
	free(whole.data);
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
