// SPDX-License-Identifier: MIT
/*
 * The relations and clauses added for the silent-error suite, on small
 * hand-built streams with known answers: CONSISTENT and UNEQUAL clauses
 * over example pairs, EventContain (a scope and a step contain operators,
 * n times), APIArg distinct across ranks, and their rules files.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

#define SCOPE "Optimizer.step#SGD.step"
/* The scope's family, as rules name it: any optimizer's step. */
#define SCOPE_FAMILY "Optimizer.step#*"
#define OP "aten::add_.Tensor"

/* A Python call with one primitive argument. */
static struct trace_record with_argument(uint32_t pid, int rank, int step, const char *name,
					 const char *argument, int64_t value)
{
	struct trace_record record =
		python_call_record(pid, step, (uint64_t)step * 1000 + 1, 5, name, 0);

	record.python_call.rank = rank;
	record.python_call.world_size = 2;
	record.python_call.file = "train.py";
	record.python_call.arg_count = 1;
	record.python_call.args[0].name = argument;
	record.python_call.args[0].type = TRACE_VALUE_INT;
	record.python_call.args[0].integer = value;
	return record;
}

static struct infer_event event_of(struct string_pool *pool, const struct trace_record *record)
{
	struct infer_event event;

	CU_ASSERT_EQUAL(infer_event_from_record(pool, record, &event), 1);
	return event;
}

UNIT_TEST(clauses, consistent_holds_when_both_sides_share_a_value_of_their_own)
{
	struct string_pool *pool = string_pool_new();
	/* Passing pairs agree on arg:phase (values vary), failing pairs do not. */
	struct trace_record a = with_argument(1, 0, 1, "f", "phase", 1);
	struct trace_record b = with_argument(2, 1, 1, "f", "phase", 2);
	/* The same rank and process as a and b, the other phase: only the phase tells. */
	struct trace_record c = with_argument(1, 0, 1, "f", "phase", 2);
	struct trace_record d = with_argument(2, 1, 1, "f", "phase", 1);
	struct infer_event ev[6] = { event_of(pool, &a), event_of(pool, &a), event_of(pool, &b),
				     event_of(pool, &b), event_of(pool, &c), event_of(pool, &d) };
	const struct infer_event *passing[2] = { &ev[0], &ev[2] };
	const struct infer_event *passing_peers[2] = { &ev[1], &ev[3] };
	const struct infer_event *failing[2] = { &ev[0], &ev[2] };
	const struct infer_event *failing_peers[2] = { &ev[4], &ev[5] };
	struct precondition found;

	CU_ASSERT_EQUAL(precondition_deduce_pairs(pool, passing, passing_peers, 2, failing,
						  failing_peers, 2, NULL, &found),
			1);
	CU_ASSERT_EQUAL(found.group_count, 1);
	CU_ASSERT_EQUAL(found.groups[0].clause_count, 1);
	CU_ASSERT_EQUAL(found.groups[0].clauses[0].type, CLAUSE_CONSISTENT);
	CU_ASSERT_STRING_EQUAL(found.groups[0].clauses[0].variable, "arg:phase");
	CU_ASSERT_TRUE(precondition_holds_pair(pool, &found, &ev[0], &ev[1]));
	CU_ASSERT_FALSE(precondition_holds_pair(pool, &found, &ev[0], &ev[4]));
	/* Without a peer a pair clause cannot hold. */
	CU_ASSERT_FALSE(precondition_holds(pool, &found, &ev[0]));
	/* The same examples without peers cannot be told apart: superficial. */
	CU_ASSERT_EQUAL(precondition_deduce(pool, passing, 2, failing, 2, NULL, &found), 0);
	string_pool_free(pool);
}

UNIT_TEST(clauses, unequal_holds_when_the_sides_differ)
{
	struct string_pool *pool = string_pool_new();
	struct trace_record r0 = with_argument(1, 0, 1, "f", "x", 7);
	struct trace_record r1 = with_argument(2, 1, 1, "f", "x", 7);
	struct trace_record r2 = with_argument(3, 2, 1, "f", "x", 7);
	struct infer_event ev[3] = { event_of(pool, &r0), event_of(pool, &r1),
				     event_of(pool, &r2) };
	/* Passing pairs come from two ranks; the failing pair is one rank twice. */
	const struct infer_event *passing[2] = { &ev[0], &ev[1] };
	const struct infer_event *passing_peers[2] = { &ev[1], &ev[2] };
	const struct infer_event *failing[1] = { &ev[2] };
	const struct infer_event *failing_peers[1] = { &ev[2] };
	struct precondition found;

	CU_ASSERT_EQUAL(precondition_deduce_pairs(pool, passing, passing_peers, 2, failing,
						  failing_peers, 1, NULL, &found),
			1);
	CU_ASSERT_EQUAL(found.group_count, 1);
	CU_ASSERT_EQUAL(found.groups[0].clause_count, 1);
	CU_ASSERT_EQUAL(found.groups[0].clauses[0].type, CLAUSE_UNEQUAL);
	CU_ASSERT_STRING_EQUAL(found.groups[0].clauses[0].variable, "rank");
	CU_ASSERT_TRUE(precondition_holds_pair(pool, &found, &ev[0], &ev[2]));
	CU_ASSERT_FALSE(precondition_holds_pair(pool, &found, &ev[1], &ev[1]));
	CU_ASSERT_STRING_EQUAL(precondition_clause_name(CLAUSE_UNEQUAL), "unequal");
	CU_ASSERT_EQUAL(precondition_clause_type("consistent"), CLAUSE_CONSISTENT);
	CU_ASSERT_EQUAL(precondition_clause_type("sometimes"), 0);
	string_pool_free(pool);
}

/*
 * One process's steps: an Optimizer.step scope holding 'adds[step]' add_
 * operators (each with its exit before the scope's), records in exit order.
 */
static void add_steps(struct inference *inference, struct rule_checker *checker, uint32_t pid,
		      const int *adds, int steps)
{
	for (int step = 0; step < steps; step++) {
		uint64_t base = (uint64_t)step * 1000 + 100;
		struct trace_record scope =
			python_call_record(pid, step, base, 500, SCOPE, TRACE_PYTHON_TORCH_SCOPE);

		for (int i = 0; i < adds[step]; i++) {
			struct trace_record op =
				python_call_record(pid, step, base + 10 + (uint64_t)i * 20, 5, OP,
						   TRACE_PYTHON_TORCH_OP);

			if (inference)
				CU_ASSERT_EQUAL(inference_add(inference, &op), 0);
			if (checker)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &op), 0);
		}
		/* An operator outside the scope, in the step but not in the scope. */
		{
			struct trace_record outside = python_call_record(pid, step, base + 700, 5,
									 OP, TRACE_PYTHON_TORCH_OP);

			if (inference)
				CU_ASSERT_EQUAL(inference_add(inference, &outside), 0);
			if (checker)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &outside), 0);
		}
		if (inference)
			CU_ASSERT_EQUAL(inference_add(inference, &scope), 0);
		if (checker)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &scope), 0);
	}
}

static const struct rule *contain_rule(const struct rule_set *set, uint32_t parent_kind,
				       const char *parent, const char *count)
{
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];

		if (rule->relation == RELATION_EVENT_CONTAIN && rule->event.kind == parent_kind &&
		    strcmp(rule->event.name, parent) == 0 && strcmp(rule->child.name, OP) == 0 &&
		    (count ? rule->value && strcmp(rule->value, count) == 0 : !rule->value))
			return rule;
	}
	return NULL;
}

struct contain_counts {
	int scope_at[16]; /* violations of the scope's rules per step */
	int step_at[16];  /* violations of the step's rules per step */
	char shown[64];	  /* the count shown with the last scope violation */
};

static void contain_violation(const struct rule_violation *violation, void *context)
{
	struct contain_counts *counts = context;
	const char *shown;

	if (violation->rule->relation != RELATION_EVENT_CONTAIN || violation->step < 0 ||
	    violation->step >= 16)
		return;
	if (violation->rule->event.kind == INFER_EVENT_STEP) {
		counts->step_at[violation->step]++;
		return;
	}
	counts->scope_at[violation->step]++;
	shown = infer_event_field(violation->event, "contains:" OP);
	snprintf(counts->shown, sizeof(counts->shown), "%s", shown ? shown : "");
}

UNIT_TEST(event_contain, a_scope_and_a_step_contain_operators_n_times)
{
	/* Step 0 builds the momentum buffers (2 adds), later steps 4: two processes. */
	static const int healthy[6] = { 2, 4, 4, 4, 4, 4 };
	static const int broken[8] = { 2, 4, 4, 1, 0, 4, 4, 4 };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct contain_counts counts = { 0 };
	const struct rule *always, *exactly, *step_exactly;
	struct rule_checker *checker;

	add_steps(inference, NULL, 10, healthy, 6);
	add_steps(inference, NULL, 11, healthy, 5);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	always = contain_rule(set, INFER_EVENT_PYTHON, SCOPE_FAMILY, NULL);
	exactly = contain_rule(set, INFER_EVENT_PYTHON, SCOPE_FAMILY, "4");
	step_exactly = contain_rule(set, INFER_EVENT_STEP, "step", "5");
	CU_ASSERT_PTR_NOT_NULL_FATAL(always);
	CU_ASSERT_PTR_NOT_NULL_FATAL(exactly);
	CU_ASSERT_PTR_NOT_NULL_FATAL(step_exactly);
	/* Which operators an optimizer runs is its implementation's: where used. */
	CU_ASSERT_EQUAL(always->scope, RULE_SCOPE_USED);
	/* Every scope has an add_: no precondition; exactly 4 but in the first step. */
	CU_ASSERT_EQUAL(always->precondition.group_count, 0);
	CU_ASSERT_EQUAL(always->passing, 11);
	CU_ASSERT_EQUAL(exactly->precondition.group_count, 1);
	CU_ASSERT_EQUAL(exactly->precondition.groups[0].clause_count, 1);
	CU_ASSERT_STRING_EQUAL(exactly->precondition.groups[0].clauses[0].variable, "first_step");
	CU_ASSERT_STRING_EQUAL(exactly->precondition.groups[0].clauses[0].value, "False");
	CU_ASSERT_EQUAL(exactly->passing, 9);
	CU_ASSERT_EQUAL(exactly->failing, 2);
	/*
	 * The step holds the scope's adds and one more; the last step of each is
	 * left out, and so is step 0, which no optimizer step came before.
	 */
	CU_ASSERT_EQUAL(step_exactly->passing + step_exactly->failing, 7);
	CU_ASSERT_EQUAL(step_exactly->failing, 0);
	CU_ASSERT_PTR_NULL(contain_rule(set, INFER_EVENT_PYTHON, SCOPE_FAMILY, "2"));

	checker = rule_checker_new(set, contain_violation, &counts);
	add_steps(NULL, checker, 20, broken, 8);
	rule_checker_finish(checker);
	/* Step 3 holds 1 add_ (exactly-4 broken), step 4 none (both scope rules). */
	CU_ASSERT_EQUAL(counts.scope_at[3], 1);
	CU_ASSERT_EQUAL(counts.scope_at[4], 2);
	CU_ASSERT_STRING_EQUAL(counts.shown, "0");
	CU_ASSERT_EQUAL(counts.scope_at[0] + counts.scope_at[1] + counts.scope_at[2] +
				counts.scope_at[5] + counts.scope_at[6] + counts.scope_at[7],
			0);
	/* The step rules see the same steps, at the step's end. */
	CU_ASSERT_TRUE(counts.step_at[3] >= 1 && counts.step_at[4] >= 1);
	CU_ASSERT_EQUAL(counts.step_at[0] + counts.step_at[1] + counts.step_at[2] +
				counts.step_at[5] + counts.step_at[6] + counts.step_at[7],
			0);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(event_contain, across_programs_a_step_counts_no_operators)
{
	static const int healthy[6] = { 2, 4, 4, 4, 4, 4 };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	const struct rule *always;

	/* Two programs: the model's forward and backward run operators of their own. */
	add_steps(inference, NULL, 10, healthy, 6);
	inference_set_pipeline(inference, 1);
	add_steps(inference, NULL, 11, healthy, 5);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NULL(contain_rule(set, INFER_EVENT_STEP, "step", NULL));
	CU_ASSERT_PTR_NULL(contain_rule(set, INFER_EVENT_STEP, "step", "5"));
	/* The optimizer's step still counts them, where used, supported by both. */
	always = contain_rule(set, INFER_EVENT_PYTHON, SCOPE_FAMILY, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(always);
	CU_ASSERT_EQUAL(always->scope, RULE_SCOPE_USED);
	CU_ASSERT_EQUAL(always->pipelines, 2);
	inference_free(inference);
	rule_set_free(set);
}

/* Steps of one process whose backward pass runs the operator OP, then an optimizer step. */
static void add_backward_steps(struct inference *inference, uint32_t pid, int steps)
{
	for (int step = 0; step < steps; step++) {
		uint64_t base = (uint64_t)step * 1000 + 100;
		struct trace_record op =
			python_call_record(pid, step, base + 10, 5, OP, TRACE_PYTHON_TORCH_OP);
		struct trace_record backward =
			python_call_record(pid, step, base, 300, "Autograd.backward#Engine.execute",
					   TRACE_PYTHON_TORCH_SCOPE);
		struct trace_record optimizer = python_call_record(pid, step, base + 400, 100,
								   SCOPE, TRACE_PYTHON_TORCH_SCOPE);

		CU_ASSERT_EQUAL(inference_add(inference, &op), 0);
		CU_ASSERT_EQUAL(inference_add(inference, &backward), 0);
		CU_ASSERT_EQUAL(inference_add(inference, &optimizer), 0);
	}
}

UNIT_TEST(event_contain, across_programs_a_backward_pass_contains_no_operator)
{
	struct rule_set *one = rule_set_new(), *two = rule_set_new();
	struct inference *inference = inference_new(one);

	/* One program: what its backward passes run is a rule of that program. */
	add_backward_steps(inference, 20, 6);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NOT_NULL(contain_rule(one, INFER_EVENT_PYTHON, "Autograd.backward#*", NULL));
	inference_free(inference);
	/* Two programs: the operators are their models' (a checkpointed block runs a pass of
	   its own without them). */
	inference = inference_new(two);
	add_backward_steps(inference, 20, 6);
	inference_set_pipeline(inference, 1);
	add_backward_steps(inference, 21, 6);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NULL(contain_rule(two, INFER_EVENT_PYTHON, "Autograd.backward#*", NULL));
	inference_free(inference);
	rule_set_free(one);
	rule_set_free(two);
}

static void add_seeds(struct inference *inference, struct rule_checker *checker, int steps,
		      int same_at)
{
	for (int step = 0; step < steps; step++)
		for (int rank = 0; rank < 2; rank++) {
			int64_t seed = step == same_at ? 99 : 1000 * (rank + 1) + step;
			struct trace_record record = with_argument(500 + (uint32_t)rank, rank, step,
								   "data.shard", "seed", seed);

			if (inference)
				CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
			if (checker)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
		}
}

static void distinct_violation(const struct rule_violation *violation, void *context)
{
	int *steps = context;

	if (violation->rule->relation == RELATION_API_ARG && violation->rule->distinct &&
	    violation->step >= 0 && violation->step < 8)
		steps[violation->step]++;
}

UNIT_TEST(api_arg, distinct_across_ranks_and_its_violation)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct rule_checker *checker;
	const struct rule *distinct = NULL;
	int steps[8] = { 0 };

	add_seeds(inference, NULL, 6, -1);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_API_ARG && set->rules[i].distinct &&
		    strcmp(set->rules[i].field, "arg:seed") == 0)
			distinct = &set->rules[i];
	CU_ASSERT_PTR_NOT_NULL_FATAL(distinct);
	CU_ASSERT_PTR_NULL(distinct->value);
	CU_ASSERT_EQUAL(distinct->passing, 6);
	/* The seed is no constant and does not agree across ranks. */
	for (size_t i = 0; i < set->count; i++)
		CU_ASSERT_FALSE(set->rules[i].field &&
				strcmp(set->rules[i].field, "arg:seed") == 0 &&
				!set->rules[i].distinct);
	checker = rule_checker_new(set, distinct_violation, steps);
	add_seeds(NULL, checker, 8, 4);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(steps[4], 1);
	CU_ASSERT_EQUAL(steps[0] + steps[1] + steps[2] + steps[3] + steps[5] + steps[6] + steps[7],
			0);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(rules, new_relations_and_clauses_round_trip_and_version_1_still_loads)
{
	static const int healthy[5] = { 2, 4, 4, 4, 4 };
	char path[] = "/tmp/tcheck-contain-rules.XXXXXX", error[512], newer[32];
	struct rule_set *set = rule_set_new(), *loaded;
	struct inference *inference = inference_new(set);
	struct rule rule = { 0 };
	int fd = mkstemp(path);
	FILE *file;

	CU_ASSERT_TRUE_FATAL(fd >= 0);
	close(fd);
	add_steps(inference, NULL, 10, healthy, 5);
	add_seeds(inference, NULL, 4, -1);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	/* A rule with pair clauses, as Consistent rules may carry. */
	rule.relation = RELATION_CONSISTENT;
	rule.event =
		(struct rule_descriptor){ INFER_EVENT_PYTHON, string_pool_intern(set->pool, "f") };
	rule.field = string_pool_intern(set->pool, "arg:x");
	rule.precondition.group_count = 1;
	rule.precondition.groups[0].clause_count = 2;
	rule.precondition.groups[0].clauses[0] =
		(struct precondition_clause){ CLAUSE_CONSISTENT,
					      string_pool_intern(set->pool, "stage"), NULL };
	rule.precondition.groups[0].clauses[1] =
		(struct precondition_clause){ CLAUSE_UNEQUAL, string_pool_intern(set->pool, "rank"),
					      NULL };
	CU_ASSERT_EQUAL(rule_set_add(set, &rule), 0);
	CU_ASSERT_EQUAL(rule_set_save(set, path, error, sizeof(error)), 0);
	loaded = rule_set_load(path, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(loaded);
	CU_ASSERT_EQUAL(loaded->count, set->count);
	for (size_t i = 0; i < set->count && i < loaded->count; i++) {
		char before[1024], after[1024];

		CU_ASSERT_EQUAL(loaded->rules[i].relation, set->rules[i].relation);
		CU_ASSERT_EQUAL(loaded->rules[i].distinct, set->rules[i].distinct);
		CU_ASSERT_EQUAL(loaded->rules[i].event.kind, set->rules[i].event.kind);
		rule_describe(&set->rules[i], before, sizeof(before));
		rule_describe(&loaded->rules[i], after, sizeof(after));
		CU_ASSERT_STRING_EQUAL(before, after);
	}
	rule_set_free(loaded);

	/* A version 1 file (no new relation) still loads; a future one is refused. */
	file = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	fputs("{\"format\": \"tcheck-bpf-rules\", \"version\": 1, \"rules\": [{\"relation\": "
	      "\"APIArg\", \"event\": {\"kind\": \"nccl\", \"name\": \"ncclAllReduce\"}, "
	      "\"field\": \"op\", \"value\": \"ncclSum\", \"precondition\": []}]}",
	      file);
	fclose(file);
	loaded = rule_set_load(path, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL(loaded);
	rule_set_free(loaded);
	file = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	/* A version newer than this build's is refused, saying which. */
	fprintf(file, "{\"format\": \"tcheck-bpf-rules\", \"version\": %d, \"rules\": []}",
		RULES_FORMAT_VERSION + 1);
	fclose(file);
	CU_ASSERT_PTR_NULL(rule_set_load(path, error, sizeof(error)));
	snprintf(newer, sizeof(newer), "version %d", RULES_FORMAT_VERSION + 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, newer));
	/* An APIArg with neither value nor distinct is malformed. */
	file = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	fputs("{\"format\": \"tcheck-bpf-rules\", \"version\": 2, \"rules\": [{\"relation\": "
	      "\"APIArg\", \"event\": {\"kind\": \"nccl\", \"name\": \"ncclAllReduce\"}, "
	      "\"field\": \"op\", \"precondition\": []}]}",
	      file);
	fclose(file);
	CU_ASSERT_PTR_NULL(rule_set_load(path, error, sizeof(error)));
	unlink(path);
	inference_free(inference);
	rule_set_free(set);
}

static void nranks_violation(const struct rule_violation *violation, void *context)
{
	int *found = context;

	if (violation->rule->relation == RELATION_API_ARG &&
	    strcmp(violation->rule->field, "nranks") == 0)
		(*found)++;
}

UNIT_TEST(api_arg, the_communicator_size_tells_which_group_a_collective_went_to)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct rule_checker *checker;
	const struct rule *size_rule = NULL;
	int found = 0;

	/* Four ranks: count 256 on pairs (tp, comms 1 and 2), count 1000 on all four (dp). */
	for (int64_t seq = 0; seq < 6; seq++)
		for (int rank = 0; rank < 4; rank++) {
			struct trace_record tp =
				all_reduce_record(700 + (uint32_t)rank, rank % 2, 2,
						  1 + (uint64_t)(rank / 2), seq, 256);
			struct trace_record dp =
				all_reduce_record(700 + (uint32_t)rank, rank, 4, 9, seq, 1000);

			CU_ASSERT_EQUAL(inference_add(inference, &tp), 0);
			CU_ASSERT_EQUAL(inference_add(inference, &dp), 0);
		}
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_API_ARG &&
		    strcmp(set->rules[i].field, "nranks") == 0 && set->rules[i].value &&
		    strcmp(set->rules[i].value, "2") == 0)
			size_rule = &set->rules[i];
	CU_ASSERT_PTR_NOT_NULL_FATAL(size_rule);
	CU_ASSERT_EQUAL(size_rule->precondition.group_count, 1);
	CU_ASSERT_EQUAL(size_rule->precondition.groups[0].clause_count, 1);
	CU_ASSERT_STRING_EQUAL(size_rule->precondition.groups[0].clauses[0].variable, "count");
	CU_ASSERT_STRING_EQUAL(size_rule->precondition.groups[0].clauses[0].value, "256");
	/* No Consistent rule on the size: one communicator's ranks share it by construction. */
	for (size_t i = 0; i < set->count; i++)
		CU_ASSERT_FALSE(set->rules[i].relation == RELATION_CONSISTENT &&
				strcmp(set->rules[i].field, "nranks") == 0);
	/* The pairs' all-reduce issued on the four-rank communicator, by every rank. */
	checker = rule_checker_new(set, nranks_violation, &found);
	for (int rank = 0; rank < 4; rank++) {
		struct trace_record wrong =
			all_reduce_record(800 + (uint32_t)rank, rank, 4, 9, 0, 256);

		CU_ASSERT_EQUAL(rule_checker_observe(checker, &wrong), 0);
	}
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(found, 4);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(api_sequence, an_order_seen_in_one_step_only_is_no_rule)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	int steps_with_order = 0;

	/* Two processes call setup_a then setup_b once, in step 0 (start-up). */
	for (uint32_t pid = 900; pid < 902; pid++) {
		struct trace_record a = with_argument(pid, (int)pid - 900, 0, "setup_a", "x", 1);
		struct trace_record b = with_argument(pid, (int)pid - 900, 0, "setup_b", "x", 1);

		b.python_call.entry_ns = a.python_call.entry_ns + 10;
		CU_ASSERT_EQUAL(inference_add(inference, &a), 0);
		CU_ASSERT_EQUAL(inference_add(inference, &b), 0);
		/* And train_a then train_b in steps 1 and 2. */
		for (int step = 1; step <= 2; step++) {
			struct trace_record c =
				with_argument(pid, (int)pid - 900, step, "train_a", "x", 1);
			struct trace_record d =
				with_argument(pid, (int)pid - 900, step, "train_b", "x", 1);

			d.python_call.entry_ns = c.python_call.entry_ns + 10;
			CU_ASSERT_EQUAL(inference_add(inference, &c), 0);
			CU_ASSERT_EQUAL(inference_add(inference, &d), 0);
		}
	}
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];

		if (rule->relation != RELATION_API_SEQUENCE)
			continue;
		CU_ASSERT_STRING_NOT_EQUAL(rule->event.name, "setup_b");
		steps_with_order += strcmp(rule->event.name, "train_b") == 0 &&
				    strcmp(rule->first.name, "train_a") == 0;
	}
	CU_ASSERT_EQUAL(steps_with_order, 1);
	inference_free(inference);
	rule_set_free(set);
}

/* Feeds one optimizer step scope of 'scope' holding 'adds' add_ operators, from 'base' on. */
static void feed_scope(struct rule_checker *checker, uint32_t pid, int step, uint64_t base,
		       const char *scope, int adds)
{
	struct trace_record record;

	for (int i = 0; i < adds; i++) {
		record = python_call_record(pid, step, base + 10 + (uint64_t)i * 20, 5, OP,
					    TRACE_PYTHON_TORCH_OP);
		CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
	}
	record = python_call_record(pid, step, base, 200, scope, TRACE_PYTHON_TORCH_SCOPE);
	CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
}

UNIT_TEST(event_contain, an_optimizers_operators_are_asked_of_that_optimizer_alone)
{
	static const int healthy[6] = { 4, 4, 4, 4, 4, 4 };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct contain_counts counts = { 0 };
	struct rule_checker *checker;

	add_steps(inference, NULL, 10, healthy, 6);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(contain_rule(set, INFER_EVENT_PYTHON, SCOPE_FAMILY, NULL));
	checker = rule_checker_new(set, contain_violation, &counts);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	/*
	 * One process, two optimizers: SGD's step runs add_, a foreach AdamW's
	 * another operator. The SGD step's add_ says nothing of AdamW's; the
	 * SGD step of step 3 that holds none breaks the rule.
	 */
	for (int step = 0; step < 6; step++) {
		uint64_t base = (uint64_t)step * 1000 + 100;

		feed_scope(checker, 30, step, base, SCOPE, step == 3 ? 0 : 4);
		feed_scope(checker, 30, step, base + 400, "Optimizer.step#AdamW.step", 0);
	}
	rule_checker_finish(checker);
	/* "contains add_" and "contains add_ exactly 4 times" (one program's rules). */
	CU_ASSERT_EQUAL(counts.scope_at[3], 2);
	CU_ASSERT_EQUAL(counts.scope_at[0] + counts.scope_at[1] + counts.scope_at[2] +
				counts.scope_at[4] + counts.scope_at[5],
			0);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}

static int nested_step_violations;

static void count_step_scope_violations(const struct rule_violation *violation, void *context)
{
	(void)context;
	if (violation->rule->relation == RELATION_EVENT_CONTAIN &&
	    violation->rule->event.kind == INFER_EVENT_STEP &&
	    strcmp(violation->rule->child.name, SCOPE_FAMILY) == 0)
		nested_step_violations++;
}

/* One record to the checker, or (checker NULL) to the inference. */
static void feed_one(struct rule_checker *checker, struct inference *inference,
		     const struct trace_record *record)
{
	if (checker)
		CU_ASSERT_EQUAL(rule_checker_observe(checker, record), 0);
	if (!checker && inference)
		CU_ASSERT_EQUAL(inference_add(inference, record), 0);
}

/*
 * One step of a process whose optimizer step is two scopes, 'inner' run by
 * 'outer' (ZeroRedundancyOptimizer.step around its local Adam.step) or, with
 * 'nested' false, one after the other (two optimizers); the inner holds 4
 * add_, and one more runs after both. Records in exit order, to the checker
 * or (checker NULL) to 'inference'.
 */
static void feed_optimizer_pair(struct rule_checker *checker, struct inference *inference,
				uint32_t pid, int step, bool nested)
{
	uint64_t base = (uint64_t)step * 1000 + 100;
	uint64_t inner_entry = nested ? base + 50 : base;
	struct trace_record record;

	for (int i = 0; i < 4; i++) {
		record = python_call_record(pid, step, inner_entry + 10 + (uint64_t)i * 20, 5, OP,
					    TRACE_PYTHON_TORCH_OP);
		feed_one(checker, inference, &record);
	}
	record = python_call_record(pid, step, inner_entry, 200, "Optimizer.step#Adam.step",
				    TRACE_PYTHON_TORCH_SCOPE);
	feed_one(checker, inference, &record);
	record = python_call_record(pid, step, nested ? base : base + 300, nested ? 400 : 100,
				    "Optimizer.step#ZeroRedundancyOptimizer.step",
				    TRACE_PYTHON_TORCH_SCOPE);
	feed_one(checker, inference, &record);
	record = python_call_record(pid, step, base + 700, 5, OP, TRACE_PYTHON_TORCH_OP);
	feed_one(checker, inference, &record);
}

UNIT_TEST(event_contain,
	  an_optimizer_step_run_by_another_or_a_second_optimizer_is_not_counted_twice)
{
	static const int healthy[6] = { 4, 4, 4, 4, 4, 4 };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct rule_checker *checker;
	bool once = false;

	add_steps(inference, NULL, 10, healthy, 6);
	add_steps(inference, NULL, 11, healthy, 6);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		once |= set->rules[i].relation == RELATION_EVENT_CONTAIN &&
			set->rules[i].event.kind == INFER_EVENT_STEP &&
			strcmp(set->rules[i].child.name, SCOPE_FAMILY) == 0 &&
			set->rules[i].value && strcmp(set->rules[i].value, "1") == 0;
	CU_ASSERT_TRUE_FATAL(once);
	/* ZeroRedundancyOptimizer: its step runs Adam's, one optimizer step a step. */
	nested_step_violations = 0;
	checker = rule_checker_new(set, count_step_scope_violations, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < 6; step++)
		feed_optimizer_pair(checker, NULL, 40, step, true);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(nested_step_violations, 0);
	rule_checker_free(checker);
	/*
	 * Two optimizer steps one after the other in each step (parameters split
	 * between two optimizers): how many is the number of optimizers, not judged.
	 */
	nested_step_violations = 0;
	checker = rule_checker_new(set, count_step_scope_violations, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < 6; step++)
		feed_optimizer_pair(checker, NULL, 41, step, false);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(nested_step_violations, 0);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(event_contain, steps_of_two_optimizers_teach_no_count_of_optimizer_scopes)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	bool counted = false, contained = false;

	for (uint32_t pid = 50; pid < 52; pid++)
		for (int step = 0; step < 6; step++)
			feed_optimizer_pair(NULL, inference, pid, step, false);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];

		if (rule->relation != RELATION_EVENT_CONTAIN ||
		    rule->event.kind != INFER_EVENT_STEP ||
		    strcmp(rule->child.name, SCOPE_FAMILY) != 0)
			continue;
		contained |= !rule->value;
		counted |= rule->value != NULL;
	}
	/* "Every step contains Optimizer.step#*", but no "exactly 2 times" of it. */
	CU_ASSERT_TRUE(contained);
	CU_ASSERT_FALSE(counted);
	inference_free(inference);
	rule_set_free(set);
}

/* Violations of the step rules on zero_grad: with a count, and without ("contains"). */
struct zero_grad_violations {
	int counted, contained;
};

static void count_zero_grad_violations(const struct rule_violation *violation, void *context)
{
	struct zero_grad_violations *seen = context;

	if (violation->rule->relation != RELATION_EVENT_CONTAIN ||
	    violation->rule->event.kind != INFER_EVENT_STEP ||
	    strcmp(violation->rule->child.name, "Optimizer.zero_grad#*") != 0)
		return;
	if (violation->rule->value)
		seen->counted++;
	else
		seen->contained++;
}

/*
 * One step: 'zero_grads' zero_grad scopes, then the optimizer's step; with
 * 'closure' the zero_grads run inside the step (LBFGS evaluating its
 * closure several times). Records in exit order.
 */
static void feed_zero_grads(struct rule_checker *checker, struct inference *inference, uint32_t pid,
			    int step, int zero_grads, bool closure)
{
	uint64_t base = (uint64_t)step * 10000 + 100;
	struct trace_record record;

	for (int i = 0; i < zero_grads; i++) {
		record = python_call_record(pid, step, base + 10 + (uint64_t)i * 1000, 5,
					    "Optimizer.zero_grad#LBFGS.zero_grad",
					    TRACE_PYTHON_TORCH_SCOPE);
		feed_one(checker, inference, &record);
	}
	record = python_call_record(pid, step, closure ? base : base + 5000, closure ? 8000 : 100,
				    "Optimizer.step#LBFGS.step", TRACE_PYTHON_TORCH_SCOPE);
	feed_one(checker, inference, &record);
}

/* A process of 6 steps, 'zero_grads[step]' zero_grads each, checked against 'set'. */
static struct zero_grad_violations check_zero_grads(struct rule_set *set, uint32_t pid,
						    const int *zero_grads, bool closure)
{
	struct zero_grad_violations seen = { 0, 0 };
	struct rule_checker *checker = rule_checker_new(set, count_zero_grad_violations, &seen);

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < 6; step++)
		feed_zero_grads(checker, NULL, pid, step, zero_grads[step], closure);
	rule_checker_finish(checker);
	rule_checker_free(checker);
	return seen;
}

UNIT_TEST(event_contain, zero_grad_is_asked_for_not_counted)
{
	static const int three[6] = { 3, 3, 3, 3, 3, 3 }, two[6] = { 2, 2, 2, 2, 2, 2 };
	static const int stops[6] = { 1, 1, 1, 0, 0, 0 };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct zero_grad_violations seen;
	bool counted = false, contained = false;

	for (uint32_t pid = 60; pid < 62; pid++)
		for (int step = 0; step < 6; step++)
			feed_zero_grads(NULL, inference, pid, step, 1, false);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];

		if (rule->relation != RELATION_EVENT_CONTAIN ||
		    strcmp(rule->child.name, "Optimizer.zero_grad#*") != 0)
			continue;
		counted |= rule->value != NULL;
		contained |= rule->value == NULL && rule->event.kind == INFER_EVENT_STEP;
	}
	/* Clearing twice clears once: no count is learned, only that a step clears. */
	CU_ASSERT_FALSE(counted);
	CU_ASSERT_TRUE_FATAL(contained);
	/* LBFGS evaluates its closure, zero_grad and all, three times a step: nothing. */
	seen = check_zero_grads(set, 70, three, true);
	CU_ASSERT_EQUAL(seen.counted + seen.contained, 0);
	/* Twice a step before the step (SAM's two passes): nothing. */
	seen = check_zero_grads(set, 71, two, false);
	CU_ASSERT_EQUAL(seen.counted + seen.contained, 0);
	/* No more from step 3: said there (step 5 never closed). */
	seen = check_zero_grads(set, 72, stops, false);
	CU_ASSERT_EQUAL(seen.counted, 0);
	CU_ASSERT_TRUE(seen.contained >= 1);
	inference_free(inference);
	rule_set_free(set);
}

/* Violations of "every step contains OP" (no count) per step. */
static void count_step_holds_op(const struct rule_violation *violation, void *context)
{
	int *at = context;

	if (violation->rule->relation == RELATION_EVENT_CONTAIN &&
	    violation->rule->event.kind == INFER_EVENT_STEP && !violation->rule->value &&
	    strcmp(violation->rule->child.name, OP) == 0 && violation->step >= 0 &&
	    violation->step < 16)
		at[violation->step]++;
}

/*
 * One process's steps, a letter each: 'A' a step that runs OP (an
 * all-reduce, say) before its optimizer's step, '-' one that runs no OP.
 */
static void feed_paced_steps(struct inference *inference, struct rule_checker *checker,
			     uint32_t pid, const char *holds)
{
	for (int step = 0; holds[step]; step++) {
		uint64_t base = (uint64_t)step * 1000 + 100;
		struct trace_record records[2];
		size_t count = 0;

		if (holds[step] == 'A')
			records[count++] =
				python_call_record(pid, step, base, 5, OP, TRACE_PYTHON_TORCH_OP);
		records[count++] = python_call_record(pid, step, base + 100, 50, SCOPE,
						      TRACE_PYTHON_TORCH_SCOPE);
		for (size_t i = 0; i < count; i++) {
			if (inference)
				CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
			if (checker)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
		}
	}
}

UNIT_TEST(event_contain, a_call_made_at_the_programs_own_pace_is_not_asked_of_every_step)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct rule_checker *checker;
	int at[16] = { 0 };
	int total = 0;

	/* Learned where every step holds OP (a data-parallel job's all-reduce). */
	feed_paced_steps(inference, NULL, 10, "AAAAAA");
	feed_paced_steps(inference, NULL, 11, "AAAAA");
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(contain_rule(set, INFER_EVENT_STEP, "step", NULL));
	/* Parameters averaged every fourth step (local SGD): no step is missing it. */
	checker = rule_checker_new(set, count_step_holds_op, at);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	feed_paced_steps(NULL, checker, 20, "---A---A---A--");
	rule_checker_finish(checker);
	rule_checker_free(checker);
	for (int step = 0; step < 16; step++)
		total += at[step];
	CU_ASSERT_EQUAL(total, 0);
	/*
	 * Held in every step, then no more (a module no longer wrapped): said at
	 * the step it stops; later steps show the program's pace is another now.
	 */
	checker = rule_checker_new(set, count_step_holds_op, at);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	feed_paced_steps(NULL, checker, 21, "AAA-----");
	rule_checker_finish(checker);
	rule_checker_free(checker);
	CU_ASSERT_EQUAL(at[2], 0);
	CU_ASSERT_EQUAL(at[3], 1);
	CU_ASSERT_EQUAL(at[4] + at[5] + at[6], 0);
	inference_free(inference);
	rule_set_free(set);
}

/* Violations of "every step contains zero_grad" per step, and whether one showed unused gradients.
 */
struct clearing_violations {
	int at[16];
	int total;
	bool shown_unused;
};

static void count_clearing_violations(const struct rule_violation *violation, void *context)
{
	struct clearing_violations *seen = context;

	if (violation->rule->relation != RELATION_EVENT_CONTAIN ||
	    violation->rule->event.kind != INFER_EVENT_STEP || violation->rule->value ||
	    strcmp(violation->rule->child.name, "Optimizer.zero_grad#*") != 0)
		return;
	seen->total++;
	if (violation->step >= 0 && violation->step < 16)
		seen->at[violation->step]++;
	seen->shown_unused |=
		infer_event_field(violation->event, "cleared_unused_gradients") != NULL;
}

/*
 * A process's iterations, written as letters in time order: Z zero_grad,
 * B a backward pass, P an in-place change of a parameter by hand (SAM's
 * climb), S the optimizer's step (its update of a parameter inside it),
 * which ends a step; records in exit order.
 */
static void feed_iterations(struct rule_checker *checker, struct inference *inference, uint32_t pid,
			    const char *script)
{
	uint64_t at = 1000;
	int step = 0;

	for (const char *letter = script; *letter; letter++, at += 1000) {
		struct trace_record record;

		if (*letter == 'Z' || *letter == 'B') {
			record = python_call_record(pid, step, at, 100,
						    *letter == 'Z'
							    ? "Optimizer.zero_grad#SGD.zero_grad"
							    : "Autograd.backward#Engine.execute",
						    TRACE_PYTHON_TORCH_SCOPE);
			feed_one(checker, inference, &record);
			continue;
		}
		if (*letter != 'P' && *letter != 'S')
			continue;
		record = python_call_record(pid, step, at + 10, 5, "aten::add_.Tensor",
					    TRACE_PYTHON_TORCH_OP);
		record.python_call.args[record.python_call.arg_count++] = (struct trace_python_arg){
			.name = "tensor:self", .type = TRACE_VALUE_INT, .integer = 0x7000
		};
		record.python_call.args[record.python_call.arg_count++] = (struct trace_python_arg){
			.name = "requires_grad:self", .type = TRACE_VALUE_BOOL, .integer = 1
		};
		record.python_call.args[record.python_call.arg_count++] = (struct trace_python_arg){
			.name = "arg:alpha", .type = TRACE_VALUE_FLOAT, .real = -0.1
		};
		feed_one(checker, inference, &record);
		if (*letter == 'S') {
			record = python_call_record(pid, step, at, 100, "Optimizer.step#SGD.step",
						    TRACE_PYTHON_TORCH_SCOPE);
			feed_one(checker, inference, &record);
			step++;
		}
	}
}

static struct clearing_violations check_iterations(struct rule_set *set, uint32_t pid,
						   const char *script)
{
	struct clearing_violations seen = { { 0 }, 0, false };
	struct rule_checker *checker = rule_checker_new(set, count_clearing_violations, &seen);

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	feed_iterations(checker, NULL, pid, script);
	rule_checker_finish(checker);
	rule_checker_free(checker);
	return seen;
}

UNIT_TEST(event_contain, gradients_cleared_before_any_update_used_them)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct clearing_violations seen;

	feed_iterations(NULL, inference, 80, "ZBS ZBS ZBS ZBS ZBS ZBS");
	feed_iterations(NULL, inference, 81, "ZBS ZBS ZBS ZBS ZBS");
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	/* Healthy: nothing. */
	seen = check_iterations(set, 90, "ZBS ZBS ZBS ZBS ZBS ZBS");
	CU_ASSERT_EQUAL(seen.total, 0);
	/*
	 * The optimizer's step of the third iteration skipped: step 2 holds two
	 * iterations, and its second zero_grad throws the first one's gradients
	 * away. Said there, once, and shown.
	 */
	seen = check_iterations(set, 91, "ZBS ZBS ZB ZBS ZBS ZBS");
	CU_ASSERT_EQUAL(seen.total, 1);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	CU_ASSERT_TRUE(seen.shown_unused);
	/* SAM: backward, a climb by hand, zero_grad, backward, step, zero_grad: nothing. */
	seen = check_iterations(set, 92, "BPZBSZ BPZBSZ BPZBSZ BPZBSZ BPZBSZ BPZBSZ");
	CU_ASSERT_EQUAL(seen.total, 0);
	/* Adversarial training: the input's backward, zero_grad, backward, step: nothing. */
	seen = check_iterations(set, 93, "BZBS BZBS BZBS BZBS BZBS BZBS");
	CU_ASSERT_EQUAL(seen.total, 0);
	/* zero_grad twice, nothing between: nothing thrown away. */
	seen = check_iterations(set, 94, "ZZBS ZZBS ZZBS ZZBS ZZBS ZZBS");
	CU_ASSERT_EQUAL(seen.total, 0);
	inference_free(inference);
	rule_set_free(set);
}
