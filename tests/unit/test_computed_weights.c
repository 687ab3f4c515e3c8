// SPDX-License-Identifier: MIT
/*
 * Weights computed in the forward from a parameter (spectral_norm,
 * weight_norm, parametrize): the optimizer changes weight_orig, which the
 * forward never reads, and the forward reads a new tensor each time, whose
 * freed address an optimizer temporary may take. Neither ParametersUpdated
 * nor FrozenUnchanged judges such a weight; a frozen layer is still judged.
 * Nor does ParametersUpdated judge a step that trains a matrix through
 * operators the probes do not watch (a soft prompt joined with torch.cat).
 */
#include <stdlib.h>
#include <string.h>

#include "base/u64_map.h"
#include "infer/parameter_updates.h"
#include "infer/requires_grad_updates.h"
#include "nccl_records.h"
#include "unit.h"

#define COMPUTED 0x5000 /* the weight the forward reads: weight_orig / sigma */
#define ORIGINAL 0x6000 /* weight_orig, the parameter */
#define FROZEN 0x7000	/* a frozen layer's weight */
#define BIAS 0x8000
#define MAX_RECORDS 8

static void add_argument(struct trace_record *record, struct trace_python_arg arg)
{
	record->python_call.args[record->python_call.arg_count++] = arg;
}

/* An operator naming one tensor: as the torch operator probes record it. */
static struct trace_record tensor_op(uint64_t entry_ns, const char *name, const char *role,
				     uint64_t tensor, const char *shape, bool requires_grad,
				     double alpha)
{
	struct trace_record record =
		python_call_record(10, 2, entry_ns, 3, name, TRACE_PYTHON_TORCH_OP);
	char *field = strcmp(role, "weight") == 0 ? "tensor:weight" : "tensor:self";

	add_argument(&record, (struct trace_python_arg){ .name = field,
							 .type = TRACE_VALUE_INT,
							 .integer = (int64_t)tensor });
	add_argument(&record,
		     (struct trace_python_arg){ .name = strcmp(role, "weight") == 0 ? "shape:weight"
										    : "shape:self",
						.type = TRACE_VALUE_STR,
						.text = shape });
	add_argument(&record, (struct trace_python_arg){ .name = strcmp(role, "weight") == 0
									 ? "requires_grad:weight"
									 : "requires_grad:self",
							 .type = TRACE_VALUE_BOOL,
							 .integer = requires_grad });
	if (alpha != 0)
		add_argument(&record, (struct trace_python_arg){ .name = "arg:alpha",
								 .type = TRACE_VALUE_FLOAT,
								 .real = alpha });
	return record;
}

/*
 * One step: the forward reads 'read' (requires grad or not, shaped [4, 3]),
 * then the optimizer's step changes weight_orig or the bias ('parameter',
 * requiring grad) and a temporary ([4, 3], requiring none) that took the
 * address of the tensor read.
 */
static size_t build_step(uint64_t read, bool read_requires_grad, uint64_t parameter,
			 const char *parameter_shape, struct trace_record *records)
{
	size_t count = 0;

	records[count++] = tensor_op(100, "aten::linear", "weight", read, "Float[4, 3]",
				     read_requires_grad, 0);
	records[count++] =
		tensor_op(210, "aten::add_.Tensor", "self", read, "Float[4, 3]", false, 1);
	records[count++] =
		tensor_op(220, "aten::addcdiv_", "self", parameter, parameter_shape, true, -0.01);
	records[count++] = python_call_record(10, 2, 200, 100, "Optimizer.step#Adam.step",
					      TRACE_PYTHON_TORCH_SCOPE);
	return count;
}

struct judged {
	struct parameter_updates_finding updates;
	struct requires_grad_finding requires_grad;
	bool in_history; /* the weight read was taken for one the optimizer changes */
};

/* Judges the step, after earlier steps that changed 'read' when 'before'. */
static struct judged judge(uint64_t read, bool read_requires_grad, uint64_t parameter,
			   const char *parameter_shape, bool before)
{
	struct string_pool *pool = string_pool_new();
	struct trace_record records[MAX_RECORDS];
	struct infer_event events[MAX_RECORDS];
	const struct infer_event *pointers[MAX_RECORDS];
	size_t count = build_step(read, read_requires_grad, parameter, parameter_shape, records);
	struct u64_map history;
	struct judged judged;

	u64_map_init(&history);
	if (before)
		CU_ASSERT_EQUAL(u64_map_put(&history, read, &history), 0);
	for (size_t i = 0; i < count; i++) {
		CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[i], &events[i]), 1);
		pointers[i] = &events[i];
	}
	CU_ASSERT_EQUAL(parameter_updates_judge(pointers, count, &history, NULL, &judged.updates),
			0);
	CU_ASSERT_EQUAL(
		requires_grad_updates_judge(pointers, count, NULL, NULL, &judged.requires_grad), 0);
	judged.in_history = u64_map_get(&history, read) != NULL;
	u64_map_free(&history);
	string_pool_free(pool);
	return judged;
}

UNIT_TEST(computed_weights, a_spectral_normalised_weight_is_no_parameter)
{
	struct judged judged = judge(COMPUTED, false, ORIGINAL, "Float[4, 3]", false);

	/* Nothing the forward reads is a parameter: no example, and nothing frozen changed. */
	CU_ASSERT_FALSE(judged.updates.applies);
	CU_ASSERT_TRUE(judged.updates.holds);
	CU_ASSERT_EQUAL(judged.updates.weights, 0);
	CU_ASSERT_TRUE(judged.requires_grad.frozen_holds);
	/* The temporary at its address changed no parameter: not remembered as one. */
	CU_ASSERT_FALSE(judged.in_history);
}

UNIT_TEST(computed_weights, a_frozen_layer_is_still_judged)
{
	/* Every layer frozen, the optimizer changes a bias (another shape): caught. */
	struct judged judged = judge(FROZEN, false, BIAS, "Float[4]", false);

	CU_ASSERT_TRUE(judged.updates.applies);
	CU_ASSERT_FALSE(judged.updates.holds);
	CU_ASSERT_EQUAL(judged.updates.weights, 1);
	/* A temporary's update at its address changes no weight... */
	CU_ASSERT_EQUAL(judged.updates.changed, 0);
	/* ... but FrozenUnchanged still sees the tensor read frozen changed in place. */
	CU_ASSERT_FALSE(judged.requires_grad.frozen_holds);

	/*
	 * The only layer read, frozen mid-run (changed before, read frozen now):
	 * nothing the forward reads changes, caught as such; a frozen weight is
	 * expected to stop, so not as one that stopped.
	 */
	judged = judge(FROZEN, false, BIAS, "Float[4]", true);
	CU_ASSERT_FALSE(judged.updates.holds);
	CU_ASSERT_FALSE(judged.updates.stopped);

	/* A trainable weight read beside an unread parameter of its shape is judged too. */
	judged = judge(FROZEN, true, ORIGINAL, "Float[4, 3]", true);
	CU_ASSERT_TRUE(judged.updates.applies);
	CU_ASSERT_EQUAL(judged.updates.weights, 1);
	CU_ASSERT_TRUE(judged.updates.stopped);
}

/*
 * The first step of a GAN whose discriminator is spectral-normalised (SN-GAN):
 * the discriminator's step reads the generator's weights (to make its fake
 * batch; trained in the other turn, which has not come yet) and its own
 * computed weights, and changes its weight_orig. The computed weights changed
 * with it: the step changed weights the forward reads.
 */
UNIT_TEST(computed_weights, a_computed_weight_changed_by_the_step_counts_as_changed)
{
	struct string_pool *pool = string_pool_new();
	struct trace_record records[MAX_RECORDS];
	struct infer_event events[MAX_RECORDS];
	const struct infer_event *pointers[MAX_RECORDS];
	struct parameter_updates_finding finding;
	struct u64_map history;
	size_t count;

	count = build_step(COMPUTED, false, ORIGINAL, "Float[4, 3]", records);
	records[count++] = tensor_op(90, "aten::linear", "weight", FROZEN, "Float[3, 2]", true, 0);
	u64_map_init(&history);
	for (size_t i = 0; i < count; i++) {
		CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[i], &events[i]), 1);
		pointers[i] = &events[i];
	}
	CU_ASSERT_EQUAL(parameter_updates_judge(pointers, count, &history, NULL, &finding), 0);
	CU_ASSERT_TRUE(finding.applies);
	CU_ASSERT_TRUE(finding.holds);
	CU_ASSERT_EQUAL(finding.weights, 1);

	/* The same step once the generator's weight stopped changing: still caught. */
	CU_ASSERT_EQUAL(u64_map_put(&history, FROZEN, &history), 0);
	CU_ASSERT_EQUAL(parameter_updates_judge(pointers, count, &history, NULL, &finding), 0);
	CU_ASSERT_FALSE(finding.holds);
	CU_ASSERT_TRUE(finding.stopped);
	u64_map_free(&history);
	string_pool_free(pool);
}

UNIT_TEST(computed_weights, a_matrix_trained_through_unwatched_operators_is_no_example)
{
	/*
	 * Prompt tuning: every weight the forward reads is frozen, the optimizer
	 * changes a matrix of another shape that no watched operator reads (the
	 * soft prompt, joined to the embeddings with torch.cat): not judged.
	 */
	struct judged judged = judge(FROZEN, false, BIAS, "Float[8, 5]", false);

	CU_ASSERT_FALSE(judged.updates.applies);
	CU_ASSERT_TRUE(judged.updates.holds);
	/*
	 * The optimizer changes a matrix of the shape of the trainable weight the
	 * forward reads, and not that weight: a stale model's, caught as before.
	 */
	judged = judge(FROZEN, true, BIAS, "Float[4, 3]", false);
	CU_ASSERT_TRUE(judged.updates.applies);
	CU_ASSERT_FALSE(judged.updates.holds);
	/* Only a bias changes while every matrix is frozen (forum 84911): caught as before. */
	judged = judge(FROZEN, false, BIAS, "Float[8]", false);
	CU_ASSERT_TRUE(judged.updates.applies);
	CU_ASSERT_FALSE(judged.updates.holds);
}
