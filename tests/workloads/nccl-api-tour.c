// SPDX-License-Identifier: MIT
/* Calls every NCCL function the tracer probes, from N rank processes, and logs each call made. */
/*
 * Every rank calls each of the 27 functions of user/model/nccl_api.c at least once, with argument
 * values that tell the calls apart (a different count per call, every datatype and every
 * reduction op across the world all-reduces, roots and peers other than 0), checks the return
 * code of each against what the test double documents, checks the data every collective moved,
 * and writes the call to DIR/rank-R.jsonl (tests/workloads/nccl_ground_truth.h, step -1).
 *
 * The tour, in order, on each rank:
 *  - ids: ncclGetUniqueId three times (world, config and scalable ids; each rank publishes its
 *    own in DIR/unique-ids-R and the world uses rank 0's) and once with NULL;
 *  - creation: ncclCommInitRank (world), ncclCommInitRankConfig (a valid config, and a zeroed
 *    one that fails), ncclCommInitRankScalable (nId 1, and nId 0 that fails), ncclCommInitRank
 *    with nranks 0, ncclCommInitAll (ndev 2 in this one process, and ndev 0 that fails);
 *  - splits of the world: all ranks reversed by key, with a config; a colour for all but the
 *    last rank, which passes NCCL_SPLIT_NOCOLOR; a colour of -7 that fails (on rank 0 only
 *    with --lone-refused-split); ncclCommShrink excluding nobody; a split kept for the revoke;
 *  - collectives: twelve ncclAllReduce (one per datatype, ops cycling), ncclBroadcast,
 *    ncclBcast, ncclReduce, ncclAllGather, ncclReduceScatter, ncclAlltoAll, ncclGather,
 *    ncclScatter, grouped ncclSend/ncclRecv around a ring, a grouped all-reduce over the two
 *    communicators of ncclCommInitAll, and calls that fail: a NULL comm, datatype 99, an op
 *    out of range, a root out of range, a peer of -1 inside a group, an unmatched ncclGroupEnd;
 *  - ncclCommRegister/ncclCommDeregister, and both with bad arguments;
 *  - ncclCommGetAsyncError: on healthy communicators (the tracer leaves these out), and from a
 *    second thread with a NULL result pointer, with a NULL comm, and after ncclCommRevoke,
 *    where it reports ncclRemoteError;
 *  - fault handling on the kept split: ncclCommRevoke with bad flags, then for real; a
 *    collective and a split on it fail with ncclInvalidUsage; ranks but the last shrink it
 *    (NCCL_SHRINK_ABORT) leaving the last rank out, which instead tries to exclude itself;
 *  - after --linger-ms, teardown: ncclCommAbort of the revoked communicator and of NULL,
 *    ncclCommFinalize and ncclCommDestroy (and both of NULL).
 * No communicator is freed before teardown, so no handle is reused within one run.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"
#include "rank_launcher.h"
#include "nccl_api_tour/tour.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROGRAM " --log-dir DIR [--ranks N] [--linger-ms M] "
		"[--lone-refused-split]\n"
		"Runs N rank processes (default 2, at least 2) over libnccl.so.2 that each call\n"
		"every NCCL function tcheck-bpf probes, with distinct arguments, and writes\n"
		"DIR/rank-R.jsonl: every NCCL call made, as JSON lines. Exits 0 when every call\n"
		"returned and computed what the NCCL test double documents.\n"
		"  --linger-ms M          ranks wait M ms before teardown, their communicators\n"
		"                         alive (the tour itself lasts a few milliseconds)\n"
		"  --lone-refused-split   only rank 0 makes the split the library refuses, so\n"
		"                         the ranks' counts of calls to ncclCommSplit differ\n"
		"Example: " PROGRAM " --ranks 4 --log-dir /tmp/tour\n");
}

static int parse_options(int argc, char **argv, struct options *options)
{
	const struct program_option table[] = {
		{ "ranks", PROGRAM_OPTION_INT, &options->ranks, 2, DOUBLE_MAX_RANKS },
		{ "log-dir", PROGRAM_OPTION_TEXT, &options->log_dir },
		{ "linger-ms", PROGRAM_OPTION_LONG, &options->linger_ms, 0, 3600000 },
		{ "lone-refused-split", PROGRAM_OPTION_FLAG, &options->lone_refused_split },
		{ "worker", PROGRAM_OPTION_FLAG, &options->worker },
	};

	*options = (struct options){ .ranks = 2 };
	if (program_options_parse(PROGRAM, argc, argv, table, sizeof(table) / sizeof(table[0]),
				  usage))
		return -1;
	if (!options->log_dir) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static void teardown(struct tour *tour)
{
	ncclResult_t ret;

	ret = ncclCommDeregister(tour->world, tour->registration);
	ground_truth_deregister(&tour->log, ret, tour->world, tour->registration);
	expect_result(tour, "ncclCommDeregister", ret, ncclSuccess);

	comm_end(tour, "ncclCommAbort", tour->doomed, ncclSuccess);
	comm_end(tour, "ncclCommAbort", NULL, ncclSuccess);
	if (tour->recovered)
		comm_end(tour, "ncclCommDestroy", tour->recovered, ncclSuccess);
	if (tour->colored)
		comm_end(tour, "ncclCommDestroy", tour->colored, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->shrunk, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->reversed, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->pair[1], ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->pair[0], ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->scalable, ncclSuccess);
	comm_end(tour, "ncclCommFinalize", tour->configured, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->configured, ncclSuccess);
	comm_end(tour, "ncclCommFinalize", NULL, ncclInvalidArgument);
	comm_end(tour, "ncclCommDestroy", NULL, ncclInvalidArgument);
	comm_end(tour, "ncclCommFinalize", tour->world, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->world, ncclSuccess);
	doubleStreamDestroy(tour->stream);
	for (int i = 0; i < tour->allocation_count; i++)
		free(tour->allocations[i]);
	tour->allocation_count = 0;
}

static int run_rank(const struct options *options)
{
	struct tour tour = { .options = options };
	char path[PATH_MAX];

	tour.rank = env_int("RANK");
	tour.nranks = env_int("WORLD_SIZE");
	if (tour.rank < 0 || tour.nranks != options->ranks || tour.rank >= options->ranks)
		die(&tour, 2, "RANK and WORLD_SIZE must be set by the launcher");
	snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, tour.rank);
	if (ground_truth_open(&tour.log, path) < 0)
		die(&tour, 2, "cannot create the ground-truth log");
	if (doubleStreamCreate(&tour.stream) != ncclSuccess)
		die(&tour, 2, "doubleStreamCreate failed");

	make_unique_ids(&tour);
	create_communicators(&tour);
	split_world(&tour);
	all_reduce_every_datatype(&tour);
	refused_collectives(&tour);
	rooted_collectives(&tour);
	collectives_elsewhere(&tour);
	ring_exchange(&tour);
	pair_all_reduce(&tour);
	registration(&tour);
	async_error_query(&tour, tour.world, true, ncclSuccess, ncclSuccess);
	poll_from_another_thread(&tour);
	revoke_and_recover(&tour);
	if (options->linger_ms)
		sleep_ns(options->linger_ms * 1000000L);
	teardown(&tour);
	ground_truth_close(&tour.log);
	return 0;
}

/* ---- the launcher: one process per rank, with the environment torchrun gives ---- */

static void remove_stale_outputs(const struct options *options)
{
	char path[PATH_MAX];

	for (int rank = 0; rank < options->ranks; rank++) {
		snprintf(path, sizeof(path), UNIQUE_ID_FILE_FORMAT, options->log_dir, rank);
		unlink(path);
		snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, rank);
		unlink(path);
	}
}

static int launch(const struct options *options, int argc, char **argv)
{
	const struct rank_launcher launcher = {
		.program = PROGRAM,
		.ranks = options->ranks,
		.grace_seconds = FAILURE_GRACE_SECONDS,
	};
	int status;

	if (make_log_directory(PROGRAM, options->log_dir) < 0)
		return 2;
	remove_stale_outputs(options);
	setenv(DOUBLE_TIMEOUT_ENV, DEFAULT_DOUBLE_TIMEOUT_MS, 0);
	status = launch_ranks(&launcher, argc, argv);
	if (status != 0)
		return status;
	printf(PROGRAM ": %d ranks called every probed NCCL function\n", options->ranks);
	return 0;
}

int main(int argc, char **argv)
{
	struct options options;

	if (parse_options(argc, argv, &options) < 0)
		return 2;
	if (options.worker)
		return run_rank(&options);
	return launch(&options, argc, argv);
}
