// SPDX-License-Identifier: MIT
/*
 * The alignment of tcheck-bpf diff on hand-built runs: two ranks, each step
 * an all-reduce of 100 then of 200 values on one communicator (and of 300 on
 * a second one). Runs that differ only in pids, communicator identities and
 * times agree; each single change is reported as exactly that.
 */
#include <string.h>

#include "diff/run_diff.h"
#include "diff/run_model.h"
#include "nccl_records.h"
#include "unit.h"

#define RANKS 2
#define STEPS 4

/* One change to a run: at 'step' of 'rank', what to do to the call with 'count'. */
enum change_kind {
	CHANGE_NONE,
	CHANGE_COUNT,
	CHANGE_DATATYPE,
	CHANGE_DROP,
	CHANGE_ADD,
	CHANGE_MOVE
};

struct change {
	enum change_kind kind;
	int rank;
	int step;
};

static void add_process(struct run_model *model, uint32_t pid, int rank)
{
	struct trace_record record = { .kind = TRACE_RECORD_PROCESS };

	record.process.pid = pid;
	record.process.rank = rank;
	CU_ASSERT_EQUAL(run_model_add_record(model, 0, &record, 0), 0);
}

static void add_call(struct run_model *model, uint32_t pid, int rank, uint64_t comm, uint64_t count,
		     int64_t seq, uint64_t time_shift)
{
	struct trace_record record = all_reduce_record(pid, rank, RANKS, comm, seq, count);

	record.call.entry_ns += time_shift;
	CU_ASSERT_EQUAL(run_model_add_record(model, 0, &record, 0), 0);
}

/* The calls of one step of one rank, with the change applied where it falls. */
static void add_step(struct run_model *model, uint32_t pid, int rank, int step, uint64_t base,
		     const struct change *change)
{
	int here = change->rank == rank && change->step == step;
	uint64_t second_count = here && change->kind == CHANGE_COUNT ? 201 : 200;
	struct trace_record record;

	add_call(model, pid, rank, base + 1, 100, step * 3, base);
	if (!(here && (change->kind == CHANGE_DROP || change->kind == CHANGE_MOVE))) {
		record = all_reduce_record(pid, rank, RANKS, base + 1, step * 3 + 1, second_count);
		if (here && change->kind == CHANGE_DATATYPE)
			record.call.params[3] = 8; /* ncclFloat64 */
		CU_ASSERT_EQUAL(run_model_add_record(model, 0, &record, 0), 0);
	}
	if (here && change->kind == CHANGE_MOVE)
		add_call(model, pid, rank, base + 2, 200, step * 3 + 1, base);
	if (here && change->kind == CHANGE_ADD)
		add_call(model, pid, rank, base + 1, 50, step * 3 + 2, base);
	add_call(model, pid, rank, base + 2, 300, step * 3 + 2, base);
}

/* A run: 'base' changes pids, communicator identities and times. */
static struct run_model *run_of(uint64_t base, int steps, const struct change *change)
{
	struct run_model *model = run_model_new();

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	for (int rank = 0; rank < RANKS; rank++) {
		uint32_t pid = (uint32_t)(base + 100 + (uint64_t)rank);

		add_process(model, pid, rank);
		for (int step = 0; step < steps; step++)
			add_step(model, pid, rank, step, base, change);
	}
	run_model_finish(model);
	return model;
}

/* Compares a plain run with a changed one. */
static void compare(const struct change *change, int candidate_steps, struct run_diff *diff)
{
	static const struct change none = { CHANGE_NONE, -1, -1 };
	struct run_model *reference = run_of(1000, STEPS, &none);
	struct run_model *candidate = run_of(5000, candidate_steps, change);

	*diff = (struct run_diff){ 0 };
	CU_ASSERT_EQUAL(run_diff_compare(reference, candidate, diff), 0);
	run_model_free(reference);
	run_model_free(candidate);
}

static void assert_one(const struct run_diff *diff, const char *what, int rank, int step,
		       const char *communicator)
{
	CU_ASSERT_EQUAL_FATAL(diff->count, 1);
	CU_ASSERT_STRING_EQUAL(diff->differences[0].what, what);
	CU_ASSERT_EQUAL(diff->differences[0].job_rank, rank);
	CU_ASSERT_EQUAL(diff->differences[0].step, step);
	CU_ASSERT_STRING_EQUAL(diff->differences[0].communicator, communicator);
}

UNIT_TEST(run_diff, same_job_other_pids_and_identities_agree)
{
	struct change none = { CHANGE_NONE, -1, -1 };
	struct run_diff diff;

	compare(&none, STEPS, &diff);
	CU_ASSERT_EQUAL(diff.count, 0);
	run_diff_destroy(&diff);
}

UNIT_TEST(run_diff, count)
{
	struct change change = { CHANGE_COUNT, 1, 2 };
	struct run_diff diff;

	compare(&change, STEPS, &diff);
	assert_one(&diff, "count", 1, 2, "comm 0 (2 ranks)");
	/* The reference run's identity of that communicator, as check and dump name it. */
	CU_ASSERT_EQUAL(diff.differences[0].comm_id, 1001);
	CU_ASSERT_EQUAL(diff.differences[0].reference.number, 200);
	CU_ASSERT_EQUAL(diff.differences[0].candidate.number, 201);
	run_diff_destroy(&diff);
}

UNIT_TEST(run_diff, datatype)
{
	struct change change = { CHANGE_DATATYPE, 0, 1 };
	struct run_diff diff;

	compare(&change, STEPS, &diff);
	assert_one(&diff, "datatype", 0, 1, "comm 0 (2 ranks)");
	CU_ASSERT_STRING_EQUAL(diff.differences[0].reference.text, "ncclFloat32");
	CU_ASSERT_STRING_EQUAL(diff.differences[0].candidate.text, "ncclFloat64");
	run_diff_destroy(&diff);
}

UNIT_TEST(run_diff, missing_call)
{
	struct change change = { CHANGE_DROP, 1, 1 };
	struct run_diff diff;

	compare(&change, STEPS, &diff);
	assert_one(&diff, "missing_call", 1, 1, "comm 0 (2 ranks)");
	run_diff_destroy(&diff);
}

UNIT_TEST(run_diff, extra_call)
{
	struct change change = { CHANGE_ADD, 0, 3 };
	struct run_diff diff;

	compare(&change, STEPS, &diff);
	assert_one(&diff, "extra_call", 0, 3, "comm 0 (2 ranks)");
	CU_ASSERT_EQUAL(diff.differences[0].reference.kind, RUN_VALUE_ABSENT);
	run_diff_destroy(&diff);
}

UNIT_TEST(run_diff, call_on_another_communicator)
{
	struct change change = { CHANGE_MOVE, 1, 2 };
	struct run_diff diff;

	compare(&change, STEPS, &diff);
	assert_one(&diff, "communicator", 1, 2, "comm 0 (2 ranks)");
	CU_ASSERT_STRING_EQUAL(diff.differences[0].reference.text, "comm 0 (2 ranks)");
	CU_ASSERT_STRING_EQUAL(diff.differences[0].candidate.text, "comm 1 (2 ranks)");
	run_diff_destroy(&diff);
}

UNIT_TEST(run_diff, fewer_steps)
{
	struct change none = { CHANGE_NONE, -1, -1 };
	struct run_diff diff;

	compare(&none, STEPS - 1, &diff);
	/* Per rank: the steps, then the first call the shorter run lacks on each communicator. */
	CU_ASSERT_EQUAL_FATAL(diff.count, RANKS * 3);
	CU_ASSERT_STRING_EQUAL(diff.differences[0].what, "steps");
	CU_ASSERT_EQUAL(diff.differences[0].reference.number, STEPS);
	CU_ASSERT_EQUAL(diff.differences[0].candidate.number, STEPS - 1);
	CU_ASSERT_STRING_EQUAL(diff.differences[1].what, "missing_call");
	CU_ASSERT_EQUAL(diff.differences[1].step, STEPS - 1);
	run_diff_destroy(&diff);
}

static struct run_model *python_run(uint32_t pid, double lr)
{
	struct run_model *model = run_model_new();
	struct trace_record record = { .kind = TRACE_RECORD_PYTHON_CALL };
	struct trace_python_call *call = &record.python_call;

	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	call->pid = pid;
	call->rank = 0;
	for (int step = 0; step < 3; step++) {
		call->step = step;
		call->entry_ns = 1000 + (uint64_t)step * 100;
		call->qualified_name = "torch.optim.sgd.SGD.step";
		call->arg_count = 1;
		call->args[0] = (struct trace_python_arg){ .name = "lr",
							   .type = TRACE_VALUE_FLOAT,
							   .real = step == 2 ? lr : 0.1 };
		CU_ASSERT_EQUAL(run_model_add_record(model, 0, &record, 0), 0);
	}
	run_model_finish(model);
	return model;
}

UNIT_TEST(run_diff, python_argument)
{
	struct run_model *reference = python_run(10, 0.1), *candidate = python_run(20, 0.2);
	struct run_diff diff = { 0 };

	CU_ASSERT_EQUAL(run_diff_compare(reference, candidate, &diff), 0);
	assert_one(&diff, "python_argument", 0, 2, "");
	CU_ASSERT_STRING_EQUAL(diff.differences[0].reference.text, "lr=0.1");
	CU_ASSERT_STRING_EQUAL(diff.differences[0].candidate.text, "lr=0.2");
	run_diff_destroy(&diff);
	run_model_free(reference);
	run_model_free(candidate);
}
