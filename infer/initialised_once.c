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
#define UPDATED_REQUIRES_GRAD "requires_grad:self"

/* One process's parameters initialised since its last optimizer step. */
struct process_initialisations {
	struct u64_map first; /* tensor -> struct infer_event, its last initialisation */
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
		free(process);
	}
	u64_map_free(&tracker->processes);
}

const char *initialised_once_initialiser(const char *call_path, size_t *length)
{
	const char *frame = call_path;

	while (frame && *frame) {
		const char *end = strstr(frame, INFER_CALL_PATH_SEPARATOR);
		size_t size = end ? (size_t)(end - frame) : strlen(frame);

		if (strncmp(frame, TORCH_FRAME_PREFIX, strlen(TORCH_FRAME_PREFIX)) != 0) {
			*length = size;
			return frame;
		}
		frame = end ? end + strlen(INFER_CALL_PATH_SEPARATOR) : NULL;
	}
	*length = 0;
	return NULL;
}

/* A parameter overwritten by zero_, with the frames that called it. */
static bool is_initialisation(const struct infer_event *event, uint64_t *tensor)
{
	size_t length;

	if (event->kind != INFER_EVENT_PYTHON || !(event->flags & TRACE_PYTHON_TORCH_OP) ||
	    strcmp(event->name, INITIALISED_ONCE_OPERATOR) != 0 || !event->call_path ||
	    !*event->call_path || !infer_event_field_is_true(event, UPDATED_REQUIRES_GRAD) ||
	    !initialised_once_initialiser(event->call_path, &length))
		return false;
	*tensor = infer_event_tensor(event, UPDATED_TENSOR);
	return *tensor != 0;
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

static uint64_t process_key(const struct infer_event *event)
{
	return fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, event->pipeline), event->pid);
}

int initialisation_observe(struct initialisation_tracker *tracker, const struct infer_event *event,
			   void **cached, initialisation_repeated_fn repeated, void *context)
{
	struct process_initialisations *process;
	struct infer_event *first;
	uint64_t tensor = 0;
	bool step = is_optimizer_step(event);

	if (!step && !is_initialisation(event, &tensor))
		return 0;
	process = u64_map_get_or_add_cached(&tracker->processes, process_key(event),
					    sizeof(*process), NULL, cached);
	if (!process)
		return -ENOMEM;
	if (step) {
		/* Training began: a later initialisation is a reset, not a repetition. */
		u64_map_free_with_values(&process->first);
		u64_map_init(&process->first);
		return 0;
	}
	first = u64_map_get(&process->first, tensor);
	if (first && same_initialiser(first, event) && first->call_path != event->call_path) {
		repeated(context, event, first);
		return 0;
	}
	if (!first) {
		first = malloc(sizeof(*first));
		if (!first || u64_map_put(&process->first, tensor, first)) {
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
	uint64_t tensor;
	bool ok = true;
	int failed = order && references.steps ? 0 : -ENOMEM;

	initialisation_tracker_init(&tracker);
	for (size_t i = 0; i < count && !failed; i++)
		if (is_optimizer_step(&events[i]) || is_initialisation(&events[i], &tensor))
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
