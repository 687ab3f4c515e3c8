// SPDX-License-Identifier: MIT
/* What every trace record kind shares: the time it is filed under; which arguments are identities.
 */
#include "model/trace_records.h"

#include <string.h>

uint64_t trace_record_time(const struct trace_record *record)
{
	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		return record->call.entry_ns;
	case TRACE_RECORD_PROCESS:
		return record->process.start_ns;
	case TRACE_RECORD_COMMUNICATOR:
		return record->communicator.seen_ns;
	case TRACE_RECORD_LIBRARY:
		return record->library.attached_ns;
	case TRACE_RECORD_STATS:
		return record->stats.timestamp_ns;
	case TRACE_RECORD_PYTHON_CALL:
		return record->python_call.entry_ns;
	case TRACE_RECORD_NETWORK:
		return record->network.timestamp_ns;
	case TRACE_RECORD_ACTIVITY:
		return record->activity.timestamp_ns;
	case TRACE_RECORD_ARRIVAL:
		return record->arrival.timestamp_ns;
	}
	return 0;
}

bool trace_arg_describes_tensor(const char *name)
{
	return name && (strncmp(name, "tensor:", strlen("tensor:")) == 0 ||
			strncmp(name, "storage:", strlen("storage:")) == 0 ||
			strncmp(name, "digest:", strlen("digest:")) == 0 ||
			strncmp(name, "shape:", strlen("shape:")) == 0 ||
			strncmp(name, "requires_grad:", strlen("requires_grad:")) == 0 ||
			strncmp(name, "grad_mode:", strlen("grad_mode:")) == 0 ||
			strncmp(name, "grad_fn:", strlen("grad_fn:")) == 0 ||
			strncmp(name, "data:", strlen("data:")) == 0);
}

int trace_exit_signal(int32_t wait_status)
{
	return wait_status > 0 ? wait_status & 0x7f : 0;
}

bool trace_exit_core_dumped(int32_t wait_status)
{
	return wait_status > 0 && (wait_status & 0x80) != 0;
}

int trace_exit_status(int32_t wait_status)
{
	return wait_status > 0 ? (wait_status >> 8) & 0xff : 0;
}

bool trace_exit_crashed(int32_t wait_status, bool job_work)
{
	return trace_exit_signal(wait_status) || (job_work && trace_exit_status(wait_status));
}

uint64_t trace_call_cpu_wait(const struct trace_nccl_call *call)
{
	if (!call->api)
		return 0;
	for (int i = 0; i < call->api->param_count && i < (int)call->param_count; i++)
		if (call->api->params[i].type == NCCL_PARAM_THREAD_CPU_WAIT)
			return call->params[i];
	return 0;
}
