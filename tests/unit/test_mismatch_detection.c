// SPDX-License-Identifier: MIT
/*
 * Tests of the mismatch detector: ranks that pass another count or call
 * another collective at the same place, named; ranks attached mid-run
 * lined up by the library's own count.
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

/* Adds a call to the model and judges the collective it completes; whether a mismatch is found. */
static bool judge_mismatch(struct progress_model *model, const struct trace_nccl_call *call,
			   struct diagnosis_report *report)
{
	int64_t completed_step, completed;
	struct progress_comm *comm = progress_model_add_call(model, call, &completed_step);

	completed = comm ? slowdown_completed_collective(comm, call->rank) : -1;
	return completed >= 0 && mismatch_detector_check(model, comm, completed, report);
}

/* Feeds one all-reduce per rank at 'index' of the job; rank 'odd' passes 'odd_count'. */
static void mismatch_round(struct progress_model *model, int64_t index, int odd,
			   const char *odd_function, uint64_t odd_count,
			   struct diagnosis_report *report, unsigned *found)
{
	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call = job_collective(
			rank == odd ? odd_function : "ncclAllReduce", rank == odd ? odd_count : 256,
			rank, index, 1000000000ull + (uint64_t)index * STEP_NS + (uint64_t)rank);

		*found += judge_mismatch(model, &call, report);
	}
}

/* Rank 2 all-reduces 257 values where every other rank all-reduces 256: it is named. */
UNIT_TEST(mismatch_detection, rank_with_another_count_is_named)
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
UNIT_TEST(mismatch_detection, rank_with_another_collective_is_named)
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
UNIT_TEST(mismatch_detection, two_ranks_that_disagree_name_no_culprit)
{
	struct progress_options options;
	struct progress_model *model;
	struct diagnosis_report report = { 0 };
	unsigned found = 0;
	char text[1024];

	progress_options_default(&options);
	model = progress_model_new(&options);
	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int rank = 0; rank < 2; rank++) {
		struct trace_nccl_call call = job_collective("ncclAllReduce", rank ? 72 : 64, rank,
							     0, 1000 + (uint64_t)rank);

		call.nranks = 2;
		found += judge_mismatch(model, &call, &report);
	}
	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_EQUAL(report.odd_rank, -1);
	CU_ASSERT_EQUAL(report.ranks[0].last.count, 64);
	CU_ASSERT_EQUAL(report.ranks[1].last.count, 72);
	/* Each communicator rank is said with its job rank (filled in by the job's diagnosis). */
	report.ranks[0].job_rank = 6;
	report.ranks[1].job_rank = -1;
	diagnosis_report_text(&report, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "; rank 0 (job rank 6): ncclAllReduce 64, "
					    "rank 1 (no job rank): ncclAllReduce 72"));
	progress_model_free(model);
}

/*
 * Three ranks, rank 2 all-reducing 72 elements where the others reduce 64,
 * at step 5; gloo aborts. Each rank's call is seen in flight at its entry
 * and again when its work fails or its process ends with it open: the
 * collective is one mismatch, reported once.
 */
UNIT_TEST(mismatch_detection, a_mismatched_collective_seen_twice_is_one_mismatch)
{
	struct progress_options options;
	struct job_diagnosis *diagnosis;
	struct trace_nccl_call calls[3];

	progress_options_default(&options);
	diagnosis = job_diagnosis_new(&options, NULL, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(diagnosis);
	for (int step = 0; step <= 5; step++)
		for (int rank = 0; rank < 3; rank++) {
			calls[rank] = job_collective(
				"c10d::allreduce", step == 5 && rank == 2 ? 72 : 64, rank, step,
				1000000000ull + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000);
			calls[rank].nranks = 3;
			calls[rank].flags = TRACE_CALL_WORK_AWAITED | TRACE_CALL_OPEN;
			calls[rank].duration_ns = 0;
			job_record_call(diagnosis, &calls[rank]);
			if (step < 5) {
				calls[rank].flags = TRACE_CALL_WORK_AWAITED;
				calls[rank].duration_ns = 500000;
				job_record_call(diagnosis, &calls[rank]);
			}
		}
	for (int rank = 0; rank < 3; rank++) {
		calls[rank].flags = TRACE_CALL_WORK_AWAITED |
				    (rank == 0 ? TRACE_CALL_WORK_FAILED : TRACE_CALL_OPEN);
		calls[rank].duration_ns = 40000000;
		job_record_call(diagnosis, &calls[rank]);
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
			struct trace_nccl_call call = job_collective(
				even ? "ncclAllReduce" : "ncclBroadcast", even ? 256 : 8, rank, seq,
				1000000000ull + (uint64_t)seq * STEP_NS / 4 + (uint64_t)rank);

			if (seq < 100 + first[rank])
				continue;
			call.flags = flags;
			found += judge_mismatch(model, &call, &report);
		}
	progress_model_free(model);
	return found;
}

/*
 * Ranks found at different points of their work by a mid-run attach line up
 * by the library's count of operations: no mismatch. Counted from each
 * rank's first traced call instead, the same calls look like disagreements.
 */
UNIT_TEST(mismatch_detection, ranks_attached_mid_run_line_up_by_the_library_count)
{
	CU_ASSERT_EQUAL(attached_mid_run(TRACE_CALL_SEQ_FROM_LIBRARY), 0);
	CU_ASSERT(attached_mid_run(0) > 0);
}

/*
 * A rank's call that never reached the model (its record lost on the way):
 * rank 1's all-reduce at seq 7 is missing. Its later calls still line up
 * with the others' by the tracer's numbering, so the odd all-reduce at
 * seq 12 (rank 2 passes 257) is the one mismatch, with every rank's own
 * count, and nothing is held against the place rank 1's call was missed.
 */
UNIT_TEST(mismatch_detection, a_rank_whose_call_was_lost_stays_lined_up)
{
	struct progress_model *model = progress_model_new(NULL);
	struct diagnosis_report report;
	unsigned found = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int64_t seq = 0; seq <= 12; seq++)
		for (int rank = 0; rank < RANKS; rank++) {
			struct trace_nccl_call call = job_collective(
				"c10d::allreduce", seq == 12 && rank == 2 ? 257 : 256, rank, seq,
				1000000000ull + (uint64_t)seq * STEP_NS + (uint64_t)rank * 1000);

			if (rank == 1 && seq == 7)
				continue;
			found += judge_mismatch(model, &call, &report);
		}
	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_EQUAL(report.odd_rank, 2);
	CU_ASSERT_EQUAL(report.seq, 12);
	CU_ASSERT_EQUAL(report.count, 256);
	CU_ASSERT_EQUAL_FATAL(report.rank_count, RANKS);
	for (int rank = 0; rank < RANKS; rank++) {
		CU_ASSERT_EQUAL(report.ranks[rank].last.seq, 12);
		CU_ASSERT_EQUAL(report.ranks[rank].last.count, rank == 2 ? 257 : 256);
	}
	progress_model_free(model);
}

/*
 * A count that runs ahead of the numbering (a call the tracer counted
 * without a number, as a failed one) moves the base: the calls after it
 * are not taken as missed, and a lone odd call is still found.
 */
UNIT_TEST(mismatch_detection, a_call_without_a_number_moves_the_base)
{
	struct progress_model *model = progress_model_new(NULL);
	struct diagnosis_report report;
	unsigned found = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int64_t seq = 0; seq <= 8; seq++)
		for (int rank = 0; rank < RANKS; rank++) {
			/* Every rank's fifth call failed: counted, given no number (-1). */
			int64_t number = seq < 4 ? seq : seq - 1;
			struct trace_nccl_call call = job_collective(
				"ncclAllReduce", seq == 8 && rank == 3 ? 300 : 256, rank,
				seq == 4 ? -1 : number,
				1000000000ull + (uint64_t)seq * STEP_NS + (uint64_t)rank * 1000);

			found += judge_mismatch(model, &call, &report);
		}
	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_EQUAL(report.odd_rank, 3);
	CU_ASSERT_EQUAL(report.collective_index, 8);
	progress_model_free(model);
}
