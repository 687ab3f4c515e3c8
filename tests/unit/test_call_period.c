// SPDX-License-Identifier: MIT
/*
 * Steps without Python: the period finder on call patterns written as
 * letters (each letter one call signature), and a diff model whose ranks
 * repeat one all-reduce twice a step and use their communicators in
 * different orders.
 */
#include <string.h>

#include "diff/call_period.h"
#include "diff/run_model.h"
#include "nccl_records.h"
#include "unit.h"

static bool letter_same(const void *sequence, size_t a, size_t b)
{
	const char *letters = sequence;

	return letters[a] == letters[b];
}

/* The period of 'letters', and where it starts in 'start'. */
static size_t period_of(const char *letters, size_t *start)
{
	*start = 999;
	return call_period_find(letters, strlen(letters), letter_same, start);
}

UNIT_TEST(call_period, a_call_recurring_within_a_step_does_not_cut_it)
{
	size_t start;

	/* Tensor-parallel: A in the forward and the backward, then B and C. */
	CU_ASSERT_EQUAL(period_of("ABACABACABAC", &start), 4);
	CU_ASSERT_EQUAL(start, 0);
}

UNIT_TEST(call_period, set_up_calls_come_before_the_first_step)
{
	size_t start;

	CU_ASSERT_EQUAL(period_of("XYAABAABAABAAB", &start), 3);
	CU_ASSERT_EQUAL(start, 2);
}

UNIT_TEST(call_period, a_last_cut_off_turn_is_allowed)
{
	size_t start;

	CU_ASSERT_EQUAL(period_of("ABCABCABCAB", &start), 3);
	CU_ASSERT_EQUAL(start, 0);
	CU_ASSERT_EQUAL(period_of("AAAA", &start), 1);
}

UNIT_TEST(call_period, no_period_when_the_pattern_never_turns_twice)
{
	size_t start = 7;

	CU_ASSERT_EQUAL(call_period_find("ABCD", 4, letter_same, &start), 0);
	CU_ASSERT_EQUAL(start, 7);
	CU_ASSERT_EQUAL(call_period_find("ABA", 3, letter_same, &start), 0);
	CU_ASSERT_EQUAL(call_period_find("", 0, letter_same, &start), 0);
	/* A step that differs from the others breaks the period. */
	CU_ASSERT_EQUAL(call_period_find("ABCABDABC", 9, letter_same, &start), 0);
}

#define DATA_COMM 0xd0d0ull
#define TENSOR_COMM 0x7070ull

static void add(struct run_model *model, uint32_t pid, int rank, uint64_t comm, int64_t seq,
		uint64_t count)
{
	struct trace_record record = all_reduce_record(pid, rank, 2, comm, seq, count);

	record.call.entry_ns += (uint64_t)rank * 7; /* any order of ranks in the stream */
	CU_ASSERT_EQUAL(run_model_add_record(model, 0, &record, 0), 0);
}

static void add_process(struct run_model *model, uint32_t pid, int rank)
{
	struct trace_record record = { .kind = TRACE_RECORD_PROCESS };

	record.process.pid = pid;
	record.process.rank = rank;
	CU_ASSERT_EQUAL(run_model_add_record(model, 0, &record, 0), 0);
}

UNIT_TEST(call_period, diff_model_steps_and_communicator_names_agree_across_ranks)
{
	struct run_model *model = run_model_new();
	char first[48], second[48];

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	add_process(model, 100, 0);
	add_process(model, 101, 1);
	for (int step = 0; step < 3; step++) {
		/* Rank 0: the data-parallel all-reduce first; rank 1: tensor-parallel first. */
		add(model, 100, 0, DATA_COMM, step, 4096);
		add(model, 100, 0, TENSOR_COMM, step * 2, 64);
		add(model, 100, 0, TENSOR_COMM, step * 2 + 1, 64);
		add(model, 101, 1, TENSOR_COMM, step * 3, 64);
		add(model, 101, 1, TENSOR_COMM, step * 3 + 1, 32);
		add(model, 101, 1, TENSOR_COMM, step * 3 + 2, 64);
		add(model, 101, 1, DATA_COMM, step, 4096);
	}
	run_model_finish(model);
	for (int r = 0; r < 2; r++) {
		const struct run_rank *rank = run_model_rank(model, r);

		CU_ASSERT_PTR_NOT_NULL_FATAL(rank);
		CU_ASSERT_EQUAL(rank->steps, 3);
		for (size_t i = 0; i < rank->call_count; i++)
			CU_ASSERT_EQUAL(rank->calls[i].step, (int)(i / (r ? 4 : 3)));
	}
	/* The data-parallel communicator: rank 0's first, rank 1's second; one name. */
	run_communicator_name(run_model_rank(model, 0), 0, first, sizeof(first));
	run_communicator_name(run_model_rank(model, 1), 1, second, sizeof(second));
	CU_ASSERT_STRING_EQUAL(first, second);
	run_communicator_name(run_model_rank(model, 0), 1, first, sizeof(first));
	run_communicator_name(run_model_rank(model, 1), 0, second, sizeof(second));
	CU_ASSERT_STRING_EQUAL(first, second);
	CU_ASSERT_STRING_EQUAL(first, "comm 1 (2 ranks)");
	run_model_free(model);
}

UNIT_TEST(call_period, calls_made_every_few_steps_stay_in_their_step)
{
	struct run_model *model = run_model_new();
	const struct run_rank *rank;
	int64_t seq = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	add_process(model, 100, 0);
	add(model, 100, 0, DATA_COMM, seq++, 8); /* set-up: once, before the steps */
	for (int step = 0; step < 6; step++) {
		add(model, 100, 0, TENSOR_COMM, seq++, 64);
		add(model, 100, 0, DATA_COMM, seq++, 4096);
		add(model, 100, 0, TENSOR_COMM, seq++, 64);
		if (step % 3 == 0) /* a metrics all-reduce every third step */
			add(model, 100, 0, DATA_COMM, seq++, 4);
	}
	run_model_finish(model);
	rank = run_model_rank(model, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rank);
	CU_ASSERT_EQUAL(rank->steps, 6);
	CU_ASSERT_EQUAL(rank->calls[0].step, -1);
	CU_ASSERT_EQUAL(rank->calls[4].step, 0); /* step 0's metrics */
	CU_ASSERT_EQUAL(rank->calls[5].step, 1);
	CU_ASSERT_EQUAL(rank->calls[rank->call_count - 1].step, 5);
	run_model_free(model);
}
