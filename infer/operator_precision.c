// SPDX-License-Identifier: MIT
/* OnePrecision: in every step, each weight-reading forward operator computes in one dtype. */
#include "operator_precision.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"

/* The field naming the weight's dtype and sizes: "Float[40, 10]". */
#define WEIGHT_SHAPE_FIELD "shape:weight"
/* Whether it requires grad. */
#define WEIGHT_REQUIRES_GRAD_FIELD "requires_grad:weight"

/* One operator's calls in the step so far. */
struct operator_calls {
	const char *name;
	struct infer_event first; /* its first call */
	const char *precision;	  /* the shape whose dtype the first call computed in */
	struct infer_event stray; /* the first call computing in another dtype */
	bool strayed;
};

struct operator_precision_step {
	int32_t step;
	struct infer_event open; /* the last weight-reading call, perhaps autocast's wrapper */
	const char *open_precision;
	bool has_open;
	size_t name_count;
	struct operator_calls names[OPERATOR_PRECISION_NAMES_MAX];
};

void operator_precision_tracker_init(struct operator_precision_tracker *tracker,
				     struct string_pool *pool)
{
	u64_map_init(&tracker->processes);
	tracker->pool = pool;
}

void operator_precision_tracker_free(struct operator_precision_tracker *tracker)
{
	u64_map_free_with_values(&tracker->processes);
}

static const char *weight_shape(const struct infer_event *event)
{
	return infer_event_field(event, WEIGHT_SHAPE_FIELD);
}

bool operator_precision_wants(const struct infer_event *event)
{
	const char *shape;

	/* Without autograd: an evaluation or a teacher's forward, not the training computation. */
	if (!infer_event_is_operation(event) || !(shape = weight_shape(event)) ||
	    infer_event_read_without_grad(event))
		return false;
	return strchr(shape, '[') != NULL;
}

/*
 * The call autocast's kernel made on the cast weight, as the call that
 * computes: without its requires_grad, which is the copy's, not the
 * weight's. 0 or -ENOMEM.
 */
static int cast_call(struct string_pool *pool, const struct infer_event *event,
		     struct infer_event *out)
{
	struct infer_field fields[INFER_FIELDS_MAX];
	uint32_t count = 0;

	*out = *event;
	for (uint32_t i = 0; i < event->field_count && count < INFER_FIELDS_MAX; i++)
		if (strcmp(event->fields[i].name, WEIGHT_REQUIRES_GRAD_FIELD) != 0)
			fields[count++] = event->fields[i];
	if (count == event->field_count)
		return 0;
	out->fields = string_pool_intern_fields(pool, fields, count);
	out->field_count = count;
	return out->fields ? 0 : -ENOMEM;
}

/* "Float[40, 10]" and "BFloat16[40, 10]": the same sizes. */
static bool same_sizes(const char *left, const char *right)
{
	return strcmp(strchr(left, '['), strchr(right, '[')) == 0;
}

/* "Float[40, 10]" and "Float[3, 40]": the same dtype. */
static bool same_dtype(const char *left, const char *right)
{
	size_t length = (size_t)(strchr(left, '[') - left);

	return (size_t)(strchr(right, '[') - right) == length && strncmp(left, right, length) == 0;
}

/* The open call, its precision known now, counted for its operator. */
static void settle_open(struct operator_precision_step *state)
{
	struct operator_calls *calls = NULL;

	if (!state->has_open)
		return;
	state->has_open = false;
	for (size_t i = 0; i < state->name_count && !calls; i++)
		if (state->names[i].name == state->open.name)
			calls = &state->names[i];
	if (!calls) {
		if (state->name_count == OPERATOR_PRECISION_NAMES_MAX)
			return;
		calls = &state->names[state->name_count++];
		*calls = (struct operator_calls){ .name = state->open.name,
						  .first = state->open,
						  .precision = state->open_precision };
		return;
	}
	if (!calls->strayed && !same_dtype(calls->precision, state->open_precision)) {
		calls->stray = state->open;
		calls->strayed = true;
	}
}

/* Hands each operator of the step to 'example' and starts the next one. */
static int close_step(struct operator_precision_step *state, operator_precision_example_fn example,
		      void *context)
{
	int result = 0;

	settle_open(state);
	for (size_t i = 0; i < state->name_count && !result; i++) {
		struct operator_calls *calls = &state->names[i];

		result = example(context, &calls->first,
				 calls->strayed ? &calls->stray : &calls->first, !calls->strayed);
	}
	state->name_count = 0;
	return result;
}

static uint64_t process_key(const struct infer_event *event)
{
	return fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, event->pipeline), event->pid);
}

int operator_precision_observe(struct operator_precision_tracker *tracker,
			       const struct infer_event *event, void **cached,
			       operator_precision_example_fn example, void *context)
{
	struct operator_precision_step *state;
	const char *shape;
	int added, result = 0;

	if (!operator_precision_wants(event))
		return 0;
	shape = weight_shape(event);
	state = u64_map_get_or_add_cached(&tracker->processes, process_key(event), sizeof(*state),
					  &added, cached);
	if (!state)
		return -ENOMEM;
	if (added)
		state->step = event->step;
	if (event->step < state->step)
		return 0; /* a late record of a step already judged */
	if (event->step > state->step) {
		result = close_step(state, example, context);
		state->step = event->step;
	}
	/* Autocast's kernel calling the operator again on its cast arguments. */
	if (state->has_open && state->open.tid == event->tid && state->open.name == event->name &&
	    same_sizes(weight_shape(&state->open), shape)) {
		state->open_precision = shape;
		/* the call that computes, named in a finding */
		return result ? result : cast_call(tracker->pool, event, &state->open);
	}
	settle_open(state);
	state->open = *event;
	state->open_precision = shape;
	state->has_open = true;
	return result;
}

int operator_precision_finish(struct operator_precision_tracker *tracker,
			      operator_precision_example_fn example, void *context)
{
	uint64_t key;
	void *value;
	int result = 0;

	for (size_t i = 0; u64_map_next(&tracker->processes, &i, &key, &value) && !result;)
		result = close_step(value, example, context);
	return result;
}

/* The examples of every operator: one per process, step and operator. */
struct examples {
	const struct infer_event **passing;
	size_t passing_count, capacity;
	const char *failing_names[OPERATOR_PRECISION_NAMES_MAX * 4];
	size_t failing_name_count;
};

static int collect_example(void *context, const struct infer_event *first,
			   const struct infer_event *call, bool holds)
{
	struct examples *examples = context;
	struct infer_event *copy;

	if (!holds) {
		for (size_t i = 0; i < examples->failing_name_count; i++)
			if (examples->failing_names[i] == call->name)
				return 0;
		if (examples->failing_name_count <
		    sizeof(examples->failing_names) / sizeof(examples->failing_names[0]))
			examples->failing_names[examples->failing_name_count++] = call->name;
		return 0;
	}
	if (growable_array_room_for_one((void **)&examples->passing, examples->passing_count,
					&examples->capacity, sizeof(*examples->passing)))
		return -ENOMEM;
	copy = malloc(sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	*copy = *first;
	examples->passing[examples->passing_count++] = copy;
	return 0;
}

/* One rule about the operator 'name', unless a reference step ran it in two dtypes. */
static int emit(struct rule_set *rules, struct examples *examples, const char *name,
		const struct rule_evidence *evidence)
{
	struct rule rule = { .relation = RELATION_ONE_PRECISION };
	size_t passing = rule_support_select_name(examples->passing, examples->passing_count, name);
	bool ok = true;

	for (size_t i = 0; i < examples->failing_name_count; i++)
		if (examples->failing_names[i] == name)
			return 0;
	if (passing == 0 || passing < evidence->min_passing)
		return 0;
	rule.event = (struct rule_descriptor){ INFER_EVENT_PYTHON, name };
	rule.field = string_pool_intern(rules->pool, WEIGHT_SHAPE_FIELD);
	if (!rule.field)
		return -ENOMEM;
	if (!rule_support_judge(&rule, examples->passing, passing, evidence, &ok))
		return ok ? 0 : -ENOMEM;
	rule.passing = passing;
	return rule_set_add(rules, &rule);
}

int infer_operator_precision(struct rule_set *rules, const struct infer_event *events, size_t count,
			     const struct rule_evidence *evidence)
{
	const struct infer_event **order = malloc((count ? count : 1) * sizeof(*order));
	struct examples examples = { 0 };
	struct operator_precision_tracker tracker;
	const char *names[OPERATOR_PRECISION_NAMES_MAX * 4];
	size_t wanted = 0, name_count = 0;
	int failed = order ? 0 : -ENOMEM;

	operator_precision_tracker_init(&tracker, rules->pool);
	for (size_t i = 0; i < count && !failed; i++)
		if (operator_precision_wants(&events[i]))
			order[wanted++] = &events[i];
	if (!failed)
		qsort(order, wanted, sizeof(*order), infer_event_order_by_process_step);
	for (size_t i = 0; i < wanted && !failed; i++)
		failed = operator_precision_observe(&tracker, order[i], NULL, collect_example,
						    &examples);
	if (!failed)
		failed = operator_precision_finish(&tracker, collect_example, &examples);
	for (size_t i = 0; i < examples.passing_count && !failed; i++) {
		bool earlier = false;

		for (size_t j = 0; j < name_count && !earlier; j++)
			earlier = names[j] == examples.passing[i]->name;
		if (!earlier && name_count < sizeof(names) / sizeof(names[0]))
			names[name_count++] = examples.passing[i]->name;
	}
	for (size_t i = 0; i < name_count && !failed; i++)
		failed = emit(rules, &examples, names[i], evidence);
	operator_precision_tracker_free(&tracker);
	for (size_t i = 0; i < examples.passing_count; i++)
		free((void *)examples.passing[i]);
	free((void *)examples.passing);
	free(order);
	return failed;
}
