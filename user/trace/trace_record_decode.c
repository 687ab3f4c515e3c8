// SPDX-License-Identifier: MIT
/* Decodes the body of each kind of trace record, checking every length and string id in it. */
#include "trace/trace_record_decode.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

/* Notes why the record is damaged for the reader to report; returns the failure. */
static int decode_corrupt(struct trace_record_decoding *decoding, const char *problem)
{
	snprintf(decoding->problem, sizeof(decoding->problem), "%s", problem);
	decoding->failure = -EBADMSG;
	return decoding->failure;
}

/* The string whose id is at 'at'; NULL, with the problem noted, when no earlier record defines it.
 */
static const char *decode_string(struct trace_record_decoding *decoding, const unsigned char *at)
{
	uint32_t id = trace_format_get_u32(at);
	char problem[120];

	if (id == TRACE_FORMAT_EMPTY_STRING_ID)
		return "";
	if (id <= decoding->defined_strings)
		return decoding->strings[id - 1] ? decoding->strings[id - 1] : decoding->lost_text;
	if (decoding->strings_lost)
		return decoding->lost_text;
	snprintf(problem, sizeof(problem),
		 "refers to string id %" PRIu32 ", which no earlier record defines", id);
	decode_corrupt(decoding, problem);
	return NULL;
}

/*
 * Reads a Python stack at 'at' of a body of 'length' bytes; frames past
 * TRACE_PY_STACK_MAX are skipped. Returns the offset after it, or -1 with
 * the error set.
 */
static ssize_t decode_stack(struct trace_record_decoding *decoding, const unsigned char *body,
			    uint32_t length, size_t at, struct trace_python_stack *stack)
{
	uint32_t depth;

	if ((uint64_t)at + 4 > length) {
		decode_corrupt(decoding, "is cut inside its Python stack");
		return -1;
	}
	depth = trace_format_get_u32(body + at);
	if ((uint64_t)at + 4 + (uint64_t)TRACE_FORMAT_STACK_FRAME_SIZE * depth > length) {
		decode_corrupt(decoding, "is too short for its Python stack");
		return -1;
	}
	stack->depth = depth < TRACE_PY_STACK_MAX ? depth : TRACE_PY_STACK_MAX;
	for (uint32_t i = 0; i < stack->depth; i++) {
		stack->frames[i] =
			decode_string(decoding, body + at + 4 + TRACE_FORMAT_STACK_FRAME_SIZE * i);
		if (!stack->frames[i])
			return -1;
	}
	return (ssize_t)(at + 4 + (size_t)TRACE_FORMAT_STACK_FRAME_SIZE * depth);
}

int trace_decode_call(struct trace_record_decoding *decoding, const unsigned char *body,
		      uint32_t length, struct trace_record *record)
{
	struct trace_nccl_call *call = &record->call;
	uint32_t param_count = trace_format_get_u32(body + TRACE_FORMAT_CALL_PARAM_COUNT_AT);
	size_t context_at;
	char problem[120];

	if ((uint64_t)length < TRACE_FORMAT_CALL_FIXED_SIZE + 8 * (uint64_t)param_count) {
		snprintf(problem, sizeof(problem),
			 "is a call of %" PRIu32 " bytes, too short for its %" PRIu32 " parameters",
			 length, param_count);
		return decode_corrupt(decoding, problem);
	}
	call->function = decode_string(decoding, body + TRACE_FORMAT_CALL_FUNCTION_AT);
	if (!call->function)
		return decoding->failure;
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
		return decode_corrupt(decoding, "is a call with a cut Python context");
	call->step = (int32_t)trace_format_get_u32(body + context_at + TRACE_FORMAT_CALL_STEP_AT);
	call->stage = trace_format_get_u32(body + context_at + TRACE_FORMAT_CALL_STAGE_AT);
	return decode_stack(decoding, body, length, context_at + TRACE_FORMAT_CALL_STACK_AT,
			    &call->py_stack) < 0
		       ? decoding->failure
		       : 0;
}

int trace_decode_process(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record)
{
	struct trace_process *process = &record->process;

	process->command = decode_string(decoding, body + TRACE_FORMAT_PROCESS_COMMAND_AT);
	if (!process->command)
		return decoding->failure;
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
	process->python_unseen_from_ns = process->python_unseen_to_ns = 0;
	if (length >= TRACE_FORMAT_PROCESS_SIZE_1_7) {
		process->python_unseen_from_ns =
			trace_format_get_u64(body + TRACE_FORMAT_PROCESS_PYTHON_UNSEEN_FROM_NS_AT);
		process->python_unseen_to_ns =
			trace_format_get_u64(body + TRACE_FORMAT_PROCESS_PYTHON_UNSEEN_TO_NS_AT);
	}
	return 0;
}

int trace_decode_communicator(struct trace_record_decoding *decoding, const unsigned char *body,
			      uint32_t length, struct trace_record *record)
{
	struct trace_communicator *comm = &record->communicator;

	comm->note = decode_string(decoding, body + TRACE_FORMAT_COMMUNICATOR_NOTE_AT);
	if (!comm->note)
		return decoding->failure;
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

int trace_decode_library(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record)
{
	struct trace_library *library = &record->library;

	library->path = decode_string(decoding, body + TRACE_FORMAT_LIBRARY_PATH_AT);
	if (!library->path)
		return decoding->failure;
	library->build_id = decode_string(decoding, body + TRACE_FORMAT_LIBRARY_BUILD_ID_AT);
	if (!library->build_id)
		return decoding->failure;
	library->pid = trace_format_get_u32(body + TRACE_FORMAT_LIBRARY_PID_AT);
	library->functions_attached =
		trace_format_get_u32(body + TRACE_FORMAT_LIBRARY_FUNCTIONS_ATTACHED_AT);
	library->attached_ns = trace_format_get_u64(body + TRACE_FORMAT_LIBRARY_ATTACHED_NS_AT);
	return 0;
}

int trace_decode_stats(struct trace_record_decoding *decoding, const unsigned char *body,
		       uint32_t length, struct trace_record *record)
{
	struct trace_stats *stats = &record->stats;

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
	return 0;
}

int trace_decode_network(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record)
{
	struct trace_network_sample *sample = &record->network;

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
	return 0;
}

int trace_decode_activity(struct trace_record_decoding *decoding, const unsigned char *body,
			  uint32_t length, struct trace_record *record)
{
	struct trace_activity_sample *sample = &record->activity;

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
	return 0;
}

int trace_decode_arrival(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record)
{
	struct trace_arrival_state *state = &record->arrival;
	static const unsigned string_at[] = {
		TRACE_FORMAT_ARRIVAL_COLLECTIVE_AT, TRACE_FORMAT_ARRIVAL_BLOCKED_IN_AT,
		TRACE_FORMAT_ARRIVAL_WAITING_AT,    TRACE_FORMAT_ARRIVAL_DOING_AT,
		TRACE_FORMAT_ARRIVAL_MISSED_AT,
	};
	const char **strings[] = { &state->collective, &state->blocked_in, &state->waiting,
				   &state->doing, &state->missed };

	for (size_t i = 0; i < sizeof(string_at) / sizeof(string_at[0]); i++) {
		*strings[i] = decode_string(decoding, body + string_at[i]);
		if (!*strings[i])
			return decoding->failure;
	}
	state->timestamp_ns = trace_format_get_u64(body + TRACE_FORMAT_ARRIVAL_TIMESTAMP_NS_AT);
	state->pid = trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_PID_AT);
	state->rank = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_RANK_AT);
	state->flags = trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_FLAGS_AT);
	state->nranks = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_ARRIVAL_NRANKS_AT);
	state->seq = (int64_t)trace_format_get_u64(body + TRACE_FORMAT_ARRIVAL_SEQ_AT);
	state->comm_hash = trace_format_get_u64(body + TRACE_FORMAT_ARRIVAL_COMM_HASH_AT);
	if (decode_stack(decoding, body, length, TRACE_FORMAT_ARRIVAL_STACK_AT, &state->py_stack) <
	    0)
		return decoding->failure;
	return 0;
}

/* One argument of a Python call; returns 0, or the failure with the error set. */
static int decode_argument(struct trace_record_decoding *decoding, const unsigned char *at,
			   struct trace_python_arg *arg)
{
	uint64_t value = trace_format_get_u64(at + TRACE_FORMAT_ARGUMENT_VALUE_AT);

	arg->name = decode_string(decoding, at + TRACE_FORMAT_ARGUMENT_NAME_AT);
	if (!arg->name)
		return decoding->failure;
	arg->type = trace_format_get_u32(at + TRACE_FORMAT_ARGUMENT_TYPE_AT);
	arg->text = "";
	switch (arg->type) {
	case TRACE_VALUE_STR:
		arg->text = decode_string(decoding, at + TRACE_FORMAT_ARGUMENT_VALUE_AT);
		if (!arg->text)
			return decoding->failure;
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
		return decode_corrupt(decoding, "has an argument of an unknown type");
	}
	return 0;
}

/* The Python context format 1.2 appends: stage, rank, world size, stack, arguments. */
static int decode_python_context(struct trace_record_decoding *decoding, const unsigned char *body,
				 uint32_t length, struct trace_python_call *call)
{
	uint32_t arg_count;
	ssize_t at;

	if (length < TRACE_FORMAT_PYTHON_CONTEXT_SIZE)
		return decode_corrupt(decoding, "is a Python call with a cut context");
	call->stage = trace_format_get_u32(body + TRACE_FORMAT_PYTHON_STAGE_AT);
	call->rank = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_PYTHON_RANK_AT);
	call->world_size = (int32_t)trace_format_get_u32(body + TRACE_FORMAT_PYTHON_WORLD_SIZE_AT);
	at = decode_stack(decoding, body, length, TRACE_FORMAT_PYTHON_STACK_AT, &call->py_stack);
	if (at < 0)
		return decoding->failure;
	if ((uint64_t)at + 4 > length)
		return decode_corrupt(decoding, "is cut before its arguments");
	arg_count = trace_format_get_u32(body + at);
	at += 4;
	if ((uint64_t)at + (uint64_t)TRACE_FORMAT_ARGUMENT_SIZE * arg_count > length)
		return decode_corrupt(decoding, "is too short for its arguments");
	call->arg_count = arg_count < TRACE_PY_ARGS_MAX ? arg_count : TRACE_PY_ARGS_MAX;
	for (uint32_t i = 0; i < call->arg_count; i++) {
		int err = decode_argument(decoding, body + at + TRACE_FORMAT_ARGUMENT_SIZE * i,
					  &call->args[i]);

		if (err)
			return err;
	}
	return 0;
}

int trace_decode_python_call(struct trace_record_decoding *decoding, const unsigned char *body,
			     uint32_t length, struct trace_record *record)
{
	struct trace_python_call *call = &record->python_call;
	call->qualified_name =
		decode_string(decoding, body + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT);
	if (!call->qualified_name)
		return decoding->failure;
	call->file = decode_string(decoding, body + TRACE_FORMAT_PYTHON_FILE_AT);
	if (!call->file)
		return decoding->failure;
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
	return decode_python_context(decoding, body, length, call);
}
