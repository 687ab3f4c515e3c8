// SPDX-License-Identifier: MIT
/* EventContain checking: per-thread logs of operations, per-process step counts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/fnv_hash.h"
#include "base/u64_map.h"
#include "call_rhythm.h"
#include "contain_checker.h"
#include "event_contain.h"

/* Operations remembered per thread before the oldest are dropped. */
#define THREAD_LOG_MAX 8192
/* Children counted per step of a process. */
#define STEP_CHILDREN_MAX 64

struct logged_operation {
	const char *name;
	uint64_t entry_ns, exit_ns;
	int32_t step;
	bool torch_scope;
};

/* Recent operations of one thread whose names some scope rule counts. */
struct thread_log {
	struct logged_operation *entries;
	size_t count;
	size_t capacity;
	int32_t step; /* of the last operation logged */
};

/* The current step of one process and what ran in it. */
struct step_state {
	struct infer_event step; /* the synthetic parent */
	uint32_t child_count;
	const char *children[STEP_CHILDREN_MAX];
	uint32_t counts[STEP_CHILDREN_MAX];
	struct contain_last_call last[STEP_CHILDREN_MAX];
	uint32_t optimizer_steps; /* Optimizer.step#* scopes, nested ones once */
	struct contain_last_call last_optimizer_step;
};

struct contain_checker {
	struct rule_set *rules;
	/* (holder, rule) -> non-NULL once the holder's parent held the rule's child */
	struct u64_map contained;
	contain_violation_fn report;
	void *context;
	struct u64_map threads; /* tid -> struct thread_log */
	struct u64_map steps;	/* pid -> struct step_state */
	const char *step_name;
	int has_scope_rules, has_step_rules;
	const struct gradient_clearing *clearing;
	struct call_rhythm rhythm; /* whether each process holds a "used" child every step */
};

struct contain_checker *contain_checker_new(struct rule_set *rules, contain_violation_fn report,
					    void *context, const struct gradient_clearing *clearing)
{
	struct contain_checker *checker = calloc(1, sizeof(*checker));

	if (!checker)
		return NULL;
	checker->rules = rules;
	u64_map_init(&checker->contained);
	checker->report = report;
	checker->context = context;
	checker->clearing = clearing;
	call_rhythm_init(&checker->rhythm);
	checker->step_name = string_pool_intern(rules->pool, STEP_PARENT_NAME);
	u64_map_init(&checker->threads);
	u64_map_init(&checker->steps);
	for (size_t i = 0; i < rules->count; i++) {
		if (rules->rules[i].relation != RELATION_EVENT_CONTAIN)
			continue;
		if (rules->rules[i].event.kind == INFER_EVENT_STEP)
			checker->has_step_rules = 1;
		else
			checker->has_scope_rules = 1;
	}
	if (!checker->step_name) {
		free(checker);
		return NULL;
	}
	return checker;
}

static int counted_child(const struct contain_checker *checker, uint32_t parent_kind,
			 const char *name)
{
	for (size_t i = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule->relation == RELATION_EVENT_CONTAIN && rule->child.name == name &&
		    (rule->event.kind == INFER_EVENT_STEP) == (parent_kind == INFER_EVENT_STEP))
			return 1;
	}
	return 0;
}

/* Checks one parent against the rules about it, given how to count a child in it. */
static void check_parent(struct contain_checker *checker, const struct infer_event *parent,
			 uint32_t (*count_of)(const void *source, const char *child,
					      const struct infer_event *parent),
			 const void *source)
{
	for (size_t i = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];
		struct infer_event shown;
		uint64_t key;
		uint32_t count;
		char name[160], text[16];
		int violated;
		bool unused;

		if (rule->relation != RELATION_EVENT_CONTAIN || rule->event.name != parent->name ||
		    rule->event.kind != parent->kind)
			continue;
		if (!precondition_holds(checker->rules->pool, &rule->precondition, parent))
			continue;
		count = count_of(source, rule->child.name, parent);
		/*
		 * Gradients set to None by hand are cleared as zero_grad clears them;
		 * zero_grad called another number of times is still judged.
		 */
		if (!count && parent->kind == INFER_EVENT_STEP &&
		    gradient_clearing_excuses(rule->child.name) &&
		    gradient_clearing_fresh(checker->clearing, parent->pid, parent->step))
			continue;
		key = fnv1a_add_u64(event_contain_holder(parent), i);
		/* Out of memory: the rule waits a little longer for its process. */
		if (count && !u64_map_get(&checker->contained, key))
			(void)u64_map_put(&checker->contained, key, checker);
		/*
		 * A call only some programs make (a collective) is missed from a step
		 * only where the process kept a step's pace with it: parameters
		 * averaged every few steps (local SGD) are the program's own pace.
		 */
		if (rule->scope == RULE_SCOPE_USED && !rule->value &&
		    parent->kind == INFER_EVENT_STEP && u64_map_get(&checker->contained, key) &&
		    !call_rhythm_step_judged(&checker->rhythm, parent->pid, i, count > 0))
			continue;
		snprintf(text, sizeof(text), "%u", count);
		/*
		 * A step that holds zero_grad but cleared gradients no update had used
		 * (a skipped optimizer step) does not clear them as training asks.
		 */
		unused = !rule->value && parent->kind == INFER_EVENT_STEP && count &&
			 gradient_clearing_excuses(rule->child.name) &&
			 gradient_clearing_cleared_unused(checker->clearing, parent->pid,
							  parent->step);
		violated = rule->value
				   ? strcmp(rule->value, text) != 0 &&
					     event_contain_count_judged(parent, rule->child.name)
				   : count == 0 || unused;
		/* Scope "used": only once this process's parent has held the child. */
		if (!violated || !event_contain_judged(parent) ||
		    (rule->scope == RULE_SCOPE_USED && !u64_map_get(&checker->contained, key)))
			continue;
		/* The parent as reported, with what it held: "contains:CHILD" = count. */
		shown = *parent;
		snprintf(name, sizeof(name), "contains:%s", rule->child.name);
		if (shown.field_count < INFER_FIELDS_MAX) {
			struct infer_field fields[INFER_FIELDS_MAX];
			struct infer_field *field = &fields[shown.field_count];
			const struct infer_field *interned;
			uint32_t added = 1;

			if (parent->field_count)
				memcpy(fields, parent->fields,
				       parent->field_count * sizeof(fields[0]));
			field->name = string_pool_intern(checker->rules->pool, name);
			field->value = string_pool_intern(checker->rules->pool, text);
			if (unused && shown.field_count + 1 < INFER_FIELDS_MAX) {
				field[1].name = string_pool_intern(checker->rules->pool,
								   CONTAIN_CLEARED_UNUSED_FIELD);
				field[1].value = string_pool_intern(checker->rules->pool, "True");
				added += field[1].name && field[1].value;
			}
			interned = field->name && field->value
					   ? string_pool_intern_fields(checker->rules->pool, fields,
								       shown.field_count + added)
					   : NULL;
			if (interned) {
				shown.fields = interned;
				shown.field_count += added;
			}
		}
		if (checker->report)
			checker->report(checker->context, rule, &shown);
	}
}

static uint32_t count_in_log(const void *source, const char *child,
			     const struct infer_event *parent)
{
	const struct thread_log *log = source;
	struct contain_last_call last = { 0 };
	uint32_t count = 0;

	for (size_t i = 0; log && i < log->count; i++) {
		const struct logged_operation *entry = &log->entries[i];

		count += entry->name == child && entry->entry_ns >= parent->entry_ns &&
			 entry->entry_ns <= parent->exit_ns &&
			 !event_contain_nested_again(&last, 0, entry->entry_ns, entry->exit_ns,
						     entry->torch_scope);
	}
	return count;
}

static uint32_t count_in_step(const void *source, const char *child,
			      const struct infer_event *parent)
{
	const struct step_state *state = source;

	for (uint32_t i = 0; i < state->child_count; i++)
		if (state->children[i] == child)
			return state->counts[i];
	return 0;
}

static int log_operation(struct contain_checker *checker, const struct infer_event *event)
{
	int added;
	struct thread_log *log =
		u64_map_get_or_add(&checker->threads, event->tid, sizeof(*log), &added);
	size_t kept = 0;

	if (!log)
		return -ENOMEM;
	if (added)
		log->step = event->step;
	/* Operations two steps old belong to no scope still to come: dropped as a step begins. */
	if (event->step > log->step) {
		for (size_t i = 0; i < log->count; i++)
			if (log->entries[i].step >= event->step - 1)
				log->entries[kept++] = log->entries[i];
		log->count = kept;
		log->step = event->step;
	}
	if (log->count == THREAD_LOG_MAX) {
		memmove(log->entries, log->entries + THREAD_LOG_MAX / 2,
			(THREAD_LOG_MAX / 2) * sizeof(*log->entries));
		log->count = THREAD_LOG_MAX / 2;
	}
	if (growable_array_room_for_one((void **)&log->entries, log->count, &log->capacity,
					sizeof(*log->entries)))
		return -ENOMEM;
	log->entries[log->count++] =
		(struct logged_operation){ event->name, event->entry_ns, event->exit_ns,
					   event->step, event_contain_is_parent(event) != 0 };
	return 0;
}

/*
 * An optimizer step whose closure ran the optimizer's own scopes (their
 * records came before the step's, which ends after them): the step's
 * count of them is the closure's.
 */
static void note_closure(struct step_state *state, const struct infer_event *optimizer_step)
{
	for (uint32_t i = 0; i < state->child_count; i++) {
		const struct contain_last_call *last = &state->last[i];

		if (last->seen && event_contain_is_optimizer_scope(state->children[i]) &&
		    state->children[i] != optimizer_step->name &&
		    last->tid == optimizer_step->tid &&
		    last->entry_ns >= optimizer_step->entry_ns &&
		    last->exit_ns <= optimizer_step->exit_ns)
			state->step.flags |= EVENT_CONTAIN_OPTIMIZER_CLOSURE;
	}
}

static void close_step(struct contain_checker *checker, struct step_state *state)
{
	if (state->optimizer_steps > 1)
		state->step.flags |= EVENT_CONTAIN_SEVERAL_OPTIMIZERS;
	check_parent(checker, &state->step, count_in_step, state);
	state->step.flags &= ~(EVENT_CONTAIN_SEVERAL_OPTIMIZERS | EVENT_CONTAIN_OPTIMIZER_CLOSURE);
	state->child_count = 0;
	state->optimizer_steps = 0;
	state->last_optimizer_step = (struct contain_last_call){ 0 };
}

static int track_step(struct contain_checker *checker, const struct infer_event *event,
		      void **cached)
{
	struct step_state *state;
	int added;
	uint32_t i;

	if (event->step < 0)
		return 0;
	state = u64_map_get_or_add_cached(&checker->steps, event->pid, sizeof(*state), &added,
					  cached);
	if (!state)
		return -ENOMEM;
	if (added) {
		state->step.kind = INFER_EVENT_STEP;
		state->step.name = checker->step_name;
		state->step.pid = event->pid;
		state->step.rank = -1;
		state->step.nranks = -1;
		state->step.seq = -1;
		state->step.step = event->step;
		state->step.context = string_pool_intern(checker->rules->pool, "");
	}
	if (event->step > state->step.step) {
		close_step(checker, state);
		state->step.step = event->step;
	} else if (event->step < state->step.step) {
		return 0; /* a late record of a step already checked */
	}
	if (event->kind == INFER_EVENT_PYTHON && event->rank >= 0 && state->step.rank < 0) {
		state->step.rank = event->rank;
		state->step.nranks = event->nranks;
		state->step.stage = event->stage;
	}
	if (event_contain_is_parent(event) && strcmp(event->name, OPTIMIZER_STEP_FAMILY) == 0) {
		if (!event_contain_nested_again(&state->last_optimizer_step, event->tid,
						event->entry_ns, event->exit_ns, true))
			state->optimizer_steps++;
		note_closure(state, event);
	}
	if (!infer_event_is_operation(event) ||
	    !counted_child(checker, INFER_EVENT_STEP, event->name))
		return 0;
	for (i = 0; i < state->child_count; i++)
		if (state->children[i] == event->name)
			break;
	if (i == state->child_count) {
		if (i == STEP_CHILDREN_MAX)
			return 0;
		state->children[state->child_count] = event->name;
		state->last[state->child_count] = (struct contain_last_call){ 0 };
		state->counts[state->child_count++] = 0;
	}
	if (!event_contain_nested_again(&state->last[i], event->tid, event->entry_ns,
					event->exit_ns, event_contain_is_parent(event)))
		state->counts[i]++;
	return 0;
}

int contain_checker_observe(struct contain_checker *checker, const struct infer_event *event,
			    void **cached)
{
	if (checker->has_scope_rules) {
		if (event_contain_is_parent(event))
			check_parent(checker, event, count_in_log,
				     u64_map_get(&checker->threads, event->tid));
		if (infer_event_is_operation(event) &&
		    counted_child(checker, INFER_EVENT_PYTHON, event->name) &&
		    log_operation(checker, event))
			return -ENOMEM;
	}
	return checker->has_step_rules ? track_step(checker, event, cached) : 0;
}

void contain_checker_finish(struct contain_checker *checker)
{
	/*
	 * The step still open at the end never ended (teardown, or a detach in
	 * its middle): it is not checked, as inference leaves it out too.
	 */
	(void)checker;
}

void contain_checker_free(struct contain_checker *checker)
{
	uint64_t key;
	void *value;

	if (!checker)
		return;
	for (size_t i = 0; u64_map_next(&checker->threads, &i, &key, &value);) {
		struct thread_log *log = value;

		free(log->entries);
		free(log);
	}
	for (size_t i = 0; u64_map_next(&checker->steps, &i, &key, &value);)
		free(value);
	u64_map_free(&checker->threads);
	u64_map_free(&checker->steps);
	u64_map_free(&checker->contained);
	call_rhythm_free(&checker->rhythm);
	free(checker);
}
