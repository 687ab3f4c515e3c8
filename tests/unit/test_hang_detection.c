// SPDX-License-Identifier: MIT
/*
 * Tests of the progress model and the hang detector on hand-built call
 * streams whose answer is known by construction (tests/unit/diagnosis_job.h).
 */
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

UNIT_TEST(hang_detection, step_is_the_period_of_the_collectives)
{
	struct job job = job_new();

	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	CU_ASSERT_EQUAL(job.model->comm_count, 1);
	CU_ASSERT_EQUAL(job.model->comms[0].period, 2);
	CU_ASSERT_EQUAL(job.model->comms[0].steps_completed, 10);
	CU_ASSERT_DOUBLE_EQUAL(progress_model_job_step_ns(job.model), (double)STEP_NS, 1.0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}

UNIT_TEST(hang_detection, fault_free_job_has_no_hang_before_the_limit)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	/* 1.9 expected steps after the last call: still within hang_factor 2. */
	progress_model_advance(job.model, job.model->comms[0].last_progress_ns + 19 * STEP_NS / 10);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_free(job.model);
}

/*
 * By default a hang lasts a second at least: a job of 10 ms steps quiet for
 * three steps (a pause of a GPU job's Python) is not one; a second is.
 */
UNIT_TEST(hang_detection, short_steps_need_a_second_of_silence)
{
	struct job job = { .model = progress_model_new(NULL) };
	struct diagnosis_report reports[4];
	uint64_t last;

	CU_ASSERT_PTR_NOT_NULL_FATAL(job.model);
	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	job_run_step(&job, 10, 2, -1, 0, 0);
	last = job.model->comms[0].last_progress_ns;
	progress_model_advance(job.model, last + 3 * STEP_NS);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_advance(job.model, last + 1000000000ull + 1);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	progress_model_free(job.model);
}

UNIT_TEST(hang_detection, rank_that_never_issued_the_collective_is_named)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];
	uint64_t last;

	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	job_run_step(&job, 10, 2, -1, 0, 0); /* rank 2 never issues step 10 */
	last = job.model->comms[0].last_progress_ns;
	progress_model_advance(job.model, last + 21 * STEP_NS / 10);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].kind, DIAGNOSIS_HANG);
	CU_ASSERT_EQUAL(reports[0].hang_class, HANG_HOST);
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_STRING_EQUAL(reports[0].function, "ncclAllReduce");
	CU_ASSERT_EQUAL(reports[0].seq, 20);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_EQUAL(reports[0].ranks[0].pid, 1002);
	CU_ASSERT_STRING_EQUAL(reports[0].ranks[0].last.function, "ncclAllGather");
	CU_ASSERT_EQUAL(reports[0].ranks[0].last.seq, 19);
	/* Reported once, not at every tick. */
	progress_model_advance(job.model, last + 30 * STEP_NS / 10);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_free(job.model);
}

/*
 * Blocking calls: the ranks that came wait inside the all-reduce of step
 * 10 and are seen there in flight at every tick (open calls); rank 2
 * never came. Only the calls in flight tell them apart.
 */
UNIT_TEST(hang_detection, ranks_blocked_inside_a_collective_name_the_one_that_never_came)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];
	uint64_t start = 10 * STEP_NS + 1000000000ull + 1000000, last;
	char text[1024];

	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	last = job.model->comms[0].last_progress_ns;
	for (int tick = 1; tick <= 30; tick++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call = job_collective("ncclAllReduce", 256, rank, 20,
								     start + (uint64_t)rank);

			if (rank == 2)
				continue;
			call.flags |= TRACE_CALL_OPEN;
			call.duration_ns = (uint64_t)tick * STEP_NS / 10;
			job_feed(&job, &call);
		}
	/* Seen thirty times, counted once: one collective more than rank 2. */
	CU_ASSERT_EQUAL(job.model->comms[0].ranks[0].collectives, 21);
	CU_ASSERT_EQUAL(job.model->comms[0].ranks[2].collectives, 20);
	CU_ASSERT_TRUE(job.model->comms[0].ranks[0].last.open);
	/* Their entry is the last progress: the silence runs from there. */
	CU_ASSERT_TRUE(job.model->comms[0].last_progress_ns > last);
	progress_model_advance(job.model, start + 21 * STEP_NS / 10);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].hang_class, HANG_HOST);
	CU_ASSERT_STRING_EQUAL(reports[0].function, "ncclAllReduce");
	CU_ASSERT_EQUAL(reports[0].seq, 20);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_EQUAL(reports[0].inside_count, 3);
	CU_ASSERT_EQUAL(reports[0].inside_since_ns, start);
	reports[0].reported_ns = start + 3 * STEP_NS;
	diagnosis_report_text(&reports[0], text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "3 rank(s) blocked inside it for 0.030 s"));
	/* One returns at last: the same call, not a second one. */
	{
		struct trace_nccl_call call = job_collective("ncclAllReduce", 256, 0, 20, start);

		call.duration_ns = 5 * STEP_NS;
		job_feed(&job, &call);
	}
	CU_ASSERT_EQUAL(job.model->comms[0].ranks[0].collectives, 21);
	CU_ASSERT_FALSE(job.model->comms[0].ranks[0].last.open);
	CU_ASSERT_EQUAL(job.model->comms[0].ranks[0].last.duration_ns, 5 * STEP_NS);
	progress_model_free(job.model);
}

/* A call of the pair communicator of job ranks 0 and 3 (pids 1000 and 1003). */
static void pair_call(struct job *job, int pair_rank, int64_t seq, uint64_t entry_ns, bool open)
{
	struct trace_nccl_call call =
		job_collective("ncclAllReduce", 512, pair_rank, seq, entry_ns);

	call.comm_id = PAIR_COMM_ID;
	call.nranks = 2;
	call.pid = pair_rank == 0 ? 1000 : 1003;
	call.tid = call.pid;
	call.flags |= open ? TRACE_CALL_OPEN : 0;
	job_feed(job, &call);
}

/*
 * Blocking calls on two communicators: rank 2 never issues the world
 * all-reduce of step 10 and ranks 0 and 1 wait inside it. Rank 3 waits
 * inside the pair all-reduce for rank 0, which is inside the world one:
 * on the world communicator rank 3 lags too, and on the pair one rank 0
 * does, but both are blocked elsewhere. One report, naming rank 2 alone.
 */
UNIT_TEST(hang_detection, ranks_blocked_on_another_communicator_are_not_the_cause)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];
	uint64_t start = 10 * STEP_NS + 1000000000ull;

	for (int step = 0; step < 10; step++) {
		uint64_t at = (uint64_t)step * STEP_NS + 1000000000ull + 8000000;

		job_run_step(&job, step, -1, -1, 0, 0);
		pair_call(&job, 0, step, at, false);
		pair_call(&job, 1, step, at, false);
	}
	pair_call(&job, 1, 10, start + 500000, true);
	for (int rank = 0; rank < 2; rank++) {
		struct trace_nccl_call call =
			job_collective("ncclAllReduce", 256, rank, 20, start + 1000000);

		call.flags |= TRACE_CALL_OPEN;
		job_feed(&job, &call);
	}
	CU_ASSERT_TRUE(progress_model_blocked_elsewhere(job.model, NULL, 1003));
	CU_ASSERT_FALSE(progress_model_blocked_elsewhere(job.model, NULL, 1002));
	progress_model_advance(job.model, start + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_EQUAL(reports[0].inside_count, 2);
	CU_ASSERT_EQUAL(reports[0].waiting_comms, 1);
	/* Nothing more later: what is left waits on that stall. */
	progress_model_advance(job.model, start + 6 * STEP_NS);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_free(job.model);
}

/* A call on no communicator (ncclGroupEnd) of 'rank', returned or seen open. */
static struct trace_nccl_call group_end(int rank, uint64_t entry_ns, bool open)
{
	struct trace_nccl_call call;

	memset(&call, 0, sizeof(call));
	call.function = "ncclGroupEnd";
	call.api = nccl_function_by_name(call.function);
	call.entry_ns = entry_ns;
	call.duration_ns = open ? 0 : 1000;
	call.pid = 1000 + (uint32_t)rank;
	call.tid = call.pid;
	call.rank = -1;
	call.flags = open ? TRACE_CALL_OPEN : 0;
	return call;
}

/*
 * The recorder reads the calls in flight, then the ring buffer: rank 2's
 * ncclGroupEnd is seen open, its return is counted, and the sighting is
 * handed over after it. Rank 2 then stops before the world all-reduce the
 * others wait inside. It is not blocked (the stale sighting is not taken),
 * so it is the cause; a later group call it stays inside is.
 */
UNIT_TEST(hang_detection, a_call_seen_in_flight_after_its_return_does_not_block)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];
	uint64_t start = 10 * STEP_NS + 1000000000ull;
	struct trace_nccl_call call;

	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	call = group_end(2, start + 200000, false);
	job_feed(&job, &call);
	call = group_end(2, start + 200000, true);
	job_feed(&job, &call);
	CU_ASSERT_FALSE(progress_model_blocked_elsewhere(job.model, NULL, 1002));
	for (int rank = 0; rank < RANKS; rank++) {
		if (rank == 2)
			continue;
		call = job_collective("ncclAllReduce", 256, rank, 20, start + 1000000);
		call.flags |= TRACE_CALL_OPEN;
		job_feed(&job, &call);
	}
	progress_model_advance(job.model, start + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_FALSE(reports[0].waits_elsewhere);
	/* A group call entered later and not returned: blocked there. */
	call = group_end(2, start + 400000, true);
	job_feed(&job, &call);
	CU_ASSERT_TRUE(progress_model_blocked_elsewhere(job.model, NULL, 1002));
	call = group_end(2, start + 400000, false);
	job_feed(&job, &call);
	CU_ASSERT_FALSE(progress_model_blocked_elsewhere(job.model, NULL, 1002));
	progress_model_free(job.model);
}

UNIT_TEST(hang_detection, collective_issued_by_all_without_probes_is_device_or_network)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 10; step++)
		job_run_step(&job, step, -1, -1, 0, 0);
	progress_model_advance(job.model, job.model->comms[0].last_progress_ns + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].hang_class, HANG_DEVICE_OR_NETWORK);
	CU_ASSERT_EQUAL(reports[0].rank_count, 0);
	CU_ASSERT_STRING_EQUAL(reports[0].function, "ncclAllGather");
	CU_ASSERT_EQUAL(reports[0].seq, 19);
	progress_model_free(job.model);
}

/*
 * The same stall with c10d's collectives, which are seen entered only:
 * every rank issued the last all-reduce, which may well have finished (a
 * job tearing down, or between phases, is as quiet). Not a hang after the
 * steps' limit; one after the start-up limit (10 s). A rank that never
 * issued one is a hang after the steps' limit as before.
 */
UNIT_TEST(hang_detection, c10d_collective_issued_by_all_waits_for_the_startup_limit)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];
	uint64_t quiet_since;

	for (int step = 0; step < 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call = job_collective(
				"c10d::allreduce", 64, rank, step,
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000);

			job_feed(&job, &call);
		}
	quiet_since = job.model->comms[0].last_progress_ns;
	CU_ASSERT_TRUE(job.model->comms[0].entries_only);
	progress_model_advance(job.model, quiet_since + 3 * STEP_NS);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_advance(job.model, quiet_since + 9000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_advance(job.model, quiet_since + 10100000000ull);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].rank_count, 0);
	/* It moves on; rank 3 then never issues the next one: a hang after the steps' limit. */
	for (int rank = 0; rank < RANKS - 1; rank++) {
		struct trace_nccl_call call = job_collective("c10d::allreduce", 64, rank, 10,
							     quiet_since + 10200000000ull);

		job_feed(&job, &call);
	}
	progress_model_advance(job.model, quiet_since + 10200000000ull + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 3);
	progress_model_free(job.model);
}

static struct trace_network_sample sample(uint32_t pid, uint64_t signalled, uint64_t completions,
					  uint64_t last_completion_ns)
{
	struct trace_network_sample value;

	memset(&value, 0, sizeof(value));
	value.pid = pid;
	value.source = 2;
	value.timestamp_ns = 5000;
	value.requests_posted = signalled;
	value.requests_signalled = signalled;
	value.completions = completions;
	value.last_completion_ns = last_completion_ns;
	return value;
}

UNIT_TEST(hang_detection, work_request_samples_tell_network_from_device)
{
	static struct network_samples samples;
	struct trace_network_sample value;
	const uint32_t pids[2] = { 7, 8 };

	memset(&samples, 0, sizeof(samples));
	CU_ASSERT_EQUAL(hang_classify_issued(&samples, pids, 2, 1000), HANG_DEVICE_OR_NETWORK);
	/* Requests in flight, the last completion before the stall began: network. */
	value = sample(7, 10, 6, 900);
	network_samples_add(&samples, &value);
	value = sample(8, 4, 4, 800);
	network_samples_add(&samples, &value);
	CU_ASSERT_EQUAL(hang_classify_issued(&samples, pids, 2, 1000), HANG_NETWORK);
	/* Everything signalled has completed: nothing was handed to the network. */
	value = sample(7, 10, 10, 950);
	network_samples_add(&samples, &value);
	CU_ASSERT_EQUAL(samples.count, 2);
	CU_ASSERT_EQUAL(hang_classify_issued(&samples, pids, 2, 1000), HANG_DEVICE);
}

/*
 * Before the step time is learned (a rank stops in the job's second step),
 * a rank left behind is a hang after the start-up limit, not before; ranks
 * that all agree and went quiet (a long first step) are none.
 */
UNIT_TEST(hang_detection, rank_left_behind_before_the_step_is_learned)
{
	struct job job = { .model = progress_model_new(NULL) };
	struct diagnosis_report reports[4];
	uint64_t last;
	char text[1024];

	CU_ASSERT_PTR_NOT_NULL_FATAL(job.model);
	job_run_step(&job, 0, -1, -1, 0, 0);
	last = job.model->comms[0].last_progress_ns;
	progress_model_advance(job.model, last + 20000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	job_run_step(&job, 1, 1, -1, 0, 20000000000ull); /* rank 1 never issues step 1 */
	last = job.model->comms[0].last_progress_ns;
	CU_ASSERT_EQUAL(progress_model_job_step_ns(job.model), 0);
	progress_model_advance(job.model, last + 9000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	progress_model_advance(job.model, last + 10000000001ull);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 1);
	CU_ASSERT_STRING_EQUAL(reports[0].function, "ncclAllReduce");
	CU_ASSERT_EQUAL(reports[0].expected_step_ns, 0);
	diagnosis_report_text(&reports[0], text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "before its step time was learned"));
	progress_model_free(job.model);
}

/* An init call of 'rank' of a 4-rank communicator being created, open (inside) or returned. */
static struct trace_nccl_call init_call(int rank, uint64_t entry_ns, bool open)
{
	struct trace_nccl_call call;

	memset(&call, 0, sizeof(call));
	call.function = "ncclCommInitRank";
	call.api = nccl_function_by_name(call.function);
	call.entry_ns = entry_ns;
	call.pid = 1000 + (uint32_t)rank;
	call.tid = call.pid;
	call.comm_id = COMM_ID;
	call.rank = rank;
	call.nranks = RANKS;
	call.seq = -1;
	call.flags = open ? TRACE_CALL_OPEN : 0;
	return call;
}

/*
 * Ranks 0, 1 and 3 wait inside ncclCommInitRank, seen there at every tick;
 * rank 2 never enters it: after the start-up limit the communicator is
 * reported as not created, naming rank 2 alone, once.
 */
UNIT_TEST(hang_detection, rank_that_never_enters_the_init_call_is_named)
{
	struct progress_model *model = progress_model_new(NULL);
	struct diagnosis_report reports[4];
	int64_t completed_step;
	char text[1024];

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int tick = 0; tick <= 110; tick++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call =
				init_call(rank, 1000000000ull + (uint64_t)rank, true);

			if (rank == 2)
				continue;
			progress_model_add_call(model, &call, &completed_step);
			progress_model_advance(model,
					       1000000000ull + (uint64_t)tick * 100000000ull);
			if (tick == 90)
				CU_ASSERT_EQUAL(hang_detector_check(model, NULL, NULL, reports, 4),
						0);
		}
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_TRUE(reports[0].creating);
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_EQUAL(reports[0].inside_count, 3);
	CU_ASSERT_EQUAL(reports[0].inside_since_ns, 1000000000ull);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_EQUAL(reports[0].ranks[0].pid, 0);
	diagnosis_report_text(&reports[0], text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(
		strstr(text, "not created: 3 rank(s) blocked inside ncclCommInitRank"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "never entered by rank 2"));
	CU_ASSERT_EQUAL(hang_detector_check(model, NULL, NULL, reports, 4), 0);
	progress_model_free(model);
}

/* Every rank entered and returned (a slow but complete creation): no hang. */
UNIT_TEST(hang_detection, init_that_every_rank_entered_is_no_hang)
{
	struct progress_model *model = progress_model_new(NULL);
	struct diagnosis_report reports[4];
	int64_t completed_step;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call =
			init_call(rank, 1000000000ull * (uint64_t)(rank + 1), true);

		progress_model_add_call(model, &call, &completed_step);
	}
	/* Rank 3 came 3 s after rank 0; every rank is inside: no rank is missing. */
	progress_model_advance(model, 30000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(model, NULL, NULL, reports, 4), 0);
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call =
			init_call(rank, 1000000000ull * (uint64_t)(rank + 1), false);

		progress_model_add_call(model, &call, &completed_step);
	}
	progress_model_advance(model, 60000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(model, NULL, NULL, reports, 4), 0);
	progress_model_free(model);
}

/* A call of process 'pid' on 'comm_id' (rank 0 of 2), as the model takes it. */
static void pattern_call(struct progress_model *model, const char *function, uint64_t comm_id,
			 int64_t seq, uint64_t entry_ns)
{
	struct trace_nccl_call call = job_collective(function, 64, 0, seq, entry_ns);
	int64_t completed_step;

	call.comm_id = comm_id;
	call.nranks = 2;
	progress_model_add_call(model, &call, &completed_step);
}

/*
 * A rank's own step across two communicators: four all-reduces on the
 * world, then a send on the pair. Stopped after the fourth all-reduce of
 * step 5, the first call it did not make is the pair's send (seq 5), not a
 * fifth all-reduce, though its last three calls repeat with a period of one.
 */
UNIT_TEST(hang_detection, first_call_not_made_follows_the_ranks_own_pattern)
{
	struct progress_model *model = progress_model_new(NULL);
	struct progress_call_mark next;
	uint64_t t = 1000000000ull;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int step = 0; step < 6; step++) {
		for (int i = 0; i < 4; i++)
			pattern_call(model, "ncclAllReduce", COMM_ID, step * 4 + i, t += 1000000);
		if (step < 5)
			pattern_call(model, "ncclSend", PAIR_COMM_ID, step, t += 1000000);
	}
	CU_ASSERT_TRUE_FATAL(progress_model_next_call(model, 1000, &next));
	CU_ASSERT_STRING_EQUAL(next.function, "ncclSend");
	CU_ASSERT_EQUAL(next.comm_id, PAIR_COMM_ID);
	CU_ASSERT_EQUAL(next.seq, 5);
	/* Stopped after three of them: the fourth all-reduce, seq 23. */
	progress_model_free(model);
	model = progress_model_new(NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int step = 0; step < 6; step++)
		for (int i = 0; i < (step < 5 ? 5 : 3); i++)
			if (i < 4)
				pattern_call(model, "ncclAllReduce", COMM_ID, step * 4 + i,
					     t += 1000000);
			else
				pattern_call(model, "ncclSend", PAIR_COMM_ID, step, t += 1000000);
	CU_ASSERT_TRUE_FATAL(progress_model_next_call(model, 1000, &next));
	CU_ASSERT_STRING_EQUAL(next.function, "ncclAllReduce");
	CU_ASSERT_EQUAL(next.seq, 23);
	/* A process with no repeating pattern yet gives none. */
	CU_ASSERT_FALSE(progress_model_next_call(model, 4242, &next));
	progress_model_free(model);
}

/*
 * Rank 2 stops before step 1, too early for a pattern of its own: the first
 * call it is known not to have made is the all-reduce its peers issued
 * (seq 2 on the stuck communicator), reported once the start-up limit passed.
 */
UNIT_TEST(hang_detection, first_call_not_made_before_a_pattern_is_the_peers_collective)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];

	job_run_step(&job, 0, -1, -1, 0, 0);
	job_run_step(&job, 1, 2, -1, 0, 0);
	progress_model_advance(job.model, job.model->comms[0].last_progress_ns + 11000000000ull);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_FALSE(reports[0].ranks[0].missed_from_pattern);
	CU_ASSERT_STRING_EQUAL(reports[0].ranks[0].missed.function, "ncclAllReduce");
	CU_ASSERT_EQUAL(reports[0].ranks[0].missed.comm_id, COMM_ID);
	CU_ASSERT_EQUAL(reports[0].ranks[0].missed.seq, 2);
	progress_model_free(job.model);
}

/*
 * A GPU job traced at both layers: each all-reduce is ProcessGroupNCCL's
 * c10d::allreduce (entered only) and, inside it, the ncclAllReduce it
 * enqueues (returned at once). Rank 2 stops before step 10's: one hang,
 * naming rank 2, not one per layer.
 */
UNIT_TEST(hang_detection, nccl_process_group_and_its_nccl_calls_make_one_hang)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];
	uint64_t last;
	unsigned count;

	for (int step = 0; step <= 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			uint64_t at =
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000;
			struct trace_nccl_call group_call =
				job_collective("c10d::allreduce", 64, rank, step, at);
			struct trace_nccl_call nccl_call =
				job_collective("ncclAllReduce", 64, rank, step, at + 20000);

			if (step == 10 && rank == 2)
				continue;
			group_call.comm = 0x7000;
			group_call.comm_id = PAIR_COMM_ID + 1;
			job_feed(&job, &group_call);
			job_feed(&job, &nccl_call);
		}
	CU_ASSERT_EQUAL(job.model->comm_count, 2);
	last = job.model->comms[0].last_progress_ns;
	progress_model_advance(job.model, last + 21 * STEP_NS / 10);
	count = hang_detector_check(job.model, NULL, NULL, reports, 4);
	CU_ASSERT_EQUAL_FATAL(count, 1);
	CU_ASSERT_STRING_EQUAL(reports[0].function, "ncclAllReduce");
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_EQUAL(reports[0].waiting_comms, 1);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_EQUAL(reports[0].ranks[0].pid, 1002);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}

/*
 * gloo collectives whose work is awaited: each lasts until every rank took
 * part. Quiet after every rank's last one ended is a job between phases
 * (the start-up limit, as for calls seen entered only); every rank inside
 * the next one, its work unfinished, is a hang after the steps' limit, the
 * ranks named inside it.
 */
UNIT_TEST(hang_detection, awaited_c10d_work_unfinished_on_every_rank_is_a_hang)
{
	struct job job = job_new();
	struct diagnosis_report reports[4];
	uint64_t quiet_since, inside_from;

	for (int step = 0; step < 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call = job_collective(
				"c10d::allreduce", 64, rank, step,
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000);

			call.flags = TRACE_CALL_WORK_AWAITED;
			call.duration_ns = 500000;
			job_feed(&job, &call);
		}
	CU_ASSERT_FALSE(job.model->comms[0].entries_only);
	CU_ASSERT_TRUE(job.model->comms[0].work_awaited);
	quiet_since = job.model->comms[0].last_progress_ns;
	progress_model_advance(job.model, quiet_since + 9000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	/* Every rank enters the next one; its work never ends. */
	inside_from = quiet_since + 9100000000ull;
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call = job_collective("c10d::allreduce", 64, rank, 10,
							     inside_from + (uint64_t)rank * 1000);

		call.flags = TRACE_CALL_WORK_AWAITED | TRACE_CALL_OPEN;
		call.duration_ns = 0;
		job_feed(&job, &call);
	}
	progress_model_advance(job.model, inside_from + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].rank_count, 0);
	CU_ASSERT_EQUAL(reports[0].inside_count, RANKS);
	CU_ASSERT_STRING_EQUAL(reports[0].function, "c10d::allreduce");
	CU_ASSERT_EQUAL(reports[0].seq, 10);
	progress_model_free(job.model);
}

/*
 * DDP queues one all-reduce per gradient bucket: a rank enters the second
 * before the first one's work ends. Each is seen in flight at its entry
 * and again when its work ends, in the order made: counted once.
 */
UNIT_TEST(hang_detection, awaited_c10d_calls_overlapping_on_a_thread_count_once)
{
	struct job job = job_new();

	for (int step = 0; step < 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			uint64_t start =
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000;
			struct trace_nccl_call calls[2];

			for (int bucket = 0; bucket < 2; bucket++) {
				calls[bucket] = job_collective(
					"c10d::allreduce", 64 + (uint64_t)bucket, rank,
					2 * step + bucket, start + (uint64_t)bucket * 100000);
				calls[bucket].flags = TRACE_CALL_WORK_AWAITED | TRACE_CALL_OPEN;
				calls[bucket].duration_ns = 0;
				job_feed(&job, &calls[bucket]);
			}
			for (int bucket = 0; bucket < 2; bucket++) {
				calls[bucket].flags = TRACE_CALL_WORK_AWAITED;
				calls[bucket].duration_ns = 3000000;
				job_feed(&job, &calls[bucket]);
			}
		}
	CU_ASSERT_EQUAL(job.model->comm_count, 1);
	for (int rank = 0; rank < RANKS; rank++)
		CU_ASSERT_EQUAL(job.model->comms[0].ranks[rank].collectives, 20);
	CU_ASSERT_EQUAL(job.model->comms[0].period, 2);
	CU_ASSERT_FALSE(job.model->comms[0].ranks[0].last.open);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}
