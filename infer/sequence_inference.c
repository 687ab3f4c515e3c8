// SPDX-License-Identifier: MIT
/* APISequence inferred: which calls every step of a process enters in the same order. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/u64_map.h"
#include "gradient_clearing.h"
#include "inference_engine.h"

/* Most distinct Python names ordered by APISequence. */
#define MAX_SEQUENCE_NAMES 64

/* The first event of each sequenced name in one (pid, step) segment. */
struct segment {
	const struct infer_event *first[MAX_SEQUENCE_NAMES];
};

/*
 * Whether name 'a' ranks before 'b' for APISequence: seen in more steps, or
 * as often and first by name, so that the choice does not depend on where
 * the strings happen to lie in memory.
 */
static bool sequence_name_before(const struct u64_map *steps_seen, const char *a, const char *b)
{
	uintptr_t steps_a = (uintptr_t)u64_map_get(steps_seen, (uintptr_t)a);
	uintptr_t steps_b = (uintptr_t)u64_map_get(steps_seen, (uintptr_t)b);

	return steps_a != steps_b ? steps_a > steps_b : strcmp(a, b) < 0;
}

/*
 * Whether APISequence orders an event: Python calls and torch scopes of
 * training (infer_event_in_training_order); torch operators only when one
 * program is given (called many times a step, in
 * the forward and the optimizer alike, their order is that program's
 * implementation, not something another program shares).
 */
static bool sequenced(const struct inference *inference, const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && infer_event_in_training_order(event) &&
	       (!(event->flags & TRACE_PYTHON_TORCH_OP) || inference->pipeline_count < 2);
}

/*
 * The Python names APISequence orders: those called in the most steps (at
 * least MIN_PASSING), so that one-off calls (imports) do not crowd them out.
 * 'order' is sorted by process and step.
 */
static int choose_sequence_names(const struct inference *inference,
				 const struct infer_event **order, size_t count, const char **names,
				 size_t *name_count)
{
	struct u64_map steps_seen, last_segment;
	uint64_t key;
	void *value;
	size_t segment = 0;

	u64_map_init(&steps_seen);
	u64_map_init(&last_segment);
	for (size_t i = 0; i < count; i++) {
		uintptr_t name = (uintptr_t)order[i]->name;

		segment += i > 0 && (order[i]->pid != order[i - 1]->pid ||
				     order[i]->step != order[i - 1]->step);
		if (!sequenced(inference, order[i]) || order[i]->step < 0)
			continue;
		/* Segment numbers are stored plus one: a map value is never NULL. */
		if ((uintptr_t)u64_map_get(&last_segment, name) == segment + 1)
			continue;
		if (u64_map_put(&last_segment, name, (void *)(segment + 1)) ||
		    u64_map_put(&steps_seen, name,
				(void *)((uintptr_t)u64_map_get(&steps_seen, name) + 1))) {
			u64_map_free(&steps_seen);
			u64_map_free(&last_segment);
			return -ENOMEM;
		}
	}
	*name_count = 0;
	for (size_t i = 0; u64_map_next(&steps_seen, &i, &key, &value);) {
		const char *name = (const char *)(uintptr_t)key;
		size_t at = *name_count;

		if ((uintptr_t)value < MIN_PASSING)
			continue;
		/* Keep the most frequent, ties by name: insertion into a sorted list. */
		if (at == MAX_SEQUENCE_NAMES) {
			if (!sequence_name_before(&steps_seen, name, names[at - 1]))
				continue;
			at--;
		} else {
			(*name_count)++;
		}
		while (at > 0 && sequence_name_before(&steps_seen, name, names[at - 1])) {
			names[at] = names[at - 1];
			at--;
		}
		names[at] = name;
	}
	u64_map_free(&steps_seen);
	u64_map_free(&last_segment);
	return 0;
}

int inference_sequences(struct inference *inference, const struct infer_event **order,
			const struct infer_event **passing, const struct infer_event **failing)
{
	const char *names[MAX_SEQUENCE_NAMES];
	size_t name_count = 0, segment_count = 0, start = 0, backward;
	struct segment *segments;
	int failed = 0;

	for (size_t i = 0; i < inference->count; i++)
		order[i] = &inference->events[i];
	qsort(order, inference->count, sizeof(*order), infer_event_order_by_process_step);
	for (size_t i = 0; i < inference->count; i++)
		segment_count += i == 0 || !inference_same_process_step(order[i], order[i - 1]);
	segments = calloc(segment_count ? segment_count : 1, sizeof(*segments));
	segment_count = 0;
	if (!segments)
		return -ENOMEM;
	if (choose_sequence_names(inference, order, inference->count, names, &name_count)) {
		free(segments);
		return -ENOMEM;
	}
	while (start < inference->count) {
		size_t end = start;

		while (end < inference->count &&
		       inference_same_process_step(order[end], order[start]))
			end++;
		if (infer_step_between_markers(order[start]->step)) {
			struct segment *segment = &segments[segment_count++];

			for (size_t i = start; i < end; i++) {
				size_t n = 0;

				if (!sequenced(inference, order[i]))
					continue;
				while (n < name_count && names[n] != order[i]->name)
					n++;
				if (n < name_count && !segment->first[n])
					segment->first[n] = order[i];
			}
		}
		start = end;
	}
	for (backward = 0; backward < name_count; backward++)
		if (strcmp(names[backward], BACKWARD_FAMILY) == 0)
			break;
	for (size_t a = 0; a < name_count && !failed; a++) {
		for (size_t b = 0; b < name_count && !failed; b++) {
			size_t passing_count = 0, failing_count = 0;
			bool before_backward = false;
			struct rule rule = { .relation = RELATION_API_SEQUENCE,
					     .event = { INFER_EVENT_PYTHON, names[b] },
					     .first = { INFER_EVENT_PYTHON, names[a] } };

			if (a == b)
				continue;
			for (size_t s = 0; s < segment_count; s++) {
				const struct infer_event *first_a = segments[s].first[a];
				const struct infer_event *first_b = segments[s].first[b];

				/* A process that never calls A says nothing of A's place. */
				if (!first_b ||
				    !process_uses_name(&inference->uses, first_b, names[a]))
					continue;
				if (first_a && first_a->entry_ns < first_b->entry_ns)
					passing[passing_count++] = first_b;
				else
					failing[failing_count++] = first_b;
				before_backward |= backward < name_count &&
						   gradient_clearing_runs_before(
							   first_b, segments[s].first[backward]);
			}
			/* An order seen in one step only (start-up, imports) is no per-step rule.
			 */
			if (gradient_clearing_excuses(names[a]) && before_backward)
				continue;
			if (inference_several_steps(passing, passing_count))
				failed = inference_emit(inference, &rule, passing, passing_count,
							failing, failing_count, NULL);
		}
	}
	free(segments);
	return failed;
}
