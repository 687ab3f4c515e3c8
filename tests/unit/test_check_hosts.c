// SPDX-License-Identifier: MIT
/*
 * `tcheck-bpf check T1 T2` on traces of two hosts whose monotonic clocks
 * differ by an hour: merged on their clock anchors, the job's hang is
 * found and localised to the rank of the second host that stopped.
 */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "trace/trace_writer.h"
#include "nccl_records.h"
#include "unit.h"

#define RANKS 4
#define STEPS 20
#define STALLED_RANK 2 /* on host B */
#define STALL_STEP 15
#define STEP_NS 10000000ull
#define COMM_ID 0x77aa000000000004ull
#define HOST_A_MONOTONIC 1000000000000ull /* 1000 s after host A booted */
#define HOST_B_AHEAD 3600000000000ull	  /* host B booted an hour earlier */
#define REALTIME_ANCHOR 1800000000000000000ull

static struct trace_record call_record(int rank, const char *function, uint64_t count, int64_t seq,
				       uint64_t entry_ns)
{
	struct trace_record record = nccl_call_record(function, 4000 + (uint32_t)rank, rank, RANKS,
						      COMM_ID, seq, count, entry_ns);

	record.call.duration_ns = 2000;
	record.call.comm = 0x5000;
	return record;
}

/*
 * The trace of one host: its ranks' process records, each step's
 * all-reduce and all-gather (none from step STALL_STEP on for the stalled
 * rank, and none after it from the others), and statistics records every
 * 50 ms for a second after the end.
 */
static void write_host(const char *path, int first_rank, uint64_t clock_ahead_ns)
{
	uint64_t job_start = HOST_A_MONOTONIC + clock_ahead_ns;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_record record;
	char error[256];

	memset(&header, 0, sizeof(header));
	snprintf(header.hostname, sizeof(header.hostname), "node-%d", first_rank / 2);
	header.anchor_monotonic_ns = job_start;
	header.anchor_realtime_ns = REALTIME_ANCHOR;
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(writer);
	for (int rank = first_rank; rank < first_rank + 2; rank++) {
		memset(&record, 0, sizeof(record));
		record.kind = TRACE_RECORD_PROCESS;
		record.process = (struct trace_process){
			4000 + (uint32_t)rank, 0, rank, rank % 2, RANKS, -1, job_start, 0, "train"
		};
		CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
	}
	for (int step = 0; step < STEPS; step++)
		for (int rank = first_rank; rank < first_rank + 2; rank++) {
			uint64_t start =
				job_start + (uint64_t)step * STEP_NS + (uint64_t)rank * 100000;

			/* The others issue that step's calls, then wait on it for ever. */
			if (step > STALL_STEP || (rank == STALLED_RANK && step == STALL_STEP))
				continue;
			record = call_record(rank, "ncclAllReduce", 256, 2 * step, start + 1000000);
			CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
			record = call_record(rank, "ncclAllGather", 64, 2 * step + 1,
					     start + 6000000);
			CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
		}
	for (uint64_t t = 0; t <= 1000000000ull; t += 50000000ull) {
		memset(&record, 0, sizeof(record));
		record.kind = TRACE_RECORD_STATS;
		record.stats.timestamp_ns = job_start + STEPS * STEP_NS + t;
		CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
	}
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
}

/* Runs `check --json` on the traces; returns its exit status, its output in 'out'. */
static int run_check(char *first, char *second, const char *out)
{
	/* Steps of 10 ms: hang_factor steps alone make a hang, not a second at least. */
	char *argv[] = { "check", "--json", "--hang-min-seconds", "0", first, second, NULL };
	int saved, fd, status;

	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(saved >= 0 && fd >= 0);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	status = command_check(second ? 6 : 5, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	return status;
}

UNIT_TEST(check_hosts, hang_on_two_hosts_merged_on_clock_anchors)
{
	char directory[] = "/tmp/tcheck-hosts.XXXXXX";
	char host_a[64], host_b[64], out[64], line[4096];
	json_t *hang = NULL, *laggard;
	FILE *findings;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(directory));
	snprintf(host_a, sizeof(host_a), "%s/a.trace", directory);
	snprintf(host_b, sizeof(host_b), "%s/b.trace", directory);
	snprintf(out, sizeof(out), "%s/findings.jsonl", directory);
	write_host(host_a, 0, 0);
	write_host(host_b, 2, HOST_B_AHEAD);
	CU_ASSERT_EQUAL(run_check(host_a, host_b, out), EXIT_FINDINGS);
	findings = fopen(out, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(findings);
	while (!hang && fgets(line, sizeof(line), findings)) {
		json_t *finding = json_loads(line, 0, NULL);

		if (finding &&
		    strcmp(json_string_value(json_object_get(finding, "kind")), "hang") == 0)
			hang = finding;
		else
			json_decref(finding);
	}
	fclose(findings);
	CU_ASSERT_PTR_NOT_NULL_FATAL(hang);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(hang, "collective")),
			       "ncclAllReduce");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(hang, "seq")), 2 * STALL_STEP);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(hang, "class")), "host");
	laggard = json_array_get(json_object_get(hang, "lagging_ranks"), 0);
	CU_ASSERT_EQUAL(json_array_size(json_object_get(hang, "lagging_ranks")), 1);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(laggard, "job_rank")), STALLED_RANK);
	/* Two expected steps after the last call (rank 3's, host B), on the real-time clock. */
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(hang, "detected_ns")),
			REALTIME_ANCHOR + (STALL_STEP * STEP_NS + 3 * 100000 + 6000000) +
				2 * STEP_NS);
	json_decref(hang);
	unlink(host_a);
	unlink(host_b);
	unlink(out);
	rmdir(directory);
}

/*
 * A trace that holds no call (the recorder stopped before the job made one)
 * is nothing to judge: check says so and exits 3, never "0 hang(s)" and 0.
 */
UNIT_TEST(check_hosts, a_trace_without_calls_is_nothing_to_judge)
{
	char directory[] = "/tmp/tcheck-unit-empty-XXXXXX", path[256], out[256];
	struct trace_header header;
	struct trace_writer *writer;
	char error[256];

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(directory));
	snprintf(path, sizeof(path), "%s/empty.trace", directory);
	snprintf(out, sizeof(out), "%s/findings.jsonl", directory);
	memset(&header, 0, sizeof(header));
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(writer);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(run_check(path, NULL, out), EXIT_NOTHING_TO_JUDGE);
	unlink(path);
	unlink(out);
	rmdir(directory);
}
