// SPDX-License-Identifier: MIT
/* The relation engine: groups, counts and precondition search over collected events. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/u64_map.h"
#include "event_contain.h"
#include "inference_engine.h"
#include "eval_mode.h"
#include "operator_precision.h"
#include "requires_grad_updates.h"
#include "process_uses.h"
#include "scalars_steady.h"
#include "rule_support.h"
#include "initialised_once.h"
#include "train_override.h"

/* Most distinct values an argument may take to be tried as a constant. */
#define MAX_CONSTANT_VALUES 4

struct inference *inference_new(struct rule_set *rules)
{
	struct inference *inference = calloc(1, sizeof(*inference));

	if (inference) {
		inference->rules = rules;
		process_uses_init(&inference->uses);
		optimizer_firsts_init(&inference->firsts);
	}
	return inference;
}

void inference_set_pipeline(struct inference *inference, uint32_t pipeline)
{
	inference->pipeline = pipeline;
}

void inference_free(struct inference *inference)
{
	if (!inference)
		return;
	free(inference->events);
	free(inference->occurrence);
	process_uses_free(&inference->uses);
	optimizer_firsts_free(&inference->firsts);
	free(inference);
}

size_t inference_event_count(const struct inference *inference)
{
	return inference->count;
}

int inference_add(struct inference *inference, const struct trace_record *record)
{
	struct infer_event event;
	int converted = infer_event_from_record(inference->rules->pool, record, &event);

	if (converted <= 0)
		return converted < 0 ? -ENOMEM : 0;
	event.pipeline = inference->pipeline;
	if (inference->pipeline >= inference->pipeline_count)
		inference->pipeline_count = inference->pipeline + 1;
	if (optimizer_firsts_observe(&inference->firsts, &event, NULL))
		return -ENOMEM;
	if (growable_array_room_for_one((void **)&inference->events, inference->count,
					&inference->capacity, sizeof(*inference->events)))
		return -ENOMEM;
	inference->events[inference->count++] = event;
	return 0;
}

/* Sorting of event pointers; qsort has no context argument, hence a static. */
static const struct inference *sorting;

/* By name, then (NCCL) communicator and sequence, or (Python) step and occurrence. */
static int by_group(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order = inference_compare_u64((uintptr_t)a->name, (uintptr_t)b->name);

	if (order)
		return order;
	if ((order = inference_compare_u64(a->comm_id, b->comm_id)) ||
	    (order = inference_compare_i64(a->seq, b->seq)))
		return order;
	if ((order = inference_compare_i64(a->step, b->step)))
		return order;
	order = inference_compare_u64(sorting->occurrence[a - sorting->events],
				      sorting->occurrence[b - sorting->events]);
	return order ? order : inference_compare_i64(a->rank, b->rank);
}

static int same_group(const struct inference *inference, const struct infer_event *a,
		      const struct infer_event *b)
{
	return a->name == b->name && a->comm_id == b->comm_id && a->seq == b->seq &&
	       a->step == b->step &&
	       inference->occurrence[a - inference->events] ==
		       inference->occurrence[b - inference->events];
}

/* By process, step, name, then entry time: occurrences in a row. */
static int by_process_step_name(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order;

	if ((order = inference_compare_u64(a->pid, b->pid)) ||
	    (order = inference_compare_i64(a->step, b->step)) ||
	    (order = inference_compare_u64((uintptr_t)a->name, (uintptr_t)b->name)))
		return order;
	return inference_compare_u64(a->entry_ns, b->entry_ns);
}

/* Whether an event takes part in a cross-rank group. */
static int groupable(const struct infer_event *event)
{
	if (event->kind == INFER_EVENT_NCCL)
		return event->comm_id != 0 && event->seq >= 0;
	return event->step >= 0 && event->rank >= 0;
}

/* Numbers each Python call within its (pid, name, step) by entry time. */
static int number_occurrences(struct inference *inference, const struct infer_event **order)
{
	inference->occurrence = calloc(inference->count ? inference->count : 1, sizeof(uint32_t));
	if (!inference->occurrence)
		return -ENOMEM;
	for (size_t i = 0; i < inference->count; i++)
		order[i] = &inference->events[i];
	qsort(order, inference->count, sizeof(*order), by_process_step_name);
	for (size_t i = 1; i < inference->count; i++) {
		const struct infer_event *event = order[i], *previous = order[i - 1];

		if (event->kind == INFER_EVENT_PYTHON && previous->pid == event->pid &&
		    previous->step == event->step && previous->name == event->name)
			inference->occurrence[event - inference->events] =
				inference->occurrence[previous - inference->events] + 1;
	}
	return 0;
}

/* Most members of a group compared pairwise for APIArg distinct. */
#define DISTINCT_GROUP_MAX 64

/*
 * APIArg distinct: a field differs between the events of every cross-rank
 * group (a data seed per rank). 'order' is grouped as for Consistent.
 */
static int infer_distinct(struct inference *inference, const struct infer_event **order,
			  size_t start, size_t end, const char *field,
			  const struct infer_event **passing,
			  const struct infer_event **passing_peers,
			  const struct infer_event **failing,
			  const struct infer_event **failing_peers)
{
	size_t passing_count = 0, failing_count = 0;
	struct rule rule = { .relation = RELATION_API_ARG,
			     .event = { order[start]->kind, order[start]->name },
			     .field = field,
			     .distinct = 1 };

	for (size_t g = start; g < end;) {
		size_t h = g + 1;
		const struct infer_event *repeated = NULL;

		while (h < end && same_group(inference, order[g], order[h]))
			h++;
		if (h - g < 2 || h - g > DISTINCT_GROUP_MAX || !groupable(order[g])) {
			g = h;
			continue;
		}
		for (size_t a = g; a < h && !repeated; a++)
			for (size_t b = a + 1; b < h && !repeated; b++)
				if (infer_event_field(order[a], field) ==
				    infer_event_field(order[b], field))
					repeated = order[b];
		if (repeated) {
			failing_peers[failing_count] = repeated;
			failing[failing_count++] = order[g];
		} else {
			passing_peers[passing_count] = order[g + 1];
			passing[passing_count++] = order[g];
		}
		g = h;
	}
	return inference_emit_pairs(inference, &rule, passing, passing_peers, passing_count,
				    failing, failing_peers, failing_count, field);
}

/* Consistent: each field of a name agrees within every cross-rank group. */
/*
 * Whether a Python call's outcome ("raised") agreed across ranks only at
 * start-up (step 0): whether a call that connects to the store or waits
 * for its peers leaves by an exception depends on which rank came first
 * (torch's rendezvous generator at 4 ranks), and says nothing of training.
 */
static bool start_up_outcome(const struct infer_event *first, const char *field,
			     const struct infer_event *const *passing, size_t passing_count)
{
	return first->kind == INFER_EVENT_PYTHON && strcmp(field, INFER_RAISED_FIELD) == 0 &&
	       passing_count > 0 && passing[0]->step <= 0 &&
	       !inference_several_steps(passing, passing_count);
}

static int infer_consistent(struct inference *inference, const struct infer_event **order,
			    const struct infer_event **passing, const struct infer_event **failing)
{
	size_t start = 0, size = (inference->count ? inference->count : 1) * sizeof(void *);
	const struct infer_event **passing_peers = malloc(size);
	const struct infer_event **failing_peers = malloc(size);
	int failed = 0;

	if (!passing_peers || !failing_peers) {
		free(passing_peers);
		free(failing_peers);
		return -ENOMEM;
	}

	for (size_t i = 0; i < inference->count; i++)
		order[i] = &inference->events[i];
	sorting = inference;
	qsort(order, inference->count, sizeof(*order), by_group);
	while (start < inference->count && !failed) {
		const struct infer_event *first = order[start];
		size_t end = start;

		while (end < inference->count && order[end]->name == first->name)
			end++;
		for (uint32_t f = 0; f < first->field_count && !failed; f++) {
			const char *field = first->fields[f].name;
			size_t passing_count = 0, failing_count = 0;
			struct rule rule = { .relation = RELATION_CONSISTENT,
					     .event = { first->kind, first->name },
					     .field = field };

			/* One communicator's ranks share its size; a tensor's address is no value.
			 */
			if (strcmp(field, "nranks") == 0 || infer_field_describes_tensor(field))
				continue;
			failed = infer_distinct(inference, order, start, end, field, passing,
						passing_peers, failing, failing_peers);
			for (size_t g = start; g < end && !failed;) {
				size_t h = g + 1;
				const struct infer_event *disagreeing = NULL;
				const char *value = infer_event_field(order[g], field);

				while (h < end && same_group(inference, order[g], order[h])) {
					if (!disagreeing &&
					    infer_event_field(order[h], field) != value)
						disagreeing = order[h];
					h++;
				}
				if (h - g >= 2 && groupable(order[g])) {
					if (!disagreeing) {
						passing_peers[passing_count] = order[g + 1];
						passing[passing_count++] = order[g];
					} else {
						failing_peers[failing_count] = disagreeing;
						failing[failing_count++] = order[g];
					}
				}
				g = h;
			}
			if (!failed && start_up_outcome(first, field, passing, passing_count))
				continue;
			failed = inference_emit_pairs(inference, &rule, passing, passing_peers,
						      passing_count, failing, failing_peers,
						      failing_count, field);
		}
		start = end;
	}
	free(passing_peers);
	free(failing_peers);
	return failed;
}

/* APIArg and APIOutput: a field that keeps one value (under a precondition). */
static int infer_constants(struct inference *inference, const struct infer_event **order,
			   const struct infer_event **passing, const struct infer_event **failing)
{
	size_t start = 0;

	while (start < inference->count) {
		const struct infer_event *first = order[start];
		size_t end = start;

		while (end < inference->count && order[end]->name == first->name)
			end++;
		for (uint32_t f = 0; f < first->field_count; f++) {
			const char *field = first->fields[f].name;
			const char *values[MAX_CONSTANT_VALUES];
			size_t value_count = 0, i;
			/*
			 * A tensor's description, the stage of a call that trains nothing,
			 * and whether a Python function raised (infer_constant_is_rule).
			 */
			int too_many = infer_field_describes_tensor(field) ||
				       (strcmp(field, INFER_STAGE_FIELD) == 0 &&
					!infer_name_trains(first->name)) ||
				       !infer_constant_is_rule(first, field);

			for (i = start; i < end && !too_many; i++) {
				const char *value = infer_event_field(order[i], field);
				size_t known = 0;

				while (known < value_count && values[known] != value)
					known++;
				if (known == value_count) {
					if (value_count == MAX_CONSTANT_VALUES)
						too_many = 1;
					else
						values[value_count++] = value;
				}
			}
			for (size_t v = 0; v < value_count && !too_many; v++) {
				size_t passing_count = 0, failing_count = 0;
				int is_output = strcmp(field, "result") == 0 ||
						strcmp(field, INFER_RAISED_FIELD) == 0;
				struct rule rule = {
					.relation =
						is_output ? RELATION_API_OUTPUT : RELATION_API_ARG,
					.event = { first->kind, first->name },
					.field = field,
					.value = values[v],
				};
				int failed;

				if (!values[v])
					continue;
				for (i = start; i < end; i++) {
					if (infer_event_field(order[i], field) == values[v])
						passing[passing_count++] = order[i];
					else
						failing[failing_count++] = order[i];
				}
				failed = inference_emit(inference, &rule, passing, passing_count,
							failing, failing_count, field);
				if (failed)
					return failed;
			}
		}
		start = end;
	}
	return 0;
}

int inference_run(struct inference *inference)
{
	size_t size = (inference->count ? inference->count : 1) * sizeof(void *);
	const struct infer_event **order = malloc(size);
	const struct infer_event **passing = malloc(size);
	const struct infer_event **failing = malloc(size);
	int failed = -ENOMEM;

	inference->evidence = (struct rule_evidence){
		.pipeline_count = inference->pipeline_count ? inference->pipeline_count : 1,
		.min_passing = MIN_PASSING,
	};
	for (size_t i = 0; i < inference->count && order; i++)
		if (process_uses_add(&inference->uses, &inference->events[i])) {
			free(order);
			order = NULL;
		}
	if (order && passing && failing) {
		failed = number_occurrences(inference, order);
		if (!failed)
			failed = infer_consistent(inference, order, passing, failing);
		/* infer_consistent leaves 'order' grouped by name, as constants need. */
		if (!failed)
			failed = infer_constants(inference, order, passing, failing);
		if (!failed)
			failed = inference_sequences(inference, order, passing, failing);
		if (!failed)
			failed = inference_parameter_updates(inference, order, passing, failing);
		if (!failed)
			failed = inference_rank_updates(inference, order, passing, failing);
		if (!failed)
			failed = infer_event_contain(inference->rules, inference->events,
						     inference->count, &inference->evidence);
		if (!failed)
			failed = infer_scalars_steady(inference->rules, inference->events,
						      inference->count, &inference->evidence);
		if (!failed)
			failed =
				infer_requires_grad_updates(inference->rules, inference->events,
							    inference->count, &inference->evidence);
		if (!failed)
			failed = infer_eval_mode(inference->rules, inference->events,
						 inference->count, &inference->evidence);
		if (!failed)
			failed = infer_operator_precision(inference->rules, inference->events,
							  inference->count, &inference->evidence);
		if (!failed)
			failed = infer_train_override(inference->rules, inference->events,
						      inference->count, &inference->evidence);
		if (!failed)
			failed = infer_initialised_once(inference->rules, inference->events,
							inference->count, &inference->evidence);
		if (!failed)
			failed = rule_set_sort(inference->rules);
	}
	free(order);
	free(passing);
	free(failing);
	return failed;
}
