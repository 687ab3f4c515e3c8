// SPDX-License-Identifier: MIT
/*
 * Tests of the progress model and the hang and slowdown detectors on
 * hand-built call streams whose answer is known by construction.
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
#include "unit.h"

#define RANKS 4
#define STEP_NS 10000000ull /* 10 ms */
#define COMM_ID 0xabcdef0123456789ull
#define PAIR_COMM_ID 0x1234000000000002ull /* ranks 0 and 1 of the job */

/* One collective of 'rank' as the call builder would hand it over. */
static struct trace_nccl_call collective(const char *function, uint64_t count, int rank,
					 int64_t seq, uint64_t entry_ns)
{
	struct trace_nccl_call call;

	memset(&call, 0, sizeof(call));
	call.function = function;
	call.api = nccl_function_by_name(function);
	call.entry_ns = entry_ns;
	call.duration_ns = 1000;
	call.pid = 1000 + (uint32_t)rank;
	call.tid = call.pid;
	call.param_count = 7;
	call.params[2] = count;
	call.comm = 0x5000;
	call.comm_id = COMM_ID;
	call.rank = rank;
	call.nranks = RANKS;
	call.seq = seq;
	return call;
}

struct job {
	struct progress_model *model;
	struct diagnosis_report slow[8];
	unsigned slow_count;
};

/* Adds a call to the model and judges the collective it completes, as job_diagnosis does. */
static void feed(struct job *job, const struct trace_nccl_call *call)
{
	int64_t completed_step, index;
	struct progress_comm *comm = progress_model_add_call(job->model, call, &completed_step);

	index = comm ? slowdown_completed_collective(comm, call->rank) : -1;
	if (index >= 0 && job->slow_count < 8 &&
	    slowdown_detector_check(job->model, comm, index, &job->slow[job->slow_count]))
		job->slow_count++;
	if (index >= 0)
		slowdown_detector_learn(comm, index);
}

/*
 * Step 'step' of every rank but 'missing', 'shift_ns' after its usual
 * start: an all-reduce at 1 ms into the step and an all-gather at 6 ms.
 * 'late_rank' reaches the all-reduce 'late_ns' later, and every rank
 * waits for it, so the all-gather is late for all.
 */
static void run_step(struct job *job, int step, int missing, int late_rank, uint64_t late_ns,
		     uint64_t shift_ns)
{
	uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull + shift_ns;

	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call;
		uint64_t delay = rank == late_rank ? late_ns : 0;

		if (rank == missing)
			continue;
		call = collective("ncclAllReduce", 256, rank, 2 * step, start + 1000000 + delay);
		feed(job, &call);
		call = collective("ncclAllGather", 64, rank, 2 * step + 1,
				  start + 6000000 + (late_rank >= 0 ? late_ns : 0));
		feed(job, &call);
	}
}

/* Steps of 10 ms judged by hang_factor alone (no floor of a second). */
static struct job new_job(void)
{
	struct progress_options options;
	struct job job;

	progress_options_default(&options);
	options.hang_min_ns = 0;
	options.slowdown_min_ns = 0;
	job.model = progress_model_new(&options);
	job.slow_count = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(job.model);
	return job;
}

UNIT_TEST(hang_detection, step_is_the_period_of_the_collectives)
{
	struct job job = new_job();

	for (int step = 0; step < 10; step++)
		run_step(&job, step, -1, -1, 0, 0);
	CU_ASSERT_EQUAL(job.model->comm_count, 1);
	CU_ASSERT_EQUAL(job.model->comms[0].period, 2);
	CU_ASSERT_EQUAL(job.model->comms[0].steps_completed, 10);
	CU_ASSERT_DOUBLE_EQUAL(progress_model_job_step_ns(job.model), (double)STEP_NS, 1.0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}

UNIT_TEST(hang_detection, fault_free_job_has_no_hang_before_the_limit)
{
	struct job job = new_job();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 10; step++)
		run_step(&job, step, -1, -1, 0, 0);
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
		run_step(&job, step, -1, -1, 0, 0);
	run_step(&job, 10, 2, -1, 0, 0);
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
	struct job job = new_job();
	struct diagnosis_report reports[4];
	uint64_t last;

	for (int step = 0; step < 10; step++)
		run_step(&job, step, -1, -1, 0, 0);
	run_step(&job, 10, 2, -1, 0, 0); /* rank 2 never issues step 10 */
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
	struct job job = new_job();
	struct diagnosis_report reports[4];
	uint64_t start = 10 * STEP_NS + 1000000000ull + 1000000, last;
	char text[1024];

	for (int step = 0; step < 10; step++)
		run_step(&job, step, -1, -1, 0, 0);
	last = job.model->comms[0].last_progress_ns;
	for (int tick = 1; tick <= 30; tick++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call =
				collective("ncclAllReduce", 256, rank, 20, start + (uint64_t)rank);

			if (rank == 2)
				continue;
			call.flags |= TRACE_CALL_OPEN;
			call.duration_ns = (uint64_t)tick * STEP_NS / 10;
			feed(&job, &call);
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
		struct trace_nccl_call call = collective("ncclAllReduce", 256, 0, 20, start);

		call.duration_ns = 5 * STEP_NS;
		feed(&job, &call);
	}
	CU_ASSERT_EQUAL(job.model->comms[0].ranks[0].collectives, 21);
	CU_ASSERT_FALSE(job.model->comms[0].ranks[0].last.open);
	CU_ASSERT_EQUAL(job.model->comms[0].ranks[0].last.duration_ns, 5 * STEP_NS);
	progress_model_free(job.model);
}

/* A call of the pair communicator of job ranks 0 and 3 (pids 1000 and 1003). */
static void pair_call(struct job *job, int pair_rank, int64_t seq, uint64_t entry_ns, bool open)
{
	struct trace_nccl_call call = collective("ncclAllReduce", 512, pair_rank, seq, entry_ns);

	call.comm_id = PAIR_COMM_ID;
	call.nranks = 2;
	call.pid = pair_rank == 0 ? 1000 : 1003;
	call.tid = call.pid;
	call.flags |= open ? TRACE_CALL_OPEN : 0;
	feed(job, &call);
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
	struct job job = new_job();
	struct diagnosis_report reports[4];
	uint64_t start = 10 * STEP_NS + 1000000000ull;

	for (int step = 0; step < 10; step++) {
		uint64_t at = (uint64_t)step * STEP_NS + 1000000000ull + 8000000;

		run_step(&job, step, -1, -1, 0, 0);
		pair_call(&job, 0, step, at, false);
		pair_call(&job, 1, step, at, false);
	}
	pair_call(&job, 1, 10, start + 500000, true);
	for (int rank = 0; rank < 2; rank++) {
		struct trace_nccl_call call =
			collective("ncclAllReduce", 256, rank, 20, start + 1000000);

		call.flags |= TRACE_CALL_OPEN;
		feed(&job, &call);
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
	struct job job = new_job();
	struct diagnosis_report reports[4];
	uint64_t start = 10 * STEP_NS + 1000000000ull;
	struct trace_nccl_call call;

	for (int step = 0; step < 10; step++)
		run_step(&job, step, -1, -1, 0, 0);
	call = group_end(2, start + 200000, false);
	feed(&job, &call);
	call = group_end(2, start + 200000, true);
	feed(&job, &call);
	CU_ASSERT_FALSE(progress_model_blocked_elsewhere(job.model, NULL, 1002));
	for (int rank = 0; rank < RANKS; rank++) {
		if (rank == 2)
			continue;
		call = collective("ncclAllReduce", 256, rank, 20, start + 1000000);
		call.flags |= TRACE_CALL_OPEN;
		feed(&job, &call);
	}
	progress_model_advance(job.model, start + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL_FATAL(reports[0].rank_count, 1);
	CU_ASSERT_EQUAL(reports[0].ranks[0].rank, 2);
	CU_ASSERT_FALSE(reports[0].waits_elsewhere);
	/* A group call entered later and not returned: blocked there. */
	call = group_end(2, start + 400000, true);
	feed(&job, &call);
	CU_ASSERT_TRUE(progress_model_blocked_elsewhere(job.model, NULL, 1002));
	call = group_end(2, start + 400000, false);
	feed(&job, &call);
	CU_ASSERT_FALSE(progress_model_blocked_elsewhere(job.model, NULL, 1002));
	progress_model_free(job.model);
}

UNIT_TEST(hang_detection, collective_issued_by_all_without_probes_is_device_or_network)
{
	struct job job = new_job();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 10; step++)
		run_step(&job, step, -1, -1, 0, 0);
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
	struct job job = new_job();
	struct diagnosis_report reports[4];
	uint64_t quiet_since;

	for (int step = 0; step < 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call = collective(
				"c10d::allreduce", 64, rank, step,
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000);

			feed(&job, &call);
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
		struct trace_nccl_call call =
			collective("c10d::allreduce", 64, rank, 10, quiet_since + 10200000000ull);

		feed(&job, &call);
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

UNIT_TEST(hang_detection, late_rank_is_the_straggler_of_a_slow_step)
{
	struct job job = new_job();

	for (int step = 0; step < 12; step++)
		run_step(&job, step, -1, step == 8 ? 3 : -1, step == 8 ? 2 * STEP_NS : 0,
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

UNIT_TEST(hang_detection, every_rank_late_together_names_no_straggler)
{
	struct job job = new_job();

	/* From step 8 on, every rank starts 1.5 steps later: they all waited on something else. */
	for (int step = 0; step < 12; step++)
		run_step(&job, step, -1, -1, 0, step >= 8 ? 3 * STEP_NS / 2 : 0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}

UNIT_TEST(hang_detection, slowdown_is_judged_when_the_straggler_arrives)
{
	struct job job = new_job();

	for (int step = 0; step < 9; step++)
		run_step(&job, step, -1, step == 8 ? 1 : -1, step == 8 ? 6 * STEP_NS / 10 : 0, 0);
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
UNIT_TEST(hang_detection, lateness_within_the_jobs_own_jitter_is_no_slowdown)
{
	struct job job = new_job();

	for (int step = 0; step < 30; step++)
		run_step(&job, step, -1, step % RANKS, (uint64_t)(step * 7 % 10) * 500000, 0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	CU_ASSERT_TRUE(job.model->comms[0].arrival_lead.jitter_ns > 0);
	run_step(&job, 30, -1, 2, 2 * STEP_NS, 0);
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
			call = collective(rank == 0 ? "ncclSend" : "ncclRecv", 512, rank, step,
					  rank == 0 ? send : start + 2000000);
			call.param_count = 6;
			call.comm_id = PAIR_COMM_ID;
			call.nranks = 2;
			call.duration_ns = rank == 0 ? 1000 : send + 1000 - call.entry_ns;
			feed(job, &call);
		}
		arrival[rank] = rank <= 1 ? send + 1000 + 3000000 : start + 5000000;
		last = arrival[rank] > last ? arrival[rank] : last;
	}
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call =
			collective("ncclAllReduce", 256, rank, step, arrival[rank]);

		call.duration_ns = last + 1000 - arrival[rank];
		feed(job, &call);
	}
}

/*
 * Rank 0 computes 6 ms longer before its send at step 12: rank 1 waits for
 * it inside its receive and reaches the all-reduce with it, so no rank
 * arrives after the others, yet rank 0 is the straggler: it computed 6 ms
 * longer than any other rank, rank 1 spent them inside its receive.
 */
UNIT_TEST(hang_detection, straggler_others_waited_for_inside_blocking_calls)
{
	struct job job = new_job();

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

UNIT_TEST(hang_detection, delay_below_the_threshold_is_not_a_slowdown)
{
	struct job job = new_job();

	/* 0.3 steps late: within slowdown_threshold 1.4. */
	for (int step = 0; step < 12; step++)
		run_step(&job, step, -1, step == 8 ? 1 : -1, step == 8 ? 3 * STEP_NS / 10 : 0, 0);
	CU_ASSERT_EQUAL(job.slow_count, 0);
	progress_model_free(job.model);
}

/* A collective of a two-stage pipeline's pair (stage 0 is rank 0, stage 1 rank 1). */
static void pipeline_collective(struct job *job, int rank, int64_t seq, uint64_t entry_ns)
{
	struct trace_nccl_call call = collective("ncclAllReduce", 512, rank, seq, entry_ns);

	call.comm_id = PAIR_COMM_ID;
	call.nranks = 2;
	feed(job, &call);
}

UNIT_TEST(hang_detection, delay_absorbed_by_a_pipeline_bubble_is_not_reported)
{
	struct job job = new_job();

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

UNIT_TEST(hang_detection, communicators_waiting_on_a_rank_left_behind_are_one_report)
{
	struct job job = new_job();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 10; step++) {
		run_step(&job, step, -1, -1, 0, 0);
		pair_step(&job, step);
	}
	/* Rank 2 never issues step 10; ranks 0 and 1 issue all of theirs, then wait on it. */
	run_step(&job, 10, 2, -1, 0, 0);
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

UNIT_TEST(hang_detection, communicators_stuck_together_are_one_stall)
{
	struct job job = new_job();
	struct diagnosis_report reports[4];

	for (int step = 0; step < 11; step++) {
		run_step(&job, step, -1, -1, 0, 0);
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

UNIT_TEST(hang_detection, stall_long_after_a_reported_one_is_reported_again)
{
	struct job job = new_job();
	struct diagnosis_report reports[4];

	/* The pair communicator falls silent after step 10 and is reported. */
	for (int step = 0; step < 11; step++) {
		run_step(&job, step, -1, -1, 0, 0);
		pair_step(&job, step);
	}
	for (int step = 11; step < 15; step++)
		run_step(&job, step, -1, -1, 0, 0);
	progress_model_advance(job.model, job.model->now_ns + STEP_NS / 2);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].comm_id, PAIR_COMM_ID);
	/* Ten steps later the job's communicator stalls: a stall of its own. */
	for (int step = 15; step < 25; step++)
		run_step(&job, step, -1, -1, 0, 0);
	progress_model_advance(job.model, job.model->now_ns + 3 * STEP_NS);
	CU_ASSERT_EQUAL_FATAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 1);
	CU_ASSERT_EQUAL(reports[0].comm_id, COMM_ID);
	CU_ASSERT_EQUAL(reports[0].waiting_comms, 0);
	progress_model_free(job.model);
}

/* Feeds the call to a job_diagnosis as a trace record. */
static void record_call(struct job_diagnosis *diagnosis, const struct trace_nccl_call *call)
{
	struct trace_record record;

	memset(&record, 0, sizeof(record));
	record.kind = TRACE_RECORD_NCCL_CALL;
	record.call = *call;
	job_diagnosis_record(diagnosis, &record, 0);
}

UNIT_TEST(hang_detection, first_late_rank_of_a_slow_stretch_is_the_one_reported)
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
			struct trace_nccl_call call = collective(
				"ncclAllReduce", 256, rank, step,
				start + 1000000 + (step == 8 && rank == 3 ? 6000000 : 0));

			record_call(diagnosis, &call);
		}
		for (int rank = 0; rank < 2; rank++) {
			struct trace_nccl_call call = collective(
				"ncclAllReduce", 512, rank, step,
				start + 7500000 + (step == 8 && rank == 1 ? 5000000 : 0));

			call.comm_id = PAIR_COMM_ID;
			call.nranks = 2;
			record_call(diagnosis, &call);
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

UNIT_TEST(hang_detection, report_as_json)
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

/* Feeds one all-reduce per rank at 'index' of the job; rank 'odd' passes 'odd_count'. */
static void mismatch_round(struct progress_model *model, int64_t index, int odd,
			   const char *odd_function, uint64_t odd_count,
			   struct diagnosis_report *report, unsigned *found)
{
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call = collective(
			rank == odd ? odd_function : "ncclAllReduce", rank == odd ? odd_count : 256,
			rank, index, 1000000000ull + (uint64_t)index * STEP_NS + (uint64_t)rank);
		int64_t completed_step, completed;
		struct progress_comm *comm = progress_model_add_call(model, &call, &completed_step);

		completed = comm ? slowdown_completed_collective(comm, call.rank) : -1;
		if (completed >= 0 && mismatch_detector_check(model, comm, completed, report))
			(*found)++;
	}
}

/* Rank 2 all-reduces 257 values where every other rank all-reduces 256: it is named. */
UNIT_TEST(hang_detection, rank_with_another_count_is_named)
{
	struct progress_model *model = progress_model_new(NULL);
	struct diagnosis_report report;
	unsigned found = 0;
	char text[1024];

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int64_t index = 0; index < 5; index++)
		mismatch_round(model, index, -1, NULL, 0, &report, &found);
	CU_ASSERT_EQUAL(found, 0);
	mismatch_round(model, 5, 2, "ncclAllReduce", 257, &report, &found);
	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_EQUAL(report.kind, DIAGNOSIS_MISMATCH);
	CU_ASSERT_EQUAL(report.odd_rank, 2);
	CU_ASSERT_EQUAL(report.seq, 5);
	CU_ASSERT_STRING_EQUAL(report.function, "ncclAllReduce");
	CU_ASSERT_EQUAL(report.count, 256);
	CU_ASSERT_EQUAL_FATAL(report.rank_count, RANKS);
	CU_ASSERT_EQUAL(report.ranks[2].last.count, 257);
	CU_ASSERT_EQUAL(report.ranks[2].pid, 1002);
	diagnosis_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "rank 2 (no job rank, pid 1002) called ncclAllReduce "
					    "with 257 elements where the others called "
					    "ncclAllReduce with 256"));
	/* And the next healthy collective is not one. */
	mismatch_round(model, 6, -1, NULL, 0, &report, &found);
	CU_ASSERT_EQUAL(found, 1);
	progress_model_free(model);
}

/* A rank that calls another collective at the same place is named the same way. */
UNIT_TEST(hang_detection, rank_with_another_collective_is_named)
{
	struct progress_model *model = progress_model_new(NULL);
	struct diagnosis_report report;
	unsigned found = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	mismatch_round(model, 0, 3, "ncclBroadcast", 256, &report, &found);
	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_EQUAL(report.odd_rank, 3);
	CU_ASSERT_STRING_EQUAL(report.ranks[3].last.function, "ncclBroadcast");
	progress_model_free(model);
}

/* Two ranks that disagree: both values are listed, and neither is blamed. */
UNIT_TEST(hang_detection, two_ranks_that_disagree_name_no_culprit)
{
	struct progress_options options;
	struct progress_model *model;
	struct diagnosis_report report;
	unsigned found = 0;

	progress_options_default(&options);
	model = progress_model_new(&options);
	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int rank = 0; rank < 2; rank++) {
		struct trace_nccl_call call =
			collective("ncclAllReduce", rank ? 72 : 64, rank, 0, 1000 + (uint64_t)rank);
		int64_t completed_step, completed;
		struct progress_comm *comm;

		call.nranks = 2;
		comm = progress_model_add_call(model, &call, &completed_step);
		completed = comm ? slowdown_completed_collective(comm, call.rank) : -1;
		if (completed >= 0 && mismatch_detector_check(model, comm, completed, &report))
			found++;
	}
	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_EQUAL(report.odd_rank, -1);
	CU_ASSERT_EQUAL(report.ranks[0].last.count, 64);
	CU_ASSERT_EQUAL(report.ranks[1].last.count, 72);
	progress_model_free(model);
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
	run_step(&job, 0, -1, -1, 0, 0);
	last = job.model->comms[0].last_progress_ns;
	progress_model_advance(job.model, last + 20000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	run_step(&job, 1, 1, -1, 0, 20000000000ull); /* rank 1 never issues step 1 */
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
	struct trace_nccl_call call = collective(function, 64, 0, seq, entry_ns);
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
	struct job job = new_job();
	struct diagnosis_report reports[4];

	run_step(&job, 0, -1, -1, 0, 0);
	run_step(&job, 1, 2, -1, 0, 0);
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
	struct job job = new_job();
	struct diagnosis_report reports[4];
	uint64_t last;
	unsigned count;

	for (int step = 0; step <= 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			uint64_t at =
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000;
			struct trace_nccl_call group_call =
				collective("c10d::allreduce", 64, rank, step, at);
			struct trace_nccl_call nccl_call =
				collective("ncclAllReduce", 64, rank, step, at + 20000);

			if (step == 10 && rank == 2)
				continue;
			group_call.comm = 0x7000;
			group_call.comm_id = PAIR_COMM_ID + 1;
			feed(&job, &group_call);
			feed(&job, &nccl_call);
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
	struct job job = new_job();
	struct diagnosis_report reports[4];
	uint64_t quiet_since, inside_from;

	for (int step = 0; step < 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call = collective(
				"c10d::allreduce", 64, rank, step,
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000);

			call.flags = TRACE_CALL_WORK_AWAITED;
			call.duration_ns = 500000;
			feed(&job, &call);
		}
	CU_ASSERT_FALSE(job.model->comms[0].entries_only);
	CU_ASSERT_TRUE(job.model->comms[0].work_awaited);
	quiet_since = job.model->comms[0].last_progress_ns;
	progress_model_advance(job.model, quiet_since + 9000000000ull);
	CU_ASSERT_EQUAL(hang_detector_check(job.model, NULL, NULL, reports, 4), 0);
	/* Every rank enters the next one; its work never ends. */
	inside_from = quiet_since + 9100000000ull;
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call = collective("c10d::allreduce", 64, rank, 10,
							 inside_from + (uint64_t)rank * 1000);

		call.flags = TRACE_CALL_WORK_AWAITED | TRACE_CALL_OPEN;
		call.duration_ns = 0;
		feed(&job, &call);
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
	struct job job = new_job();

	for (int step = 0; step < 10; step++)
		for (int rank = 0; rank < RANKS; rank++) {
			uint64_t start =
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000;
			struct trace_nccl_call calls[2];

			for (int bucket = 0; bucket < 2; bucket++) {
				calls[bucket] = collective("c10d::allreduce", 64 + (uint64_t)bucket,
							   rank, 2 * step + bucket,
							   start + (uint64_t)bucket * 100000);
				calls[bucket].flags = TRACE_CALL_WORK_AWAITED | TRACE_CALL_OPEN;
				calls[bucket].duration_ns = 0;
				feed(&job, &calls[bucket]);
			}
			for (int bucket = 0; bucket < 2; bucket++) {
				calls[bucket].flags = TRACE_CALL_WORK_AWAITED;
				calls[bucket].duration_ns = 3000000;
				feed(&job, &calls[bucket]);
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
			collective("c10d::allreduce", 256, rank, step, start + 1000000 + delay);

		/* Every thread waits 50 us a step; the late one 'cpu_wait_ns' more this step. */
		call.param_count = 5;
		call.params[4] = 1000000 + (uint64_t)step * 50000 +
				 (rank == late_rank ? cpu_wait_ns : 0) +
				 (rank == 1 && step > 8 ? cpu_wait_ns : 0);
		feed(job, &call);
	}
}

UNIT_TEST(hang_detection, a_rank_late_waiting_for_a_cpu_is_no_straggler)
{
	struct job descheduled = new_job(), slow = new_job();

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
 * Three ranks, rank 2 all-reducing 72 elements where the others reduce 64,
 * at step 5; gloo aborts. Each rank's call is seen in flight at its entry
 * and again when its work fails or its process ends with it open: the
 * collective is one mismatch, reported once.
 */
UNIT_TEST(hang_detection, a_mismatched_collective_seen_twice_is_one_mismatch)
{
	struct progress_options options;
	struct job_diagnosis *diagnosis;
	struct trace_nccl_call calls[3];

	progress_options_default(&options);
	diagnosis = job_diagnosis_new(&options, NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(diagnosis);
	for (int step = 0; step <= 5; step++)
		for (int rank = 0; rank < 3; rank++) {
			calls[rank] = collective(
				"c10d::allreduce", step == 5 && rank == 2 ? 72 : 64, rank, step,
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000);
			calls[rank].nranks = 3;
			calls[rank].flags = TRACE_CALL_WORK_AWAITED | TRACE_CALL_OPEN;
			calls[rank].duration_ns = 0;
			record_call(diagnosis, &calls[rank]);
			if (step < 5) {
				calls[rank].flags = TRACE_CALL_WORK_AWAITED;
				calls[rank].duration_ns = 500000;
				record_call(diagnosis, &calls[rank]);
			}
		}
	for (int rank = 0; rank < 3; rank++) {
		calls[rank].flags = TRACE_CALL_WORK_AWAITED |
				    (rank == 0 ? TRACE_CALL_WORK_FAILED : TRACE_CALL_OPEN);
		calls[rank].duration_ns = 40000000;
		record_call(diagnosis, &calls[rank]);
	}
	job_diagnosis_finish(diagnosis);
	CU_ASSERT_EQUAL(job_diagnosis_mismatch_count(diagnosis), 1);
	job_diagnosis_free(diagnosis);
}

/*
 * The calls ranks attached mid-run make from their first traced one: rank r
 * is first seen at seq 100 + first[r]. The job alternates an all-reduce of
 * 256 elements (even seq) and a broadcast of 8 (odd); steps are 4 seqs.
 * Returns how many mismatches the detector found.
 */
static unsigned attached_mid_run(uint32_t flags)
{
	static const int64_t first[RANKS] = { 0, 2, -1, 1 };
	struct progress_model *model = progress_model_new(NULL);
	struct diagnosis_report report;
	unsigned found = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int64_t seq = 99; seq < 140; seq++)
		for (int rank = 0; rank < RANKS; rank++) {
			bool even = seq % 2 == 0;
			struct trace_nccl_call call = collective(
				even ? "ncclAllReduce" : "ncclBroadcast", even ? 256 : 8, rank, seq,
				1000000000ull + (uint64_t)seq * STEP_NS / 4 + (uint64_t)rank);
			int64_t completed_step, completed;
			struct progress_comm *comm;

			if (seq < 100 + first[rank])
				continue;
			call.flags = flags;
			comm = progress_model_add_call(model, &call, &completed_step);
			completed = comm ? slowdown_completed_collective(comm, call.rank) : -1;
			if (completed >= 0 &&
			    mismatch_detector_check(model, comm, completed, &report))
				found++;
		}
	progress_model_free(model);
	return found;
}

/*
 * Ranks found at different points of their work by a mid-run attach line up
 * by the library's count of operations: no mismatch. Counted from each
 * rank's first traced call instead, the same calls look like disagreements.
 */
UNIT_TEST(hang_detection, ranks_attached_mid_run_line_up_by_the_library_count)
{
	CU_ASSERT_EQUAL(attached_mid_run(TRACE_CALL_SEQ_FROM_LIBRARY), 0);
	CU_ASSERT(attached_mid_run(0) > 0);
}
