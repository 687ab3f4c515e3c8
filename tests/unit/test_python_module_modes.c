// SPDX-License-Identifier: MIT
/*
 * The stage from the modes of the models a program runs: a model trained
 * beside an EMA copy or a distillation teacher kept in eval(), a model
 * evaluated alone, a batch norm frozen by hand inside a model, dropout
 * modules put back in train() inside a model in eval() (their own mode), and a tracer
 * that does not follow module calls (the last mode call's stage).
 */
#include "model/trace_records.h"
#include "python/python_module_modes.h"
#include "unit.h"

#define MODEL 0x1000
#define SHADOW 0x2000
#define TEACHER 0x3000
#define BATCH_NORM 0x1100
#define DROPOUT 0x1200

static uint32_t stage(const struct python_module_modes *modes)
{
	return python_module_modes_stage(modes, true);
}

UNIT_TEST(python_module_modes, a_model_trained_beside_a_copy_kept_in_eval)
{
	struct python_module_modes modes;

	python_module_modes_init(&modes);
	/* copy.deepcopy(model).eval(): no model has run yet, the stage is not known. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, SHADOW, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_UNKNOWN);
	/* The model, never given train(), runs in its default mode: training. */
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, MODEL, MODEL), 1);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_TRAIN);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, MODEL, MODEL), 0);
	/* The copy evaluated: the model still trains. */
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, SHADOW, SHADOW), 1);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_TRAIN);
	/* Both in eval(): an evaluation; the model back in train(): training. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_EVAL);
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_TRAIN), 0);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_TRAIN);
	/* Where module calls are not followed: the last mode call's stage, as before. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, SHADOW, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_EQUAL(python_module_modes_stage(&modes, false), TRACE_STAGE_EVAL);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_TRAIN);
	python_module_modes_free(&modes);
}

UNIT_TEST(python_module_modes, a_student_put_in_train_before_its_teacher_in_eval)
{
	struct python_module_modes modes;

	python_module_modes_init(&modes);
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_TRAIN), 0);
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, TEACHER, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, TEACHER, TEACHER), 1);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_EVAL);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, MODEL, MODEL), 1);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_TRAIN);
	/* Each model's own mode, for its module calls. */
	CU_ASSERT_EQUAL(python_module_modes_of(&modes, TEACHER), TRACE_STAGE_EVAL);
	CU_ASSERT_EQUAL(python_module_modes_of(&modes, MODEL), TRACE_STAGE_TRAIN);
	python_module_modes_free(&modes);
}

UNIT_TEST(python_module_modes, a_batch_norm_frozen_inside_a_model_sets_no_model_mode)
{
	struct python_module_modes modes;

	python_module_modes_init(&modes);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, BATCH_NORM, MODEL), 0);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, MODEL, MODEL), 1);
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_TRAIN), 0);
	/* for m in model.modules(): if batch norm, m.eval(): the model still trains. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, BATCH_NORM, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_TRAIN);
	/* The model alone put in eval(): an evaluation. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_EVAL);
	python_module_modes_free(&modes);
}

UNIT_TEST(python_module_modes, dropout_put_back_in_train_inside_a_model_in_eval_has_its_own_mode)
{
	struct python_module_modes modes;
	uint32_t own = TRACE_STAGE_UNKNOWN;

	python_module_modes_init(&modes);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, DROPOUT, MODEL), 0);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, MODEL, MODEL), 1);
	/* Training: the dropout has its model's mode. */
	CU_ASSERT_FALSE(python_module_modes_own(&modes, DROPOUT, MODEL, &own));
	/* Monte Carlo dropout: model.eval(), then the dropout's train(). */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_FALSE(python_module_modes_own(&modes, DROPOUT, MODEL, &own));
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, DROPOUT, TRACE_STAGE_TRAIN), 0);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_EVAL);
	CU_ASSERT_TRUE(python_module_modes_own(&modes, DROPOUT, MODEL, &own));
	CU_ASSERT_EQUAL(own, TRACE_STAGE_TRAIN);
	/* The model itself is no submodule of its own. */
	CU_ASSERT_FALSE(python_module_modes_own(&modes, MODEL, MODEL, &own));
	/* model.train() sets every submodule's mode: none is its own any more. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_TRAIN), 0);
	CU_ASSERT_FALSE(python_module_modes_own(&modes, DROPOUT, MODEL, &own));
	/* Nor after the next model.eval(), until the dropout's own train() again. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_FALSE(python_module_modes_own(&modes, DROPOUT, MODEL, &own));
	python_module_modes_free(&modes);
}

UNIT_TEST(python_module_modes, a_mode_given_before_the_module_was_seen_inside_its_model)
{
	struct python_module_modes modes;
	uint32_t own = TRACE_STAGE_UNKNOWN;

	python_module_modes_init(&modes);
	/* A fresh model sampled at once: eval(), the dropouts' train(), then the first forward. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, DROPOUT, TRACE_STAGE_TRAIN), 0);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, DROPOUT, MODEL), 0);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, MODEL, MODEL), 1);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_EVAL);
	CU_ASSERT_TRUE(python_module_modes_own(&modes, DROPOUT, MODEL, &own));
	CU_ASSERT_EQUAL(own, TRACE_STAGE_TRAIN);
	/* A batch norm frozen by hand while the model trains: its own mode is eval. */
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, MODEL, TRACE_STAGE_TRAIN), 0);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, BATCH_NORM, MODEL), 0);
	CU_ASSERT_EQUAL(python_module_modes_set(&modes, BATCH_NORM, TRACE_STAGE_EVAL), 0);
	CU_ASSERT_TRUE(python_module_modes_own(&modes, BATCH_NORM, MODEL, &own));
	CU_ASSERT_EQUAL(own, TRACE_STAGE_EVAL);
	CU_ASSERT_EQUAL(stage(&modes), TRACE_STAGE_TRAIN);
	python_module_modes_free(&modes);
}

UNIT_TEST(python_module_modes, a_module_built_in_sight_and_never_given_a_mode)
{
	struct python_module_modes modes;

	python_module_modes_init(&modes);
	/* self.stages = ... in its constructor, then trained without model.train(). */
	CU_ASSERT_EQUAL(python_module_modes_attribute_set(&modes, MODEL, false), 0);
	CU_ASSERT_EQUAL(python_module_modes_attribute_set(&modes, MODEL, false), 0);
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, MODEL, MODEL), 1);
	CU_ASSERT_TRUE(python_module_modes_never_set(&modes, MODEL));
	/* model.train() at last: Module.train sets its flag and its children's. */
	CU_ASSERT_EQUAL(python_module_modes_attribute_set(&modes, MODEL, true), 0);
	CU_ASSERT_EQUAL(python_module_modes_attribute_set(&modes, BATCH_NORM, true), 0);
	CU_ASSERT_FALSE(python_module_modes_never_set(&modes, MODEL));
	CU_ASSERT_FALSE(python_module_modes_never_set(&modes, BATCH_NORM));

	/*
	 * A model the tracer first met running (attached to a job under way):
	 * an attribute set later is no sight of its building, and an earlier
	 * train() is not known, so it is never said to lack one.
	 */
	CU_ASSERT_EQUAL(python_module_modes_called(&modes, SHADOW, SHADOW), 1);
	CU_ASSERT_EQUAL(python_module_modes_attribute_set(&modes, SHADOW, false), 0);
	CU_ASSERT_FALSE(python_module_modes_never_set(&modes, SHADOW));
	/* A module never seen at all, and no module. */
	CU_ASSERT_FALSE(python_module_modes_never_set(&modes, TEACHER));
	CU_ASSERT_EQUAL(python_module_modes_attribute_set(&modes, 0, true), 0);
	CU_ASSERT_FALSE(python_module_modes_never_set(&modes, 0));
	python_module_modes_free(&modes);
}
