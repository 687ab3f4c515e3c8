// SPDX-License-Identifier: MIT
/* The rank's helpers of nccl-api-tour and its NCCL calls, each logged to the ground truth (with the
 * helpers nccl_ground_truth.h lacks) and its return code checked. */
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

/* ---- one rank ---- */

void die(const struct tour *tour, int status, const char *what)
{
	fprintf(stderr, PROGRAM ": rank %d: %s\n", tour->rank, what);
	exit(status);
}

/* Every call is made for a known outcome: anything else ends the rank. */
void expect_result(const struct tour *tour, const char *call, ncclResult_t got,
		   ncclResult_t expected)
{
	char message[256];

	if (got == expected)
		return;
	snprintf(message, sizeof(message), "%s returned %d (%s), the double documents %d (%s)",
		 call, got, ncclGetErrorString(got), expected, ncclGetErrorString(expected));
	die(tour, EXIT_MISBEHAVED, message);
}

void *allocate(struct tour *tour, size_t bytes)
{
	void *memory;

	if (tour->allocation_count == MAX_ALLOCATIONS)
		die(tour, 2, "too many buffers");
	memory = calloc(1, bytes);
	if (!memory)
		die(tour, 2, "out of memory");
	tour->allocations[tour->allocation_count++] = memory;
	return memory;
}

uint64_t hash_of(ncclComm_t comm)
{
	uint64_t hash = 0;

	if (comm)
		doubleCommGetHash(comm, &hash);
	return hash;
}

/* ---- ground truth for the calls nccl_ground_truth.h has no helper for ---- */

void log_scalable(struct tour *tour, ncclResult_t ret, const ncclComm_t *newcomm, int nranks,
		  int myrank, int id_count, const ncclUniqueId *ids, const ncclConfig_t *config)
{
	ground_truth_begin(&tour->log, "ncclCommInitRankScalable", ret);
	ground_truth_pointer(&tour->log, "newcomm", newcomm);
	ground_truth_signed(&tour->log, "nranks", nranks);
	ground_truth_signed(&tour->log, "myrank", myrank);
	ground_truth_signed(&tour->log, "nId", id_count);
	ground_truth_pointer(&tour->log, "commIds", ids);
	ground_truth_pointer(&tour->log, "config", config);
	ground_truth_pointer(&tour->log, "newcomm_out", *newcomm);
	ground_truth_unsigned(&tour->log, "comm_hash", hash_of(*newcomm));
	ground_truth_end(&tour->log);
}

/* The communicators written go after "args": the trace keeps them in no argument. */
void log_init_all(struct tour *tour, ncclResult_t ret, const ncclComm_t *comms, int ndev,
		  const int *devlist)
{
	ground_truth_begin(&tour->log, "ncclCommInitAll", ret);
	ground_truth_pointer(&tour->log, "comm", comms);
	ground_truth_signed(&tour->log, "ndev", ndev);
	ground_truth_pointer(&tour->log, "devlist", devlist);
	ground_truth_end_args(&tour->log);
	for (int i = 0; i < ndev && ret == ncclSuccess; i++) {
		char key[32];

		snprintf(key, sizeof(key), "comm_out_%d", i);
		ground_truth_pointer(&tour->log, key, comms[i]);
		snprintf(key, sizeof(key), "comm_hash_%d", i);
		ground_truth_unsigned(&tour->log, key, hash_of(comms[i]));
	}
	ground_truth_end(&tour->log);
}

static void log_shrink(struct tour *tour, ncclResult_t ret, ncclComm_t comm, const int *excluded,
		       int excluded_count, const ncclComm_t *newcomm, const ncclConfig_t *config,
		       int flags)
{
	ground_truth_begin(&tour->log, "ncclCommShrink", ret);
	ground_truth_pointer(&tour->log, "comm", comm);
	ground_truth_pointer(&tour->log, "excludeRanksList", excluded);
	ground_truth_signed(&tour->log, "excludeRanksCount", excluded_count);
	ground_truth_pointer(&tour->log, "newcomm", newcomm);
	ground_truth_pointer(&tour->log, "config", config);
	ground_truth_signed(&tour->log, "shrinkFlags", flags);
	ground_truth_pointer(&tour->log, "newcomm_out", *newcomm);
	ground_truth_unsigned(&tour->log, "comm_hash", hash_of(*newcomm));
	ground_truth_end(&tour->log);
}

void log_revoke(struct tour *tour, ncclResult_t ret, ncclComm_t comm, int flags)
{
	ground_truth_begin(&tour->log, "ncclCommRevoke", ret);
	ground_truth_pointer(&tour->log, "comm", comm);
	ground_truth_signed(&tour->log, "revokeFlags", flags);
	ground_truth_end(&tour->log);
}

/*
 * A call the tracer keeps (it failed, or reported an error) is logged without "asyncError":
 * the trace gives that argument as the result read back, by name, where the log has the
 * pointer. The value read back goes under "async_error", absent when the pointer was NULL.
 */
static void log_async_error(struct tour *tour, ncclResult_t ret, ncclComm_t comm,
			    const ncclResult_t *async_error)
{
	if (async_error && ret == ncclSuccess && *async_error == ncclSuccess) {
		ground_truth_async_error(&tour->log, ret, comm, async_error);
		return;
	}
	ground_truth_begin(&tour->log, "ncclCommGetAsyncError", ret);
	ground_truth_pointer(&tour->log, "comm", comm);
	ground_truth_end_args(&tour->log);
	ground_truth_pointer(&tour->log, "async_error_pointer", async_error);
	if (async_error)
		ground_truth_signed(&tour->log, "async_error", *async_error);
	ground_truth_signed(&tour->log, "tracer_filtered", 0);
	ground_truth_end(&tour->log);
}

/* A failed ncclGetUniqueId writes no id: logged without one. */
void log_failed_unique_id(struct tour *tour, ncclResult_t ret)
{
	ground_truth_begin(&tour->log, "ncclGetUniqueId", ret);
	ground_truth_end(&tour->log);
}

/* ---- logged calls ---- */

void all_reduce(struct tour *tour, ncclComm_t comm, const void *send, void *recv, size_t count,
		int datatype, int op, ncclResult_t expected)
{
	ncclResult_t ret = ncclAllReduce(send, recv, count, (ncclDataType_t)datatype,
					 (ncclRedOp_t)op, comm, tour->stream);

	ground_truth_collective(&tour->log, ret, "ncclAllReduce", send, recv, count, datatype, op,
				-1, comm, tour->stream);
	expect_result(tour, "ncclAllReduce", ret, expected);
}

void broadcast(struct tour *tour, ncclComm_t comm, const void *send, void *recv, size_t count,
	       int datatype, int root, ncclResult_t expected)
{
	ncclResult_t ret = ncclBroadcast(send, recv, count, (ncclDataType_t)datatype, root, comm,
					 tour->stream);

	ground_truth_collective(&tour->log, ret, "ncclBroadcast", send, recv, count, datatype, -1,
				root, comm, tour->stream);
	expect_result(tour, "ncclBroadcast", ret, expected);
}

void group_start(struct tour *tour)
{
	ncclResult_t ret = ncclGroupStart();

	ground_truth_no_args(&tour->log, "ncclGroupStart", ret);
	expect_result(tour, "ncclGroupStart", ret, ncclSuccess);
}

void group_end(struct tour *tour, ncclResult_t expected)
{
	ncclResult_t ret = ncclGroupEnd();

	ground_truth_no_args(&tour->log, "ncclGroupEnd", ret);
	expect_result(tour, "ncclGroupEnd", ret, expected);
}

void send_receive(struct tour *tour, bool send, ncclComm_t comm, void *buffer, size_t count,
		  int datatype, int peer, ncclResult_t expected)
{
	ncclResult_t ret =
		send ? ncclSend(buffer, count, (ncclDataType_t)datatype, peer, comm, tour->stream)
		     : ncclRecv(buffer, count, (ncclDataType_t)datatype, peer, comm, tour->stream);

	ground_truth_p2p(&tour->log, ret, send, buffer, count, datatype, peer, comm, tour->stream);
	expect_result(tour, send ? "ncclSend" : "ncclRecv", ret, expected);
}

ncclComm_t split(struct tour *tour, ncclComm_t parent, int color, int key, ncclConfig_t *config,
		 ncclResult_t expected)
{
	ncclComm_t created = NULL;
	ncclResult_t ret = ncclCommSplit(parent, color, key, &created, config);

	ground_truth_split(&tour->log, ret, parent, color, key, &created, config, hash_of(created));
	expect_result(tour, "ncclCommSplit", ret, expected);
	if ((ret == ncclSuccess && color != NCCL_SPLIT_NOCOLOR) != (created != NULL))
		die(tour, EXIT_MISBEHAVED, "ncclCommSplit: a comm exactly when one was asked for");
	return created;
}

ncclComm_t shrink(struct tour *tour, ncclComm_t parent, int *excluded, int excluded_count,
		  int flags, ncclResult_t expected)
{
	ncclComm_t created = NULL;
	ncclResult_t ret = ncclCommShrink(parent, excluded, excluded_count, &created, NULL, flags);

	log_shrink(tour, ret, parent, excluded, excluded_count, &created, NULL, flags);
	expect_result(tour, "ncclCommShrink", ret, expected);
	if ((ret == ncclSuccess) != (created != NULL))
		die(tour, EXIT_MISBEHAVED, "ncclCommShrink: a comm exactly when it succeeds");
	return created;
}

void comm_end(struct tour *tour, const char *name, ncclComm_t comm, ncclResult_t expected)
{
	ncclResult_t ret;

	if (strcmp(name, "ncclCommFinalize") == 0)
		ret = ncclCommFinalize(comm);
	else if (strcmp(name, "ncclCommAbort") == 0)
		ret = ncclCommAbort(comm);
	else
		ret = ncclCommDestroy(comm);
	ground_truth_comm_only(&tour->log, name, ret, comm);
	expect_result(tour, name, ret, expected);
}

void async_error_query(struct tour *tour, ncclComm_t comm, bool with_result, ncclResult_t expected,
		       ncclResult_t expected_error)
{
	ncclResult_t async_error = ncclSuccess;
	ncclResult_t *pointer = with_result ? &async_error : NULL;
	ncclResult_t ret = ncclCommGetAsyncError(comm, pointer);

	log_async_error(tour, ret, comm, pointer);
	expect_result(tour, "ncclCommGetAsyncError", ret, expected);
	expect_result(tour, "the error ncclCommGetAsyncError reports", async_error, expected_error);
}
