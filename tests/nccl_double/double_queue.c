// SPDX-License-Identifier: MIT
/* Issuing operations: groups, streams, and the per-stream thread that completes them in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

#define LIVENESS_PERIOD_MS 100
#define SINGLE_COMM_SLICE_MS 100
/* Operations on several communicators cannot sleep on one futex: poll them this often. */
#define MULTI_COMM_SLICE_MS 2

static struct double_stream default_stream = {
	.magic = DOUBLE_STREAM_MAGIC,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.changed = PTHREAD_COND_INITIALIZER,
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pending_changed = PTHREAD_COND_INITIALIZER;

/* Every stream made by doubleStreamCreate, so that a forked child can reset them all. */
static pthread_mutex_t streams_lock = PTHREAD_MUTEX_INITIALIZER;
static struct double_stream *created_streams;

/* Groups are per thread, as in NCCL: calls made inside one are launched by the outermost end. */
static __thread int group_depth;
static __thread struct double_op *group_ops;
static __thread int group_op_count;
static __thread int group_op_capacity;

/*
 * A child of fork() has none of its parent's threads: its streams start empty, with no worker,
 * and what the parent had in flight is not the child's to finish.
 */
static void reset_stream(struct double_stream *stream)
{
	pthread_mutex_init(&stream->lock, NULL);
	pthread_cond_init(&stream->changed, NULL);
	stream->head = NULL;
	stream->tail = NULL;
	stream->enqueued = 0;
	stream->completed = 0;
	stream->first_error = ncclSuccess;
	stream->thread_started = false;
	stream->stopping = false;
}

static void reset_after_fork(void)
{
	pthread_mutex_init(&pending_lock, NULL);
	pthread_cond_init(&pending_changed, NULL);
	pthread_mutex_init(&streams_lock, NULL);
	reset_stream(&default_stream);
	for (struct double_stream *stream = created_streams; stream; stream = stream->next_created)
		reset_stream(stream);
}

__attribute__((constructor)) static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, reset_after_fork);
}

struct double_stream *double_stream_from(cudaStream_t stream)
{
	struct double_stream *candidate = stream;

	if (!stream)
		return &default_stream;
	return candidate->magic == DOUBLE_STREAM_MAGIC ? candidate : NULL;
}

static void advance_to(_Atomic uint64_t *counter, uint64_t sequence)
{
	uint64_t current = atomic_load(counter);

	while (current < sequence && !atomic_compare_exchange_weak(counter, &current, sequence))
		;
}

static void finish_op(struct double_op *op, ncclResult_t result)
{
	struct ncclComm *comm = op->comm;

	op->state = DOUBLE_OP_FINISHED;
	op->result = result;
	if (op->kind == DOUBLE_OP_SEND)
		advance_to(&comm->send_completed[op->root], op->sequence);
	else if (op->kind == DOUBLE_OP_RECV)
		advance_to(&comm->recv_completed[op->root], op->sequence);
	else
		advance_to(&comm->collective_completed, op->sequence);
	if (result != ncclSuccess)
		double_comm_break(comm, result);
	double_wake(comm);

	/* The last touch of comm: a waiting ncclCommDestroy may free it right after. */
	pthread_mutex_lock(&pending_lock);
	comm->pending_ops--;
	pthread_cond_broadcast(&pending_changed);
	pthread_mutex_unlock(&pending_lock);
}

void double_comm_wait_idle(struct ncclComm *comm)
{
	pthread_mutex_lock(&pending_lock);
	while (comm->pending_ops > 0)
		pthread_cond_wait(&pending_changed, &pending_lock);
	pthread_mutex_unlock(&pending_lock);
}

static enum double_progress progress_op(struct double_op *op)
{
	if (op->kind == DOUBLE_OP_SEND || op->kind == DOUBLE_OP_RECV)
		return double_p2p_progress(op);
	return double_collective_progress(op);
}

static void fail_unfinished(struct double_work *work, ncclResult_t result)
{
	for (int i = 0; i < work->op_count; i++)
		if (work->ops[i].state != DOUBLE_OP_FINISHED)
			finish_op(&work->ops[i], result);
}

/* Checks the peers of every unfinished operation; fails those whose peers are gone. */
static int fail_dead_peers(struct double_work *work)
{
	int failed = 0;

	for (int i = 0; i < work->op_count; i++) {
		struct double_op *op = &work->ops[i];

		if (op->state == DOUBLE_OP_FINISHED || !double_peer_died(op->comm, NULL))
			continue;
		fprintf(stderr, "NCCL WARN double: rank %d of comm %016llx: a peer died\n",
			op->comm->rank, (unsigned long long)op->comm->commHash);
		finish_op(op, ncclRemoteError);
		failed++;
	}
	return failed;
}

/*
 * Moves every operation of one launch forward until all are finished. They progress together,
 * so the sends and receives of a group cannot wait on each other in a circle.
 */
static ncclResult_t run_work(struct double_work *work, ncclResult_t earlier_failure)
{
	uint64_t timeout = double_timeout_ms();
	uint64_t last_progress = double_now_ms();
	uint64_t last_check = last_progress;
	int remaining = work->op_count;
	ncclResult_t result = ncclSuccess;

	/* Like a faulted CUDA stream, a failed one fails what follows until it is synchronized. */
	if (earlier_failure == ncclSuccess)
		earlier_failure = double_network_transfer(work);
	if (earlier_failure != ncclSuccess) {
		fail_unfinished(work, earlier_failure);
		remaining = 0;
	}
	while (remaining > 0) {
		struct ncclComm *watched = NULL;
		bool several_comms = false;
		bool progressed = false;
		uint32_t seen = 0;
		uint64_t now;

		for (int i = 0; i < work->op_count; i++) {
			struct double_op *op = &work->ops[i];
			enum double_progress progress;

			if (op->state == DOUBLE_OP_FINISHED)
				continue;
			if (!watched) {
				watched = op->comm;
				seen = double_wake_word(watched);
			}
			several_comms |= op->comm != watched;
			progress = progress_op(op);
			if (progress == DOUBLE_DONE) {
				finish_op(op, op->result);
				remaining--;
			}
			progressed |= progress != DOUBLE_NO_PROGRESS;
		}
		if (remaining == 0 || !watched)
			break;
		now = double_now_ms();
		if (progressed) {
			last_progress = now;
			continue;
		}
		if (timeout && now - last_progress >= timeout) {
			fprintf(stderr,
				"NCCL WARN double: rank %d of comm %016llx timed out after %llu ms "
				"waiting for its peers\n",
				watched->rank, (unsigned long long)watched->commHash,
				(unsigned long long)timeout);
			fail_unfinished(work, ncclRemoteError);
			break;
		}
		if (now - last_check >= LIVENESS_PERIOD_MS) {
			int failed = fail_dead_peers(work);

			last_check = now;
			/* 'watched' may be finished now: pick again before sleeping. */
			if (failed) {
				remaining -= failed;
				continue;
			}
		}
		double_wait(watched, seen,
			    several_comms ? MULTI_COMM_SLICE_MS : SINGLE_COMM_SLICE_MS);
	}
	for (int i = 0; i < work->op_count && result == ncclSuccess; i++)
		result = work->ops[i].result;
	return result;
}

static void *stream_worker(void *argument)
{
	struct double_stream *stream = argument;

	pthread_mutex_lock(&stream->lock);
	for (;;) {
		struct double_work *work;
		ncclResult_t earlier_failure;
		ncclResult_t result;

		while (!stream->head && !stream->stopping)
			pthread_cond_wait(&stream->changed, &stream->lock);
		if (!stream->head)
			break;
		work = stream->head;
		earlier_failure = stream->first_error;
		pthread_mutex_unlock(&stream->lock);

		result = run_work(work, earlier_failure);

		pthread_mutex_lock(&stream->lock);
		stream->head = work->next;
		if (!stream->head)
			stream->tail = NULL;
		stream->completed++;
		if (stream->first_error == ncclSuccess)
			stream->first_error = result;
		pthread_cond_broadcast(&stream->changed);
		free(work);
	}
	pthread_mutex_unlock(&stream->lock);
	return NULL;
}

/* Blocking mode: waits until the stream has finished its first 'target' works. */
static ncclResult_t wait_for(struct double_stream *stream, uint64_t target)
{
	ncclResult_t result;

	pthread_mutex_lock(&stream->lock);
	while (stream->completed < target)
		pthread_cond_wait(&stream->changed, &stream->lock);
	result = stream->first_error;
	pthread_mutex_unlock(&stream->lock);
	return result;
}

static ncclResult_t enqueue(struct double_stream *stream, struct double_work *work,
			    uint64_t *position)
{
	ncclResult_t result = ncclSuccess;

	pthread_mutex_lock(&pending_lock);
	for (int i = 0; i < work->op_count; i++)
		work->ops[i].comm->pending_ops++;
	pthread_mutex_unlock(&pending_lock);

	pthread_mutex_lock(&stream->lock);
	if (!stream->thread_started) {
		if (pthread_create(&stream->thread, NULL, stream_worker, stream) == 0) {
			stream->thread_started = true;
			/* The default stream lives as long as the process: nobody joins it. */
			if (stream == &default_stream)
				pthread_detach(stream->thread);
		} else {
			result = ncclSystemError;
		}
	}
	if (result == ncclSuccess) {
		work->next = NULL;
		if (stream->tail)
			stream->tail->next = work;
		else
			stream->head = work;
		stream->tail = work;
		*position = ++stream->enqueued;
		pthread_cond_broadcast(&stream->changed);
	}
	pthread_mutex_unlock(&stream->lock);

	if (result != ncclSuccess) {
		for (int i = 0; i < work->op_count; i++)
			finish_op(&work->ops[i], result);
		free(work);
	}
	return result;
}

/* Splits a launch by stream, keeping call order within each, and enqueues the pieces. */
static ncclResult_t launch(struct double_op *ops, int op_count)
{
	ncclResult_t result = ncclSuccess;
	bool *taken = calloc((size_t)op_count, sizeof(*taken));
	struct double_stream **waited = calloc((size_t)op_count, sizeof(*waited));
	uint64_t *positions = calloc((size_t)op_count, sizeof(*positions));
	int streams = 0;

	if (!taken || !waited || !positions) {
		free(taken);
		free(waited);
		free(positions);
		return ncclSystemError;
	}
	for (int first = 0; first < op_count; first++) {
		struct double_work *work;
		int matching = 0;

		if (taken[first])
			continue;
		for (int i = first; i < op_count; i++)
			matching += !taken[i] && ops[i].stream == ops[first].stream;
		work = malloc(sizeof(*work) + (size_t)matching * sizeof(work->ops[0]));
		if (!work) {
			result = ncclSystemError;
			break;
		}
		work->op_count = 0;
		for (int i = first; i < op_count; i++) {
			if (taken[i] || ops[i].stream != ops[first].stream)
				continue;
			taken[i] = true;
			work->ops[work->op_count++] = ops[i];
		}
		if (enqueue(double_stream_from(ops[first].stream), work, &positions[streams]) !=
		    ncclSuccess)
			result = ncclSystemError;
		else
			waited[streams++] = double_stream_from(ops[first].stream);
	}
	free(taken);
	/* Blocking mode: the call returns when what it launched has finished everywhere. */
	for (int i = 0; i < streams && double_blocking(); i++) {
		ncclResult_t finished = wait_for(waited[i], positions[i]);

		if (result == ncclSuccess)
			result = finished;
	}
	free(waited);
	free(positions);
	return result;
}

static ncclResult_t group_append(const struct double_op *op)
{
	if (group_op_count == group_op_capacity) {
		int capacity = group_op_capacity ? group_op_capacity * 2 : 16;
		struct double_op *grown = realloc(group_ops, (size_t)capacity * sizeof(*grown));

		if (!grown)
			return ncclSystemError;
		group_ops = grown;
		group_op_capacity = capacity;
	}
	group_ops[group_op_count++] = *op;
	return ncclSuccess;
}

ncclResult_t double_issue(const struct double_op *call)
{
	struct double_op op = *call;
	struct ncclComm *comm = op.comm;

	/* Sequences follow issue order, which every rank must share, not completion order. */
	if (op.kind == DOUBLE_OP_SEND)
		op.sequence = ++comm->send_issued[op.root];
	else if (op.kind == DOUBLE_OP_RECV)
		op.sequence = ++comm->recv_issued[op.root];
	else
		op.sequence = ++comm->collective_issued;
	__atomic_add_fetch(&comm->opCount, 1, __ATOMIC_RELAXED);
	op.state = DOUBLE_OP_WAITING_TURN;
	op.result = ncclSuccess;
	op.bytes_moved = 0;
	op.message_bytes = 0;
	op.chunks_moved = 0;
	op.mismatch_reported = false;

	if (group_depth > 0)
		return group_append(&op);
	return launch(&op, 1);
}

ncclResult_t pncclGroupStart(void)
{
	double_library_init();
	group_depth++;
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclGroupStart);

ncclResult_t pncclGroupEnd(void)
{
	ncclResult_t result = ncclSuccess;

	double_library_init();
	if (group_depth == 0)
		return ncclInvalidUsage;
	if (--group_depth == 0 && group_op_count > 0) {
		result = launch(group_ops, group_op_count);
		group_op_count = 0;
	}
	return result;
}
DOUBLE_WEAK_ALIAS(ncclGroupEnd);

ncclResult_t doubleStreamCreate(cudaStream_t *stream)
{
	struct double_stream *created;

	double_library_init();
	if (!stream)
		return ncclInvalidArgument;
	created = calloc(1, sizeof(*created));
	if (!created)
		return ncclSystemError;
	created->magic = DOUBLE_STREAM_MAGIC;
	pthread_mutex_init(&created->lock, NULL);
	pthread_cond_init(&created->changed, NULL);
	pthread_mutex_lock(&streams_lock);
	created->next_created = created_streams;
	created_streams = created;
	pthread_mutex_unlock(&streams_lock);
	*stream = created;
	return ncclSuccess;
}

ncclResult_t doubleStreamSynchronize(cudaStream_t handle)
{
	struct double_stream *stream = double_stream_from(handle);
	ncclResult_t result;
	uint64_t target;

	double_library_init();
	if (!stream)
		return ncclInvalidArgument;
	pthread_mutex_lock(&stream->lock);
	target = stream->enqueued;
	while (stream->completed < target)
		pthread_cond_wait(&stream->changed, &stream->lock);
	result = stream->first_error;
	stream->first_error = ncclSuccess;
	pthread_mutex_unlock(&stream->lock);
	return result;
}

ncclResult_t doubleStreamDestroy(cudaStream_t handle)
{
	struct double_stream *stream = double_stream_from(handle);
	bool joinable;

	double_library_init();
	if (!handle || !stream)
		return ncclInvalidArgument;
	pthread_mutex_lock(&stream->lock);
	while (stream->completed < stream->enqueued)
		pthread_cond_wait(&stream->changed, &stream->lock);
	stream->stopping = true;
	joinable = stream->thread_started;
	pthread_cond_broadcast(&stream->changed);
	pthread_mutex_unlock(&stream->lock);
	if (joinable)
		pthread_join(stream->thread, NULL);
	pthread_mutex_lock(&streams_lock);
	for (struct double_stream **link = &created_streams; *link; link = &(*link)->next_created) {
		if (*link == stream) {
			*link = stream->next_created;
			break;
		}
	}
	pthread_mutex_unlock(&streams_lock);
	pthread_mutex_destroy(&stream->lock);
	pthread_cond_destroy(&stream->changed);
	stream->magic = 0;
	free(stream);
	return ncclSuccess;
}
