// SPDX-License-Identifier: MIT
/* Reduces trace records to inference events, and the string pool they use. */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/identity_text.h"
#include "base/string_interner.h"
#include "model/c10d_api.h"
#include "model/nccl_api.h"
#include "infer_event.h"

/* An interned list of fields. */
struct field_set {
	uint32_t count;
	struct infer_field fields[];
};

struct string_pool {
	struct string_interner strings;
	/* Interned field lists, open addressing. */
	struct field_set **sets;
	size_t set_capacity;
	size_t set_count;
};

/* The fields of one event while it is built. */
struct field_list {
	uint32_t count;
	struct infer_field fields[INFER_FIELDS_MAX];
};

struct string_pool *string_pool_new(void)
{
	struct string_pool *pool = calloc(1, sizeof(*pool));

	if (pool)
		string_interner_init(&pool->strings);
	return pool;
}

const char *string_pool_intern(struct string_pool *pool, const char *text)
{
	return string_interner_intern(&pool->strings, text);
}

void string_pool_free(struct string_pool *pool)
{
	if (!pool)
		return;
	string_interner_destroy(&pool->strings);
	for (size_t i = 0; i < pool->set_capacity; i++)
		free(pool->sets[i]);
	free(pool->sets);
	free(pool);
}

static uint64_t fields_hash(const struct infer_field *fields, uint32_t count)
{
	uint64_t hash = fnv1a_add_u64(FNV1A_OFFSET_BASIS, count);

	for (uint32_t i = 0; i < count; i++) {
		hash = fnv1a_add_u64(hash, (uintptr_t)fields[i].name);
		hash = fnv1a_add_u64(hash, (uintptr_t)fields[i].value);
	}
	return hash ^ (hash >> 29);
}

static int set_matches(const struct field_set *set, const struct infer_field *fields,
		       uint32_t count)
{
	if (set->count != count)
		return 0;
	for (uint32_t i = 0; i < count; i++)
		if (set->fields[i].name != fields[i].name ||
		    set->fields[i].value != fields[i].value)
			return 0;
	return 1;
}

static int sets_grow(struct string_pool *pool)
{
	size_t capacity = pool->set_capacity ? pool->set_capacity * 2 : 1024;
	struct field_set **sets = calloc(capacity, sizeof(*sets));

	if (!sets)
		return -ENOMEM;
	for (size_t i = 0; i < pool->set_capacity; i++) {
		size_t at;

		if (!pool->sets[i])
			continue;
		at = fields_hash(pool->sets[i]->fields, pool->sets[i]->count) & (capacity - 1);
		while (sets[at])
			at = (at + 1) & (capacity - 1);
		sets[at] = pool->sets[i];
	}
	free(pool->sets);
	pool->sets = sets;
	pool->set_capacity = capacity;
	return 0;
}

const struct infer_field *string_pool_intern_fields(struct string_pool *pool,
						    const struct infer_field *fields,
						    uint32_t count)
{
	struct field_set *set;
	size_t at;

	if ((pool->set_count + 1) * 2 > pool->set_capacity && sets_grow(pool))
		return NULL;
	at = fields_hash(fields, count) & (pool->set_capacity - 1);
	while (pool->sets[at]) {
		if (set_matches(pool->sets[at], fields, count))
			return pool->sets[at]->fields;
		at = (at + 1) & (pool->set_capacity - 1);
	}
	set = malloc(sizeof(*set) + count * sizeof(set->fields[0]));
	if (!set)
		return NULL;
	set->count = count;
	memcpy(set->fields, fields, count * sizeof(set->fields[0]));
	pool->sets[at] = set;
	pool->set_count++;
	return set->fields;
}

static bool field_list_has(const struct field_list *list, const char *name)
{
	for (uint32_t i = 0; i < list->count; i++)
		if (strcmp(list->fields[i].name, name) == 0)
			return true;
	return false;
}

static int add_field(struct string_pool *pool, struct field_list *list, const char *name,
		     const char *value)
{
	struct infer_field *field;

	if (list->count >= INFER_FIELDS_MAX)
		return 0;
	field = &list->fields[list->count];
	field->name = string_pool_intern(pool, name);
	field->value = string_pool_intern(pool, value);
	if (!field->name || !field->value)
		return -1;
	list->count++;
	return 0;
}

static int nccl_fields(struct string_pool *pool, const struct trace_nccl_call *call,
		       struct field_list *list)
{
	const struct nccl_function *function = call->api;
	char text[32];

	if (function) {
		for (int i = 0; i < function->param_count && i < (int)call->param_count; i++) {
			const struct nccl_param *param = &function->params[i];
			const char *value = text;

			switch (param->type) {
			case NCCL_PARAM_SIZE:
				snprintf(text, sizeof(text), "%" PRIu64, call->params[i]);
				break;
			case NCCL_PARAM_INT:
				snprintf(text, sizeof(text), "%d", (int)call->params[i]);
				break;
			case NCCL_PARAM_DATATYPE:
				value = nccl_datatype_name((int64_t)call->params[i]);
				break;
			case NCCL_PARAM_REDOP:
				value = nccl_redop_name((int64_t)call->params[i]);
				break;
			case NCCL_PARAM_TORCH_DTYPE:
				value = torch_scalar_type_name((int64_t)call->params[i]);
				if (!value)
					continue; /* not read: no value to compare */
				break;
			default:
				continue;
			}
			if (add_field(pool, list, param->name, value))
				return -1;
		}
	}
	/* The communicator's size: which group a collective went to (APIArg). */
	if (call->nranks > 0 && !field_list_has(list, "nranks")) {
		snprintf(text, sizeof(text), "%d", call->nranks);
		if (add_field(pool, list, "nranks", text))
			return -1;
	}
	return add_field(pool, list, "result", nccl_result_name(call->result));
}

static void python_value(const struct trace_python_arg *arg, char *text, size_t size)
{
	switch (arg->type) {
	case TRACE_VALUE_BOOL:
		snprintf(text, size, "%s", arg->integer ? "True" : "False");
		break;
	case TRACE_VALUE_INT:
		snprintf(text, size, "%" PRId64, arg->integer);
		break;
	case TRACE_VALUE_FLOAT:
		snprintf(text, size, "%.17g", arg->real);
		break;
	case TRACE_VALUE_STR:
		snprintf(text, size, "'%s'", arg->text ? arg->text : "");
		break;
	default:
		snprintf(text, size, "None");
	}
}

/*
 * The class, path and modes a module call carries (TRACE_MODULE_CLASS_ARG,
 * TRACE_MODULE_PATH_ARG, TRACE_MODULE_TRAINING_ARG,
 * TRACE_MODULE_TRAIN_NOT_RUN_ARG): no arguments of the program's.
 */
static bool is_module_class(const struct trace_python_call *call, const char *arg_name)
{
	return (strcmp(arg_name, TRACE_MODULE_CLASS_ARG) == 0 ||
		strcmp(arg_name, TRACE_MODULE_PATH_ARG) == 0 ||
		strcmp(arg_name, TRACE_MODULE_TRAINING_ARG) == 0 ||
		strcmp(arg_name, TRACE_MODULE_TRAIN_NOT_RUN_ARG) == 0) &&
	       call->qualified_name && strcmp(call->qualified_name, TRACE_MODULE_CALL_NAME) == 0;
}

/* Whether a module call says True in its argument 'arg_name' (one of is_module_class's). */
static bool module_call_says(const struct trace_python_call *call, const char *arg_name)
{
	for (uint32_t i = 0; i < call->arg_count && i < TRACE_PY_ARGS_MAX; i++)
		if (call->args[i].name && is_module_class(call, call->args[i].name) &&
		    strcmp(call->args[i].name, arg_name) == 0)
			return call->args[i].type == TRACE_VALUE_BOOL && call->args[i].integer;
	return false;
}

/* A module call's argument 'arg_name' (one of is_module_class's) as text, NULL when absent. */
static const char *module_call_text(const struct trace_python_call *call, const char *arg_name)
{
	for (uint32_t i = 0; i < call->arg_count && i < TRACE_PY_ARGS_MAX; i++)
		if (call->args[i].name && is_module_class(call, call->args[i].name) &&
		    strcmp(call->args[i].name, arg_name) == 0 &&
		    call->args[i].type == TRACE_VALUE_STR && call->args[i].text)
			return call->args[i].text;
	return NULL;
}

/* infer_event's 'module': "PATH (CLASS)", "CLASS" (a top module, or no path read), or "". */
static const char *module_description(struct string_pool *pool,
				      const struct trace_python_call *call)
{
	const char *class_name = module_call_text(call, TRACE_MODULE_CLASS_ARG);
	const char *path = module_call_text(call, TRACE_MODULE_PATH_ARG);
	char text[320];

	/* A top module's path is its class. */
	if (class_name && path && strcmp(path, class_name) != 0)
		snprintf(text, sizeof(text), "%.200s (%.100s)", path, class_name);
	else
		snprintf(text, sizeof(text), "%.100s", class_name ? class_name : "");
	return string_pool_intern(pool, text);
}

static int python_fields(struct string_pool *pool, const struct trace_python_call *call,
			 struct field_list *list)
{
	char name[96], text[128];

	for (uint32_t i = 0; i < call->arg_count && i < TRACE_PY_ARGS_MAX; i++) {
		const char *arg_name = call->args[i].name ? call->args[i].name : "";

		/* A model's own module classes and paths: a rule on them fits that model only. */
		if (is_module_class(call, arg_name))
			continue;
		/* A torch operator's arguments come named as fields: "tensor:self", "arg:alpha". */
		snprintf(name, sizeof(name), strchr(arg_name, ':') ? "%s" : "arg:%s", arg_name);
		python_value(&call->args[i], text, sizeof(text));
		if (add_field(pool, list, name, text))
			return -1;
	}
	if (call->return_value.type) {
		python_value(&call->return_value, text, sizeof(text));
		if (add_field(pool, list, "result", text))
			return -1;
	}
	return add_field(pool, list, INFER_RAISED_FIELD,
			 call->flags & TRACE_PYTHON_RAISED ? "True" : "False");
}

/* "train" or "eval", interned; NULL for a stage not known. */
static const char *stage_name(struct string_pool *pool, uint32_t stage)
{
	if (stage == TRACE_STAGE_TRAIN)
		return string_pool_intern(pool, "train");
	if (stage == TRACE_STAGE_EVAL)
		return string_pool_intern(pool, "eval");
	return NULL;
}

/*
 * A torch scope's name as its family ("Optimizer.step#*") with the
 * implementation and the stage it ran in as fields: what an optimizer step
 * does, and that it runs in training mode, whichever optimizer it is.
 */
static int scope_fields(struct string_pool *pool, const char *qualified_name,
			struct infer_event *event, struct field_list *list)
{
	const char *implementation = strchr(qualified_name, '#');
	const char *stage = stage_name(pool, event->stage);
	char family[256];

	if (implementation && implementation[1] &&
	    strcmp(implementation + 1, INFER_SCOPE_ANY) != 0) {
		snprintf(family, sizeof(family), "%.*s#" INFER_SCOPE_ANY,
			 (int)(implementation - qualified_name), qualified_name);
		event->name = string_pool_intern(pool, family);
		if (add_field(pool, list, INFER_IMPLEMENTATION_FIELD, implementation + 1))
			return -1;
	}
	return stage ? add_field(pool, list, INFER_STAGE_FIELD, stage) : 0;
}

/* An operator's call_path: its callers joined, "" when the probe read none. */
static const char *call_path(struct string_pool *pool, const struct trace_python_call *call)
{
	char path[TRACE_PY_STACK_MAX * 160];
	size_t used = 0;

	path[0] = '\0';
	if (call->flags & TRACE_PYTHON_TORCH_OP)
		for (uint32_t i = 0; i < call->py_stack.depth && i < TRACE_PY_STACK_MAX; i++) {
			int wrote =
				snprintf(path + used, sizeof(path) - used, "%s%s",
					 i ? INFER_CALL_PATH_SEPARATOR : "",
					 call->py_stack.frames[i] ? call->py_stack.frames[i] : "?");

			if (wrote < 0 || (size_t)wrote >= sizeof(path) - used)
				break;
			used += (size_t)wrote;
		}
	return string_pool_intern(pool, path);
}

int infer_event_from_record(struct string_pool *pool, const struct trace_record *record,
			    struct infer_event *event)
{
	const struct trace_python_stack *stack;
	struct field_list list;

	memset(event, 0, sizeof(*event));
	list.count = 0;
	/* A call that never returned has no result or end: the hang detectors judge it. */
	if (record->kind == TRACE_RECORD_NCCL_CALL && (record->call.flags & TRACE_CALL_OPEN))
		return 0;
	if (record->kind == TRACE_RECORD_NCCL_CALL) {
		const struct trace_nccl_call *call = &record->call;

		event->kind = INFER_EVENT_NCCL;
		event->name = string_pool_intern(pool, call->function);
		event->pid = call->pid;
		event->tid = call->tid;
		event->rank = call->rank;
		event->nranks = call->nranks;
		event->step = call->step;
		event->stage = call->stage;
		event->comm_id = call->comm_id;
		event->seq = call->seq;
		event->entry_ns = call->entry_ns;
		event->exit_ns = call->entry_ns + call->duration_ns;
		stack = &call->py_stack;
		if (nccl_fields(pool, call, &list))
			return -1;
	} else if (record->kind == TRACE_RECORD_PYTHON_CALL) {
		const struct trace_python_call *call = &record->python_call;

		/*
		 * A module or class body runs once, at import: nothing about training.
		 * An uncaught exception is no call: crash reports give it.
		 */
		if (call->flags & (TRACE_PYTHON_RUNS_ONCE | TRACE_PYTHON_UNCAUGHT))
			return 0;

		event->kind = INFER_EVENT_PYTHON;
		event->name = string_pool_intern(pool, call->qualified_name);
		event->pid = call->pid;
		event->tid = call->tid;
		event->rank = call->rank;
		event->nranks = call->world_size;
		event->step = call->step;
		event->stage = call->stage;
		event->flags = call->flags & (TRACE_PYTHON_TORCH_SCOPE | TRACE_PYTHON_TORCH_OP);
		if (module_call_says(call, TRACE_MODULE_TRAINING_ARG))
			event->flags |= INFER_EVENT_OWN_TRAINING_MODE;
		if (module_call_says(call, TRACE_MODULE_TRAIN_NOT_RUN_ARG))
			event->flags |= INFER_EVENT_TRAIN_NOT_RUN;
		event->seq = -1;
		event->entry_ns = call->entry_ns;
		event->exit_ns = call->entry_ns + call->duration_ns;
		event->module = module_description(pool, call);
		event->call_path = call_path(pool, call);
		stack = &call->py_stack;
		if ((call->flags & TRACE_PYTHON_TORCH_SCOPE) &&
		    scope_fields(pool, call->qualified_name, event, &list))
			return -1;
		if (python_fields(pool, call, &list))
			return -1;
	} else {
		return 0;
	}
	if (!event->module)
		event->module = string_pool_intern(pool, "");
	if (!event->call_path)
		event->call_path = string_pool_intern(pool, "");
	event->context = string_pool_intern(
		pool, stack->depth > 0 && stack->frames[0] ? stack->frames[0] : "");
	event->field_count = list.count;
	event->fields = string_pool_intern_fields(pool, list.fields, list.count);
	return event->name && event->context && event->module && event->call_path && event->fields
		       ? 1
		       : -1;
}

const char *infer_event_field(const struct infer_event *event, const char *name)
{
	for (uint32_t i = 0; i < event->field_count; i++)
		if (strcmp(event->fields[i].name, name) == 0)
			return event->fields[i].value;
	return NULL;
}

uint64_t infer_event_tensor(const struct infer_event *event, const char *field)
{
	const char *text = infer_event_field(event, field);

	return text ? strtoull(text, NULL, 10) : 0;
}

bool infer_event_field_is_true(const struct infer_event *event, const char *field)
{
	const char *text = infer_event_field(event, field);

	return text && strcmp(text, "True") == 0;
}

static const char *const meta_variables[] = { "rank", "nranks",	 INFER_STAGE_FIELD,
					      "comm", "context", "first_step" };

bool infer_field_describes_tensor(const char *name)
{
	return trace_arg_describes_tensor(name);
}

bool infer_step_between_markers(int32_t step)
{
	return step > 0;
}

bool infer_event_runs_inside(const struct infer_event *inner, const struct infer_event *outer)
{
	return inner != outer && inner->tid == outer->tid && inner->entry_ns >= outer->entry_ns &&
	       inner->exit_ns <= outer->exit_ns;
}

bool infer_name_trains(const char *name)
{
	return name &&
	       (strcmp(name, OPTIMIZER_STEP_FAMILY) == 0 || strcmp(name, BACKWARD_FAMILY) == 0);
}

bool infer_event_in_training_order(const struct infer_event *event)
{
	return event->stage != TRACE_STAGE_EVAL;
}

int infer_event_is_operation(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_NCCL ||
	       (event->kind == INFER_EVENT_PYTHON &&
		(event->flags & (TRACE_PYTHON_TORCH_SCOPE | TRACE_PYTHON_TORCH_OP)));
}

bool infer_event_read_without_grad(const struct infer_event *read)
{
	const char *grad_mode = infer_event_field(read, "grad_mode:weight");

	return grad_mode && strcmp(grad_mode, "False") == 0;
}

bool infer_constant_is_rule(const struct infer_event *event, const char *field)
{
	return infer_event_is_operation(event) || strcmp(field, INFER_RAISED_FIELD) != 0;
}

static int is_meta_variable(const char *name)
{
	for (size_t i = 0; i < sizeof(meta_variables) / sizeof(meta_variables[0]); i++)
		if (strcmp(meta_variables[i], name) == 0)
			return 1;
	return 0;
}

const char *infer_event_variable(struct string_pool *pool, const struct infer_event *event,
				 const char *variable)
{
	char text[32];

	if (strcmp(variable, "rank") == 0) {
		if (event->rank < 0)
			return NULL;
		snprintf(text, sizeof(text), "%d", event->rank);
	} else if (strcmp(variable, "nranks") == 0) {
		if (event->nranks < 0)
			return NULL;
		snprintf(text, sizeof(text), "%d", event->nranks);
	} else if (strcmp(variable, INFER_STAGE_FIELD) == 0) {
		return stage_name(pool, event->stage);
	} else if (strcmp(variable, "comm") == 0) {
		if (!event->comm_id)
			return NULL;
		identity_text(event->comm_id, text);
	} else if (strcmp(variable, "context") == 0) {
		return event->context && *event->context ? event->context : NULL;
	} else if (strcmp(variable, "first_step") == 0) {
		/*
		 * The first step builds optimizer state lazily (momentum, moments): it
		 * differs. So does the first step of an optimizer made later. After
		 * a state load it depends on what the state holds, which is not seen.
		 */
		if (event->step < 0 || ((event->flags & INFER_EVENT_AFTER_STATE_LOAD) &&
					!(event->flags & INFER_EVENT_NEW_PARAMETERS)))
			return NULL;
		snprintf(text, sizeof(text), "%s",
			 event->step == 0 || (event->flags & (INFER_EVENT_NEW_PARAMETERS |
							      INFER_EVENT_NEW_OPTIMIZER))
				 ? "True"
				 : "False");
	} else {
		return infer_event_field(event, variable);
	}
	return string_pool_intern(pool, text);
}

size_t infer_event_variables(const struct infer_event *event, const char **names, size_t max)
{
	size_t count = 0;

	for (size_t i = 0; i < sizeof(meta_variables) / sizeof(meta_variables[0]) && count < max;
	     i++)
		names[count++] = meta_variables[i];
	for (uint32_t i = 0; i < event->field_count && count < max; i++)
		if (!is_meta_variable(event->fields[i].name) &&
		    !infer_field_describes_tensor(event->fields[i].name))
			names[count++] = event->fields[i].name;
	return count;
}

int infer_event_order_by_process_step(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;

	if (a->pipeline != b->pipeline)
		return a->pipeline < b->pipeline ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return a->entry_ns < b->entry_ns ? -1 : a->entry_ns > b->entry_ns;
}
