// SPDX-License-Identifier: MIT
/* Sample records of every kind for the trace format tests (see sample_records.h). */
#include "sample_records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raw_traces.h"
#include "unit.h"

void test_header(struct trace_header *header)
{
	memset(header, 0, sizeof(*header));
	strcpy(header->hostname, "node-17.cluster");
	strcpy(header->boot_id, "6f1f7c62-3a4e-4f43-9d35-2a1b0c9e8d7f");
	header->anchor_monotonic_ns = 123456789012345ULL;
	header->anchor_realtime_ns = 1700000000123456789ULL;
	strcpy(header->command_line, "tcheck-bpf record -o run.trace -- torchrun train.py");
}

const char *const sample_function_names[] = { "ncclAllReduce", "ncclSend", "ncclCommInitRank" };
static const char *const python_names[] = { "torch.optim.sgd.SGD.step", "train.Trainer.run_step",
					    "torch.nn.modules.module.Module._call_impl" };

/* A Python call or torch scope for sample 'index', its shape chosen by 'variant'. */
struct trace_python_call sample_python_call(unsigned index, unsigned variant)
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
struct trace_record sample_record(unsigned index)
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
			.function = sample_function_names[index % 3],
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
			.python_unseen_from_ns = index % 3 ? 500 + index : 0,
			.python_unseen_to_ns = index % 3 ? 900 + index : 0,
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

int records_equal(const struct trace_record *a, const struct trace_record *b)
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
		       x->end_ns == y->end_ns && same_text(x->command, y->command) &&
		       x->python_unseen_from_ns == y->python_unseen_from_ns &&
		       x->python_unseen_to_ns == y->python_unseen_to_ns;
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
void write_samples(const char *path, unsigned count, unsigned per_chunk, uint64_t *chunk_ends,
		   unsigned *chunk_end_count)
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
long read_and_compare(struct trace_reader *reader, int *status)
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
