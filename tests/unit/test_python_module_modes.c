// SPDX-License-Identifier: MIT
/*
 * The stage from the modes of the models a program runs: a model trained
 * beside an EMA copy or a distillation teacher kept in eval(), a model
 * evaluated alone, a batch norm frozen by hand inside a model, and a tracer
 * that does not follow module calls (the last mode call's stage).
 */
#include "model/trace_records.h"
#include "python/python_module_modes.h"
#include "unit.h"

#define MODEL 0x1000
#define SHADOW 0x2000
#define TEACHER 0x3000
#define BATCH_NORM 0x1100

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
