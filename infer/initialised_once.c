// SPDX-License-Identifier: MIT
/* InitialisedOnce: an initialiser sets a parameter once before training (initialised_once.h). */
#include "initialised_once.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "model/trace_records.h"

/* The frames of torch's own code: its initialisers' helpers, a layer's reset_parameters. */
#define TORCH_FRAME_PREFIX "torch."
#define UPDATED_TENSOR "tensor:self"
#define UPDATED_STORAGE "storage:self"
#define UPDATED_REQUIRES_GRAD "requires_grad:self"
#define READ_STORAGE "storage:weight"
#define READ_REQUIRES_GRAD "requires_grad:weight"

/*
 * A repetition on a tensor not yet known to be a parameter's: the two
 * initialisations, and the optimizer steps seen since. A parameter's
 * storage shows itself by the first step's end (its update, its read as a
 * weight), in whichever order the step's scope and operators arrive: after
 * a second step the repetition is dropped, before a freed temporary's
 * address can come back as a new parameter's (a model rebuilt mid-run).
 */
struct pending_repetition {
	struct infer_event again;
	struct infer_event first;
	uint32_t steps_since;
};
#define PENDING_STEPS_KEPT 2

/* One process's initialisations, by the storage (or tensor) they set. */
struct process_initialisations {
	struct u64_map first;	   /* object -> struct infer_event, its last initialisation */
	struct u64_map parameters; /* storage -> non-NULL: a parameter's (it requires grad) */
	struct u64_map pending;	   /* storage -> struct pending_repetition */
};

void initialisation_tracker_init(struct initialisation_tracker *tracker)
{
	u64_map_init(&tracker->processes);
}

void initialisation_tracker_free(struct initialisation_tracker *tracker)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&tracker->processes, &i, &key, &value);) {
		struct process_initialisations *process = value;

		u64_map_free_with_values(&process->first);
		u64_map_free(&process->parameters);
		u64_map_free_with_values(&process->pending);
		free(process);
	}
	u64_map_free(&tracker->processes);
}

/* The next frame of a call path outside torch, from *at on (moved past it); false at the end. */
static bool next_own_frame(const char **at, const char **frame, size_t *length)
{
	while (*at && **at) {
		const char *end = strstr(*at, INFER_CALL_PATH_SEPARATOR);

		*frame = *at;
		*length = end ? (size_t)(end - *at) : strlen(*at);
		*at = end ? end + strlen(INFER_CALL_PATH_SEPARATOR) : NULL;
		if (strncmp(*frame, TORCH_FRAME_PREFIX, strlen(TORCH_FRAME_PREFIX)) != 0)
			return true;
	}
	return false;
}

const char *initialised_once_initialiser(const char *call_path, size_t *length)
{
	const char *frame;

	if (next_own_frame(&call_path, &frame, length))
		return frame;
	*length = 0;
	return NULL;
}

/*
 * A tensor overwritten by zero_, with the frames that called it: a
 * parameter itself (it requires grad), or one that does not require grad,
 * such as a parameter's .data, known by its storage. *object: the storage,
 * else (a trace without storages) a parameter's tensor; *parameter: whether
 * it is known to be a parameter's.
 */
static bool is_initialisation(const struct infer_event *event, uint64_t *object, bool *parameter)
{
	const char *requires_grad;
	size_t length;

	if (event->kind != INFER_EVENT_PYTHON || !(event->flags & TRACE_PYTHON_TORCH_OP) ||
	    strcmp(event->name, INITIALISED_ONCE_OPERATOR) != 0 || !event->call_path ||
	    !*event->call_path || !initialised_once_initialiser(event->call_path, &length))
		return false;
	requires_grad = infer_event_field(event, UPDATED_REQUIRES_GRAD);
	if (!requires_grad)
		return false;
	*parameter = strcmp(requires_grad, "True") == 0;
	*object = infer_event_tensor(event, UPDATED_STORAGE);
	if (!*object && *parameter)
		*object = infer_event_tensor(event, UPDATED_TENSOR);
	return *object != 0;
}

/* The storage of a tensor an operator updates or reads that requires grad: a parameter's. */
static uint64_t parameter_storage(const struct infer_event *event)
{
	if (event->kind != INFER_EVENT_PYTHON || !(event->flags & TRACE_PYTHON_TORCH_OP))
		return 0;
	if (infer_event_field_is_true(event, UPDATED_REQUIRES_GRAD))
		return infer_event_tensor(event, UPDATED_STORAGE);
	if (infer_event_field_is_true(event, READ_REQUIRES_GRAD))
		return infer_event_tensor(event, READ_STORAGE);
	return 0;
}

static bool is_optimizer_step(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_SCOPE) &&
	       strcmp(event->name, OPTIMIZER_STEP_FAMILY) == 0;
}

static bool same_initialiser(const struct infer_event *left, const struct infer_event *right)
{
	size_t left_length, right_length;
	const char *left_frame = initialised_once_initialiser(left->call_path, &left_length);
	const char *right_frame = initialised_once_initialiser(right->call_path, &right_length);

	return left_frame && right_frame && left_length == right_length &&
	       memcmp(left_frame, right_frame, left_length) == 0;
}

/* How many frames a call path holds. */
static size_t frame_count(const char *call_path)
{
	size_t count = call_path && *call_path ? 1 : 0;

	for (const char *at = call_path; at && (at = strstr(at, INFER_CALL_PATH_SEPARATOR));
	     at += strlen(INFER_CALL_PATH_SEPARATOR))
		count++;
	return count;
}

/*
 * Whether two call paths differ in the program's own frames: torch's
 * helpers between them (a parametrization checking a temporary, then
 * setting the parameter whose storage took the temporary's place) are the
 * same initialisation. A path the probe cut at its deepest frames
 * (TRACE_PY_STACK_MAX) that ends before the other does says nothing of
 * the frames it lacks.
 */
static bool other_call_path(const char *left, const char *right)
{
	bool left_cut = frame_count(left) >= TRACE_PY_STACK_MAX;
	bool right_cut = frame_count(right) >= TRACE_PY_STACK_MAX;
	const char *left_frame, *right_frame;
	size_t left_length, right_length;

	for (;;) {
		bool left_more = next_own_frame(&left, &left_frame, &left_length);
		bool right_more = next_own_frame(&right, &right_frame, &right_length);

		if (!left_more && !right_more)
			return false;
		if (!left_more)
			return !left_cut;
		if (!right_more)
			return !right_cut;
		if (left_length != right_length ||
		    memcmp(left_frame, right_frame, left_length) != 0)
			return true;
	}
}

static uint64_t process_key(const struct infer_event *event)
{
	return fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, event->pipeline), event->pid);
}

/* The storage is a parameter's: a repetition waiting for that is one. */
static int parameter_seen(struct process_initialisations *process, uint64_t storage,
			  initialisation_repeated_fn repeated, void *context)
{
	struct pending_repetition *pending;

	if (u64_map_get(&process->parameters, storage))
		return 0;
	if (u64_map_put(&process->parameters, storage, &process->parameters))
		return -ENOMEM;
	pending = u64_map_remove(&process->pending, storage);
	if (pending)
		repeated(context, &pending->again, &pending->first);
	free(pending);
	return 0;
}

/* An optimizer step: repetitions waiting since the step before last are dropped. */
static int forget_stale_repetitions(struct process_initialisations *process)
{
	struct u64_map kept;
	uint64_t key;
	void *value;
	int failed = 0;

	if (!process->pending.count)
		return 0;
	u64_map_init(&kept);
	for (size_t i = 0; u64_map_next(&process->pending, &i, &key, &value);) {
		struct pending_repetition *pending = value;

		if (++pending->steps_since >= PENDING_STEPS_KEPT || failed ||
		    (failed = u64_map_put(&kept, key, pending)))
			free(pending);
	}
	u64_map_free(&process->pending);
	process->pending = kept;
	return failed;
}

/* A repetition on a storage not yet known to be a parameter's waits (the first one kept). */
static int hold_repetition(struct process_initialisations *process, uint64_t object,
			   const struct infer_event *again, const struct infer_event *first)
{
	struct pending_repetition *pending;

	if (u64_map_get(&process->pending, object))
		return 0;
	pending = malloc(sizeof(*pending));
	if (!pending || u64_map_put(&process->pending, object, pending)) {
		free(pending);
		return -ENOMEM;
	}
	pending->again = *again;
	pending->first = *first;
	pending->steps_since = 0;
	return 0;
}

int initialisation_observe(struct initialisation_tracker *tracker, const struct infer_event *event,
			   void **cached, initialisation_repeated_fn repeated, void *context)
{
	struct process_initialisations *process;
	struct infer_event *first;
	uint64_t object = 0, storage = 0;
	bool step = is_optimizer_step(event), parameter = false, initialisation = false;

	if (!step) {
		initialisation = is_initialisation(event, &object, &parameter);
		storage = parameter_storage(event);
		if (!initialisation && !storage)
			return 0;
	}
	process = u64_map_get_or_add_cached(&tracker->processes, process_key(event),
					    sizeof(*process), NULL, cached);
	if (!process)
		return -ENOMEM;
	if (step) {
		/* Training began: a later initialisation is a reset, not a repetition. */
		u64_map_free_with_values(&process->first);
		u64_map_init(&process->first);
		return forget_stale_repetitions(process) ? -ENOMEM : 0;
	}
	if (storage && parameter_seen(process, storage, repeated, context))
		return -ENOMEM;
	if (!initialisation)
		return 0;
	parameter = parameter || u64_map_get(&process->parameters, object);
	first = u64_map_get(&process->first, object);
	if (first && same_initialiser(first, event) &&
	    other_call_path(first->call_path, event->call_path)) {
		if (parameter)
			repeated(context, event, first);
		else if (hold_repetition(process, object, event, first))
			return -ENOMEM;
		return 0;
	}
	if (!first) {
		first = malloc(sizeof(*first));
		if (!first || u64_map_put(&process->first, object, first)) {
			free(first);
			return -ENOMEM;
		}
	}
	*first = *event;
	return 0;
}

/* The references' optimizer steps, and whether any initialisation was repeated. */
struct references {
	const struct infer_event **steps;
	size_t step_count;
	bool repeated;
};

static void note_repeated(void *context, const struct infer_event *again,
			  const struct infer_event *first)
{
	struct references *references = context;

	(void)again;
	(void)first;
	references->repeated = true;
}

int infer_initialised_once(struct rule_set *rules, const struct infer_event *events, size_t count,
			   const struct rule_evidence *evidence)
{
	const struct infer_event **order = malloc((count ? count : 1) * sizeof(*order));
	struct references references = { .steps = malloc((count ? count : 1) * sizeof(*order)) };
	struct rule rule = { .relation = RELATION_INITIALISED_ONCE };
	struct initialisation_tracker tracker;
	size_t wanted = 0;
	uint64_t object;
	bool ok = true, parameter;
	int failed = order && references.steps ? 0 : -ENOMEM;

	initialisation_tracker_init(&tracker);
	for (size_t i = 0; i < count && !failed; i++)
		if (is_optimizer_step(&events[i]) ||
		    is_initialisation(&events[i], &object, &parameter) ||
		    parameter_storage(&events[i]))
			order[wanted++] = &events[i];
	if (!failed)
		qsort(order, wanted, sizeof(*order), infer_event_order_by_process_step);
	for (size_t i = 0; i < wanted && !failed && !references.repeated; i++) {
		failed = initialisation_observe(&tracker, order[i], NULL, note_repeated,
						&references);
		if (is_optimizer_step(order[i]))
			references.steps[references.step_count++] = order[i];
	}
	/* A reference that initialises a parameter twice: no rule. */
	if (!failed && !references.repeated && references.step_count > 0 &&
	    references.step_count >= evidence->min_passing) {
		rule.event =
			(struct rule_descriptor){ INFER_EVENT_PYTHON,
						  string_pool_intern(rules->pool,
								     INITIALISED_ONCE_OPERATOR) };
		rule.passing = references.step_count;
		if (!rule.event.name)
			failed = -ENOMEM;
		else if (rule_support_judge(&rule, references.steps, references.step_count,
					    evidence, &ok))
			failed = rule_set_add(rules, &rule);
		else if (!ok)
			failed = -ENOMEM;
	}
	initialisation_tracker_free(&tracker);
	free((void *)references.steps);
	free((void *)order);
	return failed;
}
