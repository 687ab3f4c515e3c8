// SPDX-License-Identifier: MIT
/*
 * FrozenUnchanged and TrainableUpdated on hand-built steps with known
 * answers: the weights a forward reads, frozen or trainable, against the
 * updates inside the optimizer's step; the rules inferred from healthy steps
 * and their violations at the steps that break them.
 */
#include <stdlib.h>
#include <string.h>

#include "infer/checkpoint_regions.h"
#include "infer/inference.h"
#include "infer/parameter_updates.h"
#include "infer/requires_grad_updates.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

#define WEIGHT_1 0x5000
#define WEIGHT_2 0x6000
#define WEIGHT_3 0x7000

/* What the step does with its second weight. */
enum second_weight {
	TRAINED,	 /* read trainable, updated */
	FROZEN_MOVED,	 /* read frozen, still updated (weight decay, momentum) */
	FROZEN_STILL,	 /* read frozen, not updated */
	LEFT_OUT,	 /* read trainable, not updated: the optimizer holds the first only */
	NOTHING_UPDATED, /* the optimizer updates nothing */
	/* read as autocast's frozen bfloat16 copy, whose address an optimizer buffer of another
	 * dtype takes in the step */
	CAST_REUSED,
	/* read trainable by a model in eval() (a distillation teacher), not updated */
	OTHER_MODEL,
	/* read trainable by a second top module in training mode (a head called apart) */
	OTHER_PIECE,
	/* read trainable in the same model's forward as the first, not updated */
	LEFT_OUT_OF_ONE_MODEL,
	/* read trainable with autograd off (a target network under no_grad), not updated */
	TARGET_NETWORK,
	/* read frozen with autograd off, still updated (weight decay, momentum) */
	FROZEN_MOVED_WITHOUT_GRAD,
	/* read as a weight autograd computes (MAML's fast weight: flag clear, a grad_fn), whose
	 * address an optimizer buffer of the same shape takes in the step */
	COMPUTED_REUSED,
};

static void tensor_argument(struct trace_record *record, const char *field, uint64_t tensor)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field,
					  .type = TRACE_VALUE_INT,
					  .integer = (int64_t)tensor };
}

static void bool_argument(struct trace_record *record, const char *field, bool value)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field,
					  .type = TRACE_VALUE_BOOL,
					  .integer = value };
}

static void text_argument(struct trace_record *record, const char *field, const char *text)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field, .type = TRACE_VALUE_STR, .text = text };
}

static void scalar_argument(struct trace_record *record, const char *field, double value)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field, .type = TRACE_VALUE_FLOAT, .real = value };
}

static size_t read_weight(struct trace_record *records, size_t count, uint32_t pid, int step,
			  uint64_t at, uint64_t weight, bool requires_grad, const char *shape)
{
	records[count] =
		python_call_record(pid, step, at, 5, "aten::linear", TRACE_PYTHON_TORCH_OP);
	tensor_argument(&records[count], "tensor:weight", weight);
	bool_argument(&records[count], "requires_grad:weight", requires_grad);
	text_argument(&records[count], "shape:weight", shape);
	return count + 1;
}

static size_t update_weight(struct trace_record *records, size_t count, uint32_t pid, int step,
			    uint64_t at, uint64_t weight)
{
	records[count] =
		python_call_record(pid, step, at, 3, "aten::add_.Tensor", TRACE_PYTHON_TORCH_OP);
	tensor_argument(&records[count], "tensor:self", weight);
	text_argument(&records[count], "shape:self", "Float[4, 4]");
	scalar_argument(&records[count], "arg:alpha", -0.1);
	return count + 1;
}

/* A forward that reads two weights, then an SGD step; 'ranks' is the job's world size. */
static size_t build_step(uint32_t pid, int step, enum second_weight second, int ranks,
			 struct trace_record *records)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	bool frozen = second == FROZEN_MOVED || second == FROZEN_STILL || second == CAST_REUSED ||
		      second == FROZEN_MOVED_WITHOUT_GRAD || second == COMPUTED_REUSED;
	size_t count = 0;

	/* Module calls around the reads: one model, or a second one around the second read. */
	if (second == OTHER_MODEL || second == OTHER_PIECE || second == LEFT_OUT_OF_ONE_MODEL)
		records[count++] = python_call_record(pid, step, base + 5,
						      second == LEFT_OUT_OF_ONE_MODEL ? 25 : 10,
						      TRACE_MODULE_CALL_NAME, 0);
	if (second == OTHER_MODEL || second == OTHER_PIECE) {
		records[count] =
			python_call_record(pid, step, base + 18, 10, TRACE_MODULE_CALL_NAME, 0);
		/* A module call's stage is its top module's mode. */
		records[count++].python_call.stage =
			second == OTHER_MODEL ? TRACE_STAGE_EVAL : TRACE_STAGE_TRAIN;
	}
	count = read_weight(records, count, pid, step, base + 10, WEIGHT_1, true, "Float[4, 4]");
	count = read_weight(records, count, pid, step, base + 20, WEIGHT_2, !frozen,
			    second == CAST_REUSED ? "BFloat16[4, 4]" : "Float[4, 4]");
	if (second == TARGET_NETWORK || second == FROZEN_MOVED_WITHOUT_GRAD)
		bool_argument(&records[count - 1], "grad_mode:weight", false);
	if (second == COMPUTED_REUSED)
		bool_argument(&records[count - 1], "grad_fn:weight", true);
	if (second != NOTHING_UPDATED)
		count = update_weight(records, count, pid, step, base + 110, WEIGHT_1);
	if (second == TRAINED || second == FROZEN_MOVED || second == CAST_REUSED ||
	    second == FROZEN_MOVED_WITHOUT_GRAD || second == COMPUTED_REUSED)
		count = update_weight(records, count, pid, step, base + 120, WEIGHT_2);
	/* The scope's record comes when it ends, after what ran inside it. */
	records[count++] = python_call_record(pid, step, base + 100, 100, "Optimizer.step#SGD.step",
					      TRACE_PYTHON_TORCH_SCOPE);
	for (size_t i = 0; i < count; i++)
		records[i].python_call.world_size = ranks;
	return count;
}

/* What a finding says, with the tensors it names (0: none), read before its events go. */
struct outcome {
	bool frozen_applies, frozen_holds, trainable_applies, trainable_holds;
	uint64_t frozen_read, frozen_update, trainable_read;
};

static uint64_t tensor_field(const struct infer_event *event, const char *field)
{
	return event ? strtoull(infer_event_field(event, field), NULL, 10) : 0;
}

static struct outcome judge(enum second_weight second, int ranks)
{
	struct string_pool *pool = string_pool_new();
	struct trace_record records[8];
	struct infer_event events[8];
	const struct infer_event *pointers[8];
	size_t count = build_step(10, 3, second, ranks, records);
	struct requires_grad_finding finding;
	struct outcome outcome = { 0 };

	for (size_t i = 0; i < count; i++) {
		CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[i], &events[i]), 1);
		CU_ASSERT_TRUE(requires_grad_updates_wants(&events[i]));
		pointers[i] = &events[i];
	}
	CU_ASSERT_EQUAL(requires_grad_updates_judge(pointers, count, NULL, NULL, &finding), 0);
	outcome = (struct outcome){
		.frozen_applies = finding.frozen_applies,
		.frozen_holds = finding.frozen_holds,
		.trainable_applies = finding.trainable_applies,
		.trainable_holds = finding.trainable_holds,
		.frozen_read = tensor_field(finding.frozen_read, "tensor:weight"),
		.frozen_update = tensor_field(finding.frozen_update, "tensor:self"),
		.trainable_read = tensor_field(finding.trainable_read, "tensor:weight"),
	};
	string_pool_free(pool);
	return outcome;
}

UNIT_TEST(requires_grad_updates, frozen_and_trainable_weights_against_the_step)
{
	struct outcome found = judge(TRAINED, -1);

	CU_ASSERT_TRUE(found.frozen_applies && found.frozen_holds);
	CU_ASSERT_TRUE(found.trainable_applies && found.trainable_holds);

	/* A frozen layer the optimizer still moves: the update and the read are named. */
	found = judge(FROZEN_MOVED, -1);
	CU_ASSERT_FALSE(found.frozen_holds);
	CU_ASSERT_EQUAL(found.frozen_read, WEIGHT_2);
	CU_ASSERT_EQUAL(found.frozen_update, WEIGHT_2);
	CU_ASSERT_TRUE(found.trainable_holds);

	/* Frozen and left alone: both hold. */
	found = judge(FROZEN_STILL, -1);
	CU_ASSERT_TRUE(found.frozen_holds);
	CU_ASSERT_TRUE(found.trainable_holds);

	/* An optimizer over part of the model. */
	found = judge(LEFT_OUT, -1);
	CU_ASSERT_TRUE(found.frozen_holds);
	CU_ASSERT_FALSE(found.trainable_holds);
	CU_ASSERT_EQUAL(found.trainable_read, WEIGHT_2);
	/* ... in a job of two ranks it may be a sharded optimizer: no example. */
	found = judge(LEFT_OUT, 2);
	CU_ASSERT_FALSE(found.trainable_applies);
	CU_ASSERT_TRUE(found.trainable_holds);

	/* A freed cast's address taken by a buffer of another dtype: not the tensor read. */
	found = judge(CAST_REUSED, -1);
	CU_ASSERT_TRUE(found.frozen_applies && found.frozen_holds);
	CU_ASSERT_TRUE(found.trainable_holds);

	/*
	 * A weight of a model kept in eval() read in the step (a distillation
	 * teacher's, under no_grad) and left alone: the step trains the model
	 * whose weight it changed. Left out of the same model's forward, or of a
	 * second piece in training mode called apart, it is still found.
	 */
	found = judge(OTHER_MODEL, -1);
	CU_ASSERT_TRUE(found.trainable_applies && found.trainable_holds);
	found = judge(LEFT_OUT_OF_ONE_MODEL, -1);
	CU_ASSERT_FALSE(found.trainable_holds);
	CU_ASSERT_EQUAL(found.trainable_read, WEIGHT_2);
	found = judge(OTHER_PIECE, -1);
	CU_ASSERT_FALSE(found.trainable_holds);
	CU_ASSERT_EQUAL(found.trainable_read, WEIGHT_2);

	/*
	 * A weight read with autograd off (a target network's, under no_grad)
	 * gets no gradient from the step: nothing asked of the optimizer. A
	 * frozen one read so and moved is still found.
	 */
	found = judge(TARGET_NETWORK, -1);
	CU_ASSERT_TRUE(found.trainable_applies && found.trainable_holds);
	found = judge(FROZEN_MOVED_WITHOUT_GRAD, -1);
	CU_ASSERT_FALSE(found.frozen_holds);
	CU_ASSERT_EQUAL(found.frozen_read, WEIGHT_2);

	/* A computed weight is no frozen parameter, whatever takes its address after. */
	found = judge(COMPUTED_REUSED, -1);
	CU_ASSERT_TRUE(found.frozen_applies && found.frozen_holds);
	CU_ASSERT_TRUE(found.trainable_holds);

	/* An optimizer that changes nothing is ParametersUpdated's, not this rule's. */
	found = judge(NOTHING_UPDATED, -1);
	CU_ASSERT_FALSE(found.trainable_applies);
	CU_ASSERT_TRUE(found.frozen_holds);
}

/*
 * A step whose second weight is read inside a reentrant checkpoint's
 * region (CheckpointFunction.forward: autograd off), and not updated: the
 * backward never ran the region again. In the model the step trains, after
 * a read with autograd on (open-unlearning#178); or in a second model run
 * whole under no_grad, whose first layer is read with autograd off too (a
 * distillation teacher whose blocks are checkpointed).
 */
static struct requires_grad_finding judge_checkpointed(bool teacher, struct string_pool *pool,
						       struct infer_event *events)
{
	struct trace_record records[8];
	const struct infer_event *pointers[8];
	uint64_t base = 1000000ULL;
	struct requires_grad_finding finding;
	size_t count = 0;

	records[count++] =
		python_call_record(10, 0, base + 5, teacher ? 10 : 45, TRACE_MODULE_CALL_NAME, 0);
	count = read_weight(records, count, 10, 0, base + 10, WEIGHT_1, true, "Float[4, 4]");
	if (teacher) {
		records[count++] =
			python_call_record(10, 0, base + 30, 20, TRACE_MODULE_CALL_NAME, 0);
		count = read_weight(records, count, 10, 0, base + 31, WEIGHT_3, true,
				    "Float[4, 4]");
		bool_argument(&records[count - 1], "grad_mode:weight", false);
	}
	records[count++] = python_call_record(10, 0, base + 37, 8, CHECKPOINT_FORWARD_NAME, 0);
	count = read_weight(records, count, 10, 0, base + 38, WEIGHT_2, true, "Float[4, 4]");
	bool_argument(&records[count - 1], "grad_mode:weight", false);
	count = update_weight(records, count, 10, 0, base + 110, WEIGHT_1);
	records[count++] = python_call_record(10, 0, base + 100, 100, "Optimizer.step#SGD.step",
					      TRACE_PYTHON_TORCH_SCOPE);
	for (size_t i = 0; i < count; i++) {
		CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[i], &events[i]), 1);
		CU_ASSERT_TRUE(requires_grad_updates_wants(&events[i]));
		pointers[i] = &events[i];
	}
	CU_ASSERT_EQUAL(requires_grad_updates_judge(pointers, count, NULL, NULL, &finding), 0);
	return finding;
}

UNIT_TEST(requires_grad_updates, a_checkpointed_region_never_run_again)
{
	struct string_pool *pool = string_pool_new();
	struct infer_event events[8];
	struct requires_grad_finding found = judge_checkpointed(false, pool, events);

	/* Read with autograd off, but the program trains around it: its weights must change. */
	CU_ASSERT_TRUE(found.trainable_applies);
	CU_ASSERT_FALSE(found.trainable_holds);
	CU_ASSERT_EQUAL(tensor_field(found.trainable_read, "tensor:weight"), WEIGHT_2);
	/* A teacher run whole under no_grad: its checkpointed blocks get no gradient. */
	found = judge_checkpointed(true, pool, events);
	CU_ASSERT_TRUE(found.trainable_applies && found.trainable_holds);
	string_pool_free(pool);
}

struct seen_violations {
	int frozen[8], trainable[8];
	int total;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct seen_violations *seen = context;
	bool frozen = violation->rule->relation == RELATION_FROZEN_UNCHANGED;

	if (!frozen && violation->rule->relation != RELATION_TRAINABLE_UPDATED)
		return;
	seen->total++;
	if (violation->step >= 0 && violation->step < 8)
		(frozen ? seen->frozen : seen->trainable)[violation->step]++;
}

UNIT_TEST(requires_grad_updates, inferred_from_healthy_steps_and_caught_where_they_break)
{
	static const enum second_weight run[6] = { TRAINED, FROZEN_STILL, FROZEN_MOVED,
						   TRAINED, LEFT_OUT,	  NOTHING_UPDATED };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct seen_violations seen = { { 0 }, { 0 }, 0 };
	struct trace_record records[8];
	int rules = 0;
	struct rule_checker *checker;

	for (int step = 0; step < 4; step++) {
		size_t count = build_step(20, step, step < 2 ? TRAINED : FROZEN_STILL, -1, records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];

		if (rule->relation != RELATION_FROZEN_UNCHANGED &&
		    rule->relation != RELATION_TRAINABLE_UPDATED)
			continue;
		rules++;
		CU_ASSERT_STRING_EQUAL(rule->event.name, OPTIMIZER_STEP_FAMILY);
		CU_ASSERT_EQUAL(rule->passing, 4);
		CU_ASSERT_EQUAL(rule->precondition.group_count, 0);
	}
	CU_ASSERT_EQUAL_FATAL(rules, 2);

	checker = rule_checker_new(set, count_violation, &seen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < 6; step++) {
		size_t count = build_step(30, step, run[step], -1, records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
	}
	rule_checker_finish(checker);
	/* The frozen layer moved at step 2, the layer left out at step 4: once each. */
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.frozen[2], 1);
	CU_ASSERT_EQUAL(seen.trainable[4], 1);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}
