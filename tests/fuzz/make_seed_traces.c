// SPDX-License-Identifier: MIT
/*
 * Writes the trace reader's fuzz seeds (tests/fuzz/corpus/trace_reader/)
 * with the trace writer itself, so the seeds are traces the recorder could
 * have written: a 2-rank job's calls in two chunks, Python calls with
 * arguments and callers, and a trace cut short inside its last chunk.
 * Usage: make-seed-traces DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/nccl_api.h"
#include "trace/trace_writer.h"

static void fail(const char *what, const char *error)
{
	fprintf(stderr, "make-seed-traces: %s: %s\n", what, error);
	exit(1);
}

static struct trace_writer *open_trace(const char *directory, const char *name, char *path,
				       size_t path_size)
{
	struct trace_header header = { 0 };
	struct trace_writer *writer;
	char error[512];

	snprintf(path, path_size, "%s/%s", directory, name);
	snprintf(header.hostname, sizeof(header.hostname), "seed-host");
	snprintf(header.boot_id, sizeof(header.boot_id), "00000000-seed");
	snprintf(header.command_line, sizeof(header.command_line), "tcheck-bpf record -o seed");
	header.anchor_monotonic_ns = 1000000;
	header.anchor_realtime_ns = 1700000000000000000ULL;
	writer = trace_writer_new(path, &header, error, sizeof(error));
	if (!writer)
		fail(path, error);
	/* Small chunks, so that one seed holds several. */
	trace_writer_set_chunk_limits(writer, 4, 0);
	/*
	 * Uncompressed but for the seed named "compressed": the bad-input cases
	 * (tests/e2e/bad_input_cases.py) reach into the records' bytes of the others.
	 */
	trace_writer_set_compression(writer, strcmp(name, "compressed") == 0);
	return writer;
}

static void add(struct trace_writer *writer, const struct trace_record *record)
{
	if (trace_writer_add(writer, record))
		fail("add", trace_writer_error(writer));
}

static void close_trace(struct trace_writer *writer, const char *path)
{
	char error[512];

	if (trace_writer_close(writer, error, sizeof(error)))
		fail(path, error);
}

static void write_calls(const char *directory, const char *name)
{
	struct trace_record record = { .kind = TRACE_RECORD_PROCESS };
	struct trace_writer *writer;
	char path[4096];

	writer = open_trace(directory, name, path, sizeof(path));
	for (int rank = 0; rank < 2; rank++) {
		record = (struct trace_record){ .kind = TRACE_RECORD_PROCESS };
		record.process = (struct trace_process){ .pid = 100 + rank,
							 .parent_pid = 99,
							 .rank = rank,
							 .local_rank = rank,
							 .world_size = 2,
							 .exit_code = -1,
							 .start_ns = 1000,
							 .command = "python3 train.py" };
		add(writer, &record);
		record = (struct trace_record){ .kind = TRACE_RECORD_COMMUNICATOR };
		record.communicator = (struct trace_communicator){ .pid = 100 + rank,
								   .origin = TRACE_COMM_CREATED,
								   .handle = 0x5000,
								   .comm_id = 0xc0ffee,
								   .rank = rank,
								   .nranks = 2,
								   .seq_base = 0,
								   .seen_ns = 1100,
								   .note = "" };
		add(writer, &record);
	}
	record = (struct trace_record){ .kind = TRACE_RECORD_LIBRARY };
	record.library = (struct trace_library){ .pid = 100,
						 .functions_attached = 40,
						 .attached_ns = 900,
						 .path = "/usr/lib/libnccl.so.2",
						 .build_id = "abcdef0123" };
	add(writer, &record);
	for (int seq = 0; seq < 3; seq++) {
		for (int rank = 0; rank < 2; rank++) {
			struct trace_nccl_call *call = &record.call;

			record = (struct trace_record){ .kind = TRACE_RECORD_NCCL_CALL };
			call->entry_ns = 2000 + (uint64_t)seq * 100;
			call->duration_ns = 10 + (uint64_t)rank;
			call->pid = 100 + (uint32_t)rank;
			call->tid = call->pid;
			call->function = "ncclAllReduce";
			call->api = nccl_function_by_name(call->function);
			call->param_count = 7;
			call->params[2] = 1024;
			call->params[3] = 7; /* ncclFloat32 */
			call->comm = 0x5000;
			call->comm_id = 0xc0ffee;
			call->rank = rank;
			call->nranks = 2;
			call->seq = seq;
			call->step = seq;
			call->stage = TRACE_STAGE_TRAIN;
			call->py_stack.depth = 1;
			call->py_stack.frames[0] = "torch.distributed.all_reduce";
			add(writer, &record);
		}
	}
	record = (struct trace_record){ .kind = TRACE_RECORD_STATS };
	record.stats = (struct trace_stats){ .timestamp_ns = 3000, .calls = 6, .ringbuf_drops = 1 };
	add(writer, &record);
	record = (struct trace_record){ .kind = TRACE_RECORD_NETWORK };
	record.network = (struct trace_network_sample){ .timestamp_ns = 3100,
							.pid = 100,
							.source = 1,
							.requests_posted = 8,
							.requests_signalled = 4,
							.completions = 4,
							.bytes_posted = 8192,
							.bytes_completed = 4096,
							.last_post_ns = 3050,
							.last_completion_ns = 3060 };
	add(writer, &record);
	record = (struct trace_record){ .kind = TRACE_RECORD_ACTIVITY };
	record.activity = (struct trace_activity_sample){ .timestamp_ns = 3200,
							  .pid = 100,
							  .threads = 4,
							  .threads_running = 1,
							  .threads_io_wait = 1,
							  .cpu_ns = 50000000,
							  .write_bytes = 1 << 20,
							  .write_chars = 1 << 20 };
	add(writer, &record);
	record = (struct trace_record){ .kind = TRACE_RECORD_ARRIVAL };
	record.arrival = (struct trace_arrival_state){
		.timestamp_ns = 3300,
		.pid = 100,
		.rank = 1,
		.flags = TRACE_ARRIVAL_LAGGING | TRACE_ARRIVAL_RANK,
		.nranks = 2,
		.seq = 9,
		.comm_hash = 0x1234,
		.collective = "ncclAllReduce",
		.blocked_in = "",
		.waiting = "0",
		.doing = "in Python train (train.py, def at line 3)",
		.missed = "",
		.py_stack = { .depth = 1, .frames = { "train" } },
	};
	add(writer, &record);
	close_trace(writer, path);
}

static void write_python(const char *directory)
{
	struct trace_record record;
	struct trace_writer *writer;
	char path[4096];

	writer = open_trace(directory, "python", path, sizeof(path));
	for (int step = 0; step < 3; step++) {
		struct trace_python_call *call = &record.python_call;

		record = (struct trace_record){ .kind = TRACE_RECORD_PYTHON_CALL };
		call->entry_ns = 5000 + (uint64_t)step * 1000;
		call->duration_ns = 500;
		call->pid = 200;
		call->tid = 201;
		call->depth = 1;
		call->flags = step == 2 ? TRACE_PYTHON_RAISED : 0;
		call->first_line = 42;
		call->step = step;
		call->qualified_name = "torch.optim.sgd.SGD.step";
		call->file = "/usr/lib/python3/dist-packages/torch/optim/sgd.py";
		call->stage = TRACE_STAGE_TRAIN;
		call->rank = 0;
		call->world_size = 1;
		call->py_stack.depth = 2;
		call->py_stack.frames[0] = "train_one_step";
		call->py_stack.frames[1] = "main";
		call->arg_count = 4;
		call->args[0] =
			(struct trace_python_arg){ .name = "closure", .type = TRACE_VALUE_NONE };
		call->args[1] = (struct trace_python_arg){ .name = "lr",
							   .type = TRACE_VALUE_FLOAT,
							   .real = 0.25 };
		call->args[2] = (struct trace_python_arg){ .name = "steps",
							   .type = TRACE_VALUE_INT,
							   .integer = step };
		call->args[3] = (struct trace_python_arg){ .name = "name",
							   .type = TRACE_VALUE_STR,
							   .text = "sgd" };
		add(writer, &record);
		record = (struct trace_record){ .kind = TRACE_RECORD_PYTHON_CALL };
		call->entry_ns = 5100 + (uint64_t)step * 1000;
		call->duration_ns = 20;
		call->pid = 200;
		call->tid = 201;
		call->flags = TRACE_PYTHON_TORCH_OP;
		call->first_line = -1;
		call->step = step;
		call->qualified_name = "aten::add_";
		call->file = "";
		call->rank = 0;
		call->world_size = 1;
		add(writer, &record);
	}
	close_trace(writer, path);
}

/* The calls seed without its last 10 bytes: a recorder killed mid-chunk. */
static void write_truncated(const char *directory)
{
	char from[4096], to[4096];
	unsigned char content[65536];
	FILE *in, *out;
	size_t length;

	snprintf(from, sizeof(from), "%s/calls", directory);
	snprintf(to, sizeof(to), "%s/truncated", directory);
	in = fopen(from, "rb");
	if (!in)
		fail(from, "cannot read");
	length = fread(content, 1, sizeof(content), in);
	fclose(in);
	if (length < 64)
		fail(from, "too short");
	out = fopen(to, "wb");
	if (!out || fwrite(content, 1, length - 10, out) != length - 10 || fclose(out))
		fail(to, "cannot write");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make-seed-traces DIR\n");
		return 2;
	}
	write_calls(argv[1], "calls");
	write_calls(argv[1], "compressed");
	write_python(argv[1]);
	write_truncated(argv[1]);
	return 0;
}
