// SPDX-License-Identifier: MIT
/* Exports a trace as JSON Lines, and builds the JSON values both exporters share. */
#include "export/export_jsonl.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/identity_text.h"
#include "model/c10d_api.h"
#include "model/nccl_api.h"

/* Adds 'value' (which may be NULL after a failed allocation); returns nonzero on failure. */
static int put(json_t *object, const char *key, json_t *value)
{
	return json_object_set_new(object, key, value) != 0;
}

/* An enum value as its name, or as the integer when the name is unknown. */
static json_t *enum_value(const char *name, int64_t value)
{
	return name ? json_string(name) : json_integer(value);
}

static int put_param(json_t *args, const struct nccl_param *param,
		     const struct trace_nccl_call *call, uint64_t raw)
{
	int out_valid = (call->flags & TRACE_CALL_OUT_VALUE_VALID) != 0;
	/* ints travel in 64-bit registers whose upper half is undefined. */
	int32_t as_int = (int32_t)(uint32_t)raw;
	char out_key[64];

	switch (param->type) {
	case NCCL_PARAM_POINTER:
	case NCCL_PARAM_SIZE:
	case NCCL_PARAM_COMM:
	case NCCL_PARAM_STREAM:
	case NCCL_PARAM_UNIQUE_ID_OUT:
	case NCCL_PARAM_UNIQUE_ID_ARRAY:
		return put(args, param->name, export_json_unsigned(raw));
	case NCCL_PARAM_THREAD_CPU_WAIT:
		return put(args, param->name, raw ? export_json_unsigned(raw) : json_null());
	case NCCL_PARAM_INT:
		return put(args, param->name, json_integer(as_int));
	case NCCL_PARAM_DATATYPE:
		return put(args, param->name, enum_value(nccl_datatype_name(as_int), as_int));
	case NCCL_PARAM_REDOP:
		return put(args, param->name, enum_value(nccl_redop_name(as_int), as_int));
	case NCCL_PARAM_TORCH_DTYPE:
		return put(args, param->name, enum_value(torch_scalar_type_name(as_int), as_int));
	case NCCL_PARAM_UNIQUE_ID:
		/* By value: the recorder stores the id's hash in place of its 128 bytes. */
		return put(args, param->name,
			   (call->flags & TRACE_CALL_UNIQUE_ID_VALID) || raw
				   ? export_json_hexadecimal(raw)
				   : json_null());
	case NCCL_PARAM_COMM_OUT:
		snprintf(out_key, sizeof(out_key), "%s_out", param->name);
		return put(args, param->name, export_json_unsigned(raw)) |
		       put(args, out_key,
			   out_valid ? export_json_unsigned(call->out_value) : json_null());
	case NCCL_PARAM_RESULT_OUT:
		as_int = (int32_t)(uint32_t)call->out_value;
		return put(args, param->name,
			   out_valid ? enum_value(nccl_result_name(as_int), as_int) : json_null());
	case NCCL_PARAM_INT_OUT:
		as_int = (int32_t)(uint32_t)call->out_value;
		return put(args, param->name, out_valid ? json_integer(as_int) : json_null());
	}
	return put(args, param->name, export_json_unsigned(raw));
}

json_t *export_json_call_args(const struct trace_nccl_call *call)
{
	const struct nccl_function *function = call->api;
	uint32_t count = call->param_count < NCCL_MAX_PARAMS ? call->param_count : NCCL_MAX_PARAMS;
	json_t *args = json_object();
	int failed = !args;

	if (failed)
		return NULL;
	if (function && (uint32_t)function->param_count < count)
		count = (uint32_t)function->param_count;
	for (uint32_t i = 0; i < count && !failed; i++) {
		char key[16];

		if (function && (call->flags & TRACE_CALL_STACK_ARGS_UNREAD) &&
		    nccl_param_on_stack(function, (int)i)) {
			/* Not read by the probe (a stream past the sixth argument): unknown, not 0.
			 */
			failed |= put(args, function->params[i].name, json_null());
			continue;
		}
		if (function) {
			failed |= put_param(args, &function->params[i], call, call->params[i]);
			continue;
		}
		/* A function this build does not know: keep the raw values in order. */
		snprintf(key, sizeof(key), "arg%" PRIu32, i);
		failed |= put(args, key, export_json_unsigned(call->params[i]));
	}
	if (failed) {
		json_decref(args);
		return NULL;
	}
	return args;
}

json_t *export_json_stage(uint32_t stage)
{
	switch (stage) {
	case TRACE_STAGE_TRAIN:
		return json_string("train");
	case TRACE_STAGE_EVAL:
		return json_string("eval");
	}
	return json_null();
}

json_t *export_json_python_stack(const struct trace_python_stack *stack)
{
	json_t *frames = json_array();

	if (!frames)
		return NULL;
	for (uint32_t i = 0; i < stack->depth; i++) {
		if (json_array_append_new(frames, export_json_text(stack->frames[i]))) {
			json_decref(frames);
			return NULL;
		}
	}
	return frames;
}

static json_t *argument_value(const struct trace_python_arg *arg)
{
	switch (arg->type) {
	case TRACE_VALUE_BOOL:
		return json_boolean(arg->integer);
	case TRACE_VALUE_INT:
		return json_integer(arg->integer);
	case TRACE_VALUE_FLOAT:
		/* JSON has no NaN or infinity: those are written as strings. */
		if (isfinite(arg->real))
			return json_real(arg->real);
		return json_string(isnan(arg->real) ? "nan" : arg->real > 0 ? "inf" : "-inf");
	case TRACE_VALUE_STR:
		return export_json_text(arg->text);
	}
	return json_null();
}

json_t *export_json_python_args(const struct trace_python_call *call)
{
	json_t *args = json_object();

	if (!args)
		return NULL;
	for (uint32_t i = 0; i < call->arg_count; i++) {
		if (put(args, call->args[i].name, argument_value(&call->args[i]))) {
			json_decref(args);
			return NULL;
		}
	}
	return args;
}

/*
 * A c10d call's work: "ended", "failed", "unfinished" when last seen, or
 * "not followed" (seen entered only); null for an NCCL call.
 */
static json_t *work_state(const struct trace_nccl_call *call)
{
	if (!call->api || nccl_function_index(call->api) >= 0)
		return json_null();
	if (!(call->flags & TRACE_CALL_WORK_AWAITED))
		return json_string("not followed");
	if (call->flags & TRACE_CALL_OPEN)
		return json_string("unfinished");
	return json_string(call->flags & TRACE_CALL_WORK_FAILED ? "failed" : "ended");
}

static json_t *call_object(const struct trace_nccl_call *call)
{
	const char *result_name = nccl_result_name(call->result);
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("nccl"));
	failed |= put(object, "name", export_json_text(call->function));
	failed |= put(object, "pid", json_integer(call->pid));
	failed |= put(object, "tid", json_integer(call->tid));
	failed |= put(object, "ts_ns", export_json_unsigned(call->entry_ns));
	failed |= put(object, "dur_ns", export_json_unsigned(call->duration_ns));
	/* Never returned: open for dur_ns when last seen, with no result. */
	failed |= put(object, "open", json_boolean(call->flags & TRACE_CALL_OPEN));
	failed |= put(object, "ret",
		      call->flags & TRACE_CALL_OPEN ? json_null() : json_integer(call->result));
	failed |= put(object, "ret_name",
		      result_name && !(call->flags & TRACE_CALL_OPEN) ? json_string(result_name)
								      : json_null());
	failed |= put(object, "depth", json_integer(call->depth));
	failed |= put(object, "group_depth", json_integer(call->group_depth));
	failed |= put(object, "args", export_json_call_args(call));
	failed |= put(object, "comm", call->comm ? export_json_unsigned(call->comm) : json_null());
	failed |= put(object, "comm_id", export_json_identity(call->comm_id));
	failed |= put(object, "rank", export_json_known_or_null(call->rank));
	failed |= put(object, "nranks", export_json_known_or_null(call->nranks));
	failed |= put(object, "seq", export_json_known_or_null(call->seq));
	failed |= put(object, "unique_id_hash",
		      call->flags & TRACE_CALL_UNIQUE_ID_VALID
			      ? export_json_hexadecimal(call->unique_id_hash)
			      : json_null());
	failed |= put(object, "flags", json_integer(call->flags));
	failed |= put(object, "work", work_state(call));
	failed |= put(object, "step", export_json_known_or_null(call->step));
	failed |= put(object, "stage", export_json_stage(call->stage));
	failed |= put(object, "py_stack", export_json_python_stack(&call->py_stack));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static json_t *process_object(const struct trace_process *process)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("process"));
	failed |= put(object, "pid", json_integer(process->pid));
	failed |= put(object, "parent_pid",
		      process->parent_pid ? json_integer(process->parent_pid) : json_null());
	failed |= put(object, "rank", export_json_known_or_null(process->rank));
	failed |= put(object, "local_rank", export_json_known_or_null(process->local_rank));
	failed |= put(object, "world_size", export_json_known_or_null(process->world_size));
	failed |= put(object, "exit_code", export_json_known_or_null(process->exit_code));
	failed |= put(object, "start_ns", export_json_unsigned(process->start_ns));
	failed |= put(object, "end_ns",
		      process->end_ns ? export_json_unsigned(process->end_ns) : json_null());
	failed |= put(object, "command", export_json_text(process->command));
	failed |= put(object, "python_unseen_from_ns",
		      process->python_unseen_to_ns
			      ? export_json_unsigned(process->python_unseen_from_ns)
			      : json_null());
	failed |= put(object, "python_unseen_to_ns",
		      process->python_unseen_to_ns
			      ? export_json_unsigned(process->python_unseen_to_ns)
			      : json_null());
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static const char *origin_name(uint32_t origin)
{
	switch (origin) {
	case TRACE_COMM_CREATED:
		return "created";
	case TRACE_COMM_SPLIT:
		return "split";
	case TRACE_COMM_RECOVERED:
		return "recovered";
	case TRACE_COMM_UNKNOWN:
		return "unknown";
	}
	return NULL;
}

static json_t *communicator_object(const struct trace_communicator *comm)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("communicator"));
	failed |= put(object, "pid", json_integer(comm->pid));
	failed |= put(object, "origin", enum_value(origin_name(comm->origin), comm->origin));
	failed |= put(object, "handle", export_json_unsigned(comm->handle));
	failed |= put(object, "comm_id", export_json_identity(comm->comm_id));
	failed |= put(object, "parent_comm_id", export_json_identity(comm->parent_comm_id));
	failed |= put(object, "rank", export_json_known_or_null(comm->rank));
	failed |= put(object, "nranks", export_json_known_or_null(comm->nranks));
	failed |= put(object, "color", json_integer(comm->color));
	failed |= put(object, "split_index", json_integer(comm->split_index));
	failed |= put(object, "nccl_comm_hash", export_json_identity(comm->nccl_comm_hash));
	failed |= put(object, "seq_base", json_integer(comm->seq_base));
	failed |= put(object, "seen_ns", export_json_unsigned(comm->seen_ns));
	failed |= put(object, "note", export_json_text(comm->note));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static json_t *library_object(const struct trace_library *library)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("library"));
	failed |= put(object, "pid", json_integer(library->pid));
	failed |= put(object, "functions_attached", json_integer(library->functions_attached));
	failed |= put(object, "attached_ns", export_json_unsigned(library->attached_ns));
	failed |= put(object, "path", export_json_text(library->path));
	failed |= put(object, "build_id", export_json_text(library->build_id));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static json_t *stats_object(const struct trace_stats *stats)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("stats"));
	failed |= put(object, "timestamp_ns", export_json_unsigned(stats->timestamp_ns));
	failed |= put(object, "calls", export_json_unsigned(stats->calls));
	failed |= put(object, "ringbuf_drops", export_json_unsigned(stats->ringbuf_drops));
	failed |= put(object, "unmatched_returns", export_json_unsigned(stats->unmatched_returns));
	failed |= put(object, "nesting_overflows", export_json_unsigned(stats->nesting_overflows));
	failed |= put(object, "filtered", export_json_unsigned(stats->filtered));
	failed |= put(object, "process_drops", export_json_unsigned(stats->process_drops));
	failed |=
		put(object, "python_events_lost", export_json_unsigned(stats->python_events_lost));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static json_t *network_object(const struct trace_network_sample *sample)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("network"));
	failed |= put(object, "timestamp_ns", export_json_unsigned(sample->timestamp_ns));
	failed |= put(object, "pid", json_integer(sample->pid));
	failed |= put(object, "source",
		      json_string(sample->source == 1	? "nccl_ib"
				  : sample->source == 2 ? "verbs"
							: "unknown"));
	failed |= put(object, "requests_posted", export_json_unsigned(sample->requests_posted));
	failed |=
		put(object, "requests_signalled", export_json_unsigned(sample->requests_signalled));
	failed |= put(object, "completions", export_json_unsigned(sample->completions));
	failed |= put(object, "completion_errors", export_json_unsigned(sample->completion_errors));
	failed |= put(object, "bytes_posted", export_json_unsigned(sample->bytes_posted));
	failed |= put(object, "bytes_completed", export_json_unsigned(sample->bytes_completed));
	failed |= put(object, "last_post_ns", export_json_unsigned(sample->last_post_ns));
	failed |=
		put(object, "last_completion_ns", export_json_unsigned(sample->last_completion_ns));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static json_t *activity_object(const struct trace_activity_sample *sample)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("activity"));
	failed |= put(object, "timestamp_ns", export_json_unsigned(sample->timestamp_ns));
	failed |= put(object, "pid", json_integer(sample->pid));
	failed |= put(object, "threads", json_integer(sample->threads));
	failed |= put(object, "threads_running", json_integer(sample->threads_running));
	failed |= put(object, "threads_io_wait", json_integer(sample->threads_io_wait));
	failed |= put(object, "cpu_ns", export_json_unsigned(sample->cpu_ns));
	failed |= put(object, "read_bytes", export_json_unsigned(sample->read_bytes));
	failed |= put(object, "write_bytes", export_json_unsigned(sample->write_bytes));
	failed |= put(object, "read_chars", export_json_unsigned(sample->read_chars));
	failed |= put(object, "write_chars", export_json_unsigned(sample->write_chars));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static json_t *arrival_object(const struct trace_arrival_state *state)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("arrival"));
	failed |= put(object, "timestamp_ns", export_json_unsigned(state->timestamp_ns));
	failed |= put(object, "pid", json_integer(state->pid));
	failed |= put(object, "rank", json_integer(state->rank));
	failed |= put(object, "lagging", json_boolean(state->flags & TRACE_ARRIVAL_LAGGING));
	failed |= put(object, "is_rank", json_boolean(state->flags & TRACE_ARRIVAL_RANK));
	failed |= put(object, "collective", export_json_text(state->collective));
	failed |= put(object, "seq", state->seq >= 0 ? json_integer(state->seq) : json_null());
	failed |= put(object, "nranks", json_integer(state->nranks));
	failed |= put(object, "comm_hash", export_json_unsigned(state->comm_hash));
	failed |= put(object, "blocked_in", export_json_text(state->blocked_in));
	failed |= put(object, "waiting", export_json_text(state->waiting));
	failed |= put(object, "doing", export_json_text(state->doing));
	failed |= put(object, "missed", export_json_text(state->missed));
	failed |= put(object, "py_stack", export_json_python_stack(&state->py_stack));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

static json_t *python_call_object(const struct trace_python_call *call)
{
	const char *kind = call->flags & TRACE_PYTHON_TORCH_SCOPE ? "torch_scope"
			   : call->flags & TRACE_PYTHON_TORCH_OP  ? "torch_op"
			   : call->flags & TRACE_PYTHON_UNCAUGHT  ? "exception"
								  : "py";
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string(kind));
	failed |= put(object, "name", export_json_text(call->qualified_name));
	failed |= put(object, "file", export_json_text(call->file));
	failed |= put(object, "line", export_json_known_or_null(call->first_line));
	failed |= put(object, "pid", json_integer(call->pid));
	failed |= put(object, "tid", json_integer(call->tid));
	failed |= put(object, "ts_ns", export_json_unsigned(call->entry_ns));
	failed |= put(object, "dur_ns", export_json_unsigned(call->duration_ns));
	failed |= put(object, "depth", json_integer(call->depth));
	failed |= put(object, "raised", json_boolean(call->flags & TRACE_PYTHON_RAISED));
	failed |= put(object, "step", export_json_known_or_null(call->step));
	failed |= put(object, "stage", export_json_stage(call->stage));
	failed |= put(object, "rank", export_json_known_or_null(call->rank));
	failed |= put(object, "world_size", export_json_known_or_null(call->world_size));
	failed |= put(object, "args", export_json_python_args(call));
	failed |= put(object, "py_stack", export_json_python_stack(&call->py_stack));
	if (call->flags & TRACE_PYTHON_UNCAUGHT)
		failed |= put(object, "handled_at_exit",
			      json_boolean(call->flags & TRACE_PYTHON_HANDLED_AT_EXIT));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

json_t *export_json_record(const struct trace_record *record)
{
	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		return call_object(&record->call);
	case TRACE_RECORD_PROCESS:
		return process_object(&record->process);
	case TRACE_RECORD_COMMUNICATOR:
		return communicator_object(&record->communicator);
	case TRACE_RECORD_LIBRARY:
		return library_object(&record->library);
	case TRACE_RECORD_STATS:
		return stats_object(&record->stats);
	case TRACE_RECORD_PYTHON_CALL:
		return python_call_object(&record->python_call);
	case TRACE_RECORD_NETWORK:
		return network_object(&record->network);
	case TRACE_RECORD_ACTIVITY:
		return activity_object(&record->activity);
	case TRACE_RECORD_ARRIVAL:
		return arrival_object(&record->arrival);
	}
	return NULL;
}

json_t *export_json_header(const struct trace_header *header)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= put(object, "kind", json_string("header"));
	failed |= put(object, "format_version", json_integer(header->format_version));
	failed |= put(object, "hostname", export_json_text(header->hostname));
	failed |= put(object, "boot_id", export_json_text(header->boot_id));
	failed |= put(object, "anchor_monotonic_ns",
		      export_json_unsigned(header->anchor_monotonic_ns));
	failed |=
		put(object, "anchor_realtime_ns", export_json_unsigned(header->anchor_realtime_ns));
	failed |= put(object, "command_line", export_json_text(header->command_line));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}

int export_json_write(FILE *out, const char *prefix, const json_t *value, size_t flags,
		      const char *suffix)
{
	size_t prefix_length = strlen(prefix), suffix_length = strlen(suffix), length, room;
	char stack_buffer[8192], *text = stack_buffer;
	int err = 0;

	/* Encoded straight to a FILE, jansson makes a write call per token: slow on big traces. */
	room = sizeof(stack_buffer) - prefix_length - suffix_length;
	length = json_dumpb(value, text + prefix_length, room, flags);
	if (!length)
		return -ENOMEM;
	if (length > room) {
		text = malloc(prefix_length + length + suffix_length);
		if (!text)
			return -ENOMEM;
		if (json_dumpb(value, text + prefix_length, length, flags) != length) {
			free(text);
			return -ENOMEM;
		}
	}
	memcpy(text, prefix, prefix_length);
	memcpy(text + prefix_length + length, suffix, suffix_length);
	errno = 0;
	length += prefix_length + suffix_length;
	if (fwrite(text, 1, length, out) != length)
		err = errno ? -errno : -EIO;
	if (text != stack_buffer)
		free(text);
	return err;
}

/* Writes one object and a newline; consumes the reference. Returns 0 or a negative errno. */
static int write_line(FILE *out, json_t *object)
{
	int err;

	if (!object)
		return -ENOMEM;
	err = export_json_write(out, "", object, JSON_COMPACT, "\n");
	json_decref(object);
	return err;
}

static int output_failed(int err, char *error, size_t error_size)
{
	if (err == -ENOMEM)
		error_format(error, error_size,
			     "out of memory while exporting the trace as JSON Lines");
	else
		error_format(error, error_size,
			     "could not write the JSON Lines export: %s; check the free space and "
			     "the output file",
			     strerror(-err));
	return err;
}

int export_jsonl(struct trace_reader *reader, FILE *out, unsigned flags, char *error,
		 size_t error_size)
{
	struct trace_record record;
	int status, err;

	if (!(flags & EXPORT_CALLS_ONLY)) {
		err = write_line(out, export_json_header(trace_reader_header(reader)));
		if (err)
			return output_failed(err, error, error_size);
	}
	while ((status = trace_reader_next(reader, &record)) > 0) {
		/* Calls of both kinds: NCCL's and Python's. */
		if ((flags & EXPORT_CALLS_ONLY) && record.kind != TRACE_RECORD_NCCL_CALL &&
		    record.kind != TRACE_RECORD_PYTHON_CALL)
			continue;
		err = write_line(out, export_json_record(&record));
		if (err)
			return output_failed(err, error, error_size);
	}
	if (status < 0) {
		error_format(error, error_size, "%s", trace_reader_error(reader));
		return status;
	}
	errno = 0;
	if (fflush(out))
		return output_failed(errno ? -errno : -EIO, error, error_size);
	return 0;
}
