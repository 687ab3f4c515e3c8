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
	}
	return 0;
}

bool trace_arg_is_identity(const char *name)
{
	return name && strncmp(name, "tensor:", strlen("tensor:")) == 0;
}
