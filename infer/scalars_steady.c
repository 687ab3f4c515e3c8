// SPDX-License-Identifier: MIT
/* ScalarsSteady: the scalars an optimizer's updates apply, from one step to the next. */
#include "scalars_steady.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "parameter_updates.h"

#define UPDATED_FIELD "tensor:self"
#define SCALAR_PREFIX "arg:"

static bool is_scheduler_code(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON &&
	       !(event->flags & (TRACE_PYTHON_TORCH_OP | TRACE_PYTHON_TORCH_SCOPE)) &&
	       strncmp(event->name, SCALARS_STEADY_SCHEDULER_PREFIX,
		       strlen(SCALARS_STEADY_SCHEDULER_PREFIX)) == 0;
}

static bool is_update(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_OP) &&
	       infer_event_field(event, UPDATED_FIELD);
}

bool scalars_steady_wants(const struct infer_event *event)
{
	return parameter_updates_is_optimizer_step(event) || is_update(event) ||
	       is_scheduler_code(event);
}

static bool same_scalar(const struct applied_scalar *a, const struct applied_scalar *b)
{
	return strcmp(a->update.name, b->update.name) == 0 &&
	       strcmp(a->argument, b->argument) == 0 && strcmp(a->value, b->value) == 0;
}

static bool holds_scalar(const struct applied_scalar *scalars, size_t count,
			 const struct applied_scalar *wanted)
{
	for (size_t i = 0; i < count; i++)
		if (same_scalar(&scalars[i], wanted))
			return true;
	return false;
}

/* Adds each scalar argument of an update once; 0 or -ENOMEM. */
static int add_scalars(struct scalars_history *into, const struct infer_event *update)
{
	for (uint32_t i = 0; i < update->field_count; i++) {
		struct applied_scalar scalar = { .update = *update,
						 .argument = update->fields[i].name,
						 .value = update->fields[i].value };

		if (strncmp(scalar.argument, SCALAR_PREFIX, strlen(SCALAR_PREFIX)) != 0 ||
		    holds_scalar(into->scalars, into->count, &scalar))
			continue;
		if (growable_array_room_for_one((void **)&into->scalars, into->count,
						&into->capacity, sizeof(*into->scalars)))
			return -ENOMEM;
		into->scalars[into->count++] = scalar;
	}
	return 0;
}

/* Whether 'candidate' of the previous step is a value 'replacement' replaced. */
static bool replaced_by(const struct scalars_history *after, const struct applied_scalar *candidate,
			const struct applied_scalar *replacement, bool same_tensor)
{
	return strcmp(candidate->update.name, replacement->update.name) == 0 &&
	       strcmp(candidate->argument, replacement->argument) == 0 &&
	       !holds_scalar(after->scalars, after->count, candidate) &&
	       (!same_tensor || infer_event_tensor(&candidate->update, UPDATED_FIELD) ==
					infer_event_tensor(&replacement->update, UPDATED_FIELD));
}

/*
 * A value of an operator's argument the previous step applied and this one
 * replaced: 'after' applies a value 'before' lacks, and 'before' a value
 * of the same operator and argument that 'after' lacks. The value the same
 * tensor had is the one shown where there is one (the parameter's previous
 * rate, not a momentum buffer's factor a fresh optimizer has not applied yet).
 */
static bool find_replaced(const struct scalars_history *before, const struct scalars_history *after,
			  const struct applied_scalar **old, const struct applied_scalar **new)
{
	for (int same_tensor = 1; same_tensor >= 0; same_tensor--)
		for (size_t i = 0; i < after->count; i++) {
			if (holds_scalar(before->scalars, before->count, &after->scalars[i]))
				continue;
			for (size_t j = 0; j < before->count; j++)
				if (replaced_by(after, &before->scalars[j], &after->scalars[i],
						same_tensor)) {
					*old = &before->scalars[j];
					*new = &after->scalars[i];
					return true;
				}
		}
	return false;
}

int scalars_steady_judge(const struct infer_event *const *events, size_t count,
			 struct scalars_history *history, struct scalars_steady_finding *finding)
{
	struct scalars_history current = { .known = true };
	const struct applied_scalar *old = NULL, *new = NULL;
	bool scheduled = false, replaced;
	int failed = 0;

	memset(finding, 0, sizeof(*finding));
	finding->holds = true;
	for (size_t i = 0; i < count; i++) {
		if (parameter_updates_is_optimizer_step(events[i]) &&
		    (!finding->step || events[i]->entry_ns < finding->step->entry_ns))
			finding->step = events[i];
		scheduled |= is_scheduler_code(events[i]);
	}
	history->scheduled |= scheduled;
	if (!finding->step)
		return 0; /* no optimizer step: the previous one stays the one to compare with */
	for (size_t i = 0; i < count && !failed; i++)
		if (is_update(events[i]) && parameter_updates_step_around(events, count, events[i]))
			failed = add_scalars(&current, events[i]);
	if (failed) {
		scalars_history_free(&current);
		return failed;
	}
	current.scheduled = history->scheduled;
	replaced = history->known && find_replaced(history, &current, &old, &new);
	current.steady = history->known && !replaced;
	/*
	 * The program changed its own optimizer's scalars: its intent, no example,
	 * whether it set them or built a new optimizer with them (a rate decayed
	 * by rebuilding, fresh buffers each epoch). An optimizer a state was
	 * loaded into resumes (the first step after the load says so,
	 * optimizer_firsts.h): it goes on with the scalars it had. A step over
	 * parameters no step had changed is no example either: a new phase (the
	 * whole model fine-tuned after its head) brings scalars of its own.
	 */
	finding->applies = history->steady && !current.scheduled && current.count > 0 &&
			   (!replaced || (finding->step->flags & INFER_EVENT_AFTER_STATE_LOAD)) &&
			   !(finding->step->flags & INFER_EVENT_NEW_PARAMETERS);
	if (finding->applies && replaced) {
		finding->holds = false;
		finding->before = old->update;
		/* The update as the caller holds it, not the copy about to become history. */
		for (size_t i = 0; i < count && !finding->update; i++)
			if (events[i]->entry_ns == new->update.entry_ns &&
			    events[i]->tid == new->update.tid &&events[i]->name == new->update.name)
				finding->update = events[i];
	}
	scalars_history_free(history);
	*history = current;
	return 0;
}

void scalars_history_free(struct scalars_history *history)
{
	free(history->scalars);
	memset(history, 0, sizeof(*history));
}

bool scalars_steady_rule_applies(struct string_pool *pool, const struct rule *rule,
				 const struct infer_event *step)
{
	const char *implementation = infer_event_field(step, SCALARS_STEADY_FIELD);

	return rule->relation == RELATION_SCALARS_STEADY && rule->event.name == step->name &&
	       implementation && rule->value && strcmp(implementation, rule->value) == 0 &&
	       precondition_holds(pool, &rule->precondition, step);
}

/* The judged steps: each one's example and whether it held. */
struct judged_steps {
	const struct infer_event **steps;
	bool *held;
	size_t count;
};

static int judge_all(const struct infer_event **order, size_t count, struct judged_steps *judged)
{
	struct scalars_history history = { 0 };
	int failed = 0;

	for (size_t start = 0, end; start < count && !failed; start = end) {
		struct scalars_steady_finding finding;
		const struct infer_event *first = order[start];

		if (start > 0 && (first->pipeline != order[start - 1]->pipeline ||
				  first->pid != order[start - 1]->pid))
			scalars_history_free(&history);
		for (end = start; end < count && order[end]->pipeline == first->pipeline &&
				  order[end]->pid == first->pid && order[end]->step == first->step;
		     end++)
			;
		if (first->step < 0)
			continue;
		failed = scalars_steady_judge(order + start, end - start, &history, &finding);
		if (!failed && finding.applies) {
			judged->steps[judged->count] = finding.step;
			judged->held[judged->count++] = finding.holds;
		}
	}
	scalars_history_free(&history);
	return failed;
}

/* One rule for the steps of one implementation; 0 or -ENOMEM. */
static int emit_implementation(struct rule_set *rules, const struct judged_steps *judged,
			       const char *implementation, const struct rule_evidence *evidence,
			       const struct infer_event **passing,
			       const struct infer_event **failing)
{
	size_t passing_count = 0, failing_count = 0;
	struct rule rule = { .relation = RELATION_SCALARS_STEADY };
	const struct infer_event *first = NULL;
	bool ok = true, several_steps = false;
	int found;

	for (size_t i = 0; i < judged->count; i++) {
		if (infer_event_field(judged->steps[i], SCALARS_STEADY_FIELD) != implementation)
			continue;
		if (judged->held[i])
			passing[passing_count++] = judged->steps[i];
		else
			failing[failing_count++] = judged->steps[i];
		if (!first)
			first = judged->steps[i];
		several_steps |= judged->steps[i]->step != first->step;
	}
	if (passing_count == 0 || passing_count < evidence->min_passing || !several_steps)
		return 0;
	rule.event = (struct rule_descriptor){ INFER_EVENT_PYTHON, passing[0]->name };
	rule.field = string_pool_intern(rules->pool, SCALARS_STEADY_FIELD);
	rule.value = implementation;
	if (!rule.field)
		return -ENOMEM;
	if (!rule_support_judge(&rule, passing, passing_count, evidence, &ok))
		return ok ? 0 : -ENOMEM;
	found = precondition_deduce(rules->pool, passing, passing_count, failing, failing_count,
				    SCALARS_STEADY_FIELD, &rule.precondition);
	if (found <= 0)
		return found < 0 ? -ENOMEM : 0;
	rule.passing = passing_count;
	rule.failing = failing_count;
	return rule_set_add(rules, &rule);
}

int infer_scalars_steady(struct rule_set *rules, const struct infer_event *events, size_t count,
			 const struct rule_evidence *evidence)
{
	size_t size = (count ? count : 1) * sizeof(void *), wanted = 0;
	const struct infer_event **order = malloc(size);
	const struct infer_event **passing = malloc(size), **failing = malloc(size);
	struct judged_steps judged = { malloc(size), malloc(count ? count : 1), 0 };
	int failed = order && passing && failing && judged.steps && judged.held ? 0 : -ENOMEM;

	for (size_t i = 0; i < count && !failed; i++)
		if (scalars_steady_wants(&events[i]))
			order[wanted++] = &events[i];
	if (!failed) {
		qsort(order, wanted, sizeof(*order), infer_event_order_by_process_step);
		failed = judge_all(order, wanted, &judged);
	}
	/* Each implementation once, at its first judged step. */
	for (size_t i = 0; i < judged.count && !failed; i++) {
		const char *implementation =
			infer_event_field(judged.steps[i], SCALARS_STEADY_FIELD);
		bool seen = !implementation;

		for (size_t j = 0; j < i && !seen; j++)
			seen = infer_event_field(judged.steps[j], SCALARS_STEADY_FIELD) ==
			       implementation;
		if (!seen)
			failed = emit_implementation(rules, &judged, implementation, evidence,
						     passing, failing);
	}
	free(order);
	free(passing);
	free(failing);
	free(judged.steps);
	free(judged.held);
	return failed;
}
