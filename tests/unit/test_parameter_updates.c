// SPDX-License-Identifier: MIT
/*
 * ParametersUpdated on hand-built steps with known answers: the weights a
 * forward reads against the updates inside the optimizer's step, the rule
 * inferred from healthy steps and its violations at the steps that break it.
 */
#include <stdlib.h>
#include <string.h>

#include "base/u64_map.h"
#include "infer/inference.h"
#include "infer/parameter_updates.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

#define WEIGHT_1 0x5000
#define WEIGHT_2 0x6000
#define BUFFER 0x7000
#define BIAS 0x8000

/* How one step goes wrong, if it does. */
enum step_fault {
	HEALTHY,
	SECOND_NOT_UPDATED, /* the optimizer holds one parameter only */
	SECOND_FROZEN,	    /* the program froze the second (requires_grad False) */
	ZERO_SCALE,	    /* learning rate 0: alpha = -0.0 */
	NO_UPDATE,	    /* every layer frozen */
	FUSED,		    /* a fused kernel updates the parameters: only step counters show */
	FUSED_FROZEN,	    /* the same, but the forward reads frozen weights */
	OTHER_TENSOR,	    /* the optimizer changes a parameter the forward does not read */
	/* the second read with autograd off (a target network under no_grad), not updated */
	SECOND_WITHOUT_GRAD,
	/* a sharded optimizer's empty share: nothing updated, the weights broadcast to it */
	EMPTY_SHARE,
	/* a bfloat16 model: the optimizer updates float32 masters, copied into it afterwards */
	MASTER_WEIGHTS,
	/* a float32 model whose optimizer holds other tensors of the same sizes (a stale model's)
	 */
	STALE_SAME_SIZES,
};

static void tensor_argument(struct trace_record *record, const char *field, uint64_t tensor)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field,
					  .type = TRACE_VALUE_INT,
					  .integer = (int64_t)tensor };
}

static void scalar_argument(struct trace_record *record, const char *field, double value)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field, .type = TRACE_VALUE_FLOAT, .real = value };
}

static void requires_grad_argument(struct trace_record *record, const char *field, bool value)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field,
					  .type = TRACE_VALUE_BOOL,
					  .integer = value };
}

#define MASTER_1 0x9000
#define MASTER_2 0xa000

/* The weights' shapes as the probe records them, in the model's dtype. */
static void shape_argument(struct trace_record *record, const char *field, const char *dtype,
			   const char *sizes)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];
	static char texts[8][32];
	static unsigned next;
	char *text = texts[next++ % 8];

	snprintf(text, sizeof(texts[0]), "%s%s", dtype, sizes);
	*arg = (struct trace_python_arg){ .name = field, .type = TRACE_VALUE_STR, .text = text };
}

/* Both weights read in 'dtype', then the optimizer's step on float32 tensors of their sizes. */
static size_t build_master_step(uint32_t pid, int step, const char *dtype,
				struct trace_record *records)
{
	static const char *const sizes[2] = { "[40, 10]", "[3, 40]" };
	static const uint64_t weights[2] = { WEIGHT_1, WEIGHT_2 },
			      masters[2] = { MASTER_1, MASTER_2 };
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	size_t count = 0;

	for (int i = 0; i < 2; i++) {
		records[count] = python_call_record(pid, step, base + 10 * (i + 1), 5,
						    "aten::linear", TRACE_PYTHON_TORCH_OP);
		tensor_argument(&records[count], "tensor:weight", weights[i]);
		requires_grad_argument(&records[count], "requires_grad:weight", true);
		shape_argument(&records[count++], "shape:weight", dtype, sizes[i]);
	}
	for (int i = 0; i < 2; i++) {
		records[count] = python_call_record(pid, step, base + 110 + 10 * i, 3,
						    "aten::add_.Tensor", TRACE_PYTHON_TORCH_OP);
		tensor_argument(&records[count], "tensor:self", masters[i]);
		requires_grad_argument(&records[count], "requires_grad:self", true);
		shape_argument(&records[count], "shape:self", "Float", sizes[i]);
		scalar_argument(&records[count++], "arg:alpha", -0.1);
	}
	records[count++] = python_call_record(pid, step, base + 100, 100, "Optimizer.step#SGD.step",
					      TRACE_PYTHON_TORCH_SCOPE);
	return count;
}

/* A forward that reads two weights, then an SGD step with momentum; records in arrival order. */
static size_t build_step(uint32_t pid, int step, enum step_fault fault,
			 struct trace_record *records)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	size_t count = 0;

	records[count] =
		python_call_record(pid, step, base + 10, 5, "aten::linear", TRACE_PYTHON_TORCH_OP);
	tensor_argument(&records[count], "tensor:weight", WEIGHT_1);
	requires_grad_argument(&records[count++], "requires_grad:weight", fault != FUSED_FROZEN);
	records[count] =
		python_call_record(pid, step, base + 20, 5, "aten::linear", TRACE_PYTHON_TORCH_OP);
	tensor_argument(&records[count], "tensor:weight", WEIGHT_2);
	requires_grad_argument(&records[count], "requires_grad:weight",
			       fault != FUSED_FROZEN && fault != SECOND_FROZEN);
	if (fault == SECOND_WITHOUT_GRAD)
		requires_grad_argument(&records[count], "grad_mode:weight", false);
	count++;
	if (fault == FUSED || fault == FUSED_FROZEN) {
		/* A fused AdamW's step counter: a 0-dim tensor that does not require grad. */
		records[count] = python_call_record(pid, step, base + 105, 3, "aten::add_.Tensor",
						    TRACE_PYTHON_TORCH_OP);
		tensor_argument(&records[count], "tensor:self", BUFFER);
		requires_grad_argument(&records[count], "requires_grad:self", false);
		scalar_argument(&records[count++], "arg:alpha", 1);
		records[count++] =
			python_call_record(pid, step, base + 100, 100, "Optimizer.step#AdamW.step",
					   TRACE_PYTHON_TORCH_SCOPE);
		return count;
	}
	if (fault == OTHER_TENSOR) {
		records[count] = python_call_record(pid, step, base + 110, 3, "aten::add_.Tensor",
						    TRACE_PYTHON_TORCH_OP);
		tensor_argument(&records[count], "tensor:self", BIAS);
		requires_grad_argument(&records[count], "requires_grad:self", true);
		scalar_argument(&records[count++], "arg:alpha", -0.1);
	}
	if (fault == EMPTY_SHARE) {
		/* torch's ZeroRedundancyOptimizer: the owners broadcast what they updated. */
		records[count] =
			nccl_call_record("c10d::broadcast", pid, 1, 8, 0xc0, 3, 640, base + 130);
		records[count++].call.step = step;
		records[count++] = python_call_record(pid, step, base + 100, 100,
						      "Optimizer.step#ZeroRedundancyOptimizer.step",
						      TRACE_PYTHON_TORCH_SCOPE);
		return count;
	}
	/* The momentum buffer's update is no parameter's. */
	records[count] = python_call_record(pid, step, base + 105, 3, "aten::mul_.Scalar",
					    TRACE_PYTHON_TORCH_OP);
	tensor_argument(&records[count], "tensor:self", BUFFER);
	scalar_argument(&records[count++], "arg:other", 0.9);
	if (fault != NO_UPDATE && fault != OTHER_TENSOR) {
		records[count] = python_call_record(pid, step, base + 110, 3, "aten::add_.Tensor",
						    TRACE_PYTHON_TORCH_OP);
		tensor_argument(&records[count], "tensor:self", WEIGHT_1);
		scalar_argument(&records[count++], "arg:alpha", fault == ZERO_SCALE ? -0.0 : -0.1);
	}
	if (fault == HEALTHY || fault == ZERO_SCALE) {
		records[count] = python_call_record(pid, step, base + 120, 3, "aten::add_.Tensor",
						    TRACE_PYTHON_TORCH_OP);
		tensor_argument(&records[count], "tensor:self", WEIGHT_2);
		scalar_argument(&records[count++], "arg:alpha", fault == ZERO_SCALE ? -0.0 : -0.1);
	}
	/* The scope's record comes when it ends, after what ran inside it. */
	records[count++] = python_call_record(pid, step, base + 100, 100, "Optimizer.step#SGD.step",
					      TRACE_PYTHON_TORCH_SCOPE);
	return count;
}

/*
 * What the last step judged left: whether WEIGHT_2 is among the weights
 * changed before, and the weight its notice names (0: none).
 */
static bool weight_2_remembered;
static uint64_t frozen_named;
/* What another optimizer taking turns changed in the step before (NULL: no turns). */
static const struct u64_map *other_turn;

/*
 * Judges one step after earlier steps that changed 'before' weights
 * (WEIGHT_1 and WEIGHT_2, or none); 'unchanged' is the weight the finding
 * must name (0: none).
 */
static void judge_in_job(enum step_fault fault, bool before, uint64_t unchanged, int world_size,
			 struct parameter_updates_finding *finding)
{
	struct string_pool *pool = string_pool_new();
	struct trace_record records[8];
	struct infer_event events[8];
	const struct infer_event *pointers[8];
	size_t count = fault == MASTER_WEIGHTS	   ? build_master_step(10, 3, "BFloat16", records)
		       : fault == STALE_SAME_SIZES ? build_master_step(10, 3, "Float", records)
						   : build_step(10, 3, fault, records);
	struct u64_map history;

	u64_map_init(&history);
	if (before) {
		CU_ASSERT_EQUAL(u64_map_put(&history, WEIGHT_1, &history), 0);
		CU_ASSERT_EQUAL(u64_map_put(&history, WEIGHT_2, &history), 0);
	}
	for (size_t i = 0; i < count; i++) {
		if (records[i].kind == TRACE_RECORD_PYTHON_CALL) {
			records[i].python_call.rank = world_size > 1 ? 1 : -1;
			records[i].python_call.world_size = world_size;
		} else {
			records[i].call.nranks = world_size > 1 ? world_size : 1;
			records[i].call.rank = world_size > 1 ? 1 : 0;
		}
		CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[i], &events[i]), 1);
		CU_ASSERT_TRUE(parameter_updates_wants(&events[i]));
		pointers[i] = &events[i];
	}
	CU_ASSERT_EQUAL(parameter_updates_judge(pointers, count, &history, other_turn, finding), 0);
	CU_ASSERT_EQUAL(finding->read ? strtoull(infer_event_field(finding->read, "tensor:weight"),
						 NULL, 10)
				      : 0,
			unchanged);
	/* What the step changed is remembered. */
	if (fault == HEALTHY)
		CU_ASSERT_PTR_NOT_NULL(u64_map_get(&history, WEIGHT_2));
	weight_2_remembered = u64_map_get(&history, WEIGHT_2) != NULL;
	frozen_named =
		finding->frozen
			? strtoull(infer_event_field(finding->frozen, "tensor:weight"), NULL, 10)
			: 0;
	u64_map_free(&history);
	string_pool_free(pool);
}

/* The same, in a single process. */
static void judge(enum step_fault fault, bool before, uint64_t unchanged,
		  struct parameter_updates_finding *finding)
{
	judge_in_job(fault, before, unchanged, -1, finding);
}

UNIT_TEST(parameter_updates, each_weight_read_against_what_the_step_changes)
{
	struct parameter_updates_finding finding;

	judge(HEALTHY, false, 0, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_EQUAL(finding.weights, 2);
	CU_ASSERT_EQUAL(finding.changed, 2);

	/* A layer frozen from the start (a fine-tuned head's backbone): fine. */
	judge(SECOND_NOT_UPDATED, false, 0, &finding);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_EQUAL(finding.changed, 1);
	/* One that was updated before and is no longer. */
	judge(SECOND_NOT_UPDATED, true, WEIGHT_2, &finding);
	CU_ASSERT_FALSE(finding.holds);
	CU_ASSERT_TRUE(finding.stopped);
	CU_ASSERT_PTR_NULL(finding.update);

	/*
	 * One the program froze mid-run: read with requires_grad False, it stops
	 * changing as it should. No violation, but a notice naming it, once: it
	 * is no longer among the weights changed before.
	 */
	judge(SECOND_FROZEN, true, 0, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_FALSE(finding.stopped);
	CU_ASSERT_EQUAL(frozen_named, WEIGHT_2);
	CU_ASSERT_FALSE(weight_2_remembered);
	/* Frozen from the start, it was never changed: nothing to say. */
	judge(SECOND_FROZEN, false, 0, &finding);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_EQUAL(frozen_named, 0);
	/* Still requiring grad when it stops: a violation, no notice. */
	judge(SECOND_NOT_UPDATED, true, WEIGHT_2, &finding);
	CU_ASSERT_EQUAL(frozen_named, 0);

	/* Nothing the forward reads changes: every layer frozen, or a zero learning rate. */
	judge(NO_UPDATE, false, WEIGHT_1, &finding);
	CU_ASSERT_FALSE(finding.holds);
	CU_ASSERT_FALSE(finding.stopped);
	CU_ASSERT_PTR_NULL(finding.update);
	judge(ZERO_SCALE, false, WEIGHT_1, &finding);
	CU_ASSERT_FALSE(finding.holds);
	CU_ASSERT_PTR_NOT_NULL(finding.update);

	/*
	 * A fused optimizer: its step updated only its step counters and the
	 * weights read require grad: its parameter updates ran out of sight, no
	 * example. With frozen weights read, it is judged (and fails).
	 */
	judge(FUSED, true, 0, &finding);
	CU_ASSERT_FALSE(finding.applies);
	judge(FUSED_FROZEN, true, WEIGHT_1, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_FALSE(finding.holds);
}

UNIT_TEST(parameter_updates, a_model_in_bfloat16_moves_by_its_float32_masters)
{
	struct parameter_updates_finding finding;

	/*
	 * The optimizer changed float32 tensors the forward did not read, of the
	 * sizes of the bfloat16 weights it read: their master copies.
	 */
	judge(MASTER_WEIGHTS, true, 0, &finding);
	CU_ASSERT_TRUE(finding.holds);
	/* Each read is a copy, as a reparametrised weight is computed: none left unchanged. */
	CU_ASSERT_EQUAL(finding.weights, 0);
	/* In float32, the same step changed another model's tensors: the one it trains never. */
	judge(STALE_SAME_SIZES, false, WEIGHT_1, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_FALSE(finding.holds);
}

UNIT_TEST(parameter_updates, reads_without_autograd_and_the_other_turns_weights)
{
	struct parameter_updates_finding finding;
	struct u64_map turn;

	/*
	 * A weight changed before and now read with autograd off only (a
	 * target network's copy under no_grad): no gradient reaches it from
	 * the step, so it is not asked to change. Read with autograd on, the
	 * same is a layer that stopped.
	 */
	judge(SECOND_WITHOUT_GRAD, true, 0, &finding);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_EQUAL(finding.weights, 1);
	judge(SECOND_NOT_UPDATED, true, WEIGHT_2, &finding);
	CU_ASSERT_FALSE(finding.holds);
	/*
	 * Where the step takes its turn after another optimizer's that changed
	 * it (a GAN's generator step reading the discriminator): the other
	 * model's, trained in its turn. Even with nothing read changed here.
	 */
	u64_map_init(&turn);
	CU_ASSERT_EQUAL(u64_map_put(&turn, WEIGHT_2, &turn), 0);
	other_turn = &turn;
	judge(SECOND_NOT_UPDATED, true, 0, &finding);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_EQUAL(finding.other_turn, 1);
	CU_ASSERT_EQUAL(u64_map_put(&turn, WEIGHT_1, &turn), 0);
	judge(NO_UPDATE, true, 0, &finding);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_EQUAL(finding.changed, 0);
	other_turn = NULL;
	/* Without the turn, the same step changes nothing it reads. */
	judge(NO_UPDATE, true, WEIGHT_1, &finding);
	CU_ASSERT_FALSE(finding.holds);
	u64_map_free(&turn);
}

UNIT_TEST(parameter_updates, a_rank_of_a_sharded_optimizer_holds_another_shard)
{
	struct parameter_updates_finding finding;

	/* One process whose optimizer changes a parameter its forward never reads: caught. */
	judge(OTHER_TENSOR, false, WEIGHT_1, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_FALSE(finding.holds);
	/*
	 * Rank 1 of 2 doing the same holds another shard (ZeRO-style): the weights it
	 * reads are its peers' to change. No example.
	 */
	judge_in_job(OTHER_TENSOR, false, 0, 2, &finding);
	CU_ASSERT_FALSE(finding.applies);
	CU_ASSERT_TRUE(finding.holds);
	/* But a rank that changed the weights it reads before and stopped is judged. */
	judge_in_job(OTHER_TENSOR, true, WEIGHT_1, 2, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_FALSE(finding.holds);
	/* A rank whose optimizer changes nothing at all (frozen, lr 0) is judged too. */
	judge_in_job(NO_UPDATE, false, WEIGHT_1, 2, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_FALSE(finding.holds);
	judge_in_job(ZERO_SCALE, false, WEIGHT_1, 2, &finding);
	CU_ASSERT_FALSE(finding.holds);
	/*
	 * More ranks than the optimizer has parameters to share out: rank 1's share
	 * is empty, its step changes nothing and receives the weights by broadcast.
	 */
	judge_in_job(EMPTY_SHARE, false, 0, 8, &finding);
	CU_ASSERT_FALSE(finding.applies);
	CU_ASSERT_TRUE(finding.holds);
	/* A single process whose step only broadcasts changes nothing it reads: caught. */
	judge(EMPTY_SHARE, false, WEIGHT_1, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_FALSE(finding.holds);
	/* A rank that changed the weights it reads before and stopped is judged. */
	judge_in_job(EMPTY_SHARE, true, WEIGHT_1, 8, &finding);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_FALSE(finding.holds);
}

struct update_violations {
	int at[8];
	int total;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct update_violations *seen = context;

	if (violation->rule->relation != RELATION_PARAMETERS_UPDATED)
		return;
	seen->total++;
	if (violation->step >= 0 && violation->step < 8)
		seen->at[violation->step]++;
}

UNIT_TEST(parameter_updates, inferred_from_healthy_steps_and_caught_where_they_break)
{
	static const enum step_fault broken[6] = { HEALTHY, HEALTHY,	NO_UPDATE,
						   HEALTHY, ZERO_SCALE, SECOND_NOT_UPDATED };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct update_violations seen = { { 0 }, 0 };
	struct trace_record records[8];
	const struct rule *rule = NULL;
	struct rule_checker *checker;

	for (int step = 0; step < 4; step++) {
		size_t count = build_step(20, step, HEALTHY, records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_PARAMETERS_UPDATED)
			rule = &set->rules[i];
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_STRING_EQUAL(rule->event.name, OPTIMIZER_STEP_FAMILY);
	CU_ASSERT_EQUAL(rule->passing, 4);
	CU_ASSERT_EQUAL(rule->precondition.group_count, 0);

	checker = rule_checker_new(set, count_violation, &seen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < 6; step++) {
		size_t count = build_step(30, step, broken[step], records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
	}
	rule_checker_finish(checker);
	/* Frozen, zero learning rate, a parameter no longer updated: at those steps, once each. */
	CU_ASSERT_EQUAL(seen.total, 3);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	CU_ASSERT_EQUAL(seen.at[4], 1);
	CU_ASSERT_EQUAL(seen.at[5], 1);
	rule_checker_free(checker);

	/* A process whose second layer is frozen from its first step: nothing. */
	memset(&seen, 0, sizeof(seen));
	checker = rule_checker_new(set, count_violation, &seen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < 6; step++) {
		size_t count = build_step(40, step, SECOND_NOT_UPDATED, records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
	}
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(seen.total, 0);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}
