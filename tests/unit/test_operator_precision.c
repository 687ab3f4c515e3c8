// SPDX-License-Identifier: MIT
/*
 * OnePrecision on hand-built runs with known answers: linear calls as the
 * probe records them (the weight's dtype and sizes), the rule inferred from
 * a full-precision run, no violation on a mixed-precision run (autocast's
 * kernel calling linear again on the cast weight) nor on a layer applied
 * twice in a row nor on a float32 evaluation under no_grad() beside
 * bfloat16 training, and one violation per step where one linear runs
 * outside the autocast region (lightning-thunder#725).
 */
#include <string.h>

#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "python/torch_op_readings.h"
#include "unit.h"

/* How a step's forward runs its two linears: each weight's shape as recorded, in order. */
static const char *const full_precision[] = { "Float[40, 10]", "Float[3, 40]", NULL };
static const char *const autocast[] = { "Float[40, 10]", "BFloat16[40, 10]", "Float[3, 40]",
					"BFloat16[3, 40]", NULL };
/* The first linear left out of the region: float32, with no cast call after it. */
static const char *const one_outside[] = { "Float[40, 10]", "Float[3, 40]", "BFloat16[3, 40]",
					   NULL };
/* A shape read with autograd off: an evaluation's forward. */
#define NO_GRAD "no_grad "
/* Trained under autocast, then evaluated in float32 under no_grad(), in one step. */
static const char *const autocast_then_evaluated[] = { "Float[40, 10]",
						       "BFloat16[40, 10]",
						       "Float[3, 40]",
						       "BFloat16[3, 40]",
						       NO_GRAD "Float[40, 10]",
						       NO_GRAD "Float[3, 40]",
						       NULL };
/* One layer applied twice, then the head. */
static const char *const applied_twice[] = { "Float[40, 40]", "Float[40, 40]", "Float[3, 40]",
					     NULL };

static size_t build_step(uint32_t pid, int step, const char *const *shapes,
			 struct trace_record *records)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	size_t count = 0;

	for (; shapes[count]; count++) {
		bool without_grad = strncmp(shapes[count], NO_GRAD, strlen(NO_GRAD)) == 0;
		const char *shape = shapes[count] + (without_grad ? strlen(NO_GRAD) : 0);
		struct trace_python_call *call = &records[count].python_call;

		records[count] = python_call_record(pid, step, base + 10 * (count + 1), 0,
						    "aten::linear", TRACE_PYTHON_TORCH_OP);
		call->args[0] = (struct trace_python_arg){ .name = TORCH_TENSOR_READ_SHAPE,
							   .type = TRACE_VALUE_STR,
							   .text = shape };
		/* the weight requires grad; autocast's cast copy of it does not */
		call->args[1] =
			(struct trace_python_arg){ .name = TORCH_TENSOR_READ_REQUIRES_GRAD,
						   .type = TRACE_VALUE_BOOL,
						   .integer = strncmp(shape, "Float", 5) == 0 };
		call->arg_count = 2;
		/* as the probe says it: only when autograd was off */
		if (without_grad)
			call->args[call->arg_count++] =
				(struct trace_python_arg){ .name = TORCH_TENSOR_READ_GRAD_MODE,
							   .type = TRACE_VALUE_BOOL,
							   .integer = 0 };
	}
	records[count++] = python_call_record(pid, step, base + 500, 100, "Optimizer.step#SGD.step",
					      TRACE_PYTHON_TORCH_SCOPE);
	return count;
}

struct seen_violations {
	int at_step[8];
	int total;
	char offending[32];
	bool offending_requires_grad_said; /* a cast copy's would read as a frozen weight */
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct seen_violations *seen = context;
	const char *shape = infer_event_field(violation->event, TORCH_TENSOR_READ_SHAPE);

	if (violation->rule->relation != RELATION_ONE_PRECISION)
		return;
	seen->total++;
	if (violation->step >= 0 && violation->step < 8)
		seen->at_step[violation->step]++;
	snprintf(seen->offending, sizeof(seen->offending), "%s", shape ? shape : "");
	seen->offending_requires_grad_said =
		infer_event_field(violation->event, TORCH_TENSOR_READ_REQUIRES_GRAD) != NULL;
}

static struct seen_violations check_run(struct rule_set *set, uint32_t pid,
					const char *const *shapes, int steps)
{
	struct seen_violations seen = { { 0 }, 0, "", false };
	struct rule_checker *checker = rule_checker_new(set, count_violation, &seen);
	struct trace_record records[12];

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < steps; step++) {
		size_t count = build_step(pid, step, shapes, records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
	}
	rule_checker_finish(checker);
	rule_checker_free(checker);
	return seen;
}

/* The OnePrecision rules inferred from 'steps' steps of 'shapes'. */
static struct rule_set *infer_from(const char *const *shapes, int steps)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct trace_record records[12];

	CU_ASSERT_PTR_NOT_NULL_FATAL(inference);
	for (int step = 0; step < steps; step++) {
		size_t count = build_step(20, step, shapes, records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
	}
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	inference_free(inference);
	return set;
}

static int precision_rules(const struct rule_set *set)
{
	int rules = 0;

	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_ONE_PRECISION) {
			rules++;
			CU_ASSERT_STRING_EQUAL(set->rules[i].event.name, "aten::linear");
			CU_ASSERT_STRING_EQUAL(set->rules[i].field, TORCH_TENSOR_READ_SHAPE);
			/* one example per step */
			CU_ASSERT_EQUAL(set->rules[i].passing, 6);
			CU_ASSERT_EQUAL(set->rules[i].failing, 0);
		}
	return rules;
}

UNIT_TEST(operator_precision, inferred_in_full_precision_and_caught_outside_autocast)
{
	struct rule_set *set = infer_from(full_precision, 6);
	struct seen_violations seen;

	CU_ASSERT_EQUAL_FATAL(precision_rules(set), 1);
	CU_ASSERT_EQUAL(check_run(set, 30, full_precision, 5).total, 0);
	CU_ASSERT_EQUAL(check_run(set, 31, autocast, 5).total, 0);
	CU_ASSERT_EQUAL(check_run(set, 32, applied_twice, 5).total, 0);
	seen = check_run(set, 33, one_outside, 5);
	CU_ASSERT_EQUAL(seen.total, 5);
	for (int step = 0; step < 5; step++)
		CU_ASSERT_EQUAL(seen.at_step[step], 1);
	/* The finding names the call that computed: the head's, on the cast weight. */
	/* (string fields are compared as Python writes them, quoted) */
	CU_ASSERT_STRING_EQUAL(seen.offending, "'BFloat16[3, 40]'");
	CU_ASSERT_FALSE(seen.offending_requires_grad_said);
	rule_set_free(set);
}

UNIT_TEST(operator_precision, a_mixed_precision_reference_teaches_the_same_rule)
{
	struct rule_set *set = infer_from(autocast, 6);

	CU_ASSERT_EQUAL_FATAL(precision_rules(set), 1);
	CU_ASSERT_EQUAL(check_run(set, 40, full_precision, 4).total, 0);
	CU_ASSERT_EQUAL(check_run(set, 41, one_outside, 4).total, 4);
	rule_set_free(set);
}

UNIT_TEST(operator_precision, a_float32_evaluation_beside_autocast_training_is_no_stray)
{
	struct rule_set *set = infer_from(full_precision, 6);
	struct seen_violations seen;

	CU_ASSERT_EQUAL_FATAL(precision_rules(set), 1);
	CU_ASSERT_EQUAL(check_run(set, 50, autocast_then_evaluated, 5).total, 0);
	/* The training forward is still judged: its layer left out is found. */
	seen = check_run(set, 51, one_outside, 3);
	CU_ASSERT_EQUAL(seen.total, 3);
	rule_set_free(set);
}

UNIT_TEST(operator_precision, no_rule_from_a_reference_that_mixes_dtypes)
{
	struct rule_set *set = infer_from(one_outside, 6);

	CU_ASSERT_EQUAL(precision_rules(set), 0);
	rule_set_free(set);
}
