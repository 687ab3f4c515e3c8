// SPDX-License-Identifier: MIT
/*
 * Which optimizer steps are their optimizer's first (optimizer_firsts.h):
 * step 0, and the first step of an optimizer made later over parameters no
 * step had changed (a pruned model given a fresh SGD). Rules learned from
 * SGD with momentum, whose steps after the first scale their momentum
 * buffers (aten::mul_), are checked on a program that re-makes its
 * optimizer over new layers (healthy: its first step builds new buffers)
 * and on one whose step leaves the buffers out with the same parameters.
 * Known answers, built by hand.
 */
#include <string.h>

#include "infer/inference.h"
#include "infer/optimizer_firsts.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

#define STEPS 8
#define WEIGHT 0x1000
#define NEW_WEIGHT 0x5000
#define MOMENTUM 0x2000
#define SHAPE "Float[4, 8]"

/* An in-place operator on 'tensor', a parameter (requires grad) or a buffer. */
static void in_place(struct python_records *records, uint32_t pid, int step, uint64_t at,
		     const char *name, uint64_t tensor, bool parameter)
{
	struct trace_record *record =
		python_records_add(records, pid, step, at, 0, name, TRACE_PYTHON_TORCH_OP);

	python_call_add_arg(record, (struct trace_python_arg){ .name = "tensor:self",
							       .type = TRACE_VALUE_INT,
							       .integer = (int64_t)tensor });
	python_call_add_arg(record, (struct trace_python_arg){ .name = "shape:self",
							       .type = TRACE_VALUE_STR,
							       .text = SHAPE });
	python_call_add_arg(record, (struct trace_python_arg){ .name = "requires_grad:self",
							       .type = TRACE_VALUE_BOOL,
							       .integer = parameter });
	python_call_add_arg(record, (struct trace_python_arg){ .name = "arg:alpha",
							       .type = TRACE_VALUE_FLOAT,
							       .real = -0.1 });
}

/*
 * One SGD step (momentum): the buffer scaled unless the optimizer is new
 * (built in its first step), the weight updated; an update of the weight by
 * hand before the step when 'by_hand'. Records in end order.
 */
static void sgd_step(struct python_records *records, uint32_t pid, int step, uint64_t weight,
		     bool buffers_exist, bool by_hand)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);

	if (by_hand)
		in_place(records, pid, step, base + 50, "aten::add_.Tensor", weight, true);
	if (buffers_exist)
		in_place(records, pid, step, base + 110, "aten::mul_.Tensor", MOMENTUM, false);
	in_place(records, pid, step, base + 120, "aten::add_.Tensor", weight, true);
	python_records_add(records, pid, step, base + 100, 100, "Optimizer.step#SGD.step",
			   TRACE_PYTHON_TORCH_SCOPE);
}

/* Whether "first_step" is True for each step's Optimizer.step#* (-1: not seen). */
static void first_steps(const bool *new_weight_at, const bool *by_hand_at, int first_seen,
			int *seen)
{
	struct string_pool *pool = string_pool_new();
	struct optimizer_firsts firsts;
	bool switched = false;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	optimizer_firsts_init(&firsts);
	for (int step = first_seen; step < STEPS; step++) {
		struct python_records records = { .count = 0 };

		switched |= new_weight_at[step];
		sgd_step(&records, 7, step, switched ? NEW_WEIGHT : WEIGHT,
			 step != 0 && !new_weight_at[step], by_hand_at[step]);
		seen[step] = -1;
		for (size_t i = 0; i < records.count; i++) {
			struct infer_event event;

			CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &records.at[i], &event),
					      1);
			CU_ASSERT_EQUAL(optimizer_firsts_observe(&firsts, &event, NULL), 0);
			if (event.flags & TRACE_PYTHON_TORCH_SCOPE)
				seen[step] =
					strcmp(infer_event_variable(pool, &event, "first_step"),
					       "True") == 0;
		}
	}
	optimizer_firsts_free(&firsts);
	string_pool_free(pool);
}

UNIT_TEST(optimizer_firsts, a_step_over_parameters_no_step_changed_is_a_first)
{
	bool new_weight_at[STEPS] = { false }, by_hand_at[STEPS] = { false };
	int seen[STEPS];

	/* One optimizer: step 0 only. */
	first_steps(new_weight_at, by_hand_at, 0, seen);
	CU_ASSERT_EQUAL(seen[0], 1);
	for (int step = 1; step < STEPS; step++)
		CU_ASSERT_EQUAL(seen[step], 0);
	/* A fresh optimizer over new layers at step 3: its first step too. */
	new_weight_at[3] = true;
	first_steps(new_weight_at, by_hand_at, 0, seen);
	CU_ASSERT_EQUAL(seen[3], 1);
	CU_ASSERT_EQUAL(seen[2], 0);
	CU_ASSERT_EQUAL(seen[4], 0);
	/* Attached at step 3: the first step seen is not taken for a first. */
	first_steps(new_weight_at, by_hand_at, 3, seen);
	CU_ASSERT_EQUAL(seen[3], 0);
	CU_ASSERT_EQUAL(seen[4], 0);
	/* The new weight changed by hand before the step (outside it): still the step's first. */
	by_hand_at[3] = true;
	first_steps(new_weight_at, by_hand_at, 0, seen);
	CU_ASSERT_EQUAL(seen[3], 1);
	/* A weight changed by hand before step 5 and no step: no change of a first. */
	memset(new_weight_at, 0, sizeof(new_weight_at));
	memset(by_hand_at, 0, sizeof(by_hand_at));
	by_hand_at[5] = true;
	first_steps(new_weight_at, by_hand_at, 0, seen);
	CU_ASSERT_EQUAL(seen[5], 0);
}

/*
 * "first_step" at step 3 of one SGD over the same weight throughout, the
 * Python calls 'code' (NULL-terminated) made before it: 1 True, 0 False,
 * 2 not known.
 */
static int first_after_code(const char *const *code)
{
	struct string_pool *pool = string_pool_new();
	struct optimizer_firsts firsts;
	int seen = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	optimizer_firsts_init(&firsts);
	for (int step = 0; step < 5; step++) {
		struct python_records records = { .count = 0 };

		if (step == 3)
			for (int i = 0; code[i]; i++)
				python_records_add(&records, 7, step,
						   1000000ULL * (uint64_t)(step + 1) + 10 + i, 1,
						   code[i], 0);
		sgd_step(&records, 7, step, WEIGHT, step != 0 && step != 3, false);
		for (size_t i = 0; i < records.count; i++) {
			struct infer_event event;

			CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &records.at[i], &event),
					      1);
			CU_ASSERT_EQUAL(optimizer_firsts_observe(&firsts, &event, NULL), 0);
			if (step == 3 && (event.flags & TRACE_PYTHON_TORCH_SCOPE)) {
				const char *first =
					infer_event_variable(pool, &event, "first_step");

				seen = !first ? 2 : strcmp(first, "True") == 0;
			}
		}
	}
	optimizer_firsts_free(&firsts);
	string_pool_free(pool);
	return seen;
}

UNIT_TEST(optimizer_firsts, a_step_after_an_optimizer_was_built_is_a_first)
{
	const char *const built[] = { "torch.optim.sgd.SGD.__init__", NULL };
	const char *const resumed[] = { "torch.optim.sgd.SGD.__init__",
					"torch.optim.optimizer.Optimizer.load_state_dict", NULL };
	const char *const restored[] = {
		"torch.optim.optimizer.Optimizer.load_state_dict.<locals>.<genexpr>", NULL
	};
	const char *const loaded_then_built[] = { "torch.optim.optimizer.Optimizer.load_state_dict",
						  "torch.optim.sgd.SGD.__init__", NULL };
	const char *const scheduler[] = { "torch.optim.lr_scheduler.StepLR.__init__", NULL };
	const char *const other[] = { "__main__.Trainer.__init__", NULL };
	const char *const none[] = { NULL };

	/* An SGD built anew over the same parameters (each epoch): its first step. */
	CU_ASSERT_EQUAL(first_after_code(built), 1);
	/*
	 * Built and a state loaded into it: the state may hold its buffers (a
	 * resume) or none, so not known.
	 */
	CU_ASSERT_EQUAL(first_after_code(resumed), 2);
	/*
	 * A state loaded back into the same optimizer (a learning-rate range
	 * test restoring a state saved before any step; seen through the
	 * loader's generator expressions, entered from C): not known either.
	 */
	CU_ASSERT_EQUAL(first_after_code(restored), 2);
	/* A state loaded into the old optimizer, then a new one built: its first. */
	CU_ASSERT_EQUAL(first_after_code(loaded_then_built), 1);
	/* A scheduler, another class, nothing: not a first. */
	CU_ASSERT_EQUAL(first_after_code(scheduler), 0);
	CU_ASSERT_EQUAL(first_after_code(other), 0);
	CU_ASSERT_EQUAL(first_after_code(none), 0);
}

static void count_violation(const struct rule_violation *violation, void *context)
{
	int *at = context;

	if (violation->step >= 0 && violation->step < STEPS)
		at[violation->step]++;
}

/* Violations per step of a program that re-makes (or loses) its optimizer's buffers at step 3. */
static void check_program(struct rule_set *set, bool new_weight, int *at)
{
	struct rule_checker *checker = rule_checker_new(set, count_violation, at);

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	memset(at, 0, STEPS * sizeof(*at));
	for (int step = 0; step < STEPS; step++) {
		struct python_records records = { .count = 0 };

		sgd_step(&records, 30, step, new_weight && step >= 3 ? NEW_WEIGHT : WEIGHT,
			 step != 0 && step != 3, false);
		for (size_t i = 0; i < records.count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records.at[i]), 0);
	}
	rule_checker_finish(checker);
	rule_checker_free(checker);
}

UNIT_TEST(optimizer_firsts, a_fresh_optimizer_over_new_layers_builds_its_buffers_unjudged)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	bool learned = false;
	int at[STEPS];

	CU_ASSERT_PTR_NOT_NULL_FATAL(inference);
	for (uint32_t program = 0; program < 2; program++) {
		inference_set_pipeline(inference, program);
		for (int step = 0; step < STEPS; step++) {
			struct python_records records = { .count = 0 };

			sgd_step(&records, 10 + program, step, WEIGHT, step != 0, false);
			for (size_t i = 0; i < records.count; i++)
				CU_ASSERT_EQUAL(inference_add(inference, &records.at[i]), 0);
		}
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		learned |= set->rules[i].relation == RELATION_EVENT_CONTAIN &&
			   strcmp(set->rules[i].child.name, "aten::mul_.Tensor") == 0;
	CU_ASSERT_TRUE_FATAL(learned);

	/* Healthy: the new optimizer's first step builds its buffers. */
	check_program(set, true, at);
	for (int step = 0; step < STEPS; step++)
		CU_ASSERT_EQUAL(at[step], 0);
	/* The same parameters' step without its buffers' scaling: judged. */
	check_program(set, false, at);
	CU_ASSERT_TRUE(at[3] > 0);
	for (int step = 0; step < STEPS; step++)
		if (step != 3)
			CU_ASSERT_EQUAL(at[step], 0);
	inference_free(inference);
	rule_set_free(set);
}
