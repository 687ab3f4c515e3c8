// SPDX-License-Identifier: MIT
/*
 * TrainOverrideRan on hand-built runs with known answers: module calls as
 * the tracer records them, a model whose class overrides train() trained
 * before any train() reached it (mmpretrain#702: its frozen stages train)
 * carrying TRACE_MODULE_TRAIN_NOT_RUN_ARG. The rule is learned from runs
 * whose module calls never carry it, is not learned from a run that does,
 * fires once per training forward of such a module and not in an
 * evaluation, and survives a save and a load.
 */
#include <string.h>

#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "scratch_files.h"
#include "unit.h"

/* How the model's forward call of a step reads. */
enum forward {
	FORWARD_PLAIN,		   /* the class inherits Module.train(), or its override ran */
	FORWARD_OVERRIDE_NOT_RUN,  /* the class overrides train() and none reached the model */
	FORWARD_EVALUATED_NOT_RUN, /* the same model, in an evaluation */
};

/* One step: the model's forward (a submodule inside it), then the optimizer's step. */
static void build_step(struct python_records *records, uint32_t pid, int step, enum forward forward)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	struct trace_record *model =
		python_records_add(records, pid, step, base, 300, TRACE_MODULE_CALL_NAME, 0);

	python_call_add_arg(model, (struct trace_python_arg){ .name = TRACE_MODULE_CLASS_ARG,
							      .type = TRACE_VALUE_STR,
							      .text = "TinyVGG" });
	if (forward != FORWARD_PLAIN)
		python_call_add_arg(
			model, (struct trace_python_arg){ .name = TRACE_MODULE_TRAIN_NOT_RUN_ARG,
							  .type = TRACE_VALUE_BOOL,
							  .integer = 1 });
	if (forward == FORWARD_EVALUATED_NOT_RUN)
		model->python_call.stage = TRACE_STAGE_EVAL;
	python_call_add_arg(
		python_records_add(records, pid, step, base + 10, 100, TRACE_MODULE_CALL_NAME, 0),
		(struct trace_python_arg){ .name = TRACE_MODULE_CLASS_ARG,
					   .type = TRACE_VALUE_STR,
					   .text = "Conv2d" });
	python_records_add(records, pid, step, base + 500, 100, "Optimizer.step#SGD.step",
			   TRACE_PYTHON_TORCH_SCOPE);
}

static struct rule_set *infer_from(enum forward forward, int steps)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);

	CU_ASSERT_PTR_NOT_NULL_FATAL(inference);
	for (int step = 0; step < steps; step++) {
		struct python_records records = { .count = 0 };

		build_step(&records, 20, step, forward);
		for (size_t i = 0; i < records.count; i++)
			CU_ASSERT_EQUAL(inference_add(inference, &records.at[i]), 0);
	}
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	inference_free(inference);
	return set;
}

static const struct rule *override_rule(const struct rule_set *set)
{
	const struct rule *found = NULL;

	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_TRAIN_OVERRIDE_RAN) {
			CU_ASSERT_PTR_NULL(found); /* one rule */
			found = &set->rules[i];
		}
	return found;
}

struct seen_violations {
	int at_step[8];
	int total;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct seen_violations *seen = context;

	if (violation->rule->relation != RELATION_TRAIN_OVERRIDE_RAN)
		return;
	seen->total++;
	if (violation->step >= 0 && violation->step < 8)
		seen->at_step[violation->step]++;
}

/* Checks 'steps' steps; the forward of the steps from 'from' on reads 'later'. */
static struct seen_violations check_run(struct rule_set *set, uint32_t pid, enum forward first,
					int from, enum forward later, int steps)
{
	struct seen_violations seen = { { 0 }, 0 };
	struct rule_checker *checker = rule_checker_new(set, count_violation, &seen);

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < steps; step++) {
		struct python_records records = { .count = 0 };

		build_step(&records, pid, step, step < from ? first : later);
		for (size_t i = 0; i < records.count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records.at[i]), 0);
	}
	rule_checker_finish(checker);
	rule_checker_free(checker);
	return seen;
}

UNIT_TEST(train_override, learned_from_plain_runs_and_caught_where_no_train_ran)
{
	struct rule_set *set = infer_from(FORWARD_PLAIN, 6);
	const struct rule *rule = override_rule(set);
	struct seen_violations seen;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_STRING_EQUAL(rule->event.name, TRACE_MODULE_CALL_NAME);
	/* Every module call in training is an example: two a step. */
	CU_ASSERT_EQUAL(rule->passing, 12);
	CU_ASSERT_EQUAL(rule->failing, 0);
	CU_ASSERT_EQUAL(check_run(set, 30, FORWARD_PLAIN, 0, FORWARD_PLAIN, 5).total, 0);
	/* mmpretrain#702: the model's forward in each step, not its submodule's. */
	seen = check_run(set, 31, FORWARD_OVERRIDE_NOT_RUN, 0, FORWARD_OVERRIDE_NOT_RUN, 5);
	CU_ASSERT_EQUAL(seen.total, 5);
	for (int step = 0; step < 5; step++)
		CU_ASSERT_EQUAL(seen.at_step[step], 1);
	/* model.train() called at step 2 at last: steps 0 and 1 only. */
	seen = check_run(set, 32, FORWARD_OVERRIDE_NOT_RUN, 2, FORWARD_PLAIN, 5);
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.at_step[0] + seen.at_step[1], 2);
	/* An evaluation of a model whose override never ran trains nothing. */
	CU_ASSERT_EQUAL(
		check_run(set, 33, FORWARD_EVALUATED_NOT_RUN, 0, FORWARD_EVALUATED_NOT_RUN, 5)
			.total,
		0);
	rule_set_free(set);
}

UNIT_TEST(train_override, no_rule_from_a_reference_that_trains_without_its_override)
{
	struct rule_set *set = infer_from(FORWARD_OVERRIDE_NOT_RUN, 6);

	CU_ASSERT_PTR_NULL(override_rule(set));
	rule_set_free(set);
}

UNIT_TEST(train_override, saved_and_loaded_with_no_field)
{
	struct rule_set *set = infer_from(FORWARD_PLAIN, 6), *loaded;
	const char *path = scratch_path("train-override-rules.json");
	char error[512], text[RULE_TEXT_SIZE];
	const struct rule *rule;

	CU_ASSERT_EQUAL_FATAL(rule_set_save(set, path, error, sizeof(error)), 0);
	loaded = rule_set_load(path, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(loaded);
	rule = override_rule(loaded);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_PTR_NULL(rule->field);
	CU_ASSERT_EQUAL(rule->passing, 12);
	rule_describe(rule, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "train() override"));
	CU_ASSERT_EQUAL(
		check_run(loaded, 34, FORWARD_OVERRIDE_NOT_RUN, 0, FORWARD_OVERRIDE_NOT_RUN, 3)
			.total,
		3);
	rule_set_free(loaded);
	rule_set_free(set);
}
