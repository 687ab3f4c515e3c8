// SPDX-License-Identifier: MIT
/*
 * Tests of the slowdown detector (stragglers, lateness within jitter,
 * pipeline bubbles, stalls of several communicators, waits for a CPU) and
 * of the report's JSON, on hand-built call streams whose answer is known
 * by construction.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/diagnosis_report.h"
#include "diagnose/hang_detector.h"
#include "diagnose/job_diagnosis.h"
#include "diagnose/mismatch_detector.h"
#include "diagnose/progress_model.h"
#include "diagnose/slowdown_detector.h"
#include "diagnosis_job.h"
#include "unit.h"

UNIT_TEST(slowdown_detection, late_rank_is_the_straggler_of_a_slow_step)
{
	struct job job = job_new();

	for (int step = 0; step < 12; step++)
		job_run_step(&job, step, -1, step == 8 ? 3 : -1, step == 8 ? 2 * STEP_NS : 0,
			     step > 8 ? 2 * STEP_NS : 0);
	CU_ASSERT_EQUAL_FATAL(job.slow_count, 1);
	CU_ASSERT_EQUAL(job.slow[0].kind, DIAGNOSIS_SLOWDOWN);
	CU_ASSERT_EQUAL(job.slow[0].step, 8);
	CU_ASSERT_EQUAL(job.slow[0].ranks[0].rank, 3);
	CU_ASSERT_STRING_EQUAL(job.slow[0].function, "ncclAllReduce");
	CU_ASSERT_EQUAL(job.slow[0].seq, 16);
	CU_ASSERT_EQUAL(job.slow[0].in_collective, 0);
	CU_ASSERT_EQUAL(job.slow[0].skew_ns, 2 * STEP_NS);
	/* The slow step did not teach the model a longer step. */
	CU_ASSERT_DOUBLE_EQUAL(job.model->comms[0].expected_step_ns, (double)STEP_NS, 1.0);
	progress_model_free(job.model);
}

UNIT_TEST(slowdown_detection, every_rank_late_together_names_no_straggler)
{
	struct job job = job_new();

	/* From step 8 on, every rank starts 1.5 steps later: they all waited on something else. */
	for (int step = 0; step < 12; step++)
		job_run_step(&job, step, -1, -1, 0, step >= 8 ? 3 * STEP_NS / 2 : 0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}

UNIT_TEST(slowdown_detection, slowdown_is_judged_when_the_straggler_arrives)
{
	struct job job = job_new();

	for (int step = 0; step < 9; step++)
		job_run_step(&job, step, -1, step == 8 ? 1 : -1, step == 8 ? 6 * STEP_NS / 10 : 0,
			     0);
	CU_ASSERT_EQUAL_FATAL(job.slow_count, 1);
	/* The evidence is complete when the late rank reaches the all-reduce. */
	CU_ASSERT_EQUAL(job.slow[0].detected_ns,
			8 * STEP_NS + 1000000000ull + 1000000 + 6 * STEP_NS / 10);
	CU_ASSERT_EQUAL(job.slow[0].lead_ns, 6 * STEP_NS / 10);
	CU_ASSERT_DOUBLE_EQUAL(job.slow[0].excess_ns, 6.0 * STEP_NS / 10, 1.0);
	CU_ASSERT_DOUBLE_EQUAL(job.slow[0].expected_step_ns, (double)STEP_NS, 1.0);
	progress_model_free(job.model);
}

/*
 * Every step one rank or another reaches the all-reduce 0 to 4.5 ms late
 * (a busy host's scheduling): lateness the job shows all the time is no
 * slowdown, though 4.5 ms is over the threshold of 0.4 steps. 20 ms is.
 */
UNIT_TEST(slowdown_detection, lateness_within_the_jobs_own_jitter_is_no_slowdown)
{
	struct job job = job_new();

	for (int step = 0; step < 30; step++)
		job_run_step(&job, step, -1, step % RANKS, (uint64_t)(step * 7 % 10) * 500000, 0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	CU_ASSERT_TRUE(job.model->comms[0].arrival_lead.jitter_ns > 0);
	job_run_step(&job, 30, -1, 2, 2 * STEP_NS, 0);
	CU_ASSERT_EQUAL_FATAL(job.slow_count, 1);
	CU_ASSERT_EQUAL(job.slow[0].ranks[0].rank, 2);
	progress_model_free(job.model);
}

/*
 * A step where calls block: rank 0 sends to rank 1 (an ncclSend on the
 * pair communicator, whose ncclRecv in rank 1 returns only once the send
 * came), then every rank all-reduces on the world and waits inside it for
 * the last. Rank 0 computes 'extra_ns' longer before its send in this step.
 */
static void blocking_step(struct job *job, int step, uint64_t extra_ns)
{
	uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull,
		 send = start + 2000000 + extra_ns;
	uint64_t arrival[RANKS], last = 0;

	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call;

		if (rank <= 1) {
			/* Rank 1 enters its receive on time and returns when the send came. */
			call = job_collective(rank == 0 ? "ncclSend" : "ncclRecv", 512, rank, step,
					      rank == 0 ? send : start + 2000000);
			call.param_count = 6;
			call.comm_id = PAIR_COMM_ID;
			call.nranks = 2;
			call.duration_ns = rank == 0 ? 1000 : send + 1000 - call.entry_ns;
			job_feed(job, &call);
		}
		arrival[rank] = rank <= 1 ? send + 1000 + 3000000 : start + 5000000;
		last = arrival[rank] > last ? arrival[rank] : last;
	}
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call =
			job_collective("ncclAllReduce", 256, rank, step, arrival[rank]);

		call.duration_ns = last + 1000 - arrival[rank];
		job_feed(job, &call);
	}
}

/*
 * Rank 0 computes 6 ms longer before its send at step 12: rank 1 waits for
 * it inside its receive and reaches the all-reduce with it, so no rank
 * arrives after the others, yet rank 0 is the straggler: it computed 6 ms
 * longer than any other rank, rank 1 spent them inside its receive.
 */
UNIT_TEST(slowdown_detection, straggler_others_waited_for_inside_blocking_calls)
{
	struct job job = job_new();

	for (int step = 0; step < 12; step++)
		blocking_step(&job, step, (uint64_t)(step % 3) * 100000);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	blocking_step(&job, 12, 6000000);
	CU_ASSERT_EQUAL_FATAL(job.slow_count, 1);
	CU_ASSERT_EQUAL(job.slow[0].ranks[0].rank, 0);
	CU_ASSERT_TRUE(job.slow[0].others_waited);
	CU_ASSERT_FALSE(job.slow[0].in_collective);
	CU_ASSERT_DOUBLE_EQUAL((double)job.slow[0].lead_ns, 6e6, 0.2e6);
	CU_ASSERT_EQUAL(job.slow[0].step, 12);
	progress_model_free(job.model);
}

UNIT_TEST(slowdown_detection, delay_below_the_threshold_is_not_a_slowdown)
{
	struct job job = job_new();

	/* 0.3 steps late: within slowdown_threshold 1.4. */
	for (int step = 0; step < 12; step++)
		job_run_step(&job, step, -1, step == 8 ? 1 : -1, step == 8 ? 3 * STEP_NS / 10 : 0,
			     0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}

/* A collective of a two-stage pipeline's pair (stage 0 is rank 0, stage 1 rank 1). */
static void pipeline_collective(struct job *job, int rank, int64_t seq, uint64_t entry_ns)
{
	struct trace_nccl_call call = job_collective("ncclAllReduce", 512, rank, seq, entry_ns);

	call.comm_id = PAIR_COMM_ID;
	call.nranks = 2;
	job_feed(job, &call);
}

UNIT_TEST(slowdown_detection, delay_absorbed_by_a_pipeline_bubble_is_not_reported)
{
	struct job job = job_new();

	/*
	 * Stage 1 waits for stage 0's activations: it reaches the step's
	 * all-reduce 5 ms after stage 0 (its bubble). Stage 0 is delayed
	 * 4 ms at step 8 (the bubble absorbs it) and 12 ms at step 10
	 * (7 ms of it are on the critical path).
	 */
	for (int step = 0; step < 12; step++) {
		uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull;
		uint64_t delay = step == 8 ? 4000000 : step == 10 ? 12000000 : 0;

		pipeline_collective(&job, 0, step, start + 1000000 + delay);
		pipeline_collective(&job, 1, step, start + 6000000);
	}
	CU_ASSERT_EQUAL_FATAL(job.slow_count, 1);
	CU_ASSERT_EQUAL(job.slow[0].step, 10);
	CU_ASSERT_EQUAL(job.slow[0].ranks[0].rank, 0);
	CU_ASSERT_DOUBLE_EQUAL(job.slow[0].excess_ns, 7000000.0, 1.0);
	progress_model_free(job.model);
}

/* Step 'step' of the pair communicator of ranks 0 and 1: one all-reduce 8 ms into the step. */
static void pair_step(struct job *job, int step)
{
	uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull;

	pipeline_collective(job, 0, step, start + 8000000);
	pipeline_collective(job, 1, step, start + 8000000);
}

UNIT_TEST(slowdown_detection, communicators_waiting_on_a_rank_left_behind_are_one_report)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 10; step++) {
		job_run_step(&job, step, -1, -1, 0, 0);
		pair_step(&job, step);
	}
	/* Rank 2 never issues step 10; ranks 0 and 1 issue all of theirs, then wait on it. */
	job_run_step(&job, 10, 2, -1, 0, 0);
	pair_step(&job, 10);
	progress_model_advance(job.model, job.model->now_ns + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_EQUAL(reports[0].hang_class, HANG_HOST);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_EQUAL(reports[0].waiting_comms, 1);
	progress_model_free(job.model);
}

UNIT_TEST(slowdown_detection, communicators_stuck_together_are_one_stall)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 11; step++) {
		job_run_step(&job, step, -1, -1, 0, 0);
		pair_step(&job, step);
	}
	progress_model_advance(job.model, job.model->now_ns + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	/* The all-gather at 6 ms went quiet before the pair's all-reduce at 8 ms. */
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_EQUAL(reports[0].hang_class, HANG_DEVICE_OR_NETWORK);
	CU_ASSERT_EQUAL(reports[0].waiting_comms, 1);
	/* Reported once: a later check finds nothing new. */
	progress_model_advance(job.model, job.model->now_ns + STEP_NS);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_free(job.model);
}

UNIT_TEST(slowdown_detection, stall_long_after_a_reported_one_is_reported_again)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];

	/* The pair communicator falls silent after step 10 and is reported. */
	for (int step = 0; step < 11; step++) {
		job_run_step(&job, step, -1, -1, 0, 0);
		pair_step(&job, step);
	}
	for (int step = 11; step < 15; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	progress_model_advance(job.model, job.model->now_ns + STEP_NS / 2);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].comm_id, PAIR_COMM_ID);
	/* Ten steps later the job's communicator stalls: a stall of its own. */
	for (int step = 15; step < 25; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	progress_model_advance(job.model, job.model->now_ns + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_EQUAL(reports[0].waiting_comms, 0);
	progress_model_free(job.model);
}

UNIT_TEST(slowdown_detection, first_late_rank_of_a_slow_stretch_is_the_one_reported)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);
	struct progress_options options;
	struct job_diagnosis *diagnosis;

	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	progress_options_default(&options);
	options.slowdown_min_ns = 0; /* steps of 10 ms: no floor of 10 ms */
	diagnosis = job_diagnosis_new(&options, out, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(diagnosis);
	/*
	 * Rank 3 reaches the step's all-reduce 6 ms late at step 8; rank 1,
	 * which waited on it, reaches the pair's all-reduce 5 ms late after
	 * it. One slowdown: rank 3's.
	 */
	for (int step = 0; step < 10; step++) {
		uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull;

		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call = job_collective(
				"ncclAllReduce", 256, rank, step,
				start + 1000000 + (step == 8 && rank == 3 ? 6000000 : 0));

			job_record_call(diagnosis, &call);
		}
		for (int rank = 0; rank < 2; rank++) {
			struct trace_nccl_call call = job_collective(
				"ncclAllReduce", 512, rank, step,
				start + 7500000 + (step == 8 && rank == 1 ? 5000000 : 0));

			call.comm_id = PAIR_COMM_ID;
			call.nranks = 2;
			job_record_call(diagnosis, &call);
		}
	}
	job_diagnosis_finish(diagnosis);
	fclose(out);
	CU_ASSERT_EQUAL(job_diagnosis_slowdown_count(diagnosis), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "straggler rank 3 "));
	CU_ASSERT_PTR_NULL(strstr(text, "straggler rank 1 "));
	job_diagnosis_free(diagnosis);
	free(text);
}

UNIT_TEST(slowdown_detection, report_as_json)
{
	struct diagnosis_report report;
	json_t *object;

	memset(&report, 0, sizeof(report));
	report.kind = DIAGNOSIS_HANG;
	report.comm_id = COMM_ID;
	report.nranks = 4;
	report.function = "ncclAllReduce";
	report.seq = 20;
	report.hang_class = HANG_HOST;
	report.rank_count = 1;
	report.ranks[0] =
		(struct diagnosis_rank){ 2, 6, 1002, { "ncclAllGather", 64, 5, 1, 19, -1 } };
	object = diagnosis_report_json(&report);
	CU_ASSERT_PTR_NOT_NULL_FATAL(object);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "kind")), "hang");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "comm_id")),
			       "0xabcdef0123456789");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(object, "class")), "host");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(object, "seq")), 20);
	CU_ASSERT_EQUAL(
		json_integer_value(json_object_get(
			json_array_get(json_object_get(object, "lagging_ranks"), 0), "job_rank")),
		6);
	json_decref(object);
}

/*
 * Step 8: rank 1 reaches the all-reduce 6 ms late, as in
 * slowdown_is_judged_when_the_straggler_arrives, but its thread spent those
 * 6 ms runnable, waiting for a CPU (its calls' run delay grows by that
 * much): the host's scheduler, no straggler. A rank late by its own work
 * (its run delay unchanged) still is one.
 */
static void run_c10d_step(struct job *job, int step, int late_rank, uint64_t late_ns,
			  uint64_t cpu_wait_ns)
{
	uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull;

	for (int rank = 0; rank < RANKS; rank++) {
		uint64_t delay = rank == late_rank ? late_ns : 0;
		struct trace_nccl_call call =
			job_collective("c10d::allreduce", 256, rank, step, start + 1000000 + delay);

		/* Every thread waits 50 us a step; the late one 'cpu_wait_ns' more this step. */
		call.param_count = 5;
		call.params[4] = 1000000 + (uint64_t)step * 50000 +
				 (rank == late_rank ? cpu_wait_ns : 0) +
				 (rank == 1 && step > 8 ? cpu_wait_ns : 0);
		job_feed(job, &call);
	}
}

UNIT_TEST(slowdown_detection, a_rank_late_waiting_for_a_cpu_is_no_straggler)
{
	struct job descheduled = job_new(), slow = job_new();

	for (int step = 0; step < 10; step++) {
		run_c10d_step(&descheduled, step, step == 8 ? 1 : -1, 6 * STEP_NS / 10,
			      step == 8 ? 6 * STEP_NS / 10 : 0);
		run_c10d_step(&slow, step, step == 8 ? 1 : -1, 6 * STEP_NS / 10, 0);
	}
	CU_ASSERT_EQUAL(descheduled.slow_count, 0);
	CU_ASSERT_EQUAL_FATAL(slow.slow_count, 1);
	CU_ASSERT_EQUAL(slow.slow[0].ranks[0].rank, 1);
	progress_model_free(descheduled.model);
	progress_model_free(slow.model);
}

/*
 * Rank 1's all-gather of step 5 never reached the model (a record lost on
 * the way). Paired by count alone, each of its later calls would meet its
 * peers' call before, half a step earlier, and make it a straggler every
 * step; lined up by the tracer's numbering, the steady steps show no
 * slowdown, and rank 3, late at step 9, is still the one named.
 */
UNIT_TEST(slowdown_detection, a_lost_call_makes_no_straggler)
{
	struct job job = job_new();

	for (int step = 0; step < 12; step++) {
		uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull;

		for (int rank = 0; rank < RANKS; rank++) {
			uint64_t late = step == 9 && rank == 3 ? 6 * STEP_NS / 10 : 0;
			struct trace_nccl_call call = job_collective(
				"ncclAllReduce", 256, rank, 2 * step, start + 1000000 + late);

			job_feed(&job, &call);
			if (rank == 1 && step == 5)
				continue;
			call = job_collective("ncclAllGather", 64, rank, 2 * step + 1,
					      start + 6000000 + (step == 9 ? 6 * STEP_NS / 10 : 0));
			job_feed(&job, &call);
		}
	}
	CU_ASSERT_EQUAL_FATAL(job.slow_count, 1);
	CU_ASSERT_EQUAL(job.slow[0].ranks[0].rank, 3);
	CU_ASSERT_EQUAL(job.slow[0].step, 9);
	CU_ASSERT_STRING_EQUAL(job.slow[0].function, "ncclAllReduce");
	progress_model_free(job.model);
}
