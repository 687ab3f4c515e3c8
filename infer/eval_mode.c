// SPDX-License-Identifier: MIT
/* EvalModeRespected: flagged operators (dropout) run as in evaluation in an evaluation phase. */
#include "eval_mode.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "model/trace_records.h"
#include "precondition.h"

/* A module call on a thread, from entry to exit. */
struct eval_mode_span {
	uint32_t tid;
	uint64_t entry_ns, exit_ns;
};

struct eval_mode_phase {
	struct infer_event calls[EVAL_MODE_PHASE_CALLS_MAX];
	size_t count;
	/* Module calls of submodules put back in train() (INFER_EVENT_OWN_TRAINING_MODE). */
	struct eval_mode_span trained_on_purpose[EVAL_MODE_PHASE_CALLS_MAX];
	size_t trained_on_purpose_count;
};

void eval_mode_tracker_init(struct eval_mode_tracker *tracker)
{
	u64_map_init(&tracker->processes);
}

void eval_mode_tracker_free(struct eval_mode_tracker *tracker)
{
	u64_map_free_with_values(&tracker->processes);
}

const char *eval_mode_flag_field(const struct infer_event *event)
{
	if (!infer_event_is_operation(event))
		return NULL;
	if (infer_event_field(event, EVAL_MODE_FLAG_FIELD))
		return EVAL_MODE_FLAG_FIELD;
	if (infer_event_field(event, EVAL_MODE_TRAINING_FIELD))
		return EVAL_MODE_TRAINING_FIELD;
	return NULL;
}

bool eval_mode_wants(const struct infer_event *event)
{
	return eval_mode_flag_field(event) != NULL;
}

/* What the tracker follows: flagged operator calls, and module calls in their own training mode. */
static bool eval_mode_follows(const struct infer_event *event)
{
	return eval_mode_wants(event) || (event->flags & INFER_EVENT_OWN_TRAINING_MODE);
}

/* Whether a flagged call ran inside a module its program put back in training mode. */
static bool ran_trained_on_purpose(const struct eval_mode_phase *phase,
				   const struct infer_event *call)
{
	for (size_t i = 0; i < phase->trained_on_purpose_count; i++) {
		const struct eval_mode_span *span = &phase->trained_on_purpose[i];

		if (span->tid == call->tid && call->entry_ns >= span->entry_ns &&
		    call->entry_ns <= span->exit_ns)
			return true;
	}
	return false;
}

static uint64_t process_key(const struct infer_event *event)
{
	return fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, event->pipeline), event->pid);
}

int eval_mode_observe(struct eval_mode_tracker *tracker, const struct infer_event *event,
		      void **cached, eval_mode_example_fn example, void *context)
{
	struct eval_mode_phase *phase;
	int result = 0;

	if (!eval_mode_follows(event))
		return 0;
	/* Made at the process's first followed call, whatever its stage: it holds no call yet. */
	phase = u64_map_get_or_add_cached(&tracker->processes, process_key(event), sizeof(*phase),
					  NULL, cached);
	if (!phase)
		return -ENOMEM;
	if (event->flags & INFER_EVENT_OWN_TRAINING_MODE) {
		if (event->stage == TRACE_STAGE_EVAL &&
		    phase->trained_on_purpose_count < EVAL_MODE_PHASE_CALLS_MAX)
			phase->trained_on_purpose[phase->trained_on_purpose_count++] =
				(struct eval_mode_span){ event->tid, event->entry_ns,
							 event->exit_ns };
		return 0;
	}
	if (event->stage == TRACE_STAGE_EVAL) {
		if (phase->count < EVAL_MODE_PHASE_CALLS_MAX)
			phase->calls[phase->count++] = *event;
		return 0;
	}
	if (event->stage != TRACE_STAGE_TRAIN)
		return 0;
	/*
	 * Training again: the calls kept were an evaluation phase's. One inside
	 * a module put back in train() on purpose (Monte Carlo dropout) is no
	 * example either way.
	 */
	for (size_t i = 0; i < phase->count && !result; i++)
		if (!ran_trained_on_purpose(phase, &phase->calls[i]))
			result = example(
				context, &phase->calls[i],
				strcmp(infer_event_field(&phase->calls[i],
							 eval_mode_flag_field(&phase->calls[i])),
				       "False") == 0);
	phase->count = 0;
	phase->trained_on_purpose_count = 0;
	return result;
}

/* The examples of every flagged operator, in the order found. */
struct examples {
	const struct infer_event **passing, **failing;
	size_t passing_count, failing_count;
	size_t passing_capacity, failing_capacity;
};

static int collect_example(void *context, const struct infer_event *call, bool holds)
{
	struct examples *examples = context;
	const struct infer_event ***list = holds ? &examples->passing : &examples->failing;
	size_t *count = holds ? &examples->passing_count : &examples->failing_count;
	size_t *capacity = holds ? &examples->passing_capacity : &examples->failing_capacity;
	struct infer_event *copy;

	if (growable_array_room_for_one((void **)list, *count, capacity, sizeof(**list)))
		return -ENOMEM;
	copy = malloc(sizeof(*copy));
	if (!copy)
		return -ENOMEM;
	*copy = *call;
	(*list)[(*count)++] = copy;
	return 0;
}

/* One rule about the operator 'name' from its examples; 0 or -ENOMEM. */
static int emit(struct rule_set *rules, struct examples *examples, const char *name,
		const struct rule_evidence *evidence)
{
	struct rule rule = { .relation = RELATION_EVAL_MODE_RESPECTED };
	size_t passing = rule_support_select_name(examples->passing, examples->passing_count, name);
	size_t failing = rule_support_select_name(examples->failing, examples->failing_count, name);
	bool ok = true;
	int found;

	if (passing == 0 || passing < evidence->min_passing)
		return 0;
	rule.event = (struct rule_descriptor){ INFER_EVENT_PYTHON, name };
	rule.field = string_pool_intern(rules->pool, eval_mode_flag_field(examples->passing[0]));
	if (!rule.field)
		return -ENOMEM;
	if (!rule_support_judge(&rule, examples->passing, passing, evidence, &ok))
		return ok ? 0 : -ENOMEM;
	found = precondition_deduce(rules->pool, examples->passing, passing, examples->failing,
				    failing, rule.field, &rule.precondition);
	if (found <= 0)
		return found < 0 ? -ENOMEM : 0;
	rule.passing = passing;
	rule.failing = failing;
	return rule_set_add(rules, &rule);
}

static void free_examples(struct examples *examples)
{
	for (size_t i = 0; i < examples->passing_count; i++)
		free((void *)examples->passing[i]);
	for (size_t i = 0; i < examples->failing_count; i++)
		free((void *)examples->failing[i]);
	free((void *)examples->passing);
	free((void *)examples->failing);
}

int infer_eval_mode(struct rule_set *rules, const struct infer_event *events, size_t count,
		    const struct rule_evidence *evidence)
{
	const struct infer_event **order = malloc((count ? count : 1) * sizeof(*order));
	struct examples examples = { 0 };
	struct eval_mode_tracker tracker;
	const char **names = NULL;
	size_t wanted = 0, name_count = 0;
	int failed = order ? 0 : -ENOMEM;

	eval_mode_tracker_init(&tracker);
	for (size_t i = 0; i < count && !failed; i++)
		if (eval_mode_follows(&events[i]))
			order[wanted++] = &events[i];
	if (!failed)
		qsort(order, wanted, sizeof(*order), infer_event_order_by_process_step);
	for (size_t i = 0; i < wanted && !failed; i++)
		failed = eval_mode_observe(&tracker, order[i], NULL, collect_example, &examples);
	/* One rule per operator: the names of the passing examples, each once. */
	names = malloc((examples.passing_count ? examples.passing_count : 1) * sizeof(*names));
	if (!failed && !names)
		failed = -ENOMEM;
	for (size_t i = 0; i < examples.passing_count && !failed; i++) {
		bool earlier = false;

		for (size_t j = 0; j < name_count && !earlier; j++)
			earlier = names[j] == examples.passing[i]->name;
		if (!earlier)
			names[name_count++] = examples.passing[i]->name;
	}
	for (size_t i = 0; i < name_count && !failed; i++)
		failed = emit(rules, &examples, names[i], evidence);
	free((void *)names);
	eval_mode_tracker_free(&tracker);
	free_examples(&examples);
	free(order);
	return failed;
}
