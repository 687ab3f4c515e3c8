// SPDX-License-Identifier: MIT
/*
 * `tcheck-bpf diff` on runs recorded on two hosts each, whose monotonic
 * clocks differ by an hour: each side's hosts are merged on their clock
 * anchors into one job of four ranks; the same job on other hosts (other
 * pids, handles, identities and clocks) agrees, and a count changed on one
 * rank of the second host is reported there and nowhere else.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diff/run_diff.h"
#include "diff/run_model.h"
#include "trace/trace_writer.h"
#include "nccl_records.h"
#include "unit.h"

#define RANKS 4
#define STEPS 6
#define STEP_NS 10000000ull
#define REALTIME_ANCHOR 1800000000000000000ull

/* What distinguishes one recording of the job from another. */
struct recording {
	uint32_t pid_base;
	uint64_t comm_id, handle, monotonic_start;
	int changed_rank, changed_step; /* -1: no change */
};

/* The step's all-gather (64 values) or all-reduce (1000, 1001 where the run changed it). */
static struct trace_record call_record(const struct recording *run, int rank, int step,
				       const char *function, uint64_t entry_ns)
{
	bool all_reduce = strcmp(function, "ncclAllReduce") == 0;
	uint64_t count = !all_reduce						  ? 64
			 : rank == run->changed_rank && step == run->changed_step ? 1001
										  : 1000;
	struct trace_record record =
		nccl_call_record(function, run->pid_base + (uint32_t)rank, rank, RANKS,
				 run->comm_id, 2 * step + all_reduce, count, entry_ns);

	record.call.comm = run->handle;
	return record;
}

/* One host's trace: ranks first_rank and first_rank + 1, an all-gather then an all-reduce a step.
 */
static void write_host(const char *path, const struct recording *run, int first_rank,
		       uint64_t clock_ahead_ns)
{
	uint64_t start = run->monotonic_start + clock_ahead_ns;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_record record;
	char error[256];

	memset(&header, 0, sizeof(header));
	header.anchor_monotonic_ns = start;
	header.anchor_realtime_ns = REALTIME_ANCHOR;
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(writer);
	for (int rank = first_rank; rank < first_rank + 2; rank++) {
		memset(&record, 0, sizeof(record));
		record.kind = TRACE_RECORD_PROCESS;
		record.process = (struct trace_process){ run->pid_base + (uint32_t)rank,
							 0,
							 rank,
							 rank % 2,
							 RANKS,
							 -1,
							 start,
							 0,
							 "train" };
		CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
	}
	for (int step = 0; step < STEPS; step++)
		for (int rank = first_rank; rank < first_rank + 2; rank++) {
			uint64_t at = start + (uint64_t)step * STEP_NS + (uint64_t)rank * 1000;

			record = call_record(run, rank, step, "ncclAllGather", at);
			CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
			record = call_record(run, rank, step, "ncclAllReduce", at + 500000);
			CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
		}
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
}

/* The run's two hosts (host B's clock an hour ahead), read as one side. */
static struct run_model *record_run(const char *directory, const char *name,
				    const struct recording *run)
{
	char host_a[128], host_b[128], error[256];
	const char *paths[2] = { host_a, host_b };
	struct run_model *model;

	snprintf(host_a, sizeof(host_a), "%s/%s-a.trace", directory, name);
	snprintf(host_b, sizeof(host_b), "%s/%s-b.trace", directory, name);
	write_host(host_a, run, 0, 0);
	write_host(host_b, run, 2, 3600000000000ull);
	model = run_model_load(paths, 2, error, sizeof(error));
	unlink(host_a);
	unlink(host_b);
	return model;
}

UNIT_TEST(diff_hosts, two_hosts_per_side_merge_into_one_job)
{
	char directory[] = "/tmp/tcheck-diff-hosts.XXXXXX";
	const struct recording reference = { 4000, 0x77aa0004, 0x5000, 1000000000000ull, -1, -1 };
	const struct recording same = { 9000, 0x1234, 0x7000, 5000000000000ull, -1, -1 };
	const struct recording changed = { 9000, 0x1234, 0x7000, 5000000000000ull, 3, 4 };
	struct run_model *left, *right, *other;
	struct run_diff diff = { 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(directory));
	left = record_run(directory, "reference", &reference);
	right = record_run(directory, "same", &same);
	other = record_run(directory, "changed", &changed);
	CU_ASSERT_FATAL(left && right && other);
	CU_ASSERT_EQUAL(run_model_rank_count(left), RANKS);
	CU_ASSERT_EQUAL(run_model_rank(left, 3)->call_count, 2 * STEPS);
	CU_ASSERT_EQUAL(run_model_rank(left, 3)->steps, STEPS);
	CU_ASSERT_EQUAL(run_diff_compare(left, right, &diff), 0);
	CU_ASSERT_EQUAL(diff.count, 0);
	run_diff_destroy(&diff);
	memset(&diff, 0, sizeof(diff));
	CU_ASSERT_EQUAL(run_diff_compare(left, other, &diff), 0);
	CU_ASSERT_EQUAL_FATAL(diff.count, 1);
	CU_ASSERT_EQUAL(diff.differences[0].job_rank, 3);
	CU_ASSERT_EQUAL(diff.differences[0].step, 4);
	CU_ASSERT_STRING_EQUAL(diff.differences[0].what, "count");
	CU_ASSERT_EQUAL(diff.differences[0].reference.number, 1000);
	CU_ASSERT_EQUAL(diff.differences[0].candidate.number, 1001);
	run_diff_destroy(&diff);
	run_model_free(left);
	run_model_free(right);
	run_model_free(other);
	rmdir(directory);
}
