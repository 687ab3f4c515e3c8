// SPDX-License-Identifier: MIT
/* Step and stage over time: looked up at entry times, changes arriving out of order, overflow. */
#include <string.h>

#include "model/trace_records.h"
#include "python/python_meta.h"
#include "python/torch_held_ops.h"
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

UNIT_TEST(python_meta, what_runs_between_a_nested_markers_return_and_the_outer_ones_stays)
{
	struct python_meta_timeline timeline;

	python_meta_init(&timeline);
	/*
	 * ZeroRedundancyOptimizer.step (100-300) seen opening, its local Adam.step
	 * (150-200), then the shards' broadcasts (250) before the outer return.
	 */
	python_meta_marker_opens(&timeline, 100);
	python_meta_marker_opens(&timeline, 150);
	python_meta_end_step(&timeline, 150, 200);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 250).step, 0);
	python_meta_end_step(&timeline, 100, 300);
	CU_ASSERT_EQUAL(timeline.current.step, 1);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 250).step, 0);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 300).step, 1);
	/* The next iteration, the outer return lost: the next backward pass ends the hold. */
	python_meta_marker_opens(&timeline, 400);
	python_meta_marker_opens(&timeline, 450);
	python_meta_end_step(&timeline, 450, 500);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 550).step, 1);
	python_meta_note_backward(&timeline, 700);
	CU_ASSERT_EQUAL(timeline.current.step, 2);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 550).step, 1);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 700).step, 2);
	/* A marker on its own after that (seen opening) ends its step at its return. */
	python_meta_marker_opens(&timeline, 800);
	python_meta_end_step(&timeline, 800, 900);
	CU_ASSERT_EQUAL(timeline.current.step, 3);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 900).step, 3);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 850).step, 2);
}

UNIT_TEST(python_meta, a_second_optimizers_step_continues_the_step)
{
	struct python_meta_timeline timeline;

	python_meta_init(&timeline);
	/* Backward at 50, SGD.step 100-200, then AdamW.step 250-300: one step. */
	python_meta_note_backward(&timeline, 50);
	python_meta_end_step(&timeline, 100, 200);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 220).step, 1);
	python_meta_marker_opens(&timeline, 250);
	CU_ASSERT_TRUE(timeline.continuing);
	CU_ASSERT_EQUAL(timeline.current.step, 0);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 220).step, 0);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 280).step, 0);
	python_meta_end_step(&timeline, 250, 300);
	CU_ASSERT_FALSE(timeline.continuing);
	CU_ASSERT_EQUAL(timeline.current.step, 1);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 299).step, 0);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 300).step, 1);
	/* The next iteration: its backward, then both optimizers again, one step more. */
	python_meta_note_backward(&timeline, 400);
	python_meta_marker_opens(&timeline, 500);
	CU_ASSERT_FALSE(timeline.continuing);
	python_meta_end_step(&timeline, 500, 600);
	python_meta_marker_opens(&timeline, 650);
	python_meta_end_step(&timeline, 650, 700);
	CU_ASSERT_EQUAL(timeline.current.step, 2);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 680).step, 1);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 700).step, 2);
	/* Each returned: none is left open to hold a later marker's end as nested in it. */
	CU_ASSERT_EQUAL(timeline.open_marker_entry_ns, 0);
	/* A third optimizer with no backward pass before it continues the same step. */
	python_meta_marker_opens(&timeline, 800);
	python_meta_end_step(&timeline, 800, 900);
	CU_ASSERT_EQUAL(timeline.current.step, 2);
	CU_ASSERT_EQUAL(timeline.open_marker_entry_ns, 0);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 900).step, 2);
}

UNIT_TEST(python_meta, a_marker_after_a_backward_or_around_its_own_is_the_next_step)
{
	struct python_meta_timeline timeline;

	python_meta_init(&timeline);
	/* No backward seen yet: a second marker is a step of its own. */
	python_meta_end_step(&timeline, 10, 20);
	python_meta_marker_opens(&timeline, 30);
	CU_ASSERT_FALSE(timeline.continuing);
	python_meta_end_step(&timeline, 30, 40);
	CU_ASSERT_EQUAL(timeline.current.step, 2);
	/* A GAN: the generator's backward (220) runs between the two optimizers' steps. */
	python_meta_note_backward(&timeline, 50);
	python_meta_end_step(&timeline, 100, 200);
	python_meta_note_backward(&timeline, 220);
	python_meta_marker_opens(&timeline, 250);
	CU_ASSERT_FALSE(timeline.continuing);
	python_meta_end_step(&timeline, 250, 300);
	CU_ASSERT_EQUAL(timeline.current.step, 4);
	/* LBFGS: the closure's backward runs inside the marker; each marker is a step. */
	python_meta_marker_opens(&timeline, 400);
	python_meta_note_backward(&timeline, 420);
	python_meta_end_step(&timeline, 400, 500);
	python_meta_marker_opens(&timeline, 550);
	CU_ASSERT_FALSE(timeline.continuing);
	python_meta_note_backward(&timeline, 570);
	python_meta_end_step(&timeline, 550, 650);
	CU_ASSERT_EQUAL(timeline.current.step, 6);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 600).step, 5);
}

UNIT_TEST(python_meta, a_held_end_whose_marker_never_returned_ends_at_the_next_backward)
{
	struct python_meta_timeline timeline;

	python_meta_init(&timeline);
	python_meta_note_backward(&timeline, 50);
	python_meta_end_step(&timeline, 100, 200);
	python_meta_marker_opens(&timeline, 250);
	/* The second marker's record was lost: the next backward starts step 1. */
	python_meta_note_backward(&timeline, 400);
	CU_ASSERT_FALSE(timeline.continuing);
	CU_ASSERT_EQUAL(timeline.current.step, 1);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 350).step, 0);
	CU_ASSERT_EQUAL(python_meta_at(&timeline, 400).step, 1);
	python_meta_end_step(&timeline, 500, 600);
	CU_ASSERT_EQUAL(timeline.current.step, 2);
}

UNIT_TEST(python_meta, operators_after_a_steps_end_wait_for_the_next_call_or_scope)
{
	static struct torch_held_ops held;
	struct tcheck_torch_op_record record = { .header = { .timestamp_ns = 150 } };

	memset(&held, 0, sizeof(held));
	CU_ASSERT_FALSE(torch_held_ops_keep(&held, &record)); /* no step ended yet */
	torch_held_ops_start(&held, 100);
	record.header.timestamp_ns = 90; /* entered before the end: placed as it comes */
	CU_ASSERT_FALSE(torch_held_ops_keep(&held, &record));
	for (int i = 0; i < TORCH_HELD_OPS_MAX; i++) {
		record.header.timestamp_ns = 150 + (uint64_t)i;
		CU_ASSERT_TRUE(torch_held_ops_keep(&held, &record));
	}
	CU_ASSERT_FALSE(torch_held_ops_keep(&held, &record)); /* full */
	CU_ASSERT_EQUAL(held.count, TORCH_HELD_OPS_MAX);
	CU_ASSERT_EQUAL(held.ops[3].header.timestamp_ns, 153);
	/* A call that began before the end (a wrapper of the marker) settles nothing. */
	CU_ASSERT_FALSE(torch_held_ops_settled_by(&held, 90));
	CU_ASSERT_TRUE(torch_held_ops_settled_by(&held, 120));
	torch_held_ops_free(&held);
	CU_ASSERT_PTR_NULL(held.ops);
	CU_ASSERT_FALSE(held.holding);
}

/*
 * A program's own in-place updates between two optimizers' steps (an EMA of
 * the first one's parameters: a mul_ and an add_ a tensor) are many more
 * than the 32 once held: all must wait for the second optimizer's opening.
 */
UNIT_TEST(python_meta, hundreds_of_operators_between_two_optimizers_steps_are_held)
{
	struct torch_held_ops held = { 0 };
	struct tcheck_torch_op_record record = { 0 };

	torch_held_ops_start(&held, 100);
	for (int i = 0; i < 1000; i++) {
		record.header.timestamp_ns = 101 + (uint64_t)i;
		CU_ASSERT_TRUE_FATAL(torch_held_ops_keep(&held, &record));
	}
	CU_ASSERT_EQUAL(held.count, 1000);
	CU_ASSERT_EQUAL(held.ops[999].header.timestamp_ns, 1100);
	CU_ASSERT_TRUE(held.capacity >= 1000 && held.capacity <= TORCH_HELD_OPS_MAX);
	torch_held_ops_free(&held);
}
