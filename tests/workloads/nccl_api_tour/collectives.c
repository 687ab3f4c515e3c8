// SPDX-License-Identifier: MIT
/* The collectives, point-to-point calls, registrations, error queries and the revoke of
 * nccl-api-tour. */
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

/* ---- collectives ---- */

static int *world_members(struct tour *tour, int first, int count, bool reversed)
{
	int *members = allocate(tour, (size_t)count * sizeof(*members));

	for (int i = 0; i < count; i++)
		members[i] = reversed ? first + count - 1 - i : first + i;
	return members;
}

/* One all-reduce per datatype, the ops in turn, each with its own count; one in place. */
void all_reduce_every_datatype(struct tour *tour)
{
	const int *members = world_members(tour, 0, tour->nranks, false);
	void *send[DATATYPE_COUNT], *recv[DATATYPE_COUNT];

	for (int datatype = 0; datatype < DATATYPE_COUNT; datatype++) {
		size_t count = ALL_REDUCE_FIRST_COUNT + 2 * (size_t)datatype;
		size_t bytes = count * datatype_bytes(datatype);

		send[datatype] = allocate(tour, bytes);
		recv[datatype] = datatype == ncclFloat32 ? send[datatype] : allocate(tour, bytes);
		fill(send[datatype], datatype, count, tour->rank, count);
		all_reduce(tour, tour->world, send[datatype], recv[datatype], count, datatype,
			   datatype % OP_COUNT, ncclSuccess);
	}
	synchronize(tour, "the all-reduces of every datatype");
	for (int datatype = 0; datatype < DATATYPE_COUNT; datatype++) {
		size_t count = ALL_REDUCE_FIRST_COUNT + 2 * (size_t)datatype;

		check_reduction(tour, "ncclAllReduce", recv[datatype], members, tour->nranks,
				datatype, datatype % OP_COUNT, count, 0, count);
	}
}

/* Calls the double refuses at once: nothing is enqueued, the peers never see them. */
void refused_collectives(struct tour *tour)
{
	float *buffer = allocate(tour, FAILED_CALL_COUNT * sizeof(*buffer));

	all_reduce(tour, NULL, buffer, buffer, FAILED_CALL_COUNT, ncclFloat32, ncclSum,
		   ncclInvalidArgument);
	all_reduce(tour, tour->world, buffer, buffer, FAILED_CALL_COUNT + 1, BAD_DATATYPE, ncclSum,
		   ncclInvalidArgument);
	all_reduce(tour, tour->world, buffer, buffer, FAILED_CALL_COUNT + 2, ncclFloat32, BAD_OP,
		   ncclInvalidArgument);
	all_reduce(tour, tour->world, buffer, buffer, (size_t)OVERSIZED_COUNT, ncclUint8, ncclMax,
		   ncclInvalidArgument);
	broadcast(tour, tour->world, buffer, buffer, FAILED_CALL_COUNT + 3, ncclFloat32,
		  tour->nranks, ncclInvalidArgument);
	group_end(tour, ncclInvalidUsage);
}

void rooted_collectives(struct tour *tour)
{
	const int *members = world_members(tour, 0, tour->nranks, false);
	int rank = tour->rank, last = tour->nranks - 1;
	size_t n = (size_t)tour->nranks;
	int broadcast_root = 1, bcast_root = 0, reduce_root = last, scatter_root = 0;
	void *broadcast_send = allocate(tour, BROADCAST_COUNT * sizeof(int64_t));
	void *broadcast_recv = allocate(tour, BROADCAST_COUNT * sizeof(int64_t));
	void *bcast_buffer = allocate(tour, BCAST_COUNT * sizeof(uint32_t));
	void *reduce_send = allocate(tour, REDUCE_COUNT * sizeof(double));
	void *reduce_recv = allocate(tour, REDUCE_COUNT * sizeof(double));
	void *scatter_send = allocate(tour, n * SCATTER_COUNT * sizeof(uint64_t));
	void *scatter_recv = allocate(tour, SCATTER_COUNT * sizeof(uint64_t));
	ncclResult_t ret;

	fill(broadcast_send, ncclInt64, BROADCAST_COUNT, rank, BROADCAST_COUNT);
	if (rank == bcast_root)
		fill(bcast_buffer, ncclUint32, BCAST_COUNT, rank, BCAST_COUNT);
	else
		memset(bcast_buffer, 0xff, BCAST_COUNT * sizeof(uint32_t));
	fill(reduce_send, ncclFloat64, REDUCE_COUNT, rank, REDUCE_COUNT);
	fill(scatter_send, ncclUint64, n * SCATTER_COUNT, rank, SCATTER_COUNT);

	broadcast(tour, tour->world, broadcast_send, broadcast_recv, BROADCAST_COUNT, ncclInt64,
		  broadcast_root, ncclSuccess);

	ret = ncclBcast(bcast_buffer, BCAST_COUNT, ncclUint32, bcast_root, tour->world,
			tour->stream);
	ground_truth_collective(&tour->log, ret, "ncclBcast", bcast_buffer, NULL, BCAST_COUNT,
				ncclUint32, -1, bcast_root, tour->world, tour->stream);
	expect_result(tour, "ncclBcast", ret, ncclSuccess);

	ret = ncclReduce(reduce_send, reduce_recv, REDUCE_COUNT, ncclFloat64, ncclMax, reduce_root,
			 tour->world, tour->stream);
	ground_truth_collective(&tour->log, ret, "ncclReduce", reduce_send, reduce_recv,
				REDUCE_COUNT, ncclFloat64, ncclMax, reduce_root, tour->world,
				tour->stream);
	expect_result(tour, "ncclReduce", ret, ncclSuccess);

	ret = ncclScatter(scatter_send, scatter_recv, SCATTER_COUNT, ncclUint64, scatter_root,
			  tour->world, tour->stream);
	ground_truth_collective(&tour->log, ret, "ncclScatter", scatter_send, scatter_recv,
				SCATTER_COUNT, ncclUint64, -1, scatter_root, tour->world,
				tour->stream);
	expect_result(tour, "ncclScatter", ret, ncclSuccess);

	synchronize(tour, "the rooted collectives");
	check_copy(tour, "ncclBroadcast", broadcast_recv, ncclInt64, 0, BROADCAST_COUNT,
		   broadcast_root, 0, BROADCAST_COUNT);
	check_copy(tour, "ncclBcast", bcast_buffer, ncclUint32, 0, BCAST_COUNT, bcast_root, 0,
		   BCAST_COUNT);
	if (rank == reduce_root)
		check_reduction(tour, "ncclReduce", reduce_recv, members, tour->nranks, ncclFloat64,
				ncclMax, REDUCE_COUNT, 0, REDUCE_COUNT);
	check_copy(tour, "ncclScatter", scatter_recv, ncclUint64, 0, SCATTER_COUNT, scatter_root,
		   (size_t)rank * SCATTER_COUNT, SCATTER_COUNT);
}

/* Collectives on the other communicators made from ids and splits. */
void collectives_elsewhere(struct tour *tour)
{
	const int *members = world_members(tour, 0, tour->nranks, false);
	int rank = tour->rank, last = tour->nranks - 1;
	size_t n = (size_t)tour->nranks;
	int gather_root = last; /* in 'reversed': world rank 0 */
	void *gathered_send = allocate(tour, ALL_GATHER_COUNT * sizeof(int32_t));
	void *gathered_recv = allocate(tour, n * ALL_GATHER_COUNT * sizeof(int32_t));
	void *scatter_send = allocate(tour, n * REDUCE_SCATTER_COUNT * sizeof(float));
	void *scatter_recv = allocate(tour, REDUCE_SCATTER_COUNT * sizeof(float));
	void *all_to_all_send = allocate(tour, n * ALL_TO_ALL_COUNT);
	void *all_to_all_recv = allocate(tour, n * ALL_TO_ALL_COUNT);
	void *gather_send = allocate(tour, GATHER_COUNT);
	void *gather_recv = allocate(tour, n * GATHER_COUNT);
	void *shrunk_send = allocate(tour, SHRUNK_COUNT * sizeof(uint16_t));
	void *shrunk_recv = allocate(tour, SHRUNK_COUNT * sizeof(uint16_t));
	void *colored_buffer = allocate(tour, COLORED_COUNT);
	ncclResult_t ret;

	fill(gathered_send, ncclInt32, ALL_GATHER_COUNT, rank, ALL_GATHER_COUNT);
	fill(scatter_send, ncclFloat32, n * REDUCE_SCATTER_COUNT, rank, REDUCE_SCATTER_COUNT);
	fill(all_to_all_send, ncclUint8, n * ALL_TO_ALL_COUNT, rank, ALL_TO_ALL_COUNT);
	fill(gather_send, ncclInt8, GATHER_COUNT, rank, GATHER_COUNT);
	fill(shrunk_send, ncclBfloat16, SHRUNK_COUNT, rank, SHRUNK_COUNT);
	fill(colored_buffer, ncclInt8, COLORED_COUNT, rank, COLORED_COUNT);

	ret = ncclAllGather(gathered_send, gathered_recv, ALL_GATHER_COUNT, ncclInt32, tour->world,
			    tour->stream);
	ground_truth_collective(&tour->log, ret, "ncclAllGather", gathered_send, gathered_recv,
				ALL_GATHER_COUNT, ncclInt32, -1, -1, tour->world, tour->stream);
	expect_result(tour, "ncclAllGather", ret, ncclSuccess);

	ret = ncclReduceScatter(scatter_send, scatter_recv, REDUCE_SCATTER_COUNT, ncclFloat32,
				ncclSum, tour->configured, tour->stream);
	ground_truth_collective(&tour->log, ret, "ncclReduceScatter", scatter_send, scatter_recv,
				REDUCE_SCATTER_COUNT, ncclFloat32, ncclSum, -1, tour->configured,
				tour->stream);
	expect_result(tour, "ncclReduceScatter", ret, ncclSuccess);

	ret = ncclAlltoAll(all_to_all_send, all_to_all_recv, ALL_TO_ALL_COUNT, ncclUint8,
			   tour->scalable, tour->stream);
	ground_truth_collective(&tour->log, ret, "ncclAlltoAll", all_to_all_send, all_to_all_recv,
				ALL_TO_ALL_COUNT, ncclUint8, -1, -1, tour->scalable, tour->stream);
	expect_result(tour, "ncclAlltoAll", ret, ncclSuccess);

	ret = ncclGather(gather_send, gather_recv, GATHER_COUNT, ncclInt8, gather_root,
			 tour->reversed, tour->stream);
	ground_truth_collective(&tour->log, ret, "ncclGather", gather_send, gather_recv,
				GATHER_COUNT, ncclInt8, -1, gather_root, tour->reversed,
				tour->stream);
	expect_result(tour, "ncclGather", ret, ncclSuccess);

	broadcast(tour, tour->shrunk, shrunk_send, shrunk_recv, SHRUNK_COUNT, ncclBfloat16, last,
		  ncclSuccess);
	if (tour->colored)
		all_reduce(tour, tour->colored, colored_buffer, colored_buffer, COLORED_COUNT,
			   ncclInt8, ncclMax, ncclSuccess);

	synchronize(tour, "the collectives on split and configured communicators");
	for (int peer = 0; peer < tour->nranks; peer++) {
		check_copy(tour, "ncclAllGather", gathered_recv, ncclInt32,
			   (size_t)peer * ALL_GATHER_COUNT, ALL_GATHER_COUNT, peer, 0,
			   ALL_GATHER_COUNT);
		check_copy(tour, "ncclAlltoAll", all_to_all_recv, ncclUint8,
			   (size_t)peer * ALL_TO_ALL_COUNT, ALL_TO_ALL_COUNT, peer,
			   (size_t)rank * ALL_TO_ALL_COUNT, ALL_TO_ALL_COUNT);
		/* Ranks of 'reversed' count down from the last world rank. */
		if (rank == 0)
			check_copy(tour, "ncclGather", gather_recv, ncclInt8,
				   (size_t)peer * GATHER_COUNT, GATHER_COUNT, last - peer, 0,
				   GATHER_COUNT);
	}
	check_reduction(tour, "ncclReduceScatter", scatter_recv, members, tour->nranks, ncclFloat32,
			ncclSum, REDUCE_SCATTER_COUNT, (size_t)rank * REDUCE_SCATTER_COUNT,
			REDUCE_SCATTER_COUNT);
	check_copy(tour, "ncclBroadcast", shrunk_recv, ncclBfloat16, 0, SHRUNK_COUNT, last, 0,
		   SHRUNK_COUNT);
	if (tour->colored)
		check_reduction(tour, "ncclAllReduce", colored_buffer, members, last, ncclInt8,
				ncclMax, COLORED_COUNT, 0, COLORED_COUNT);
}

/* Around a ring, one group: each rank sends to the next and receives from the previous. */
void ring_exchange(struct tour *tour)
{
	int next = (tour->rank + 1) % tour->nranks;
	int previous = (tour->rank + tour->nranks - 1) % tour->nranks;
	void *out = allocate(tour, SEND_RECV_COUNT * sizeof(uint16_t));
	void *in = allocate(tour, SEND_RECV_COUNT * sizeof(uint16_t));

	fill(out, ncclFloat16, SEND_RECV_COUNT, tour->rank, SEND_RECV_COUNT);
	group_start(tour);
	send_receive(tour, true, tour->world, out, SEND_RECV_COUNT, ncclFloat16, -1,
		     ncclInvalidArgument);
	send_receive(tour, true, tour->world, out, SEND_RECV_COUNT, ncclFloat16, next, ncclSuccess);
	send_receive(tour, false, tour->world, in, SEND_RECV_COUNT, ncclFloat16, previous,
		     ncclSuccess);
	group_end(tour, ncclSuccess);
	synchronize(tour, "the ring of sends and receives");
	check_copy(tour, "ncclRecv", in, ncclFloat16, 0, SEND_RECV_COUNT, previous, 0,
		   SEND_RECV_COUNT);
}

/* One thread drives both ranks of ncclCommInitAll: their calls must share a group. */
void pair_all_reduce(struct tour *tour)
{
	static const int pair_members[2] = { 0, 1 };
	void *buffers[2];

	group_start(tour);
	for (int i = 0; i < 2; i++) {
		buffers[i] = allocate(tour, PAIR_COUNT * sizeof(int32_t));
		fill(buffers[i], ncclInt32, PAIR_COUNT, i, PAIR_COUNT);
		all_reduce(tour, tour->pair[i], buffers[i], buffers[i], PAIR_COUNT, ncclInt32,
			   ncclSum, ncclSuccess);
	}
	group_end(tour, ncclSuccess);
	synchronize(tour, "the all-reduce over the communicators of ncclCommInitAll");
	for (int i = 0; i < 2; i++)
		check_reduction(tour, "ncclAllReduce (ncclCommInitAll pair)", buffers[i],
				pair_members, 2, ncclInt32, ncclSum, PAIR_COUNT, 0, PAIR_COUNT);
}

void registration(struct tour *tour)
{
	void *buffer = allocate(tour, REGISTERED_BYTES);
	void *refused = NULL;
	ncclResult_t ret;

	ret = ncclCommRegister(tour->world, buffer, 0, &refused);
	ground_truth_register(&tour->log, ret, tour->world, buffer, 0, &refused);
	expect_result(tour, "ncclCommRegister(size 0)", ret, ncclInvalidArgument);
	ret = ncclCommRegister(tour->world, buffer, REGISTERED_BYTES, &tour->registration);
	ground_truth_register(&tour->log, ret, tour->world, buffer, REGISTERED_BYTES,
			      &tour->registration);
	expect_result(tour, "ncclCommRegister", ret, ncclSuccess);
	ret = ncclCommDeregister(tour->world, NULL);
	ground_truth_deregister(&tour->log, ret, tour->world, NULL);
	expect_result(tour, "ncclCommDeregister(NULL)", ret, ncclInvalidArgument);
}

/* PyTorch's watchdog polls from a thread of its own: so does this. */
static void *watchdog(void *argument)
{
	struct tour *tour = argument;

	async_error_query(tour, tour->world, true, ncclSuccess, ncclSuccess);
	async_error_query(tour, tour->configured, true, ncclSuccess, ncclSuccess);
	async_error_query(tour, tour->world, false, ncclInvalidArgument, ncclSuccess);
	return NULL;
}

void poll_from_another_thread(struct tour *tour)
{
	pthread_t thread;

	/* The main thread waits: the calls of both threads stay in log order. */
	if (pthread_create(&thread, NULL, watchdog, tour) != 0 || pthread_join(thread, NULL) != 0)
		die(tour, 2, "cannot run the polling thread");
}

/* Makes sure every rank is done with 'doomed' before any revokes it. */
static void world_barrier(struct tour *tour)
{
	int64_t *values = allocate(tour, BARRIER_COUNT * sizeof(*values));

	all_reduce(tour, tour->world, values, values, BARRIER_COUNT, ncclInt64, ncclSum,
		   ncclSuccess);
	synchronize(tour, "the barrier on the world");
}

/*
 * Revoke is local and immediate, so no rank waits for another's: each revokes 'doomed', sees
 * the error it caused, fails to use it, and all but the last rank shrink it without the last.
 */
void revoke_and_recover(struct tour *tour)
{
	int last = tour->nranks - 1;
	int *left_out = allocate(tour, sizeof(*left_out));
	int *self = allocate(tour, sizeof(*self));
	void *doomed_buffer = allocate(tour, DOOMED_COUNT * sizeof(uint32_t));
	void *recovered_buffer = allocate(tour, RECOVERED_COUNT * sizeof(float));
	const int *members = world_members(tour, 0, tour->nranks, false);
	ncclResult_t ret;

	fill(doomed_buffer, ncclUint32, DOOMED_COUNT, tour->rank, DOOMED_COUNT);
	all_reduce(tour, tour->doomed, doomed_buffer, doomed_buffer, DOOMED_COUNT, ncclUint32,
		   ncclMin, ncclSuccess);
	synchronize(tour, "the all-reduce before the revoke");
	check_reduction(tour, "ncclAllReduce (before revoke)", doomed_buffer, members, tour->nranks,
			ncclUint32, ncclMin, DOOMED_COUNT, 0, DOOMED_COUNT);
	world_barrier(tour);

	ret = ncclCommRevoke(tour->doomed, 1);
	log_revoke(tour, ret, tour->doomed, 1);
	expect_result(tour, "ncclCommRevoke(flags 1)", ret, ncclInvalidArgument);
	ret = ncclCommRevoke(tour->doomed, NCCL_REVOKE_DEFAULT);
	log_revoke(tour, ret, tour->doomed, NCCL_REVOKE_DEFAULT);
	expect_result(tour, "ncclCommRevoke", ret, ncclSuccess);

	async_error_query(tour, tour->doomed, true, ncclSuccess, ncclRemoteError);
	async_error_query(tour, NULL, true, ncclInvalidArgument, ncclSuccess);
	all_reduce(tour, tour->doomed, doomed_buffer, doomed_buffer, DOOMED_COUNT + 1, ncclUint32,
		   ncclMin, ncclInvalidUsage);
	split(tour, tour->doomed, DOOMED_COLOR, tour->rank, NULL, ncclInvalidUsage);

	if (tour->rank == last) {
		*self = last;
		shrink(tour, tour->doomed, self, 1, NCCL_SHRINK_DEFAULT, ncclInvalidArgument);
		return;
	}
	*left_out = last;
	tour->recovered = shrink(tour, tour->doomed, left_out, 1, NCCL_SHRINK_ABORT, ncclSuccess);
	fill(recovered_buffer, ncclFloat32, RECOVERED_COUNT, tour->rank, RECOVERED_COUNT);
	all_reduce(tour, tour->recovered, recovered_buffer, recovered_buffer, RECOVERED_COUNT,
		   ncclFloat32, ncclAvg, ncclSuccess);
	synchronize(tour, "the all-reduce on the shrunk communicator");
	check_reduction(tour, "ncclAllReduce (after shrink)", recovered_buffer, members, last,
			ncclFloat32, ncclAvg, RECOVERED_COUNT, 0, RECOVERED_COUNT);
}
