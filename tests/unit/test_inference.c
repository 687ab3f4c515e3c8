// SPDX-License-Identifier: MIT
/*
 * The inference and checking engine on hand-built record streams with
 * known answers: preconditions (conjunction, superficial, disjunction),
 * each relation, the checker on healthy and broken streams, rules files,
 * what start-up alone shows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

static struct trace_record python(uint32_t pid, int rank, int step, uint64_t entry_ns,
				  const char *name)
{
	struct trace_record record = { .kind = TRACE_RECORD_PYTHON_CALL };
	struct trace_python_call *call = &record.python_call;

	call->entry_ns = entry_ns;
	call->duration_ns = 5;
	call->pid = pid;
	call->tid = pid;
	call->qualified_name = name;
	call->file = "train.py";
	call->step = step;
	call->stage = TRACE_STAGE_TRAIN;
	call->rank = rank;
	call->world_size = 2;
	return record;
}

static const struct rule *find_rule(const struct rule_set *set, uint32_t relation, const char *name,
				    const char *field, const char *first)
{
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];

		if (rule->relation == relation && strcmp(rule->event.name, name) == 0 &&
		    (!field || (rule->field && strcmp(rule->field, field) == 0)) &&
		    (!first || (rule->first.name && strcmp(rule->first.name, first) == 0)))
			return rule;
	}
	return NULL;
}

/* Events with a rank and a stage, for the precondition tests. */
static struct infer_event ranked(struct string_pool *pool, int rank, uint32_t stage)
{
	struct trace_record record = python(100 + (uint32_t)rank, rank, 1, 1, "f");
	struct infer_event event;

	record.python_call.stage = stage;
	infer_event_from_record(pool, &record, &event);
	return event;
}

UNIT_TEST(precondition, conjunction_keeps_only_clauses_failing_examples_violate)
{
	struct string_pool *pool = string_pool_new();
	struct infer_event pass[3] = { ranked(pool, 0, TRACE_STAGE_TRAIN),
				       ranked(pool, 0, TRACE_STAGE_TRAIN),
				       ranked(pool, 0, TRACE_STAGE_TRAIN) };
	struct infer_event fail[2] = { ranked(pool, 1, TRACE_STAGE_TRAIN),
				       ranked(pool, 2, TRACE_STAGE_TRAIN) };
	const struct infer_event *passing[3] = { &pass[0], &pass[1], &pass[2] };
	const struct infer_event *failing[2] = { &fail[0], &fail[1] };
	struct precondition found;

	CU_ASSERT_EQUAL(precondition_deduce(pool, passing, 3, failing, 2, NULL, &found), 1);
	/* rank = 0 only: stage, nranks and raised are constant on both sides. */
	CU_ASSERT_EQUAL(found.group_count, 1);
	CU_ASSERT_EQUAL(found.groups[0].clause_count, 1);
	CU_ASSERT_STRING_EQUAL(found.groups[0].clauses[0].variable, "rank");
	CU_ASSERT_STRING_EQUAL(found.groups[0].clauses[0].value, "0");
	CU_ASSERT_TRUE(precondition_holds(pool, &found, &pass[0]));
	CU_ASSERT_FALSE(precondition_holds(pool, &found, &fail[1]));
	/* No failing example: unconditional. */
	CU_ASSERT_EQUAL(precondition_deduce(pool, passing, 3, NULL, 0, NULL, &found), 1);
	CU_ASSERT_EQUAL(found.group_count, 0);
	/* The variable under test may not be used. */
	CU_ASSERT_EQUAL(precondition_deduce(pool, passing, 3, failing, 2, "rank", &found), 0);
	string_pool_free(pool);
}

UNIT_TEST(precondition, inseparable_examples_give_no_precondition)
{
	struct string_pool *pool = string_pool_new();
	struct infer_event same[2] = { ranked(pool, 0, TRACE_STAGE_TRAIN),
				       ranked(pool, 0, TRACE_STAGE_TRAIN) };
	const struct infer_event *passing[1] = { &same[0] };
	const struct infer_event *failing[1] = { &same[1] };
	struct precondition found;

	CU_ASSERT_EQUAL(precondition_deduce(pool, passing, 1, failing, 1, NULL, &found), 0);
	string_pool_free(pool);
}

UNIT_TEST(precondition, disjunction_by_splitting_the_passing_examples)
{
	struct string_pool *pool = string_pool_new();
	struct infer_event pass[2] = { ranked(pool, 0, TRACE_STAGE_TRAIN),
				       ranked(pool, 1, TRACE_STAGE_EVAL) };
	struct infer_event fail[2] = { ranked(pool, 0, TRACE_STAGE_EVAL),
				       ranked(pool, 1, TRACE_STAGE_TRAIN) };
	const struct infer_event *passing[2] = { &pass[0], &pass[1] };
	const struct infer_event *failing[2] = { &fail[0], &fail[1] };
	struct precondition found;

	CU_ASSERT_EQUAL(precondition_deduce(pool, passing, 2, failing, 2, NULL, &found), 1);
	CU_ASSERT_EQUAL(found.group_count, 2);
	CU_ASSERT_TRUE(precondition_holds(pool, &found, &pass[0]));
	CU_ASSERT_TRUE(precondition_holds(pool, &found, &pass[1]));
	CU_ASSERT_FALSE(precondition_holds(pool, &found, &fail[0]));
	CU_ASSERT_FALSE(precondition_holds(pool, &found, &fail[1]));
	string_pool_free(pool);
}

/* Four ranks, 'steps' all-reduces of 1024 floats; 'bad_seq' gets count+1 on rank 2. */
static void add_job(struct inference *inference, struct rule_checker *checker, int steps,
		    int bad_seq)
{
	for (int seq = 0; seq < steps; seq++)
		for (int rank = 0; rank < 4; rank++) {
			uint64_t count = seq == bad_seq && rank == 2 ? 1025 : 1024;
			struct trace_record record = all_reduce_record(200 + (uint32_t)rank, rank,
								       4, 0xc0ffee, seq, count);

			if (inference)
				CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
			if (checker)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
		}
}

UNIT_TEST(inference, consistent_and_constant_fields_of_collectives)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	const struct rule *rule;

	add_job(inference, NULL, 10, -1);
	CU_ASSERT_EQUAL(inference_event_count(inference), 40);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	rule = find_rule(set, RELATION_CONSISTENT, "ncclAllReduce", "count", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_EQUAL(rule->passing, 10); /* one group per sequence number */
	CU_ASSERT_EQUAL(rule->failing, 0);
	rule = find_rule(set, RELATION_API_ARG, "ncclAllReduce", "datatype", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_STRING_EQUAL(rule->value, "ncclFloat32");
	CU_ASSERT_EQUAL(rule->passing, 40);
	rule = find_rule(set, RELATION_API_OUTPUT, "ncclAllReduce", "result", NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_STRING_EQUAL(rule->value, "ncclSuccess");
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(inference, a_count_that_differs_without_a_reason_is_no_invariant)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);

	add_job(inference, NULL, 10, 4);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NULL(find_rule(set, RELATION_CONSISTENT, "ncclAllReduce", "count", NULL));
	/* The datatype still agrees everywhere. */
	CU_ASSERT_PTR_NOT_NULL(
		find_rule(set, RELATION_CONSISTENT, "ncclAllReduce", "datatype", NULL));
	inference_free(inference);
	rule_set_free(set);
}

static void count_violation(const struct rule_violation *violation, void *context)
{
	int *seen = context;

	if (violation->rule->relation == RELATION_CONSISTENT &&
	    strcmp(violation->rule->field, "count") == 0 && violation->event->seq == 6)
		seen[0]++;
	else
		seen[1]++;
}

UNIT_TEST(checker, flags_the_mismatched_count_once_and_nothing_on_a_healthy_run)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct rule_checker *checker;
	int seen[2] = { 0, 0 };

	add_job(inference, NULL, 10, -1);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	checker = rule_checker_new(set, count_violation, seen);
	add_job(NULL, checker, 20, -1);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(rule_checker_violations(checker), 0);
	rule_checker_free(checker);
	checker = rule_checker_new(set, count_violation, seen);
	add_job(NULL, checker, 20, 6);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(seen[0], 1);
	/* APIArg count = 1024 also fires on the one odd call. */
	CU_ASSERT_EQUAL(rule_checker_violations(checker), (uint64_t)(seen[0] + seen[1]));
	CU_ASSERT_EQUAL(rule_checker_events(checker), 80);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}

/* zero_grad, backward, step per step on two ranks; 'skip' leaves zero_grad out of a step. */
static void add_training(struct inference *inference, struct rule_checker *checker, int steps,
			 int skip)
{
	static const char *const calls[] = { "Optimizer.zero_grad", "Tensor.backward",
					     "Optimizer.step" };

	for (int step = 0; step < steps; step++)
		for (int rank = 0; rank < 2; rank++)
			for (int c = 0; c < 3; c++) {
				struct trace_record record =
					python(300 + (uint32_t)rank, rank, step,
					       (uint64_t)step * 1000 + (uint64_t)c * 10, calls[c]);

				if (c == 0 && step == skip)
					continue;
				if (inference)
					CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
				if (checker)
					CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
			}
}

static void sequence_violation(const struct rule_violation *violation, void *context)
{
	int *steps = context;

	if (violation->rule->relation == RELATION_API_SEQUENCE &&
	    strcmp(violation->rule->first.name, "Optimizer.zero_grad") == 0)
		steps[violation->step]++;
}

UNIT_TEST(inference, order_within_a_step_and_its_violation)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct rule_checker *checker;
	int steps[8] = { 0 };

	add_training(inference, NULL, 5, -1);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NOT_NULL(find_rule(set, RELATION_API_SEQUENCE, "Optimizer.step", NULL,
					 "Optimizer.zero_grad"));
	CU_ASSERT_PTR_NOT_NULL(find_rule(set, RELATION_API_SEQUENCE, "Tensor.backward", NULL,
					 "Optimizer.zero_grad"));
	CU_ASSERT_PTR_NULL(find_rule(set, RELATION_API_SEQUENCE, "Optimizer.zero_grad", NULL,
				     "Optimizer.step"));
	/* Calls per step agree across ranks: Consistent on raised. */
	CU_ASSERT_PTR_NOT_NULL(
		find_rule(set, RELATION_CONSISTENT, "Optimizer.step", "raised", NULL));
	checker = rule_checker_new(set, sequence_violation, steps);
	add_training(NULL, checker, 8, 5);
	rule_checker_finish(checker);
	/* Both ranks, step 5 only, for backward and step: four violations. */
	CU_ASSERT_EQUAL(steps[5], 4);
	CU_ASSERT_EQUAL(steps[4] + steps[6] + steps[7] + steps[0], 0);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(rules, save_load_round_trip_and_bad_files)
{
	char path[] = "/tmp/tcheck-rules-XXXXXX", error[512];
	struct rule_set *set = rule_set_new(), *loaded;
	struct inference *inference = inference_new(set);
	int fd = mkstemp(path);
	FILE *file;

	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	add_job(inference, NULL, 10, -1);
	add_training(inference, NULL, 4, -1);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_EQUAL(rule_set_add_source(set, "job.trace"), 0);
	CU_ASSERT_EQUAL(rule_set_save(set, path, error, sizeof(error)), 0);
	loaded = rule_set_load(path, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(loaded);
	CU_ASSERT_EQUAL(loaded->count, set->count);
	for (size_t i = 0; i < set->count && i < loaded->count; i++) {
		char a[1024], b[1024];

		rule_describe(&set->rules[i], a, sizeof(a));
		rule_describe(&loaded->rules[i], b, sizeof(b));
		CU_ASSERT_STRING_EQUAL(a, b);
		CU_ASSERT_EQUAL(set->rules[i].passing, loaded->rules[i].passing);
	}
	rule_set_free(loaded);
	file = fopen(path, "w");
	fputs("{\"format\": \"tcheck-bpf-rules\", \"version\": 99, \"rules\": []}", file);
	fclose(file);
	CU_ASSERT_PTR_NULL(rule_set_load(path, error, sizeof(error)));
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "version 99"));
	file = fopen(path, "w");
	fputs("{\"format\": \"tcheck-bpf-rules\", \"version\": 1, \"rules\": [{\"relation\": 3}]}",
	      file);
	fclose(file);
	CU_ASSERT_PTR_NULL(rule_set_load(path, error, sizeof(error)));
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "rule 1"));
	file = fopen(path, "w");
	fputs("{\"format\": ", file);
	fclose(file);
	CU_ASSERT_PTR_NULL(rule_set_load(path, error, sizeof(error)));
	unlink(path);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(inference, an_outcome_agreeing_only_at_start_up_is_no_invariant)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);

	/*
	 * Two ranks: a store connection tried three times at start-up (step 0),
	 * and a logging call once in each of four steps, neither raising.
	 */
	for (int rank = 0; rank < 2; rank++) {
		for (int attempt = 0; attempt < 3; attempt++) {
			struct trace_record record = python(100 + (uint32_t)rank, rank, 0,
							    10 + (uint64_t)attempt, "rendezvous");

			CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
		}
		for (int step = 0; step < 4; step++) {
			struct trace_record record =
				python(100 + (uint32_t)rank, rank, step,
				       1000 * (uint64_t)(step + 1), "log_loss");

			CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
		}
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	/* Whether start-up leaves by an exception depends on which rank came first. */
	CU_ASSERT_PTR_NULL(find_rule(set, RELATION_CONSISTENT, "rendezvous", "raised", NULL));
	/* A call of every step keeps its rule. */
	CU_ASSERT_PTR_NOT_NULL(find_rule(set, RELATION_CONSISTENT, "log_loss", "raised", NULL));
	inference_free(inference);
	rule_set_free(set);
}

static void count_output_violation(const struct rule_violation *violation, void *context)
{
	int *seen = context;

	if (violation->rule->relation == RELATION_API_OUTPUT)
		(*seen)++;
}

UNIT_TEST(inference, whether_a_python_function_raised_is_no_rule)
{
	static const char frame[] = "model.Block.forward";
	static const char scope[] = "Optimizer.step#SGD.step";
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct rule old = { .relation = RELATION_API_OUTPUT };
	struct rule_checker *checker;
	struct trace_record record;
	int seen = 0;

	for (int step = 0; step < 6; step++) {
		record = python(40, -1, step, 100 + 10 * (uint64_t)step, frame);
		CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
		record = python(40, -1, step, 105 + 10 * (uint64_t)step, scope);
		record.python_call.flags = TRACE_PYTHON_TORCH_SCOPE;
		CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	/* Never raised in either: an operation's outcome is a rule, a function's is not. */
	CU_ASSERT_PTR_NOT_NULL(
		find_rule(set, RELATION_API_OUTPUT, "Optimizer.step#*", "raised", NULL));
	CU_ASSERT_PTR_NULL(find_rule(set, RELATION_API_OUTPUT, frame, "raised", NULL));
	/* A rules file written before says it of the function: not judged either. */
	old.event.kind = INFER_EVENT_PYTHON;
	old.event.name = string_pool_intern(set->pool, frame);
	old.field = string_pool_intern(set->pool, "raised");
	old.value = string_pool_intern(set->pool, "False");
	CU_ASSERT_EQUAL_FATAL(rule_set_add(set, &old), 0);
	checker = rule_checker_new(set, count_output_violation, &seen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	/* Torch's checkpoint stops its recomputation by raising through the module calls. */
	record = python(41, -1, 2, 500, frame);
	record.python_call.flags = TRACE_PYTHON_RAISED;
	CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
	CU_ASSERT_EQUAL(seen, 0);
	/* An optimizer step left by an exception is still found. */
	record = python(41, -1, 2, 510, scope);
	record.python_call.flags = TRACE_PYTHON_TORCH_SCOPE | TRACE_PYTHON_RAISED;
	CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(seen, 1);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}
