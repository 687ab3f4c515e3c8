// SPDX-License-Identifier: MIT
/* Reads TrainCheck's JSON Lines traces as trace records (see traincheck_trace.h). */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/u64_map.h"
#include "trace/traincheck_trace.h"

/* Longest text kept of a string, list or tuple value. */
#define VALUE_TEXT_MAX 128

/* Attributes of a variable state kept first, in this order; others follow while room is left. */
static const char *const preferred_attributes[] = {
	"data", "grad", "dtype", "shape", "requires_grad", "is_leaf", "retains_grad", "nbytes",
};

/* A call whose "(pre)" record was read and whose "(post)" was not yet. */
struct open_call {
	char *id;
	char *function;
	uint64_t time_ns;
	uint32_t pid;
	uint32_t tid;
	int32_t rank;
	int32_t step;
	uint32_t stage;
	uint32_t arg_count;
	struct trace_python_arg args[TRACE_PY_ARGS_MAX];
};

/* The calls open on one thread, outermost first. */
struct thread_calls {
	struct open_call **calls;
	size_t count;
	size_t capacity;
};

struct reading {
	const char *name;
	uint64_t line;
	trace_replay_fn callback;
	void *context;
	struct traincheck_stats *stats;
	struct u64_map threads; /* thread id -> struct thread_calls */
	int64_t handed;
	char *error;
	size_t error_size;
};

static int fail(struct reading *reading, const char *format, ...)
{
	va_list arguments;
	int used = snprintf(reading->error, reading->error_size, "%s:%llu: ", reading->name,
			    (unsigned long long)reading->line);

	if (used >= 0 && (size_t)used < reading->error_size) {
		va_start(arguments, format);
		vsnprintf(reading->error + used, reading->error_size - (size_t)used, format,
			  arguments);
		va_end(arguments);
	}
	return -1;
}

static void free_arg(struct trace_python_arg *arg)
{
	free((char *)arg->name);
	free((char *)arg->text);
	memset(arg, 0, sizeof(*arg));
}

static void free_open_call(struct open_call *call)
{
	if (!call)
		return;
	for (uint32_t i = 0; i < call->arg_count; i++)
		free_arg(&call->args[i]);
	free(call->id);
	free(call->function);
	free(call);
}

static char *cut_copy(const char *text)
{
	return strndup(text, VALUE_TEXT_MAX);
}

/* A list or tuple of primitives as compact JSON text; NULL when it holds anything else. */
static char *sequence_text(json_t *items)
{
	size_t index;
	json_t *item;

	if (!json_is_array(items))
		return NULL;
	json_array_foreach(items, index,
			   item) if (json_is_object(item) || json_is_array(item)) return NULL;
	return json_dumps(items, JSON_COMPACT | JSON_ENCODE_ANY);
}

/*
 * Fills 'arg' from plain JSON (an attribute of a variable state, or the
 * value inside a typed one). Returns 1 for a primitive or a list of them, 0
 * for anything else, -1 when out of memory.
 */
static int plain_value(json_t *value, const char *name, struct trace_python_arg *arg)
{
	char *text = NULL;

	memset(arg, 0, sizeof(*arg));
	if (json_is_integer(value)) {
		arg->type = TRACE_VALUE_INT;
		arg->integer = json_integer_value(value);
	} else if (json_is_real(value)) {
		arg->type = TRACE_VALUE_FLOAT;
		arg->real = json_real_value(value);
	} else if (json_is_boolean(value)) {
		arg->type = TRACE_VALUE_BOOL;
		arg->integer = json_is_true(value);
	} else if (json_is_null(value)) {
		arg->type = TRACE_VALUE_NONE;
	} else if (json_is_string(value)) {
		arg->type = TRACE_VALUE_STR;
		text = cut_copy(json_string_value(value));
		if (!text)
			return -1;
	} else if ((text = sequence_text(value))) {
		arg->type = TRACE_VALUE_STR;
		if (strlen(text) > VALUE_TEXT_MAX)
			text[VALUE_TEXT_MAX] = '\0';
	} else {
		return 0;
	}
	arg->text = text;
	arg->name = strdup(name);
	if (!arg->name) {
		free_arg(arg);
		return -1;
	}
	return 1;
}

/* Whether TrainCheck's type tag ("int", "str", "list", ...) fits the JSON value. */
static bool type_tag_fits(const char *type, json_t *value)
{
	if (strcmp(type, "int") == 0)
		return json_is_integer(value);
	if (strcmp(type, "float") == 0)
		return json_is_number(value);
	if (strcmp(type, "bool") == 0)
		return json_is_boolean(value);
	if (strcmp(type, "NoneType") == 0)
		return json_is_null(value);
	if (strcmp(type, "str") == 0)
		return json_is_string(value);
	return strcmp(type, "list") == 0 || strcmp(type, "tuple") == 0;
}

/*
 * Fills 'arg' from TrainCheck's typed value {"int": 5}. Returns 1 for a
 * primitive, 0 for anything else (objects, tensors), -1 when out of memory.
 */
static int typed_value(json_t *typed, const char *name, struct trace_python_arg *arg)
{
	const char *type;
	json_t *value;
	void *only;
	int status;

	memset(arg, 0, sizeof(*arg));
	if (!json_is_object(typed) || json_object_size(typed) != 1)
		return 0;
	only = json_object_iter(typed);
	type = json_object_iter_key(only);
	value = json_object_iter_value(only);
	if (!type_tag_fits(type, value))
		return 0;
	status = plain_value(value, name, arg);
	/* A float that happens to be whole is written as a JSON integer. */
	if (status == 1 && strcmp(type, "float") == 0 && arg->type == TRACE_VALUE_INT) {
		arg->type = TRACE_VALUE_FLOAT;
		arg->real = (double)arg->integer;
	}
	return status;
}

static int32_t integer_or(json_t *object, const char *key, int32_t otherwise)
{
	json_t *value = json_object_get(object, key);

	return json_is_integer(value) ? (int32_t)json_integer_value(value) : otherwise;
}

/* Rank, step and stage from the record's meta variables. */
static void meta_variables(json_t *record, int32_t *rank, int32_t *step, uint32_t *stage)
{
	json_t *meta = json_object_get(record, "meta_vars");
	const char *name = json_string_value(json_object_get(meta, "stage"));

	*rank = integer_or(meta, "_DATA_PARALLEL_RANK", integer_or(meta, "RANK", -1));
	*step = integer_or(meta, "step", -1);
	*stage = TRACE_STAGE_UNKNOWN;
	if (name && (strcmp(name, "train") == 0 || strcmp(name, "training") == 0))
		*stage = TRACE_STAGE_TRAIN;
	else if (name && (strcmp(name, "eval") == 0 || strcmp(name, "evaluation") == 0 ||
			  strcmp(name, "test") == 0 || strcmp(name, "testing") == 0))
		*stage = TRACE_STAGE_EVAL;
}

static uint64_t unsigned_of(json_t *record, const char *key)
{
	json_t *value = json_object_get(record, key);

	return json_is_integer(value) ? (uint64_t)json_integer_value(value) : 0;
}

/* A record's time in nanoseconds: an integer of them, or seconds as a real number. */
static uint64_t time_of(json_t *record)
{
	json_t *value = json_object_get(record, "time");

	if (json_is_real(value) && json_real_value(value) > 0)
		return (uint64_t)(json_real_value(value) * 1e9);
	return unsigned_of(record, "time");
}

/* The most seconds 64 bits of nanoseconds hold (about 584 years). */
#define TIME_SECONDS_MAX 18446744073.0

/* A "time" in seconds too large for time_of() is refused: 0, or -1 with the error said. */
static int check_time(struct reading *reading, json_t *record)
{
	json_t *value = json_object_get(record, "time");

	if (json_is_real(value) && json_real_value(value) >= TIME_SECONDS_MAX)
		return fail(reading,
			    "a \"time\" of %g seconds, later than any clock reads: is the "
			    "line damaged?",
			    json_real_value(value));
	return 0;
}

static const char *json_kind(json_t *value)
{
	switch (json_typeof(value)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return json_number_value(value) < 0 ? "a negative number" : "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "true or false";
	case JSON_NULL:
		break;
	}
	return "null";
}

/*
 * The fields read as numbers or objects must be those: a value of another
 * type is a damaged or foreign line, not a 0 or an empty argument list.
 */
static int check_types(struct reading *reading, json_t *record)
{
	static const char *const ids[] = { "process_id", "thread_id" };
	static const char *const objects[] = { "args", "kwargs", "meta_vars" };
	json_t *value;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		value = json_object_get(record, ids[i]);
		if (value && (!json_is_integer(value) || json_integer_value(value) < 0))
			return fail(reading,
				    "\"%s\" is %s, not a process or thread id: is the line "
				    "damaged?",
				    ids[i], json_kind(value));
	}
	value = json_object_get(record, "time");
	if (value && (!json_is_number(value) || json_number_value(value) < 0))
		return fail(reading, "\"time\" is %s, not a time: is the line damaged?",
			    json_kind(value));
	for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++) {
		value = json_object_get(record, objects[i]);
		if (value && !json_is_object(value) && !json_is_null(value))
			return fail(reading, "\"%s\" is %s, not an object: is the line damaged?",
				    objects[i], json_kind(value));
	}
	return check_time(reading, record);
}

static int hand_out(struct reading *reading, const struct trace_record *record)
{
	int failed = reading->callback(reading->context, record);

	if (failed)
		return fail(reading, "stopped reading: %s", strerror(-failed));
	reading->handed++;
	return 0;
}

/* Hands out the call at 'index' of its thread's stack, the calls below it as its callers. */
static int hand_out_call(struct reading *reading, const struct thread_calls *thread, size_t index,
			 uint64_t end_ns, uint32_t flags, const struct trace_python_arg *returned)
{
	const struct open_call *call = thread->calls[index];
	struct trace_record record = { .kind = TRACE_RECORD_PYTHON_CALL };
	struct trace_python_call *out = &record.python_call;

	out->entry_ns = call->time_ns;
	out->duration_ns = end_ns > call->time_ns ? end_ns - call->time_ns : 0;
	out->pid = call->pid;
	out->tid = call->tid;
	out->depth = (uint32_t)index;
	out->flags = flags;
	out->first_line = -1;
	out->step = call->step;
	out->qualified_name = call->function;
	out->file = "";
	out->stage = call->stage;
	out->rank = call->rank;
	out->world_size = -1;
	for (size_t below = index; below > 0 && out->py_stack.depth < TRACE_PY_STACK_MAX; below--)
		out->py_stack.frames[out->py_stack.depth++] = thread->calls[below - 1]->function;
	out->arg_count = call->arg_count;
	memcpy(out->args, call->args, sizeof(out->args));
	if (returned)
		out->return_value = *returned;
	return hand_out(reading, &record);
}

static struct thread_calls *thread_of(struct reading *reading, uint64_t tid)
{
	return u64_map_get_or_add(&reading->threads, tid, sizeof(struct thread_calls), NULL);
}

/* Arguments in call order: positional ("0", "1", ...) then keywords, primitives only. */
static int add_arguments(struct open_call *call, json_t *record)
{
	static const char *const groups[] = { "args", "kwargs" };

	for (size_t g = 0; g < 2; g++) {
		json_t *arguments = json_object_get(record, groups[g]), *typed;
		const char *name;

		json_object_foreach(arguments, name, typed)
		{
			int kept;

			if (call->arg_count == TRACE_PY_ARGS_MAX)
				return 0;
			kept = typed_value(typed, name, &call->args[call->arg_count]);
			if (kept < 0)
				return -1;
			call->arg_count += (uint32_t)kept;
		}
	}
	return 0;
}

static int read_pre(struct reading *reading, json_t *record, const char *id, const char *function)
{
	uint64_t tid = unsigned_of(record, "thread_id");
	struct thread_calls *thread = thread_of(reading, tid);
	struct open_call *call = calloc(1, sizeof(*call));

	if (!thread || !call)
		goto out_of_memory;
	call->id = strdup(id);
	call->function = strdup(function);
	if (!call->id || !call->function || add_arguments(call, record))
		goto out_of_memory;
	call->time_ns = time_of(record);
	call->pid = (uint32_t)unsigned_of(record, "process_id");
	call->tid = (uint32_t)tid;
	meta_variables(record, &call->rank, &call->step, &call->stage);
	if (growable_array_room_for_one((void **)&thread->calls, thread->count, &thread->capacity,
					sizeof(*thread->calls)))
		goto out_of_memory;
	thread->calls[thread->count++] = call;
	return 0;
out_of_memory:
	free_open_call(call);
	return fail(reading, "out of memory");
}

static int read_post(struct reading *reading, json_t *record, const char *id, int raised)
{
	struct thread_calls *thread =
		u64_map_get(&reading->threads, unsigned_of(record, "thread_id"));
	json_t *returned = json_object_get(record, "return_values");
	struct trace_python_arg return_value;
	size_t index;
	int kept, failed;

	for (index = thread ? thread->count : 0; index > 0; index--)
		if (strcmp(thread->calls[index - 1]->id, id) == 0)
			break;
	if (index == 0)
		return fail(reading,
			    "a \"(post)\" record of call %s, whose \"(pre)\" record the "
			    "trace does not hold before it: is a line missing?",
			    id);
	index--;
	kept = raised ? 0 : typed_value(returned, "return", &return_value);
	if (kept < 0)
		return fail(reading, "out of memory");
	failed = hand_out_call(reading, thread, index, time_of(record),
			       raised ? TRACE_PYTHON_RAISED : 0, kept ? &return_value : NULL);
	if (kept)
		free_arg(&return_value);
	free_open_call(thread->calls[index]);
	memmove(&thread->calls[index], &thread->calls[index + 1],
		(thread->count - index - 1) * sizeof(*thread->calls));
	thread->count--;
	reading->stats->calls++;
	return failed;
}

static int attribute_preferred(const char *name)
{
	for (size_t i = 0; i < sizeof(preferred_attributes) / sizeof(preferred_attributes[0]); i++)
		if (strcmp(preferred_attributes[i], name) == 0)
			return 1;
	return 0;
}

static int read_state(struct reading *reading, json_t *record)
{
	const char *variable = json_string_value(json_object_get(record, "var_name"));
	json_t *attributes = json_object_get(record, "attributes"), *value;
	struct trace_record out = { .kind = TRACE_RECORD_PYTHON_CALL };
	struct trace_python_call *call = &out.python_call;
	const char *name;
	char qualified[512];
	int failed = 0;

	if (!variable)
		return fail(reading, "a state_change record without \"var_name\"");
	snprintf(qualified, sizeof(qualified), TRAINCHECK_STATE_PREFIX "%s", variable);
	call->qualified_name = qualified;
	call->file = "";
	call->entry_ns = time_of(record);
	call->pid = (uint32_t)unsigned_of(record, "process_id");
	call->tid = (uint32_t)unsigned_of(record, "thread_id");
	call->first_line = -1;
	call->world_size = -1;
	meta_variables(record, &call->rank, &call->step, &call->stage);
	for (size_t i = 0; i < sizeof(preferred_attributes) / sizeof(preferred_attributes[0]) &&
			   call->arg_count < TRACE_PY_ARGS_MAX && !failed;
	     i++) {
		value = json_object_get(attributes, preferred_attributes[i]);
		if (value) {
			int kept = plain_value(value, preferred_attributes[i],
					       &call->args[call->arg_count]);

			failed = kept < 0;
			call->arg_count += kept > 0 ? 1 : 0;
		}
	}
	/* Then the others in their order, less private ones ("_ML_DAIKON_data_ID" is an address).
	 */
	json_object_foreach(attributes, name, value)
	{
		int kept;

		if (failed || call->arg_count == TRACE_PY_ARGS_MAX)
			break;
		if (name[0] == '_' || attribute_preferred(name))
			continue;
		kept = plain_value(value, name, &call->args[call->arg_count]);
		failed = kept < 0;
		call->arg_count += kept > 0 ? 1 : 0;
	}
	if (!failed)
		failed = hand_out(reading, &out);
	else
		fail(reading, "out of memory");
	for (uint32_t i = 0; i < call->arg_count; i++)
		free_arg(&call->args[i]);
	reading->stats->states++;
	return failed ? -1 : 0;
}

static int read_record(struct reading *reading, json_t *record)
{
	const char *type = json_string_value(json_object_get(record, "type"));
	const char *id, *function;
	int raised;

	if (!type)
		return fail(reading, "a record without \"type\": is this a TrainCheck trace?");
	if (strcmp(type, "state_change") == 0)
		return check_types(reading, record) ? -1 : read_state(reading, record);
	if (strncmp(type, "function_call ", strlen("function_call ")) != 0) {
		reading->stats->ignored++;
		return 0;
	}
	id = json_string_value(json_object_get(record, "func_call_id"));
	function = json_string_value(json_object_get(record, "function"));
	if (!id || !function)
		return fail(reading, "a %s record without \"func_call_id\" or \"function\"", type);
	if (check_types(reading, record))
		return -1;
	if (strcmp(type, "function_call (pre)") == 0)
		return read_pre(reading, record, id, function);
	raised = strcmp(type, "function_call (post) (exception)") == 0;
	if (raised || strcmp(type, "function_call (post)") == 0)
		return read_post(reading, record, id, raised);
	reading->stats->ignored++;
	return 0;
}

/* Calls never closed (the job was cut short): handed out innermost first, with no duration. */
static int hand_out_unfinished(struct reading *reading)
{
	struct thread_calls *thread;
	uint64_t tid;
	void *value;

	for (size_t position = 0; u64_map_next(&reading->threads, &position, &tid, &value);) {
		thread = value;
		for (size_t index = thread->count; index > 0; index--) {
			struct open_call *call = thread->calls[index - 1];

			if (hand_out_call(reading, thread, index - 1, call->time_ns, 0, NULL))
				return -1;
			reading->stats->unfinished++;
			free_open_call(call);
			thread->count--;
		}
	}
	return 0;
}

static int blank(const char *line)
{
	while (*line && isspace((unsigned char)*line))
		line++;
	return *line == '\0';
}

static void free_threads(struct reading *reading)
{
	struct thread_calls *thread;
	uint64_t tid;
	void *value;

	for (size_t position = 0; u64_map_next(&reading->threads, &position, &tid, &value);) {
		thread = value;
		for (size_t i = 0; i < thread->count; i++)
			free_open_call(thread->calls[i]);
		free(thread->calls);
		free(thread);
	}
	u64_map_free(&reading->threads);
}

int64_t traincheck_trace_read(FILE *in, const char *name, trace_replay_fn callback, void *context,
			      struct traincheck_stats *stats, char *error, size_t error_size)
{
	struct reading reading = { .name = name,
				   .callback = callback,
				   .context = context,
				   .error = error,
				   .error_size = error_size };
	char *line = NULL;
	size_t size = 0;
	int failed = 0;

	memset(stats, 0, sizeof(*stats));
	reading.stats = stats;
	u64_map_init(&reading.threads);
	while (!failed && getline(&line, &size, in) >= 0) {
		json_error_t parse_error;
		json_t *record;

		reading.line++;
		if (blank(line))
			continue;
		record = json_loads(line, 0, &parse_error);
		if (!json_is_object(record)) {
			failed = fail(&reading,
				      record ? "not a JSON object" : "not JSON (%s at column %d)",
				      parse_error.text, parse_error.column);
			json_decref(record);
			break;
		}
		failed = read_record(&reading, record);
		json_decref(record);
	}
	stats->lines = reading.line;
	if (!failed && ferror(in))
		failed = fail(&reading, "cannot read: %s", strerror(errno));
	if (!failed)
		failed = hand_out_unfinished(&reading);
	free(line);
	free_threads(&reading);
	return failed ? -1 : reading.handed;
}

int traincheck_trace_detect(const char *path)
{
	FILE *in = fopen(path, "r");
	int character;

	if (!in)
		return -1;
	do
		character = fgetc(in);
	while (character != EOF && isspace(character));
	fclose(in);
	return character == '{';
}
