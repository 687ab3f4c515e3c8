// SPDX-License-Identifier: MIT
/* Step and stage over time: looked up at entry times, changes arriving out of order, overflow. */
#include "model/trace_records.h"
#include "python/python_meta.h"
#include "unit.h"

UNIT_TEST(python_meta, state_at_entry_time_not_arrival)
{
	struct python_meta_timeline timeline;
	struct python_meta_state state;

	python_meta_init(&timeline);
	state = python_meta_at(&timeline, 5);
	CU_ASSERT_EQUAL(state.step, 0);
	CU_ASSERT_EQUAL(state.stage, TRACE_STAGE_UNKNOWN);
	python_meta_set_stage(&timeline, 100, TRACE_STAGE_TRAIN);
	python_meta_advance_step(&timeline, 200); /* step 0 ends at 200 */
	python_meta_set_stage(&timeline, 250, TRACE_STAGE_EVAL);
	python_meta_set_stage(&timeline, 260, TRACE_STAGE_EVAL); /* no change: not remembered */
	CU_ASSERT_EQUAL(timeline.count, 3);
	python_meta_set_stage(&timeline, 300, TRACE_STAGE_TRAIN);
	python_meta_advance_step(&timeline, 400);

	/* A call that began before step 0 ended is in step 0, whenever its record arrives. */
	state = python_meta_at(&timeline, 150);
	CU_ASSERT_EQUAL(state.step, 0);
	CU_ASSERT_EQUAL(state.stage, TRACE_STAGE_TRAIN);
	state = python_meta_at(&timeline, 200);
	CU_ASSERT_EQUAL(state.step, 1);
	state = python_meta_at(&timeline, 270);
	CU_ASSERT_EQUAL(state.step, 1);
	CU_ASSERT_EQUAL(state.stage, TRACE_STAGE_EVAL);
	state = python_meta_at(&timeline, 350);
	CU_ASSERT_EQUAL(state.stage, TRACE_STAGE_TRAIN);
	state = python_meta_at(&timeline, 1000);
	CU_ASSERT_EQUAL(state.step, 2);
	state = python_meta_at(&timeline, 50);
	CU_ASSERT_EQUAL(state.step, 0);
	CU_ASSERT_EQUAL(state.stage, TRACE_STAGE_UNKNOWN);
}

UNIT_TEST(python_meta, oldest_changes_fold_into_the_initial_state)
{
	struct python_meta_timeline timeline;
	struct python_meta_state state;

	python_meta_init(&timeline);
	for (int i = 1; i <= PYTHON_META_CHANGES + 10; i++)
		python_meta_advance_step(&timeline, (uint64_t)i * 10);
	CU_ASSERT_EQUAL(timeline.count, PYTHON_META_CHANGES);
	CU_ASSERT_EQUAL(timeline.current.step, PYTHON_META_CHANGES + 10);
	/* Changes 1-10 are forgotten: before change 11 the step is 10. */
	state = python_meta_at(&timeline, 5);
	CU_ASSERT_EQUAL(state.step, 10);
	state = python_meta_at(&timeline, 115);
	CU_ASSERT_EQUAL(state.step, 11);
	state = python_meta_at(&timeline, (PYTHON_META_CHANGES + 10) * 10);
	CU_ASSERT_EQUAL(state.step, PYTHON_META_CHANGES + 10);
}

UNIT_TEST(python_meta, a_marker_around_the_last_one_ends_the_same_step)
{
	struct python_meta_timeline timeline;
	struct python_meta_state state;

	python_meta_init(&timeline);
	/* ZeroRedundancyOptimizer.step (100-300) runs Adam.step (150-200): one step. */
	python_meta_end_step(&timeline, 150, 200);
	python_meta_end_step(&timeline, 100, 300);
	CU_ASSERT_EQUAL(timeline.current.step, 1);
	state = python_meta_at(&timeline, 250);
	CU_ASSERT_EQUAL(state.step, 0);
	state = python_meta_at(&timeline, 300);
	CU_ASSERT_EQUAL(state.step, 1);
	/* The next iteration's markers, nested the same way: step 2 from its outer return. */
	python_meta_set_stage(&timeline, 350, TRACE_STAGE_TRAIN);
	python_meta_end_step(&timeline, 450, 500);
	python_meta_end_step(&timeline, 400, 600);
	CU_ASSERT_EQUAL(timeline.current.step, 2);
	state = python_meta_at(&timeline, 550);
	CU_ASSERT_EQUAL(state.step, 1);
	CU_ASSERT_EQUAL(state.stage, TRACE_STAGE_TRAIN);
	state = python_meta_at(&timeline, 600);
	CU_ASSERT_EQUAL(state.step, 2);
	/* Two markers one after the other (two optimizers, a GAN): two steps. */
	python_meta_end_step(&timeline, 700, 800);
	python_meta_end_step(&timeline, 900, 1000);
	CU_ASSERT_EQUAL(timeline.current.step, 4);
	state = python_meta_at(&timeline, 850);
	CU_ASSERT_EQUAL(state.step, 3);
}
