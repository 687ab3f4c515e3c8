// SPDX-License-Identifier: MIT
/*
 * Per-rank step times on a hand-built call stream whose steps have known
 * lengths: two ranks, two collectives a step, rank 1 slower in one step.
 */
#include <string.h>

#include "diagnose/progress_model.h"
#include "diagnose/step_time.h"
#include "unit.h"

#define COMM_ID 0x1234567890abcdefull
#define MS 1000000ull

static struct trace_nccl_call collective(const char *function, int rank, int64_t seq,
					 uint64_t entry_ns)
{
	struct trace_nccl_call call;

	memset(&call, 0, sizeof(call));
	call.function = function;
	call.api = nccl_function_by_name(function);
	call.entry_ns = entry_ns;
	call.duration_ns = 1000;
	call.pid = 500 + (uint32_t)rank;
	call.tid = call.pid;
	call.param_count = 7;
	call.params[2] = 1024;
	call.comm = 0x7000;
	call.comm_id = COMM_ID;
	call.rank = rank;
	call.nranks = 2;
	call.seq = seq;
	return call;
}

UNIT_TEST(step_time, each_rank_measures_between_its_own_step_ends)
{
	struct progress_model *model = progress_model_new(NULL);
	struct rank_step_time times[4];
	uint64_t start[2] = { 1000 * MS, 1000 * MS };
	int checked = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int step = 0; step < 8; step++) {
		/* Steps of 20 ms; rank 1 takes 35 ms in step 5. */
		for (int rank = 0; rank < 2; rank++) {
			uint64_t length = rank == 1 && step == 5 ? 35 * MS : 20 * MS;
			struct trace_nccl_call call;
			struct progress_comm *comm;
			int64_t completed;
			size_t count;

			start[rank] += length;
			call = collective("ncclAllReduce", rank, 2 * step, start[rank] - 10 * MS);
			progress_model_add_call(model, &call, &completed);
			call = collective("ncclBroadcast", rank, 2 * step + 1, start[rank]);
			comm = progress_model_add_call(model, &call, &completed);
			if (!comm || completed < 0)
				continue;
			count = step_time_of_ranks(comm, completed, times, 4);
			if (completed == 0) {
				CU_ASSERT_EQUAL(count, 0); /* no start to measure from */
				continue;
			}
			CU_ASSERT_EQUAL_FATAL(count, 2);
			CU_ASSERT_EQUAL(times[0].rank, 0);
			CU_ASSERT_EQUAL(times[0].pid, 500);
			CU_ASSERT_EQUAL(times[1].rank, 1);
			CU_ASSERT_EQUAL(times[1].pid, 501);
			CU_ASSERT_DOUBLE_EQUAL(times[0].seconds, 0.020, 1e-9);
			CU_ASSERT_DOUBLE_EQUAL(times[1].seconds, completed == 5 ? 0.035 : 0.020,
					       1e-9);
			checked++;
		}
	}
	/* The period (2 collectives) is known after three steps; steps 3 to 7 are measured. */
	CU_ASSERT(checked >= 4);
	/* Too small a buffer: only what fits. */
	CU_ASSERT_EQUAL(step_time_of_ranks(&model->comms[0], 7, times, 1), 1);
	progress_model_free(model);
}

/*
 * The expected step learned from a stream of one collective a step on two
 * ranks, whose steps last lengths_ms[i]; the job's step after all of them.
 */
static double learned_step_ms(const unsigned *lengths_ms, int steps)
{
	struct progress_model *model = progress_model_new(NULL);
	uint64_t now = 1000 * MS;
	double learned;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int step = 0; step < steps; step++) {
		now += lengths_ms[step] * MS;
		for (int rank = 0; rank < 2; rank++) {
			struct trace_nccl_call call = collective("ncclAllReduce", rank, step, now);
			int64_t completed;

			progress_model_add_call(model, &call, &completed);
		}
	}
	learned = progress_model_job_step_ns(model) / (double)MS;
	progress_model_free(model);
	return learned;
}

/*
 * A first learned step faster than the job's usual ones (as a CPU job's
 * can be: 1.4 ms among steps of 2 to 10) is no anchor: the steps after it
 * are learned, by the median of the first three, and not kept out for
 * ever (then no pause, hang limit or slowdown could be judged). Steps 0
 * and 1 are the warm-up; lengths_ms[2] is the first step learned from.
 */
UNIT_TEST(step_time, a_fast_first_step_does_not_keep_the_others_out)
{
	const unsigned fast_first[] = { 20, 20, 5, 20, 21, 20, 19, 20, 20, 20 };
	const unsigned checkpoint_second[] = { 20, 20, 20, 3000, 20, 20, 20, 20, 20, 20 };
	const unsigned fast_then_checkpoint[] = { 20, 20, 5, 3000, 20, 20, 20, 20, 20, 20 };
	const unsigned steady[] = { 20, 20, 20, 20, 20, 20, 20, 20, 20, 20 };
	double ms;

	ms = learned_step_ms(fast_first, 10);
	CU_ASSERT(ms >= 19.0 && ms <= 21.0);
	/* A checkpoint in the second step learned from is not learned. */
	CU_ASSERT_DOUBLE_EQUAL(learned_step_ms(checkpoint_second, 10), 20.0, 1e-6);
	/* Nor after a fast first one: the median of 5, 3000 and 20 is 20. */
	CU_ASSERT_DOUBLE_EQUAL(learned_step_ms(fast_then_checkpoint, 10), 20.0, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(learned_step_ms(steady, 10), 20.0, 1e-6);
}
