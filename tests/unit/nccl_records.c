// SPDX-License-Identifier: MIT
/* NCCL call records built by hand for the inference and checking tests. */
#include "nccl_records.h"

struct trace_record nccl_call_record(const char *function, uint32_t pid, int rank, int nranks,
				     uint64_t comm, int64_t seq, uint64_t count, uint64_t entry_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_NCCL_CALL };
	struct trace_nccl_call *call = &record.call;

	call->entry_ns = entry_ns;
	call->duration_ns = 10;
	call->pid = pid;
	call->tid = pid;
	call->function = function;
	call->api = nccl_function_by_name(function);
	call->param_count = 7;
	call->params[2] = count;
	call->params[3] = FLOAT32;
	call->params[4] = 0; /* ncclSum */
	call->comm_id = comm;
	call->rank = rank;
	call->nranks = nranks;
	call->seq = seq;
	call->step = -1;
	return record;
}

struct trace_record all_reduce_record(uint32_t pid, int rank, int nranks, uint64_t comm,
				      int64_t seq, uint64_t count)
{
	return nccl_call_record("ncclAllReduce", pid, rank, nranks, comm, seq, count,
				1000 + (uint64_t)seq * 100);
}

struct trace_record python_call_record(uint32_t pid, int step, uint64_t entry_ns,
				       uint64_t duration_ns, const char *name, uint32_t flags)
{
	struct trace_record record = { .kind = TRACE_RECORD_PYTHON_CALL };
	struct trace_python_call *call = &record.python_call;

	call->entry_ns = entry_ns;
	call->duration_ns = duration_ns;
	call->pid = pid;
	call->tid = pid;
	call->flags = flags;
	call->first_line = -1;
	call->qualified_name = name;
	call->file = "";
	call->step = step;
	call->stage = TRACE_STAGE_TRAIN;
	call->rank = -1;
	call->world_size = -1;
	return record;
}

struct trace_record *python_records_add(struct python_records *records, uint32_t pid, int step,
					uint64_t entry_ns, uint64_t duration_ns, const char *name,
					uint32_t flags)
{
	struct trace_record *record = &records->at[records->count++];

	*record = python_call_record(pid, step, entry_ns, duration_ns, name, flags);
	return record;
}

void python_call_add_arg(struct trace_record *record, struct trace_python_arg value)
{
	record->python_call.args[record->python_call.arg_count++] = value;
}
