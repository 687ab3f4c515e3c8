// SPDX-License-Identifier: MIT
/* The checking engine: cross-rank groups, constants and per-step order, incrementally. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/fnv_hash.h"
#include "base/u64_map.h"
#include "call_rhythm.h"
#include "contain_checker.h"
#include "eval_mode.h"
#include "gradient_clearing.h"
#include "model_calls.h"
#include "operator_precision.h"
#include "optimizer_firsts.h"
#include "optimizer_turns.h"
#include "requires_grad_updates.h"
#include "parameter_updates.h"
#include "process_uses.h"
#include "rank_updates.h"
#include "rule_checker.h"
#include "scalars_steady.h"
#include "initialised_once.h"
#include "train_override.h"

/* Python names remembered per process and step for APISequence. */
#define STEP_NAMES_MAX 128

/* The first event seen of a cross-rank group, and how many ranks joined it. */
struct group {
	struct infer_event first;
	uint32_t occurrence;
	uint32_t members;
	uint64_t reported;  /* bit per rule of this name (n-th): reported once */
	struct group *next; /* same hash */
};

/* What one process did in its current step. */
struct process_step {
	uint32_t pid;
	int32_t step;
	bool reads_weight; /* its training forward read a layer's weight (linear, conv...) */
	uint32_t name_count;
	struct infer_event first[STEP_NAMES_MAX];
	struct infer_event last[STEP_NAMES_MAX]; /* each name's last call in the step */
};

/*
 * A TrainableUpdated violation held until a later step shows whether it
 * trains the weights left, within OPTIMIZER_TURN_WINDOW steps: a GAN's first
 * critic steps read the generator, trained in its turn after them.
 */
struct held_violation {
	struct infer_event step, read;
	struct u64_map weights; /* read trainable, not changed yet (tensor -> non-NULL) */
};

#define HELD_VIOLATIONS_MAX OPTIMIZER_TURN_WINDOW

/* The events of one process's current step that the rules on updates judge. */
struct update_step {
	int32_t step;
	size_t count, capacity;
	struct infer_event *events;
	struct u64_map history;		/* the weights the process's earlier steps changed */
	struct scalars_history scalars; /* what its last optimizer step applied */
	struct optimizer_turns turns;	/* what its optimizers changed lately, turn by turn */
	struct held_violation held[HELD_VIOLATIONS_MAX]; /* oldest first */
	size_t held_count;
};

/*
 * A process the checker has seen (its trace and pid): each tracker's state
 * for it, kept here by the tracker the first time it takes an event of the
 * process (u64_map_get_or_add_cached), so that an event's process is looked
 * up once, here, and in no tracker's table.
 */
struct checked_process {
	uint32_t pid;
	bool python;	   /* it made Python calls */
	int32_t last_step; /* the latest step of its events: 0 until its step marker ends */
	void *step;	   /* struct process_step: APISequence */
	void *updates;	   /* struct update_step: the rules on updates */
	void *clearing;	   /* gradient_clearing's */
	void *eval_mode;   /* eval_mode's */
	void *precision;   /* operator_precision's */
	void *contain;	   /* contain_checker's step */
	void *firsts;	   /* optimizer_firsts' */
	void *initialised; /* initialised_once's */
	struct rank_updates_cache rank;
};

struct rule_checker {
	struct rule_set *rules;
	rule_violation_fn report;
	void *context;
	struct u64_map groups;	    /* key hash -> struct group list */
	struct u64_map occurrences; /* hash (pid, name, step) -> count + 1 */
	struct u64_map processes;   /* pid -> struct process_step */
	struct u64_map checked;	    /* (trace, pid) -> struct checked_process */
	struct contain_checker *contains;
	struct process_uses uses;	/* what each process has called so far */
	struct optimizer_firsts firsts; /* which optimizer steps are their optimizer's first */
	const char *stage_field;	/* interned INFER_STAGE_FIELD: see check_constants */
	struct call_rhythm rhythm;	/* whether each process makes a "used" call every step */
	/* steps that cleared their gradients without zero_grad */
	struct gradient_clearing clearing;
	/* pid -> struct update_step, with rules on what the optimizer's updates do */
	struct u64_map update_steps;
	int has_parameter_updates;
	int has_requires_grad_updates; /* FrozenUnchanged or TrainableUpdated rules */
	int has_scalars_steady;
	int has_eval_mode;
	struct eval_mode_tracker eval_mode; /* each process's evaluation phase so far */
	int has_operator_precision;
	int has_train_override;
	int has_initialised_once;
	struct initialisation_tracker initialisations; /* each process's since its last step */
	/* each process's step so far: the dtypes its weight-reading operators computed in */
	struct operator_precision_tracker operator_precision;
	int has_rank_updates;
	struct rank_updates rank_updates; /* each rank's step, with Consistent rules on "updates" */
	int has_module_call_sequences;	  /* an APISequence asks for a module call first */
	int has_operator_sequences; /* an APISequence names a torch operator (one program's rules)
				     */
	uint64_t violations;
	uint64_t notices;
	uint64_t events;
	int has_sequences;
};

static void contain_violation(void *context, const struct rule *rule,
			      const struct infer_event *parent);

struct rule_checker *rule_checker_new(struct rule_set *rules, rule_violation_fn report,
				      void *context)
{
	struct rule_checker *checker = calloc(1, sizeof(*checker));

	if (!checker)
		return NULL;
	checker->rules = rules;
	checker->report = report;
	checker->context = context;
	u64_map_init(&checker->groups);
	u64_map_init(&checker->occurrences);
	u64_map_init(&checker->processes);
	u64_map_init(&checker->checked);
	process_uses_init(&checker->uses);
	optimizer_firsts_init(&checker->firsts);
	call_rhythm_init(&checker->rhythm);
	u64_map_init(&checker->update_steps);
	eval_mode_tracker_init(&checker->eval_mode);
	operator_precision_tracker_init(&checker->operator_precision, rules->pool);
	gradient_clearing_init(&checker->clearing);
	initialisation_tracker_init(&checker->initialisations);
	for (size_t i = 0; i < rules->count; i++) {
		checker->has_sequences |= rules->rules[i].relation == RELATION_API_SEQUENCE;
		checker->has_module_call_sequences |=
			rules->rules[i].relation == RELATION_API_SEQUENCE &&
			model_calls_is_module_call(rules->rules[i].first.name);
		checker->has_operator_sequences |=
			rules->rules[i].relation == RELATION_API_SEQUENCE &&
			(strncmp(rules->rules[i].event.name, "aten::", 6) == 0 ||
			 strncmp(rules->rules[i].first.name, "aten::", 6) == 0);
		checker->has_parameter_updates |=
			rules->rules[i].relation == RELATION_PARAMETERS_UPDATED;
		checker->has_requires_grad_updates |=
			rules->rules[i].relation == RELATION_FROZEN_UNCHANGED ||
			rules->rules[i].relation == RELATION_TRAINABLE_UPDATED;
		checker->has_scalars_steady |= rules->rules[i].relation == RELATION_SCALARS_STEADY;
		checker->has_eval_mode |= rules->rules[i].relation == RELATION_EVAL_MODE_RESPECTED;
		checker->has_operator_precision |=
			rules->rules[i].relation == RELATION_ONE_PRECISION;
		checker->has_train_override |=
			rules->rules[i].relation == RELATION_TRAIN_OVERRIDE_RAN;
		checker->has_initialised_once |=
			rules->rules[i].relation == RELATION_INITIALISED_ONCE;
		checker->has_rank_updates |= rule_checks_rank_updates(&rules->rules[i]);
	}
	checker->stage_field = string_pool_intern(rules->pool, INFER_STAGE_FIELD);
	checker->contains =
		contain_checker_new(rules, contain_violation, checker, &checker->clearing);
	if (!checker->stage_field || !checker->contains ||
	    rank_updates_init(&checker->rank_updates, rules->pool)) {
		contain_checker_free(checker->contains);
		rank_updates_free(&checker->rank_updates);
		operator_precision_tracker_free(&checker->operator_precision);
		gradient_clearing_free(&checker->clearing);
		free(checker);
		return NULL;
	}
	return checker;
}

static void report_finding(struct rule_checker *checker, const struct rule *rule,
			   const struct infer_event *event, const struct infer_event *other,
			   bool notice)
{
	char text[RULE_TEXT_SIZE];
	struct rule_violation found = { .rule = rule,
					.rule_index = (size_t)(rule - checker->rules->rules),
					.text = text,
					.event = event,
					.other = other,
					.step = event->step,
					.notice = notice };

	rule_describe(rule, text, sizeof(text));
	if (notice)
		checker->notices++;
	else
		checker->violations++;
	if (checker->report)
		checker->report(&found, checker->context);
}

static void violation(struct rule_checker *checker, const struct rule *rule,
		      const struct infer_event *event, const struct infer_event *other)
{
	report_finding(checker, rule, event, other, false);
}

static void contain_violation(void *context, const struct rule *rule,
			      const struct infer_event *parent)
{
	violation(context, rule, parent, NULL);
}

/*
 * APIArg and APIOutput constants. One on the stage ("stage of
 * Optimizer.step#* is always train") is judged on a process only once the
 * process has made the call in that stage in a step after its first. A
 * program that trains in eval() from its first step (dropout off on purpose,
 * as RL fine-tuning does) chose it; one whose steps ran in train() and then
 * run in eval() never left an evaluation. The first step's calls before the
 * model's first forward read training mode whatever the model's (no module
 * call has said it yet), so they say nothing of it. A stage rule on a call
 * that does not train (infer_name_trains), and one on whether a Python
 * function raised (infer_constant_is_rule), from a rules file inferred
 * before infer stopped writing them, are not judged.
 */
static int check_constants(struct rule_checker *checker, const struct infer_event *event)
{
	for (size_t i = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];
		bool on_stage = rule->field == checker->stage_field;

		if ((rule->relation != RELATION_API_ARG && rule->relation != RELATION_API_OUTPUT) ||
		    rule->distinct || rule->event.name != event->name ||
		    (on_stage && !infer_name_trains(rule->event.name)) ||
		    !infer_constant_is_rule(event, rule->field))
			continue;
		if (infer_event_field(event, rule->field) == rule->value) {
			if (on_stage && event->step > 0 &&
			    process_uses_add_value(&checker->uses, event, rule->field))
				return -ENOMEM;
		} else if (precondition_holds(checker->rules->pool, &rule->precondition, event) &&
			   (!on_stage ||
			    process_uses_value(&checker->uses, event, rule->field, rule->value))) {
			violation(checker, rule, event, NULL);
		}
	}
	return 0;
}

/* An operator call of an evaluation phase the process has left for training again. */
static int judge_eval_mode(void *context, const struct infer_event *call, bool holds)
{
	struct rule_checker *checker = context;

	for (size_t i = 0; i < checker->rules->count && !holds; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule->relation == RELATION_EVAL_MODE_RESPECTED &&
		    rule->event.name == call->name &&
		    precondition_holds(checker->rules->pool, &rule->precondition, call)) {
			violation(checker, rule, call, NULL);
			return 1; /* one finding per evaluation phase */
		}
	}
	return 0;
}

/* An operator's calls in one step of a process: a call in another dtype than its first. */
static int judge_operator_precision(void *context, const struct infer_event *first,
				    const struct infer_event *call, bool holds)
{
	struct rule_checker *checker = context;

	for (size_t i = 0; i < checker->rules->count && !holds; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule->relation == RELATION_ONE_PRECISION && rule->event.name == call->name &&
		    precondition_holds(checker->rules->pool, &rule->precondition, call))
			violation(checker, rule, call, first);
	}
	return 0;
}

/* A module call in training whose class's train() override has not run for it. */
static void check_train_override(struct rule_checker *checker, const struct infer_event *event)
{
	if (!train_override_wants(event) || train_override_holds(event))
		return;
	for (size_t i = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule->relation == RELATION_TRAIN_OVERRIDE_RAN &&
		    rule->event.name == event->name &&
		    precondition_holds(checker->rules->pool, &rule->precondition, event))
			violation(checker, rule, event, NULL);
	}
}

/* A parameter set again by the initialiser that set it, along another call path. */
static void judge_initialisation(void *context, const struct infer_event *again,
				 const struct infer_event *first)
{
	struct rule_checker *checker = context;

	for (size_t i = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule->relation == RELATION_INITIALISED_ONCE &&
		    rule->event.name == again->name &&
		    precondition_holds(checker->rules->pool, &rule->precondition, again))
			violation(checker, rule, again, first);
	}
}

/* The rules checked over cross-rank groups: Consistent, and APIArg distinct. */
static int group_rule(const struct rule *rule)
{
	return rule->relation == RELATION_CONSISTENT ||
	       (rule->relation == RELATION_API_ARG && rule->distinct);
}

static int same_group(const struct infer_event *a, const struct infer_event *b,
		      uint32_t occurrence_a, uint32_t occurrence_b)
{
	return a->name == b->name && a->comm_id == b->comm_id && a->seq == b->seq &&
	       a->step == b->step && occurrence_a == occurrence_b;
}

/* Drops a group every rank has joined. */
static void forget_group(struct rule_checker *checker, uint64_t key, struct group *head,
			 struct group *group)
{
	if (group == head) {
		if (group->next)
			u64_map_put(&checker->groups, key, group->next);
		else
			u64_map_remove(&checker->groups, key);
	} else {
		struct group *previous = head;

		while (previous->next != group)
			previous = previous->next;
		previous->next = group->next;
	}
	free(group);
}

static int check_consistent(struct rule_checker *checker, const struct infer_event *event)
{
	uint32_t occurrence = 0;
	uint64_t key;
	struct group *group, *head;
	int wanted = 0;

	for (size_t i = 0; i < checker->rules->count && !wanted; i++)
		wanted = group_rule(&checker->rules->rules[i]) &&
			 checker->rules->rules[i].event.kind == event->kind &&
			 checker->rules->rules[i].event.name == event->name;
	if (!wanted)
		return 0;
	if (event->kind == INFER_EVENT_NCCL) {
		if (!event->comm_id || event->seq < 0)
			return 0;
	} else {
		uint64_t occurrence_key;
		uintptr_t count;

		if (event->step < 0 || event->rank < 0)
			return 0;
		occurrence_key = fnv1a_add_u64(
			fnv1a_add_u64(fnv1a_add_u64(7, event->pid), (uintptr_t)event->name),
			(uint64_t)(int64_t)event->step);
		count = (uintptr_t)u64_map_get(&checker->occurrences, occurrence_key);
		occurrence = (uint32_t)count;
		if (u64_map_put(&checker->occurrences, occurrence_key, (void *)(count + 1)))
			return -ENOMEM;
	}
	key = fnv1a_add_u64(fnv1a_add_u64(fnv1a_add_u64(fnv1a_add_u64(11, (uintptr_t)event->name),
							event->comm_id),
					  (uint64_t)event->seq),
			    fnv1a_add_u64((uint64_t)(int64_t)event->step, occurrence));
	head = u64_map_get(&checker->groups, key);
	for (group = head; group; group = group->next)
		if (same_group(&group->first, event, group->occurrence, occurrence))
			break;
	if (!group) {
		group = calloc(1, sizeof(*group));
		if (!group)
			return -ENOMEM;
		group->first = *event;
		group->occurrence = occurrence;
		group->members = 1;
		group->next = head;
		return u64_map_put(&checker->groups, key, group);
	}
	group->members++;
	for (size_t i = 0, nth = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];
		uint64_t bit;

		if (!group_rule(rule) || rule->event.kind != event->kind ||
		    rule->event.name != event->name)
			continue;
		bit = 1ULL << (nth++ % 64);
		if (group->reported & bit)
			continue;
		/* Consistent: differs from the first; distinct: repeats it. */
		if ((infer_event_field(event, rule->field) !=
		     infer_event_field(&group->first, rule->field)) ==
			    (rule->relation == RELATION_CONSISTENT) &&
		    precondition_holds_pair(checker->rules->pool, &rule->precondition,
					    &group->first, event)) {
			group->reported |= bit;
			violation(checker, rule, event, &group->first);
		}
	}
	if (event->nranks > 0 && group->members >= (uint32_t)event->nranks)
		forget_group(checker, key, head, group);
	return 0;
}

/* Checks the order rules on a finished step of one process. */
static void close_step(struct rule_checker *checker, struct process_step *state)
{
	for (size_t i = 0; i < checker->rules->count && infer_step_between_markers(state->step);
	     i++) {
		const struct rule *rule = &checker->rules->rules[i];
		const struct infer_event *first_a = NULL, *first_b = NULL, *last_b = NULL;

		if (rule->relation != RELATION_API_SEQUENCE)
			continue;
		for (uint32_t n = 0; n < state->name_count; n++) {
			if (state->first[n].name == rule->first.name)
				first_a = &state->first[n];
			if (state->first[n].name == rule->event.name) {
				first_b = &state->first[n];
				last_b = &state->last[n];
			}
		}
		/* Gradients set to None by hand are cleared as a zero_grad not called would. */
		if (!first_b ||
		    (!first_a && gradient_clearing_excuses(rule->first.name) &&
		     gradient_clearing_fresh(&checker->clearing, state->pid, state->step)) ||
		    (rule_used_name(rule) &&
		     !process_uses_name(&checker->uses, first_b, rule_used_name(rule))) ||
		    !precondition_holds(checker->rules->pool, &rule->precondition, first_b))
			continue;
		/*
		 * Module calls are how a program builds its forward, not what training
		 * asks: a step is asked for one only in a process that makes them and
		 * only when its forward reads a layer's weight. A step of raw tensors
		 * (a factorisation's, SAC's temperature's) makes none.
		 */
		if (!first_a && model_calls_is_module_call(rule->first.name) &&
		    (!state->reads_weight ||
		     !process_uses_name(&checker->uses, first_b, rule->first.name)))
			continue;
		/* A call only some programs make is missed only where it kept a step's pace. */
		if (rule_used_name(rule) &&
		    !call_rhythm_step_judged(&checker->rhythm, state->pid, i, first_a != NULL))
			continue;
		/*
		 * A comes before the last B of the step: a backward for the input's
		 * gradient before zero_grad and the training backward (adversarial
		 * training, SAM) has its gradients cleared in time.
		 */
		if (!first_a ||
		    (first_a->entry_ns > last_b->entry_ns &&
		     /* the closure optimizer.step(closure) calls: nesting says nothing of order */
		     !infer_event_runs_inside(first_a, first_b) &&
		     !infer_event_runs_inside(first_a, last_b)))
			violation(checker, rule, first_b, first_a);
	}
	state->name_count = 0;
	state->reads_weight = false;
}

static int track_step(struct rule_checker *checker, const struct infer_event *event,
		      struct checked_process *process)
{
	bool is_operator = event->flags & TRACE_PYTHON_TORCH_OP;
	bool reads_weight =
		checker->has_module_call_sequences && model_calls_weight_read(event) != 0;
	struct process_step *state;
	int added;
	uint32_t n;

	if (!checker->has_sequences || event->kind != INFER_EVENT_PYTHON ||
	    (is_operator && !checker->has_operator_sequences && !reads_weight) || event->step < 0)
		return 0;
	state = u64_map_get_or_add_cached(&checker->processes, event->pid, sizeof(*state), &added,
					  &process->step);
	if (!state)
		return -ENOMEM;
	if (added) {
		state->pid = event->pid;
		state->step = event->step;
	}
	if (event->step > state->step) {
		close_step(checker, state);
		state->step = event->step;
	} else if (event->step < state->step) {
		return 0; /* a late record of a step already checked */
	}
	if (!infer_event_in_training_order(event))
		return 0;
	state->reads_weight |= reads_weight;
	if (is_operator && !checker->has_operator_sequences)
		return 0;
	for (n = 0; n < state->name_count; n++)
		if (state->first[n].name == event->name)
			break;
	if (n == state->name_count) {
		if (n == STEP_NAMES_MAX)
			return 0;
		state->first[n] = *event;
		state->last[state->name_count++] = *event;
	} else if (event->entry_ns < state->first[n].entry_ns) {
		state->first[n] = *event;
	} else if (event->entry_ns > state->last[n].entry_ns) {
		state->last[n] = *event;
	}
	return 0;
}

/* Judges a finished step of one process against the ParametersUpdated rules. */
static int judge_parameter_updates(struct rule_checker *checker, struct update_step *state,
				   const struct infer_event *const *events,
				   const struct u64_map *other_turn)
{
	struct parameter_updates_finding finding;
	int failed = parameter_updates_judge(events, state->count, &state->history, other_turn,
					     &finding);

	for (size_t i = 0;
	     i < checker->rules->count && !failed && (!finding.holds || finding.frozen); i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule->relation != RELATION_PARAMETERS_UPDATED ||
		    rule->event.name != finding.step->name ||
		    !precondition_holds(checker->rules->pool, &rule->precondition, finding.step))
			continue;
		if (!finding.holds)
			violation(checker, rule, finding.read, finding.update);
		else
			report_finding(checker, rule, finding.frozen, NULL, true);
	}
	return failed;
}

/* A step's FrozenUnchanged or TrainableUpdated violation, against the rules on its step. */
static void requires_grad_violation(struct rule_checker *checker, uint32_t relation,
				    const struct infer_event *step, const struct infer_event *event,
				    const struct infer_event *other)
{
	for (size_t i = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule->relation == relation && rule->event.name == step->name &&
		    precondition_holds(checker->rules->pool, &rule->precondition, step))
			violation(checker, rule, event, other);
	}
}

/*
 * The TrainableUpdated violations held, once 'turn' (NULL: no step comes
 * after) is known: a weight it changed was trained in its turn; a violation
 * with weights left is said once its window has passed.
 */
static void settle_held_violations(struct rule_checker *checker, struct update_step *state,
				   const struct optimizer_turn *turn)
{
	size_t kept = 0;
	uint64_t tensor;
	void *shape;

	for (size_t h = 0; h < state->held_count; h++) {
		struct held_violation *held = &state->held[h];

		for (size_t i = 0; turn && u64_map_next(&turn->changed, &i, &tensor, &shape);)
			u64_map_remove(&held->weights, tensor);
		if (held->weights.count && turn &&
		    turn->step - held->step.step < OPTIMIZER_TURN_WINDOW) {
			state->held[kept++] = *held;
			continue;
		}
		if (held->weights.count)
			requires_grad_violation(checker, RELATION_TRAINABLE_UPDATED, &held->step,
						&held->read, NULL);
		u64_map_free(&held->weights);
	}
	state->held_count = kept;
}

/* Holds a step's TrainableUpdated violation ('weights' moved), saying the oldest if full. */
static void hold_violation(struct rule_checker *checker, struct update_step *state,
			   const struct infer_event *step, const struct infer_event *read,
			   struct u64_map *weights)
{
	struct held_violation *held;

	if (state->held_count == HELD_VIOLATIONS_MAX) {
		held = &state->held[0];
		requires_grad_violation(checker, RELATION_TRAINABLE_UPDATED, &held->step,
					&held->read, NULL);
		u64_map_free(&held->weights);
		memmove(&state->held[0], &state->held[1],
			--state->held_count * sizeof(state->held[0]));
	}
	held = &state->held[state->held_count++];
	held->step = *step;
	held->read = *read;
	held->weights = *weights;
	u64_map_init(weights);
}

/* Judges a finished step of one process against the FrozenUnchanged and TrainableUpdated rules. */
static int judge_requires_grad_updates(struct rule_checker *checker, struct update_step *state,
				       const struct infer_event *const *events,
				       const struct u64_map *other_turn)
{
	struct requires_grad_finding finding;
	struct u64_map unchanged;
	int failed;

	u64_map_init(&unchanged);
	failed =
		requires_grad_updates_judge(events, state->count, other_turn, &unchanged, &finding);
	if (!failed && !finding.frozen_holds)
		requires_grad_violation(checker, RELATION_FROZEN_UNCHANGED, finding.step,
					finding.frozen_update, finding.frozen_read);
	if (!failed && !finding.trainable_holds)
		hold_violation(checker, state, finding.step, finding.trainable_read, &unchanged);
	u64_map_free(&unchanged);
	return failed;
}

/* Judges a finished step of one process against the ScalarsSteady rules. */
static int judge_scalars_steady(struct rule_checker *checker, struct update_step *state,
				const struct infer_event *const *events)
{
	struct scalars_steady_finding finding;
	int failed = scalars_steady_judge(events, state->count, &state->scalars, &finding);

	for (size_t i = 0; i < checker->rules->count && !failed && !finding.holds; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (scalars_steady_rule_applies(checker->rules->pool, rule, finding.step))
			violation(checker, rule, finding.update, &finding.before);
	}
	return failed;
}

/* Judges a finished step of one process against the rules on what its updates do. */
static int close_update_step(struct rule_checker *checker, struct update_step *state)
{
	const struct infer_event **events = malloc((state->count + 1) * sizeof(*events));
	const struct u64_map *other_turn = NULL;
	struct optimizer_turn turn;
	struct u64_map others;
	int failed;

	optimizer_turn_init(&turn, state->step);
	u64_map_init(&others);
	if (!events)
		return -ENOMEM;
	for (size_t i = 0; i < state->count; i++)
		events[i] = &state->events[i];
	failed = optimizer_turn_collect(&turn, events, state->count);
	settle_held_violations(checker, state, failed ? NULL : &turn);
	if (!failed)
		failed = optimizer_turns_others(&state->turns, &turn, &others);
	if (!failed && others.count)
		other_turn = &others;
	if (!failed && checker->has_parameter_updates)
		failed = judge_parameter_updates(checker, state, events, other_turn);
	if (!failed && checker->has_requires_grad_updates)
		failed = judge_requires_grad_updates(checker, state, events, other_turn);
	if (!failed && checker->has_scalars_steady)
		failed = judge_scalars_steady(checker, state, events);
	optimizer_turns_keep(&state->turns, &turn);
	optimizer_turn_free(&turn);
	u64_map_free(&others);
	free(events);
	state->count = 0;
	return failed;
}

static int track_update_step(struct rule_checker *checker, const struct infer_event *event,
			     struct checked_process *process)
{
	struct update_step *state;
	int added;

	if (event->step < 0 ||
	    !((checker->has_parameter_updates && parameter_updates_wants(event)) ||
	      (checker->has_requires_grad_updates && requires_grad_updates_wants(event)) ||
	      (checker->has_scalars_steady && scalars_steady_wants(event))))
		return 0;
	state = u64_map_get_or_add_cached(&checker->update_steps, event->pid, sizeof(*state),
					  &added, &process->updates);
	if (!state)
		return -ENOMEM;
	if (added) {
		u64_map_init(&state->history);
		optimizer_turns_init(&state->turns);
		state->step = event->step;
	}
	if (event->step < state->step)
		return 0; /* a late record of a step already judged */
	if (event->step > state->step) {
		int failed = close_update_step(checker, state);

		state->step = event->step;
		if (failed)
			return failed;
	}
	if (growable_array_room_for_one((void **)&state->events, state->count, &state->capacity,
					sizeof(*state->events)))
		return -ENOMEM;
	state->events[state->count++] = *event;
	return 0;
}

/* A rank's step that differs from the first rank's, in a job step of replicas. */
static void judge_rank_updates(void *context, const struct infer_event *step,
			       const struct infer_event *peer)
{
	struct rule_checker *checker = context;

	for (size_t i = 0; i < checker->rules->count; i++) {
		const struct rule *rule = &checker->rules->rules[i];

		if (rule_checks_rank_updates(rule) &&
		    precondition_holds_pair(checker->rules->pool, &rule->precondition, peer, step))
			violation(checker, rule, step, peer);
	}
}

/* A rank's finished step against the same step of the job's other ranks. */
static int track_rank_updates(struct rule_checker *checker, const struct infer_event *event,
			      struct checked_process *process)
{
	struct infer_event finished;
	int result;

	if (!checker->has_rank_updates)
		return 0;
	result = rank_updates_observe(&checker->rank_updates, event, &process->rank, &finished);
	if (result <= 0)
		return result;
	result = rank_updates_join(&checker->rank_updates, &finished, judge_rank_updates, checker);
	return result < 0 ? result : 0;
}

int rule_checker_observe(struct rule_checker *checker, const struct trace_record *record)
{
	struct checked_process *process;
	struct infer_event event;
	int converted = infer_event_from_record(checker->rules->pool, record, &event);

	if (converted <= 0)
		return converted < 0 ? -ENOMEM : 0;
	checker->events++;
	/* The one look-up of the event's process: each tracker is handed its slot. */
	process = u64_map_get_or_add(&checker->checked, (uint64_t)event.pipeline << 32 | event.pid,
				     sizeof(*process), NULL);
	if (process) {
		process->pid = event.pid;
		process->python |= event.kind == INFER_EVENT_PYTHON;
		if (event.step > process->last_step)
			process->last_step = event.step;
	}
	/* First: the trackers after it read an optimizer's first step from the event. */
	if (!process || optimizer_firsts_observe(&checker->firsts, &event, &process->firsts) ||
	    process_uses_add(&checker->uses, &event) ||
	    gradient_clearing_observe(&checker->clearing, &event, &process->clearing) ||
	    check_constants(checker, &event))
		return -ENOMEM;
	if (checker->has_eval_mode &&
	    eval_mode_observe(&checker->eval_mode, &event, &process->eval_mode, judge_eval_mode,
			      checker) < 0)
		return -ENOMEM;
	if (checker->has_operator_precision &&
	    operator_precision_observe(&checker->operator_precision, &event, &process->precision,
				       judge_operator_precision, checker) < 0)
		return -ENOMEM;
	if (checker->has_train_override)
		check_train_override(checker, &event);
	if (checker->has_initialised_once &&
	    initialisation_observe(&checker->initialisations, &event, &process->initialised,
				   judge_initialisation, checker))
		return -ENOMEM;
	if (check_consistent(checker, &event) ||
	    contain_checker_observe(checker->contains, &event, &process->contain) ||
	    track_update_step(checker, &event, process) ||
	    track_rank_updates(checker, &event, process))
		return -ENOMEM;
	return track_step(checker, &event, process);
}

void rule_checker_tick(struct rule_checker *checker, uint64_t now_ns)
{
}

void rule_checker_finish(struct rule_checker *checker)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&checker->processes, &i, &key, &value);)
		close_step(checker, value);
	for (size_t i = 0; u64_map_next(&checker->update_steps, &i, &key, &value);) {
		(void)close_update_step(checker,
					value); /* out of memory: that step is not judged */
		settle_held_violations(checker, value, NULL); /* no step comes after the last */
	}
	if (checker->has_operator_precision)
		/* out of memory cannot happen here: judging keeps nothing */
		(void)operator_precision_finish(&checker->operator_precision,
						judge_operator_precision, checker);
	if (checker->has_rank_updates)
		rank_updates_flush(&checker->rank_updates, judge_rank_updates, checker);
	contain_checker_finish(checker->contains);
}

uint64_t rule_checker_violations(const struct rule_checker *checker)
{
	return checker->violations;
}

uint64_t rule_checker_notices(const struct rule_checker *checker)
{
	return checker->notices;
}

uint64_t rule_checker_events(const struct rule_checker *checker)
{
	return checker->events;
}

size_t rule_checker_python_processes(const struct rule_checker *checker, bool *stepped,
				     uint32_t *pids, size_t max)
{
	size_t count = 0;
	uint64_t key;
	void *value;

	*stepped = false;
	for (size_t i = 0; u64_map_next(&checker->checked, &i, &key, &value);) {
		const struct checked_process *process = value;

		if (!process->python)
			continue;
		*stepped |= process->last_step > 0;
		if (count < max)
			pids[count] = process->pid;
		count++;
	}
	return count;
}

void rule_checker_free(struct rule_checker *checker)
{
	uint64_t key;
	void *value;

	if (!checker)
		return;
	contain_checker_free(checker->contains);
	for (size_t i = 0; u64_map_next(&checker->groups, &i, &key, &value);) {
		struct group *group = value;

		while (group) {
			struct group *next = group->next;

			free(group);
			group = next;
		}
	}
	for (size_t i = 0; u64_map_next(&checker->processes, &i, &key, &value);)
		free(value);
	u64_map_free(&checker->groups);
	u64_map_free(&checker->occurrences);
	u64_map_free(&checker->processes);
	u64_map_free_with_values(&checker->checked);
	for (size_t i = 0; u64_map_next(&checker->update_steps, &i, &key, &value);) {
		struct update_step *state = value;

		u64_map_free(&state->history);
		for (size_t h = 0; h < state->held_count; h++)
			u64_map_free(&state->held[h].weights);
		optimizer_turns_free(&state->turns);
		scalars_history_free(&state->scalars);
		free(state->events);
		free(state);
	}
	u64_map_free(&checker->update_steps);
	rank_updates_free(&checker->rank_updates);
	process_uses_free(&checker->uses);
	optimizer_firsts_free(&checker->firsts);
	call_rhythm_free(&checker->rhythm);
	eval_mode_tracker_free(&checker->eval_mode);
	operator_precision_tracker_free(&checker->operator_precision);
	gradient_clearing_free(&checker->clearing);
	initialisation_tracker_free(&checker->initialisations);
	free(checker);
}
