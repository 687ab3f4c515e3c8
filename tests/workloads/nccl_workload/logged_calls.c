// SPDX-License-Identifier: MIT
/* The rank's helpers of nccl-workload and its NCCL calls, each logged to the ground truth before
 * its result is checked. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_pause.h"
#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"
#include "rank_launcher.h"
#include "nccl_workload/workload.h"

static volatile double compute_sink;

/* ---- the worker: one rank of the job ---- */

uint64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* Burns the CPU like a kernel would occupy the GPU: the rank is busy, not waiting. */
void compute(const struct worker *worker)
{
	double microseconds = (double)worker->options->compute_us;
	uint64_t end;
	double accumulator = 0;

	if (worker->rank == worker->options->slow_rank)
		microseconds *= worker->options->slow_factor;
	end = now_ns() + (uint64_t)(microseconds * 1000.0);
	while (now_ns() < end)
		for (int i = 0; i < 64; i++)
			accumulator += sqrt(accumulator + i);
	compute_sink = accumulator;
}

void die(const struct worker *worker, int status, const char *what)
{
	/* The log is line buffered: exit() has nothing of it left to lose. */
	fprintf(stderr, "nccl-workload: rank %d step %d: %s\n", worker->rank, worker->log.step,
		what);
	exit(status);
}

void check_call(const struct worker *worker, const char *name, ncclResult_t ret)
{
	char message[160];

	if (ret == ncclSuccess)
		return;
	snprintf(message, sizeof(message), "%s failed: %d (%s)", name, ret,
		 ncclGetErrorString(ret));
	die(worker, 1, message);
}

void expect(const struct worker *worker, const char *what, size_t index, double got,
	    double expected)
{
	char message[200];

	if (fabs(got - expected) <= 1e-6 * fmax(1.0, fabs(expected)))
		return;
	snprintf(message, sizeof(message), "wrong result: %s[%zu] is %.17g, expected %.17g", what,
		 index, got, expected);
	die(worker, EXIT_WRONG_RESULT, message);
}

int rank_at(const struct worker *worker, int tp_index, int dp_index, int stage)
{
	return stage * worker->dp * worker->tp + dp_index * worker->tp + tp_index;
}

/* The value every rank contributes at position i: small integers, exact in any float type. */
double value_of(int rank, int step, size_t i)
{
	return (double)(rank + 1) + (double)(i % 7) + (double)(step % 5);
}

/* ---- logged NCCL calls: each returns through check_call after its ground truth is written ---- */

void all_reduce(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
		ncclDataType_t datatype, ncclRedOp_t op)
{
	ncclResult_t ret = ncclAllReduce(send, recv, count, datatype, op, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclAllReduce", send, recv, count, datatype, op,
				-1, comm, worker->stream);
	check_call(worker, "ncclAllReduce", ret);
}

void all_gather(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		size_t sendcount, ncclDataType_t datatype)
{
	ncclResult_t ret = ncclAllGather(send, recv, sendcount, datatype, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclAllGather", send, recv, sendcount, datatype,
				-1, -1, comm, worker->stream);
	check_call(worker, "ncclAllGather", ret);
}

void reduce_scatter(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		    size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op)
{
	ncclResult_t ret =
		ncclReduceScatter(send, recv, recvcount, datatype, op, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclReduceScatter", send, recv, recvcount,
				datatype, op, -1, comm, worker->stream);
	check_call(worker, "ncclReduceScatter", ret);
}

void broadcast(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	       ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclBroadcast(send, recv, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclBroadcast", send, recv, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclBroadcast", ret);
}

void bcast(struct worker *worker, ncclComm_t comm, void *buff, size_t count,
	   ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclBcast(buff, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclBcast", buff, NULL, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclBcast", ret);
}

void reduce(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	    ncclDataType_t datatype, ncclRedOp_t op, int root)
{
	ncclResult_t ret = ncclReduce(send, recv, count, datatype, op, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclReduce", send, recv, count, datatype, op,
				root, comm, worker->stream);
	check_call(worker, "ncclReduce", ret);
}

void all_to_all(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
		ncclDataType_t datatype)
{
	ncclResult_t ret = ncclAlltoAll(send, recv, count, datatype, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclAlltoAll", send, recv, count, datatype, -1,
				-1, comm, worker->stream);
	check_call(worker, "ncclAlltoAll", ret);
}

void gather(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	    ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclGather(send, recv, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclGather", send, recv, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclGather", ret);
}

void scatter(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	     ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclScatter(send, recv, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclScatter", send, recv, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclScatter", ret);
}

void send_to(struct worker *worker, ncclComm_t comm, const void *buffer, size_t count, int peer)
{
	ncclResult_t ret = ncclSend(buffer, count, ncclFloat32, peer, comm, worker->stream);

	ground_truth_p2p(&worker->log, ret, true, buffer, count, ncclFloat32, peer, comm,
			 worker->stream);
	check_call(worker, "ncclSend", ret);
}

void receive_from(struct worker *worker, ncclComm_t comm, void *buffer, size_t count, int peer)
{
	ncclResult_t ret = ncclRecv(buffer, count, ncclFloat32, peer, comm, worker->stream);

	ground_truth_p2p(&worker->log, ret, false, buffer, count, ncclFloat32, peer, comm,
			 worker->stream);
	check_call(worker, "ncclRecv", ret);
}

void group_start(struct worker *worker)
{
	ncclResult_t ret = ncclGroupStart();

	ground_truth_no_args(&worker->log, "ncclGroupStart", ret);
	check_call(worker, "ncclGroupStart", ret);
}

void group_end(struct worker *worker)
{
	ncclResult_t ret = ncclGroupEnd();

	ground_truth_no_args(&worker->log, "ncclGroupEnd", ret);
	check_call(worker, "ncclGroupEnd", ret);
}

uint64_t hash_of(ncclComm_t comm)
{
	uint64_t hash = 0;

	if (comm)
		doubleCommGetHash(comm, &hash);
	return hash;
}

ncclComm_t split(struct worker *worker, int color, int key, ncclConfig_t *config)
{
	ncclComm_t created = NULL;
	ncclResult_t ret = ncclCommSplit(worker->world, color, key, &created, config);

	ground_truth_split(&worker->log, ret, worker->world, color, key, &created, config,
			   hash_of(created));
	check_call(worker, "ncclCommSplit", ret);
	if ((color == NCCL_SPLIT_NOCOLOR) != (created == NULL))
		die(worker, EXIT_WRONG_RESULT, "ncclCommSplit: NULL comm iff NCCL_SPLIT_NOCOLOR");
	return created;
}

void destroy(struct worker *worker, ncclComm_t comm)
{
	ncclResult_t ret;

	if (!comm)
		return;
	ret = ncclCommDestroy(comm);
	ground_truth_comm_only(&worker->log, "ncclCommDestroy", ret, comm);
	check_call(worker, "ncclCommDestroy", ret);
}
