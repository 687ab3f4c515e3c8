// SPDX-License-Identifier: MIT
/* The table of trace record kinds: one row per kind, read by the writer and the reader. */
#include "trace/trace_record_kinds.h"

#include "trace/trace_format.h"
#include "trace/trace_record_encode.h"

static const struct trace_record_kind_format kinds[] = {
	[TRACE_RECORD_NCCL_CALL] = {
		.kind = TRACE_RECORD_NCCL_CALL,
		.name = "nccl_call",
		.minimum_body = TRACE_FORMAT_CALL_FIXED_SIZE,
		.strings = trace_encode_call_strings,
		.encoded_size = trace_encode_call_size,
		.encode = trace_encode_call,
		.decode = trace_decode_call,
	},
	[TRACE_RECORD_PROCESS] = {
		.kind = TRACE_RECORD_PROCESS,
		.name = "process",
		.minimum_body = TRACE_FORMAT_PROCESS_SIZE,
		.body_size = TRACE_FORMAT_PROCESS_SIZE_1_7,
		.strings = trace_encode_process_strings,
		.encode = trace_encode_process,
		.decode = trace_decode_process,
	},
	[TRACE_RECORD_COMMUNICATOR] = {
		.kind = TRACE_RECORD_COMMUNICATOR,
		.name = "communicator",
		.minimum_body = TRACE_FORMAT_COMMUNICATOR_SIZE,
		.body_size = TRACE_FORMAT_COMMUNICATOR_SIZE,
		.strings = trace_encode_communicator_strings,
		.encode = trace_encode_communicator,
		.decode = trace_decode_communicator,
	},
	[TRACE_RECORD_LIBRARY] = {
		.kind = TRACE_RECORD_LIBRARY,
		.name = "library",
		.minimum_body = TRACE_FORMAT_LIBRARY_SIZE,
		.body_size = TRACE_FORMAT_LIBRARY_SIZE,
		.strings = trace_encode_library_strings,
		.encode = trace_encode_library,
		.decode = trace_decode_library,
	},
	[TRACE_RECORD_STATS] = {
		.kind = TRACE_RECORD_STATS,
		.name = "stats",
		.minimum_body = TRACE_FORMAT_STATS_SIZE,
		.body_size = TRACE_FORMAT_STATS_SIZE_1_3,
		.encode = trace_encode_stats,
		.decode = trace_decode_stats,
	},
	[TRACE_RECORD_PYTHON_CALL] = {
		.kind = TRACE_RECORD_PYTHON_CALL,
		.name = "python_call",
		.minimum_body = TRACE_FORMAT_PYTHON_SIZE,
		.strings = trace_encode_python_call_strings,
		.encoded_size = trace_encode_python_call_size,
		.encode = trace_encode_python_call,
		.decode = trace_decode_python_call,
	},
	[TRACE_RECORD_NETWORK] = {
		.kind = TRACE_RECORD_NETWORK,
		.name = "network",
		.minimum_body = TRACE_FORMAT_NETWORK_SIZE,
		.body_size = TRACE_FORMAT_NETWORK_SIZE,
		.encode = trace_encode_network,
		.decode = trace_decode_network,
	},
	[TRACE_RECORD_ACTIVITY] = {
		.kind = TRACE_RECORD_ACTIVITY,
		.name = "activity",
		.minimum_body = TRACE_FORMAT_ACTIVITY_SIZE,
		.body_size = TRACE_FORMAT_ACTIVITY_SIZE,
		.encode = trace_encode_activity,
		.decode = trace_decode_activity,
	},
	[TRACE_RECORD_ARRIVAL] = {
		.kind = TRACE_RECORD_ARRIVAL,
		.name = "arrival",
		.minimum_body = TRACE_FORMAT_ARRIVAL_FIXED_SIZE,
		.strings = trace_encode_arrival_strings,
		.encoded_size = trace_encode_arrival_size,
		.encode = trace_encode_arrival,
		.decode = trace_decode_arrival,
	},
};

/* A kind added to enum trace_record_kind needs its row above and a newer last known kind. */
_Static_assert(sizeof(kinds) / sizeof(kinds[0]) == TRACE_FORMAT_LAST_KNOWN_KIND + 1,
	       "every record kind up to TRACE_FORMAT_LAST_KNOWN_KIND has a row");

const struct trace_record_kind_format *trace_record_kind_format(unsigned kind)
{
	if (kind >= sizeof(kinds) / sizeof(kinds[0]) || !kinds[kind].name)
		return NULL;
	return &kinds[kind];
}

const char *trace_record_kind_name(unsigned kind)
{
	const struct trace_record_kind_format *format = trace_record_kind_format(kind);

	if (format)
		return format->name;
	return kind == TRACE_FORMAT_KIND_STRING ? "string" : "unknown";
}
