// SPDX-License-Identifier: MIT
/* The relation engine: groups, counts and precondition search over collected events. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/u64_map.h"
#include "event_contain.h"
#include "inference.h"
#include "eval_mode.h"
#include "gradient_clearing.h"
#include "requires_grad_updates.h"
#include "parameter_updates.h"
#include "process_uses.h"
#include "rank_updates.h"
#include "scalars_steady.h"
#include "rule_support.h"

/* Least passing examples for an invariant to be emitted. */
#define MIN_PASSING 2
/* Most distinct values an argument may take to be tried as a constant. */
#define MAX_CONSTANT_VALUES 4
/* Most distinct Python names ordered by APISequence. */
#define MAX_SEQUENCE_NAMES 64

struct inference {
	struct rule_set *rules;
	struct infer_event *events;
	size_t count;
	size_t capacity;
	/* Python occurrence of each event within its (pid, name, step), for Consistent. */
	uint32_t *occurrence;
	uint32_t pipeline;	 /* of the events added next */
	uint32_t pipeline_count; /* pipelines given so far */
	struct process_uses uses;
	struct rule_evidence evidence;
};

struct inference *inference_new(struct rule_set *rules)
{
	struct inference *inference = calloc(1, sizeof(*inference));

	if (inference) {
		inference->rules = rules;
		process_uses_init(&inference->uses);
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
	if (inference->count == inference->capacity) {
		size_t capacity = inference->capacity ? inference->capacity * 2 : 4096;
		struct infer_event *events = realloc(inference->events, capacity * sizeof(*events));

		if (!events)
			return -ENOMEM;
		inference->events = events;
		inference->capacity = capacity;
	}
	inference->events[inference->count++] = event;
	return 0;
}

/* Sorting of event pointers; qsort has no context argument, hence a static. */
static const struct inference *sorting;

static int compare_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

static int compare_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

/* By name, then (NCCL) communicator and sequence, or (Python) step and occurrence. */
static int by_group(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order = compare_u64((uintptr_t)a->name, (uintptr_t)b->name);

	if (order)
		return order;
	if ((order = compare_u64(a->comm_id, b->comm_id)) || (order = compare_i64(a->seq, b->seq)))
		return order;
	if ((order = compare_i64(a->step, b->step)))
		return order;
	order = compare_u64(sorting->occurrence[a - sorting->events],
			    sorting->occurrence[b - sorting->events]);
	return order ? order : compare_i64(a->rank, b->rank);
}

static bool same_process_step(const struct infer_event *a, const struct infer_event *b)
{
	return a->pipeline == b->pipeline && a->pid == b->pid && a->step == b->step;
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

	if ((order = compare_u64(a->pid, b->pid)) || (order = compare_i64(a->step, b->step)) ||
	    (order = compare_u64((uintptr_t)a->name, (uintptr_t)b->name)))
		return order;
	return compare_u64(a->entry_ns, b->entry_ns);
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

/* Whether the examples come from two steps or more (unknown steps count as one). */
static int several_steps(const struct infer_event *const *examples, size_t count)
{
	for (size_t i = 1; i < count; i++)
		if (examples[i]->step != examples[0]->step)
			return 1;
	return 0;
}

/* Peers: for cross-rank relations, another event of each example's group, else NULL. */
static int emit_pairs(struct inference *inference, struct rule *rule,
		      const struct infer_event *const *passing,
		      const struct infer_event *const *passing_peers, size_t passing_count,
		      const struct infer_event *const *failing,
		      const struct infer_event *const *failing_peers, size_t failing_count,
		      const char *excluded)
{
	bool ok = true;
	int found;

	if (passing_count < MIN_PASSING)
		return 0;
	if (!rule_support_judge(rule, passing, passing_count, &inference->evidence, &ok))
		return ok ? 0 : -ENOMEM;
	found = precondition_deduce_pairs(inference->rules->pool, passing, passing_peers,
					  passing_count, failing, failing_peers, failing_count,
					  excluded, &rule->precondition);
	if (found < 0)
		return -ENOMEM;
	if (found == 0)
		return 0;
	rule->passing = passing_count;
	rule->failing = failing_count;
	return rule_set_add(inference->rules, rule);
}

static int emit(struct inference *inference, struct rule *rule,
		const struct infer_event *const *passing, size_t passing_count,
		const struct infer_event *const *failing, size_t failing_count,
		const char *excluded)
{
	return emit_pairs(inference, rule, passing, NULL, passing_count, failing, NULL,
			  failing_count, excluded);
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
	return emit_pairs(inference, &rule, passing, passing_peers, passing_count, failing,
			  failing_peers, failing_count, field);
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
	return first->kind == INFER_EVENT_PYTHON && strcmp(field, "raised") == 0 &&
	       passing_count > 0 && passing[0]->step <= 0 && !several_steps(passing, passing_count);
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
			failed = emit_pairs(inference, &rule, passing, passing_peers, passing_count,
					    failing, failing_peers, failing_count, field);
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
			int too_many = infer_field_describes_tensor(field);

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
						strcmp(field, "raised") == 0;
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
				failed = emit(inference, &rule, passing, passing_count, failing,
					      failing_count, field);
				if (failed)
					return failed;
			}
		}
		start = end;
	}
	return 0;
}

/* The first event of each sequenced name in one (pid, step) segment. */
struct segment {
	const struct infer_event *first[MAX_SEQUENCE_NAMES];
};

/*
 * The Python names APISequence orders: those called in the most steps (at
 * least MIN_PASSING), so that one-off calls (imports) do not crowd them out.
 * 'order' is sorted by process and step.
 */
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
 * Whether APISequence orders an event: Python calls and torch scopes; torch
 * operators only when one program is given (called many times a step, in
 * the forward and the optimizer alike, their order is that program's
 * implementation, not something another program shares).
 */
static bool sequenced(const struct inference *inference, const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON &&
	       (!(event->flags & TRACE_PYTHON_TORCH_OP) || inference->pipeline_count < 2);
}

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

/* APISequence: within every step of a process, A is entered before B. */
static int infer_sequences(struct inference *inference, const struct infer_event **order,
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
		segment_count += i == 0 || !same_process_step(order[i], order[i - 1]);
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

		while (end < inference->count && same_process_step(order[end], order[start]))
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
			if (several_steps(passing, passing_count))
				failed = emit(inference, &rule, passing, passing_count, failing,
					      failing_count, NULL);
		}
	}
	free(segments);
	return failed;
}

/*
 * ParametersUpdated: in each step of each process, the weights its forward
 * reads against what its optimizer step changes. 'order' is sorted by
 * process and step (infer_sequences leaves it so).
 */
static int infer_parameter_updates(struct inference *inference, const struct infer_event **order,
				   const struct infer_event **passing,
				   const struct infer_event **failing)
{
	struct rule rule = { .relation = RELATION_PARAMETERS_UPDATED,
			     .event = { INFER_EVENT_PYTHON,
					string_pool_intern(inference->rules->pool,
							   OPTIMIZER_STEP_FAMILY) } };
	const struct infer_event **wanted = malloc((inference->count + 1) * sizeof(*wanted));
	size_t passing_count = 0, failing_count = 0, start = 0;
	int failed = rule.event.name && wanted ? 0 : -ENOMEM;
	struct u64_map history; /* the weights the current process's steps changed */

	u64_map_init(&history);
	while (start < inference->count && !failed) {
		struct parameter_updates_finding finding;
		size_t end = start, count = 0;

		/* Steps come in order within a process; a new process starts a new history. */
		if (start > 0 && (order[start]->pipeline != order[start - 1]->pipeline ||
				  order[start]->pid != order[start - 1]->pid)) {
			u64_map_free(&history);
			u64_map_init(&history);
		}

		while (end < inference->count && same_process_step(order[end], order[start])) {
			if (parameter_updates_wants(order[end]))
				wanted[count++] = order[end];
			end++;
		}
		if (order[start]->step >= 0 && count > 0) {
			failed = parameter_updates_judge(wanted, count, &history, &finding);
			if (!failed && finding.applies) {
				if (finding.holds)
					passing[passing_count++] = finding.step;
				else
					failing[failing_count++] = finding.step;
			}
		}
		start = end;
	}
	if (!failed && several_steps(passing, passing_count))
		failed = emit(inference, &rule, passing, passing_count, failing, failing_count,
			      NULL);
	u64_map_free(&history);
	free(wanted);
	return failed;
}

/* By source, job size, step, then rank: the ranks of one step in a row. */
static int by_job_step(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order;

	if ((order = compare_u64(a->pipeline, b->pipeline)) ||
	    (order = compare_i64(a->nranks, b->nranks)) || (order = compare_i64(a->step, b->step)))
		return order;
	return compare_i64(a->rank, b->rank);
}

static bool same_job_step(const struct infer_event *a, const struct infer_event *b)
{
	return a->pipeline == b->pipeline && a->nranks == b->nranks && a->step == b->step;
}

/*
 * Consistent on the update operators of a step across the ranks of a job
 * (rank_updates.h): an example is a step every rank finished.
 */
static int infer_rank_updates(struct inference *inference, const struct infer_event **order,
			      const struct infer_event **passing,
			      const struct infer_event **failing)
{
	struct infer_event *steps = malloc((inference->count + 1) * sizeof(*steps));
	const struct infer_event **by_step = malloc((inference->count + 1) * sizeof(*by_step));
	const struct infer_event **peers = malloc((inference->count + 1) * sizeof(*peers));
	const struct infer_event **failing_peers = malloc((inference->count + 1) * sizeof(*peers));
	size_t step_count = 0, passing_count = 0, failing_count = 0;
	struct rank_updates updates;
	struct rule rule = { .relation = RELATION_CONSISTENT };
	int failed = rank_updates_init(&updates, inference->rules->pool);

	if (!steps || !by_step || !peers || !failing_peers)
		failed = -ENOMEM;
	for (size_t i = 0; i < inference->count; i++)
		order[i] = &inference->events[i];
	qsort(order, inference->count, sizeof(*order), infer_event_order_by_process_step);
	for (size_t i = 0; i < inference->count && !failed; i++) {
		int finished = rank_updates_observe(&updates, order[i], &steps[step_count]);

		if (finished < 0)
			failed = finished;
		else
			step_count += (size_t)finished;
	}
	for (size_t i = 0; i < step_count; i++)
		by_step[i] = &steps[i];
	if (!failed)
		qsort(by_step, step_count, sizeof(*by_step), by_job_step);
	for (size_t start = 0, end; start < step_count && !failed; start = end) {
		const struct infer_event *disagreeing = NULL;
		const char *first = infer_event_field(by_step[start], RANK_UPDATES_FIELD);
		bool sharded = false;

		for (end = start + 1;
		     end < step_count && same_job_step(by_step[start], by_step[end]); end++) {
			if (!disagreeing &&
			    infer_event_field(by_step[end], RANK_UPDATES_FIELD) != first)
				disagreeing = by_step[end];
			sharded |= rank_updates_other_shards(by_step[end], by_step[start]);
		}
		/* A rank's step is missing, or the ranks hold shards, not replicas: no example. */
		if (end - start != (size_t)by_step[start]->nranks || sharded)
			continue;
		if (disagreeing) {
			failing_peers[failing_count] = disagreeing;
			failing[failing_count++] = by_step[start];
		} else {
			peers[passing_count] = by_step[start + 1];
			passing[passing_count++] = by_step[start];
		}
	}
	if (!failed && step_count) {
		rule.event = (struct rule_descriptor){ INFER_EVENT_STEP, steps[0].name };
		rule.field = updates.field_name;
		failed = emit_pairs(inference, &rule, passing, peers, passing_count, failing,
				    failing_peers, failing_count, RANK_UPDATES_FIELD);
	}
	rank_updates_free(&updates);
	free(steps);
	free(by_step);
	free(peers);
	free(failing_peers);
	return failed;
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
			failed = infer_sequences(inference, order, passing, failing);
		if (!failed)
			failed = infer_parameter_updates(inference, order, passing, failing);
		if (!failed)
			failed = infer_rank_updates(inference, order, passing, failing);
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
			failed = rule_set_sort(inference->rules);
	}
	free(order);
	free(passing);
	free(failing);
	return failed;
}
