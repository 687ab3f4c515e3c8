// SPDX-License-Identifier: MIT
/*
 * Encodes the body of each kind of trace record (docs/trace-format.md): its
 * strings, its size and its bytes. trace_record_kinds.c ties each kind to
 * these handlers; the writer interns the strings and frames the record.
 */
#include "trace/trace_record_encode.h"

#include <string.h>

#include "trace/trace_format.h"

/* A Python stack: its depth, then the string ids of its frames. Returns the bytes written. */
static size_t encode_stack(unsigned char *at, uint32_t depth, const uint32_t frame_ids[])
{
	trace_format_put_u32(at, depth);
	for (uint32_t i = 0; i < depth; i++)
		trace_format_put_u32(at + 4 + TRACE_FORMAT_STACK_FRAME_SIZE * i, frame_ids[i]);
	return 4 + TRACE_FORMAT_STACK_FRAME_SIZE * (size_t)depth;
}

static size_t stack_size(uint32_t depth)
{
	return 4 + TRACE_FORMAT_STACK_FRAME_SIZE * (size_t)depth;
}

/*
 * The strings of each kind, in the order its encoder takes their ids.
 * Each returns how many it put in 'texts'.
 */
int trace_encode_call_strings(const struct trace_record *record, const char *texts[])
{
	const struct trace_nccl_call *call = &record->call;
	int count = 0;

	texts[count++] = call->function;
	for (uint32_t i = 0; i < call->py_stack.depth; i++)
		texts[count++] = call->py_stack.frames[i];
	return count;
}

int trace_encode_process_strings(const struct trace_record *record, const char *texts[])
{
	texts[0] = record->process.command;
	return 1;
}

int trace_encode_communicator_strings(const struct trace_record *record, const char *texts[])
{
	texts[0] = record->communicator.note;
	return 1;
}

int trace_encode_library_strings(const struct trace_record *record, const char *texts[])
{
	texts[0] = record->library.path;
	texts[1] = record->library.build_id;
	return 2;
}

int trace_encode_arrival_strings(const struct trace_record *record, const char *texts[])
{
	const struct trace_arrival_state *state = &record->arrival;
	int count = 0;

	texts[count++] = state->collective;
	texts[count++] = state->blocked_in;
	texts[count++] = state->waiting;
	texts[count++] = state->doing;
	texts[count++] = state->missed;
	for (uint32_t i = 0; i < state->py_stack.depth; i++)
		texts[count++] = state->py_stack.frames[i];
	return count;
}

int trace_encode_python_call_strings(const struct trace_record *record, const char *texts[])
{
	const struct trace_python_call *call = &record->python_call;
	int count = 0;

	texts[count++] = call->qualified_name;
	texts[count++] = call->file;
	for (uint32_t i = 0; i < call->py_stack.depth; i++)
		texts[count++] = call->py_stack.frames[i];
	for (uint32_t i = 0; i < call->arg_count; i++) {
		texts[count++] = call->args[i].name;
		if (call->args[i].type == TRACE_VALUE_STR)
			texts[count++] = call->args[i].text;
	}
	return count;
}

/* The body sizes of the kinds whose size varies; 0 with 'refusal' set for a record that cannot be
 * written. */
size_t trace_encode_call_size(const struct trace_record *record, const char **refusal)
{
	const struct trace_nccl_call *call = &record->call;

	if (call->param_count > NCCL_MAX_PARAMS) {
		*refusal = "a call has more parameters than NCCL_MAX_PARAMS";
		return 0;
	}
	if (call->py_stack.depth > TRACE_PY_STACK_MAX) {
		*refusal = "a call has a Python stack too deep";
		return 0;
	}
	return TRACE_FORMAT_CALL_FIXED_SIZE + 8 * (size_t)call->param_count +
	       TRACE_FORMAT_CALL_CONTEXT_FIXED_SIZE + stack_size(call->py_stack.depth);
}

size_t trace_encode_arrival_size(const struct trace_record *record, const char **refusal)
{
	if (record->arrival.py_stack.depth > TRACE_PY_STACK_MAX) {
		*refusal = "an arrival state has a Python stack too deep";
		return 0;
	}
	return TRACE_FORMAT_ARRIVAL_STACK_AT + stack_size(record->arrival.py_stack.depth);
}

void trace_encode_call(unsigned char *body, const struct trace_record *record,
		       const uint32_t string_ids[])
{
	const struct trace_nccl_call *call = &record->call;
	uint32_t function_id = string_ids[0];
	unsigned char *context;

	trace_format_put_u64(body + TRACE_FORMAT_CALL_ENTRY_NS_AT, call->entry_ns);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_DURATION_NS_AT, call->duration_ns);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_PID_AT, call->pid);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_TID_AT, call->tid);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_FUNCTION_AT, function_id);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_RESULT_AT, (uint32_t)call->result);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_DEPTH_AT, call->depth);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_GROUP_DEPTH_AT, call->group_depth);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_FLAGS_AT, call->flags);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_PARAM_COUNT_AT, call->param_count);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_OUT_VALUE_AT, call->out_value);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_UNIQUE_ID_HASH_AT, call->unique_id_hash);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_COMM_AT, call->comm);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_COMM_ID_AT, call->comm_id);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_RANK_AT, (uint32_t)call->rank);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_NRANKS_AT, (uint32_t)call->nranks);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_SEQ_AT, (uint64_t)call->seq);
	for (uint32_t i = 0; i < call->param_count; i++)
		trace_format_put_u64(body + TRACE_FORMAT_CALL_PARAMS_AT + 8 * i, call->params[i]);

	context = body + TRACE_FORMAT_CALL_PARAMS_AT + 8 * (size_t)call->param_count;
	trace_format_put_u32(context + TRACE_FORMAT_CALL_STEP_AT, (uint32_t)call->step);
	trace_format_put_u32(context + TRACE_FORMAT_CALL_STAGE_AT, call->stage);
	encode_stack(context + TRACE_FORMAT_CALL_STACK_AT, call->py_stack.depth, string_ids + 1);
}

void trace_encode_process(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[])
{
	const struct trace_process *process = &record->process;
	uint32_t command_id = string_ids[0];

	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_PID_AT, process->pid);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_PARENT_PID_AT, process->parent_pid);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_RANK_AT, (uint32_t)process->rank);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_LOCAL_RANK_AT,
			     (uint32_t)process->local_rank);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_WORLD_SIZE_AT,
			     (uint32_t)process->world_size);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_EXIT_CODE_AT,
			     (uint32_t)process->exit_code);
	trace_format_put_u64(body + TRACE_FORMAT_PROCESS_START_NS_AT, process->start_ns);
	trace_format_put_u64(body + TRACE_FORMAT_PROCESS_END_NS_AT, process->end_ns);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_COMMAND_AT, command_id);
	trace_format_put_u64(body + TRACE_FORMAT_PROCESS_PYTHON_UNSEEN_FROM_NS_AT,
			     process->python_unseen_from_ns);
	trace_format_put_u64(body + TRACE_FORMAT_PROCESS_PYTHON_UNSEEN_TO_NS_AT,
			     process->python_unseen_to_ns);
}

void trace_encode_communicator(unsigned char *body, const struct trace_record *record,
			       const uint32_t string_ids[])
{
	const struct trace_communicator *comm = &record->communicator;
	uint32_t note_id = string_ids[0];

	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_PID_AT, comm->pid);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_ORIGIN_AT, comm->origin);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_HANDLE_AT, comm->handle);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_COMM_ID_AT, comm->comm_id);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_PARENT_COMM_ID_AT,
			     comm->parent_comm_id);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_RANK_AT, (uint32_t)comm->rank);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_NRANKS_AT, (uint32_t)comm->nranks);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_COLOR_AT, (uint32_t)comm->color);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_SPLIT_INDEX_AT, comm->split_index);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_NCCL_COMM_HASH_AT,
			     comm->nccl_comm_hash);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_SEQ_BASE_AT,
			     (uint64_t)comm->seq_base);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_SEEN_NS_AT, comm->seen_ns);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_NOTE_AT, note_id);
}

void trace_encode_library(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[])
{
	const struct trace_library *library = &record->library;

	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_PID_AT, library->pid);
	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_FUNCTIONS_ATTACHED_AT,
			     library->functions_attached);
	trace_format_put_u64(body + TRACE_FORMAT_LIBRARY_ATTACHED_NS_AT, library->attached_ns);
	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_PATH_AT, string_ids[0]);
	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_BUILD_ID_AT, string_ids[1]);
}

void trace_encode_network(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[])
{
	const struct trace_network_sample *sample = &record->network;

	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_TIMESTAMP_NS_AT, sample->timestamp_ns);
	trace_format_put_u32(body + TRACE_FORMAT_NETWORK_PID_AT, sample->pid);
	trace_format_put_u32(body + TRACE_FORMAT_NETWORK_SOURCE_AT, sample->source);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_REQUESTS_POSTED_AT,
			     sample->requests_posted);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_REQUESTS_SIGNALLED_AT,
			     sample->requests_signalled);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_COMPLETIONS_AT, sample->completions);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_COMPLETION_ERRORS_AT,
			     sample->completion_errors);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_BYTES_POSTED_AT, sample->bytes_posted);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_BYTES_COMPLETED_AT,
			     sample->bytes_completed);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_LAST_POST_NS_AT, sample->last_post_ns);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_LAST_COMPLETION_NS_AT,
			     sample->last_completion_ns);
}

void trace_encode_activity(unsigned char *body, const struct trace_record *record,
			   const uint32_t string_ids[])
{
	const struct trace_activity_sample *sample = &record->activity;

	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_TIMESTAMP_NS_AT, sample->timestamp_ns);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_PID_AT, sample->pid);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_AT, sample->threads);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_RUNNING_AT,
			     sample->threads_running);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_IO_WAIT_AT,
			     sample->threads_io_wait);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_CPU_NS_AT, sample->cpu_ns);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_READ_BYTES_AT, sample->read_bytes);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_WRITE_BYTES_AT, sample->write_bytes);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_READ_CHARS_AT, sample->read_chars);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_WRITE_CHARS_AT, sample->write_chars);
}

void trace_encode_arrival(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[])
{
	const struct trace_arrival_state *state = &record->arrival;

	trace_format_put_u64(body + TRACE_FORMAT_ARRIVAL_TIMESTAMP_NS_AT, state->timestamp_ns);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_PID_AT, state->pid);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_RANK_AT, (uint32_t)state->rank);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_FLAGS_AT, state->flags);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_NRANKS_AT, (uint32_t)state->nranks);
	trace_format_put_u64(body + TRACE_FORMAT_ARRIVAL_SEQ_AT, (uint64_t)state->seq);
	trace_format_put_u64(body + TRACE_FORMAT_ARRIVAL_COMM_HASH_AT, state->comm_hash);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_COLLECTIVE_AT, string_ids[0]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_BLOCKED_IN_AT, string_ids[1]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_WAITING_AT, string_ids[2]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_DOING_AT, string_ids[3]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_MISSED_AT, string_ids[4]);
	encode_stack(body + TRACE_FORMAT_ARRIVAL_STACK_AT, state->py_stack.depth, string_ids + 5);
}

void trace_encode_stats(unsigned char *body, const struct trace_record *record,
			const uint32_t string_ids[])
{
	const struct trace_stats *stats = &record->stats;

	trace_format_put_u64(body + TRACE_FORMAT_STATS_TIMESTAMP_NS_AT, stats->timestamp_ns);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_CALLS_AT, stats->calls);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_RINGBUF_DROPS_AT, stats->ringbuf_drops);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_UNMATCHED_RETURNS_AT,
			     stats->unmatched_returns);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_NESTING_OVERFLOWS_AT,
			     stats->nesting_overflows);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_FILTERED_AT, stats->filtered);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_PROCESS_DROPS_AT, stats->process_drops);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_PYTHON_EVENTS_LOST_AT,
			     stats->python_events_lost);
}

void trace_encode_python_call(unsigned char *body, const struct trace_record *record,
			      const uint32_t string_ids[])
{
	const struct trace_python_call *call = &record->python_call;
	const uint32_t *next_id;
	unsigned char *at;

	trace_format_put_u64(body + TRACE_FORMAT_PYTHON_ENTRY_NS_AT, call->entry_ns);
	trace_format_put_u64(body + TRACE_FORMAT_PYTHON_DURATION_NS_AT, call->duration_ns);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_PID_AT, call->pid);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_TID_AT, call->tid);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_DEPTH_AT, call->depth);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_FLAGS_AT, call->flags);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_FIRST_LINE_AT, (uint32_t)call->first_line);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_STEP_AT, (uint32_t)call->step);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT, string_ids[0]);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_FILE_AT, string_ids[1]);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_STAGE_AT, call->stage);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_RANK_AT, (uint32_t)call->rank);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_WORLD_SIZE_AT, (uint32_t)call->world_size);
	at = body + TRACE_FORMAT_PYTHON_STACK_AT;
	at += encode_stack(at, call->py_stack.depth, string_ids + 2);
	next_id = string_ids + 2 + call->py_stack.depth;
	trace_format_put_u32(at, call->arg_count);
	at += 4;
	for (uint32_t i = 0; i < call->arg_count; i++, at += TRACE_FORMAT_ARGUMENT_SIZE) {
		const struct trace_python_arg *arg = &call->args[i];
		uint64_t value = 0;

		trace_format_put_u32(at + TRACE_FORMAT_ARGUMENT_NAME_AT, *next_id++);
		trace_format_put_u32(at + TRACE_FORMAT_ARGUMENT_TYPE_AT, arg->type);
		if (arg->type == TRACE_VALUE_STR)
			value = *next_id++;
		else if (arg->type == TRACE_VALUE_FLOAT)
			memcpy(&value, &arg->real, sizeof(value));
		else if (arg->type == TRACE_VALUE_INT || arg->type == TRACE_VALUE_BOOL)
			value = (uint64_t)arg->integer;
		trace_format_put_u64(at + TRACE_FORMAT_ARGUMENT_VALUE_AT, value);
	}
}

size_t trace_encode_python_call_size(const struct trace_record *record, const char **refusal)
{
	const struct trace_python_call *call = &record->python_call;

	if (call->py_stack.depth > TRACE_PY_STACK_MAX || call->arg_count > TRACE_PY_ARGS_MAX) {
		*refusal = "a Python call has too many frames or arguments";
		return 0;
	}
	return TRACE_FORMAT_PYTHON_STACK_AT + stack_size(call->py_stack.depth) + 4 +
	       TRACE_FORMAT_ARGUMENT_SIZE * (size_t)call->arg_count;
}
