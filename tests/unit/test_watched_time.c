// SPDX-License-Identifier: MIT
/*
 * Time tcheck-bpf did not watch (its ticks stopped: the machine paused, or
 * tcheck-bpf stopped or busy) and the hang and slowdown judgements across it.
 */
#include <stdbool.h>
#include <stdint.h>

#include "diagnose/diagnosis_report.h"
#include "diagnose/hang_detector.h"
#include "diagnose/progress_model.h"
#include "base/watched_time.h"
#include "diagnosis_job.h"
#include "unit.h"

#define SECOND 1000000000ull

UNIT_TEST(watched_time, a_gap_between_ticks_is_found_and_said_stopped_or_busy)
{
	struct watched_time watched = { 0 };
	struct watched_gap gap;

	/* Ticks every 100 ms, with tcheck-bpf's CPU time: nothing unwatched. */
	for (uint64_t t = 1; t <= 30; t++)
		CU_ASSERT_FALSE(watched_time_tick(&watched, t * SECOND / 10, t * 1000, &gap));
	CU_ASSERT_TRUE(watched_time_current(&watched, 3 * SECOND + 2 * SECOND));
	/* Ticks stopped: what is seen later is not judged until the next tick. */
	CU_ASSERT_FALSE(watched_time_current(&watched, 3 * SECOND + WATCHED_TIME_GAP_NS + 1));
	/* 20 s later, with 5 us of CPU used over them: it was not running. */
	CU_ASSERT_TRUE_FATAL(watched_time_tick(&watched, 23 * SECOND, 35000, &gap));
	CU_ASSERT_EQUAL(gap.start_ns, 3 * SECOND);
	CU_ASSERT_EQUAL(gap.length_ns, 20 * SECOND);
	CU_ASSERT_TRUE(gap.stopped);
	CU_ASSERT_TRUE(watched_time_current(&watched, 23 * SECOND + SECOND));
	/* A silence that began before the gap is counted from its end; a later one as it is. */
	CU_ASSERT_EQUAL(watched_time_silent_since(&watched, 2 * SECOND), 23 * SECOND);
	CU_ASSERT_EQUAL(watched_time_silent_since(&watched, 24 * SECOND), 24 * SECOND);
	CU_ASSERT_TRUE(watched_time_spans_gap(&watched, 2 * SECOND, 23 * SECOND + 1));
	CU_ASSERT_FALSE(watched_time_spans_gap(&watched, 23 * SECOND, 24 * SECOND));
	CU_ASSERT_FALSE(watched_time_spans_gap(&watched, SECOND, 2 * SECOND));
	/* 5 s in which it used 4 s of CPU: busy, not stopped. */
	CU_ASSERT_TRUE_FATAL(watched_time_tick(&watched, 28 * SECOND, 35000 + 4 * SECOND, &gap));
	CU_ASSERT_FALSE(gap.stopped);
	CU_ASSERT_EQUAL(watched.gaps, 2);
	CU_ASSERT_EQUAL(watched.unwatched_ns, 25 * SECOND);
	/* A tick that knows no CPU time (a trace's) keeps the last one known. */
	CU_ASSERT_FALSE(watched_time_tick(&watched, 28 * SECOND + SECOND / 10, 0, &gap));
	CU_ASSERT_TRUE_FATAL(
		watched_time_tick(&watched, 40 * SECOND, 35000 + 4 * SECOND + 10, &gap));
	CU_ASSERT_TRUE(gap.stopped);
}

UNIT_TEST(watched_time, a_trace_without_ticks_is_judged_as_it_comes)
{
	struct watched_time watched = { 0 };

	CU_ASSERT_TRUE(watched_time_current(&watched, 1000 * SECOND));
	CU_ASSERT_EQUAL(watched_time_silent_since(&watched, 5 * SECOND), 5 * SECOND);
	CU_ASSERT_FALSE(watched_time_spans_gap(&watched, 0, 1000 * SECOND));
}

/* Ticks every 100 ms from 'from' to 'to' (the live loop's), the model's clock with them. */
static void tick_through(struct progress_model *model, uint64_t from, uint64_t to)
{
	for (uint64_t t = from; t <= to; t += SECOND / 10) {
		watched_time_tick(&model->watched, t, t / 1000, NULL);
		progress_model_advance(model, t);
	}
}

/*
 * The machine pauses 20 s with the job: its silence across the pause is no
 * hang; a silence that goes on after it is, one limit after the resume.
 */
UNIT_TEST(watched_time, silence_across_a_pause_is_no_hang_and_after_it_is)
{
	/* The default options: a silence of a second at least is a hang. */
	struct job job = { .model = progress_model_new(NULL) };
	struct diagnosis_report reports[4];
	uint64_t last, resumed;

	CU_ASSERT_PTR_NOT_NULL_FATAL(job.model);
	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	job_run_step(&job, 10, 2, -1, 0, 0); /* rank 2 has not issued step 10 yet */
	last = job.model->comms[0].last_progress_ns;
	tick_through(job.model, last, last + SECOND / 2);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	/* Paused: the next tick comes 20 s later. */
	resumed = last + SECOND / 2 + 20 * SECOND;
	CU_ASSERT_TRUE(watched_time_tick(&job.model->watched, resumed, resumed / 1000, NULL));
	progress_model_advance(job.model, resumed);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	tick_through(job.model, resumed, resumed + SECOND / 2);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	/* Rank 2 still silent a second after the resume: that is a hang, and it is named. */
	tick_through(job.model, resumed + SECOND / 2, resumed + SECOND + SECOND / 5);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_TRUE(reports[0].detected_ns > resumed);
	progress_model_free(job.model);
}
