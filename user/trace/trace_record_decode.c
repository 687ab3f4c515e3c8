// SPDX-License-Identifier: MIT
/* Decodes the body of each kind of trace record, checking every length and string id in it. */
#include "trace/trace_record_decode.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

const char *trace_record_kind_name(unsigned kind)
{
	switch (kind) {
	case TRACE_RECORD_NCCL_CALL:
		return "nccl_call";
	case TRACE_RECORD_PROCESS:
		return "process";
	case TRACE_RECORD_COMMUNICATOR:
		return "communicator";
	case TRACE_RECORD_LIBRARY:
		return "library";
	case TRACE_RECORD_STATS:
		return "stats";
	case TRACE_RECORD_PYTHON_CALL:
		return "python_call";
	case TRACE_RECORD_NETWORK:
		return "network";
	case TRACE_RECORD_ACTIVITY:
		return "activity";
	case TRACE_RECORD_ARRIVAL:
		return "arrival";
	case TRACE_FORMAT_KIND_STRING:
		return "string";
	}
	return "unknown";
}

/*
 * Reads a Python stack at 'at' of a body of 'length' bytes; frames past
 * TRACE_PY_STACK_MAX are skipped. Returns the offset after it, or -1 with
 * the error set.
 */
static ssize_t decode_stack(struct trace_reader *reader, const unsigned char *body, uint32_t length,
			    size_t at, size_t record_at, struct trace_python_stack *stack)
{
	uint32_t depth;

	if ((uint64_t)at + 4 > length) {
		trace_reader_record_corrupt(reader, record_at, "is cut inside its Python stack");
		return -1;
	}
	depth = trace_format_get_u32(body + at);
	if ((uint64_t)at + 4 + (uint64_t)TRACE_FORMAT_STACK_FRAME_SIZE * depth > length) {
		trace_reader_record_corrupt(reader, record_at, "is too short for its Python stack");
		return -1;
	}
	stack->depth = depth < TRACE_PY_STACK_MAX ? depth : TRACE_PY_STACK_MAX;
	for (uint32_t i = 0; i < stack->depth; i++) {
		stack->frames[i] = trace_reader_string_lookup(
			reader, body + at + 4 + TRACE_FORMAT_STACK_FRAME_SIZE * i, record_at);
		if (!stack->frames[i])
			return -1;
	}
	return (ssize_t)(at + 4 + (size_t)TRACE_FORMAT_STACK_FRAME_SIZE * depth);
}

static int decode_call(struct trace_reader *reader, const unsigned char *body, uint32_t length,
		       size_t record_at, struct trace_nccl_call *call)
{
	uint32_t param_count = trace_format_get_u32(body + TRACE_FORMAT_CALL_PARAM_COUNT_AT);
	size_t context_at;
	char problem[120];

	if ((uint64_t)length < TRACE_FORMAT_CALL_FIXED_SIZE + 8 * (uint64_t)param_count) {
		snprintf(problem, sizeof(problem),
			 "is a call of %" PRIu32 " bytes, too short for its %" PRIu32 " parameters",
			 length, param_count);
		return trace_reader_record_corrupt(reader, record_at, problem);
	}
	call->function =
		trace_reader_string_lookup(reader, body + TRACE_FORMAT_CALL_FUNCTION_AT, record_at);
	if (!call->function)
		return trace_reader_failure(reader);
	/* The one lookup by name a call read from a file gets. */
	call->api = nccl_function_by_name(call->function);
	call->entry_ns = trace_format_get_u64(body + TRACE_FORMAT_CALL_ENTRY_NS_AT);
	call->duration_ns = trace_format_get_u64(body + TRACE_FORMAT_CALL_DURATION_NS_AT);
	call->pid = trace_format_get_u32(body + TRACE_FORMAT_CALL_PID_AT);
	call->tid = trace_format_get_u32(body + TRACE_FORMAT_CALL_TID_AT);
	call->result = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_CALL_RESULT_AT);
	call->depth = trace_format_get_u32(body + TRACE_FORMAT_CALL_DEPTH_AT);
	call->group_depth = trace_format_get_u32(body + TRACE_FORMAT_CALL_GROUP_DEPTH_AT);
	call->flags = trace_format_get_u32(body + TRACE_FORMAT_CALL_FLAGS_AT);
	call->out_value = trace_format_get_u64(body + TRACE_FORMAT_CALL_OUT_VALUE_AT);
	call->unique_id_hash = trace_format_get_u64(body + TRACE_FORMAT_CALL_UNIQUE_ID_HASH_AT);
	call->comm = trace_format_get_u64(body + TRACE_FORMAT_CALL_COMM_AT);
	call->comm_id = trace_format_get_u64(body + TRACE_FORMAT_CALL_COMM_ID_AT);
	call->rank = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_CALL_RANK_AT);
	call->nranks = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_CALL_NRANKS_AT);
	call->seq = (int64_t)trace_format_get_u64(body + TRACE_FORMAT_CALL_SEQ_AT);
	/* A newer writer may know functions with more parameters: keep those that fit. */
	call->param_count = param_count < NCCL_MAX_PARAMS ? param_count : NCCL_MAX_PARAMS;
	for (uint32_t i = 0; i < call->param_count; i++)
		call->params[i] = trace_format_get_u64(body + TRACE_FORMAT_CALL_PARAMS_AT + 8 * i);

	/* Format 1.2 appends the Python context; a 1.1 call ends at its parameters. */
	call->step = -1;
	context_at = TRACE_FORMAT_CALL_PARAMS_AT + 8 * (size_t)param_count;
	if (length <= context_at)
		return 0;
	if (length < context_at + TRACE_FORMAT_CALL_CONTEXT_FIXED_SIZE)
		return trace_reader_record_corrupt(reader, record_at,
						   "is a call with a cut Python context");
	call->step = (int32_t)trace_format_get_u32(body + context_at + TRACE_FORMAT_CALL_STEP_AT);
	call->stage = trace_format_get_u32(body + context_at + TRACE_FORMAT_CALL_STAGE_AT);
	return decode_stack(reader, body, length, context_at + TRACE_FORMAT_CALL_STACK_AT,
			    record_at, &call->py_stack) < 0
		       ? trace_reader_failure(reader)
		       : 0;
}

static int decode_process(struct trace_reader *reader, const unsigned char *body, size_t record_at,
			  struct trace_process *process)
{
	process->command = trace_reader_string_lookup(
		reader, body + TRACE_FORMAT_PROCESS_COMMAND_AT, record_at);
	if (!process->command)
		return trace_reader_failure(reader);
	process->pid = trace_format_get_u32(body + TRACE_FORMAT_PROCESS_PID_AT);
	process->parent_pid = trace_format_get_u32(body + TRACE_FORMAT_PROCESS_PARENT_PID_AT);
	process->rank = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_PROCESS_RANK_AT);
	process->local_rank =
		(int32_t)trace_format_get_u32(body + TRACE_FORMAT_PROCESS_LOCAL_RANK_AT);
	process->world_size =
		(int32_t)trace_format_get_u32(body + TRACE_FORMAT_PROCESS_WORLD_SIZE_AT);
	process->exit_code =
		(int32_t)trace_format_get_u32(body + TRACE_FORMAT_PROCESS_EXIT_CODE_AT);
	process->start_ns = trace_format_get_u64(body + TRACE_FORMAT_PROCESS_START_NS_AT);
	process->end_ns = trace_format_get_u64(body + TRACE_FORMAT_PROCESS_END_NS_AT);
	return 0;
}

static int decode_communicator(struct trace_reader *reader, const unsigned char *body,
			       size_t record_at, struct trace_communicator *comm)
{
	comm->note = trace_reader_string_lookup(reader, body + TRACE_FORMAT_COMMUNICATOR_NOTE_AT,
						record_at);
	if (!comm->note)
		return trace_reader_failure(reader);
	comm->pid = trace_format_get_u32(body + TRACE_FORMAT_COMMUNICATOR_PID_AT);
	comm->origin = trace_format_get_u32(body + TRACE_FORMAT_COMMUNICATOR_ORIGIN_AT);
	comm->handle = trace_format_get_u64(body + TRACE_FORMAT_COMMUNICATOR_HANDLE_AT);
	comm->comm_id = trace_format_get_u64(body + TRACE_FORMAT_COMMUNICATOR_COMM_ID_AT);
	comm->parent_comm_id =
		trace_format_get_u64(body + TRACE_FORMAT_COMMUNICATOR_PARENT_COMM_ID_AT);
	comm->rank = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_COMMUNICATOR_RANK_AT);
	comm->nranks = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_COMMUNICATOR_NRANKS_AT);
	comm->color = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_COMMUNICATOR_COLOR_AT);
	comm->split_index = trace_format_get_u32(body + TRACE_FORMAT_COMMUNICATOR_SPLIT_INDEX_AT);
	comm->nccl_comm_hash =
		trace_format_get_u64(body + TRACE_FORMAT_COMMUNICATOR_NCCL_COMM_HASH_AT);
	comm->seq_base =
		(int64_t)trace_format_get_u64(body + TRACE_FORMAT_COMMUNICATOR_SEQ_BASE_AT);
	comm->seen_ns = trace_format_get_u64(body + TRACE_FORMAT_COMMUNICATOR_SEEN_NS_AT);
	return 0;
}

static int decode_library(struct trace_reader *reader, const unsigned char *body, size_t record_at,
			  struct trace_library *library)
{
	library->path =
		trace_reader_string_lookup(reader, body + TRACE_FORMAT_LIBRARY_PATH_AT, record_at);
	if (!library->path)
		return trace_reader_failure(reader);
	library->build_id = trace_reader_string_lookup(
		reader, body + TRACE_FORMAT_LIBRARY_BUILD_ID_AT, record_at);
	if (!library->build_id)
		return trace_reader_failure(reader);
	library->pid = trace_format_get_u32(body + TRACE_FORMAT_LIBRARY_PID_AT);
	library->functions_attached =
		trace_format_get_u32(body + TRACE_FORMAT_LIBRARY_FUNCTIONS_ATTACHED_AT);
	library->attached_ns = trace_format_get_u64(body + TRACE_FORMAT_LIBRARY_ATTACHED_NS_AT);
	return 0;
}

static void decode_stats(const unsigned char *body, uint32_t length, struct trace_stats *stats)
{
	stats->timestamp_ns = trace_format_get_u64(body + TRACE_FORMAT_STATS_TIMESTAMP_NS_AT);
	stats->calls = trace_format_get_u64(body + TRACE_FORMAT_STATS_CALLS_AT);
	stats->ringbuf_drops = trace_format_get_u64(body + TRACE_FORMAT_STATS_RINGBUF_DROPS_AT);
	stats->unmatched_returns =
		trace_format_get_u64(body + TRACE_FORMAT_STATS_UNMATCHED_RETURNS_AT);
	stats->nesting_overflows =
		trace_format_get_u64(body + TRACE_FORMAT_STATS_NESTING_OVERFLOWS_AT);
	stats->filtered = trace_format_get_u64(body + TRACE_FORMAT_STATS_FILTERED_AT);
	stats->process_drops = trace_format_get_u64(body + TRACE_FORMAT_STATS_PROCESS_DROPS_AT);
	if (length >= TRACE_FORMAT_STATS_SIZE_1_3)
		stats->python_events_lost =
			trace_format_get_u64(body + TRACE_FORMAT_STATS_PYTHON_EVENTS_LOST_AT);
}

static void decode_network(const unsigned char *body, struct trace_network_sample *sample)
{
	sample->timestamp_ns = trace_format_get_u64(body + TRACE_FORMAT_NETWORK_TIMESTAMP_NS_AT);
	sample->pid = trace_format_get_u32(body + TRACE_FORMAT_NETWORK_PID_AT);
	sample->source = trace_format_get_u32(body + TRACE_FORMAT_NETWORK_SOURCE_AT);
	sample->requests_posted =
		trace_format_get_u64(body + TRACE_FORMAT_NETWORK_REQUESTS_POSTED_AT);
	sample->requests_signalled =
		trace_format_get_u64(body + TRACE_FORMAT_NETWORK_REQUESTS_SIGNALLED_AT);
	sample->completions = trace_format_get_u64(body + TRACE_FORMAT_NETWORK_COMPLETIONS_AT);
	sample->completion_errors =
		trace_format_get_u64(body + TRACE_FORMAT_NETWORK_COMPLETION_ERRORS_AT);
	sample->bytes_posted = trace_format_get_u64(body + TRACE_FORMAT_NETWORK_BYTES_POSTED_AT);
	sample->bytes_completed =
		trace_format_get_u64(body + TRACE_FORMAT_NETWORK_BYTES_COMPLETED_AT);
	sample->last_post_ns = trace_format_get_u64(body + TRACE_FORMAT_NETWORK_LAST_POST_NS_AT);
	sample->last_completion_ns =
		trace_format_get_u64(body + TRACE_FORMAT_NETWORK_LAST_COMPLETION_NS_AT);
}

static void decode_activity(const unsigned char *body, struct trace_activity_sample *sample)
{
	sample->timestamp_ns = trace_format_get_u64(body + TRACE_FORMAT_ACTIVITY_TIMESTAMP_NS_AT);
	sample->pid = trace_format_get_u32(body + TRACE_FORMAT_ACTIVITY_PID_AT);
	sample->threads = trace_format_get_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_AT);
	sample->threads_running =
		trace_format_get_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_RUNNING_AT);
	sample->threads_io_wait =
		trace_format_get_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_IO_WAIT_AT);
	sample->cpu_ns = trace_format_get_u64(body + TRACE_FORMAT_ACTIVITY_CPU_NS_AT);
	sample->read_bytes = trace_format_get_u64(body + TRACE_FORMAT_ACTIVITY_READ_BYTES_AT);
	sample->write_bytes = trace_format_get_u64(body + TRACE_FORMAT_ACTIVITY_WRITE_BYTES_AT);
	sample->read_chars = trace_format_get_u64(body + TRACE_FORMAT_ACTIVITY_READ_CHARS_AT);
	sample->write_chars = trace_format_get_u64(body + TRACE_FORMAT_ACTIVITY_WRITE_CHARS_AT);
}

static int decode_arrival(struct trace_reader *reader, const unsigned char *body, uint32_t length,
			  size_t record_at, struct trace_arrival_state *state)
{
	static const unsigned string_at[] = {
		TRACE_FORMAT_ARRIVAL_COLLECTIVE_AT, TRACE_FORMAT_ARRIVAL_BLOCKED_IN_AT,
		TRACE_FORMAT_ARRIVAL_WAITING_AT,    TRACE_FORMAT_ARRIVAL_DOING_AT,
		TRACE_FORMAT_ARRIVAL_MISSED_AT,
	};
	const char **strings[] = { &state->collective, &state->blocked_in, &state->waiting,
				   &state->doing, &state->missed };

	for (size_t i = 0; i < sizeof(string_at) / sizeof(string_at[0]); i++) {
		*strings[i] = trace_reader_string_lookup(reader, body + string_at[i], record_at);
		if (!*strings[i])
			return trace_reader_failure(reader);
	}
	state->timestamp_ns = trace_format_get_u64(body + TRACE_FORMAT_ARRIVAL_TIMESTAMP_NS_AT);
	state->pid = trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_PID_AT);
	state->rank = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_RANK_AT);
	state->flags = trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_FLAGS_AT);
	state->nranks = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_NRANKS_AT);
	state->seq = (int64_t)trace_format_get_u64(body + TRACE_FORMAT_ARRIVAL_SEQ_AT);
	state->comm_hash = trace_format_get_u64(body + TRACE_FORMAT_ARRIVAL_COMM_HASH_AT);
	if (decode_stack(reader, body, length, TRACE_FORMAT_ARRIVAL_STACK_AT, record_at,
			 &state->py_stack) < 0)
		return trace_reader_failure(reader);
	return 0;
}

/* One argument of a Python call; returns 0, or the failure with the error set. */
static int decode_argument(struct trace_reader *reader, const unsigned char *at, size_t record_at,
			   struct trace_python_arg *arg)
{
	uint64_t value = trace_format_get_u64(at + TRACE_FORMAT_ARGUMENT_VALUE_AT);

	arg->name =
		trace_reader_string_lookup(reader, at + TRACE_FORMAT_ARGUMENT_NAME_AT, record_at);
	if (!arg->name)
		return trace_reader_failure(reader);
	arg->type = trace_format_get_u32(at + TRACE_FORMAT_ARGUMENT_TYPE_AT);
	arg->text = "";
	switch (arg->type) {
	case TRACE_VALUE_STR:
		arg->text = trace_reader_string_lookup(reader, at + TRACE_FORMAT_ARGUMENT_VALUE_AT,
						       record_at);
		if (!arg->text)
			return trace_reader_failure(reader);
		break;
	case TRACE_VALUE_FLOAT:
		memcpy(&arg->real, &value, sizeof(arg->real));
		break;
	case TRACE_VALUE_INT:
	case TRACE_VALUE_BOOL:
		arg->integer = (int64_t)value;
		break;
	case TRACE_VALUE_NONE:
		break;
	default:
		return trace_reader_record_corrupt(reader, record_at,
						   "has an argument of an unknown type");
	}
	return 0;
}

/* The Python context format 1.2 appends: stage, rank, world size, stack, arguments. */
static int decode_python_context(struct trace_reader *reader, const unsigned char *body,
				 uint32_t length, size_t record_at, struct trace_python_call *call)
{
	uint32_t arg_count;
	ssize_t at;

	if (length < TRACE_FORMAT_PYTHON_CONTEXT_SIZE)
		return trace_reader_record_corrupt(reader, record_at,
						   "is a Python call with a cut context");
	call->stage = trace_format_get_u32(body + TRACE_FORMAT_PYTHON_STAGE_AT);
	call->rank = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_PYTHON_RANK_AT);
	call->world_size = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_PYTHON_WORLD_SIZE_AT);
	at = decode_stack(reader, body, length, TRACE_FORMAT_PYTHON_STACK_AT, record_at,
			  &call->py_stack);
	if (at < 0)
		return trace_reader_failure(reader);
	if ((uint64_t)at + 4 > length)
		return trace_reader_record_corrupt(reader, record_at,
						   "is cut before its arguments");
	arg_count = trace_format_get_u32(body + at);
	at += 4;
	if ((uint64_t)at + (uint64_t)TRACE_FORMAT_ARGUMENT_SIZE * arg_count > length)
		return trace_reader_record_corrupt(reader, record_at,
						   "is too short for its arguments");
	call->arg_count = arg_count < TRACE_PY_ARGS_MAX ? arg_count : TRACE_PY_ARGS_MAX;
	for (uint32_t i = 0; i < call->arg_count; i++) {
		int err = decode_argument(reader, body + at + TRACE_FORMAT_ARGUMENT_SIZE * i,
					  record_at, &call->args[i]);

		if (err)
			return err;
	}
	return 0;
}

static int decode_python_call(struct trace_reader *reader, const unsigned char *body,
			      uint32_t length, size_t record_at, struct trace_python_call *call)
{
	call->qualified_name = trace_reader_string_lookup(
		reader, body + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT, record_at);
	if (!call->qualified_name)
		return trace_reader_failure(reader);
	call->file =
		trace_reader_string_lookup(reader, body + TRACE_FORMAT_PYTHON_FILE_AT, record_at);
	if (!call->file)
		return trace_reader_failure(reader);
	call->entry_ns = trace_format_get_u64(body + TRACE_FORMAT_PYTHON_ENTRY_NS_AT);
	call->duration_ns = trace_format_get_u64(body + TRACE_FORMAT_PYTHON_DURATION_NS_AT);
	call->pid = trace_format_get_u32(body + TRACE_FORMAT_PYTHON_PID_AT);
	call->tid = trace_format_get_u32(body + TRACE_FORMAT_PYTHON_TID_AT);
	call->depth = trace_format_get_u32(body + TRACE_FORMAT_PYTHON_DEPTH_AT);
	call->flags = trace_format_get_u32(body + TRACE_FORMAT_PYTHON_FLAGS_AT);
	call->first_line = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_PYTHON_FIRST_LINE_AT);
	call->step = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_PYTHON_STEP_AT);
	call->rank = -1;
	call->world_size = -1;
	if (length <= TRACE_FORMAT_PYTHON_SIZE)
		return 0; /* format 1.1 */
	return decode_python_context(reader, body, length, record_at, call);
}

uint32_t trace_record_minimum_body(unsigned kind)
{
	switch (kind) {
	case TRACE_RECORD_NCCL_CALL:
		return TRACE_FORMAT_CALL_FIXED_SIZE;
	case TRACE_RECORD_PROCESS:
		return TRACE_FORMAT_PROCESS_SIZE;
	case TRACE_RECORD_COMMUNICATOR:
		return TRACE_FORMAT_COMMUNICATOR_SIZE;
	case TRACE_RECORD_LIBRARY:
		return TRACE_FORMAT_LIBRARY_SIZE;
	case TRACE_RECORD_STATS:
		return TRACE_FORMAT_STATS_SIZE;
	case TRACE_RECORD_PYTHON_CALL:
		return TRACE_FORMAT_PYTHON_SIZE;
	case TRACE_RECORD_NETWORK:
		return TRACE_FORMAT_NETWORK_SIZE;
	case TRACE_RECORD_ACTIVITY:
		return TRACE_FORMAT_ACTIVITY_SIZE;
	case TRACE_RECORD_ARRIVAL:
		return TRACE_FORMAT_ARRIVAL_FIXED_SIZE;
	}
	return 0;
}

int trace_record_decode(struct trace_reader *reader, unsigned kind, const unsigned char *body,
			uint32_t length, size_t record_at, struct trace_record *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = (enum trace_record_kind)kind;
	switch (kind) {
	case TRACE_RECORD_NCCL_CALL:
		return decode_call(reader, body, length, record_at, &out->call);
	case TRACE_RECORD_PROCESS:
		return decode_process(reader, body, record_at, &out->process);
	case TRACE_RECORD_COMMUNICATOR:
		return decode_communicator(reader, body, record_at, &out->communicator);
	case TRACE_RECORD_LIBRARY:
		return decode_library(reader, body, record_at, &out->library);
	case TRACE_RECORD_STATS:
		decode_stats(body, length, &out->stats);
		return 0;
	case TRACE_RECORD_PYTHON_CALL:
		return decode_python_call(reader, body, length, record_at, &out->python_call);
	case TRACE_RECORD_NETWORK:
		decode_network(body, &out->network);
		return 0;
	case TRACE_RECORD_ACTIVITY:
		decode_activity(body, &out->activity);
		return 0;
	case TRACE_RECORD_ARRIVAL:
		return decode_arrival(reader, body, length, record_at, &out->arrival);
	}
	return -EINVAL;
}
