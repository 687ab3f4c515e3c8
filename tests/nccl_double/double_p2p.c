// SPDX-License-Identifier: MIT
/* ncclSend and ncclRecv: messages cut into chunks through a small ring per ordered rank pair. */
#include <string.h>

#include "double_internal.h"

ncclResult_t double_p2p_check(const struct double_op *op)
{
	const struct ncclComm *comm = op->comm;
	ncclResult_t result = double_comm_check(comm);
	size_t bytes;

	if (result != ncclSuccess)
		return result;
	if (!double_stream_from(op->stream) || !double_datatype_valid(op->datatype))
		return ncclInvalidArgument;
	if (op->root < 0 || op->root >= comm->nRanks)
		return ncclInvalidArgument;
	if (op->count > DOUBLE_MAX_MESSAGE_BYTES)
		return ncclInvalidArgument;
	bytes = op->count * double_datatype_size(op->datatype);
	if (bytes > DOUBLE_MAX_MESSAGE_BYTES)
		return ncclInvalidArgument;
	if (bytes && !(op->kind == DOUBLE_OP_SEND ? op->sendbuff : op->recvbuff))
		return ncclInvalidArgument;
	return ncclSuccess;
}

/* Publishes as many chunks as the ring has room for. An empty message is one empty chunk. */
static enum double_progress progress_send(struct double_op *op, struct double_ring *ring)
{
	uint64_t total = op->count * double_datatype_size(op->datatype);
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	bool moved = false;

	while (op->chunks_moved == 0 || op->bytes_moved < total) {
		uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
		struct double_ring_chunk *chunk = &ring->chunks[head % DOUBLE_RING_SLOTS];
		uint64_t length = total - op->bytes_moved;

		if (head - tail >= DOUBLE_RING_SLOTS)
			break;
		if (length > DOUBLE_RING_CHUNK_BYTES)
			length = DOUBLE_RING_CHUNK_BYTES;
		if (length)
			memcpy(double_ring_chunk_data(ring, head),
			       (const unsigned char *)op->sendbuff + op->bytes_moved, length);
		chunk->message_sequence = op->sequence;
		chunk->message_bytes = total;
		chunk->chunk_bytes = (uint32_t)length;
		atomic_store_explicit(&ring->head, ++head, memory_order_release);
		op->bytes_moved += length;
		op->chunks_moved++;
		moved = true;
	}
	if (op->chunks_moved > 0 && op->bytes_moved == total)
		return DOUBLE_DONE;
	return moved ? DOUBLE_PROGRESSED : DOUBLE_NO_PROGRESS;
}

/*
 * Takes chunks as they come. A message longer than the receive buffer is consumed whole but
 * only what fits is kept; a shorter one leaves the end of the buffer untouched.
 */
static enum double_progress progress_recv(struct double_op *op, struct double_ring *ring)
{
	uint64_t capacity = op->count * double_datatype_size(op->datatype);
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	bool moved = false;

	while (op->chunks_moved == 0 || op->bytes_moved < op->message_bytes) {
		uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
		const struct double_ring_chunk *chunk = &ring->chunks[tail % DOUBLE_RING_SLOTS];
		uint64_t kept;

		if (head == tail)
			break;
		if (chunk->message_sequence != op->sequence) {
			op->result = ncclInternalError;
			return DOUBLE_DONE;
		}
		op->message_bytes = chunk->message_bytes;
		kept = op->bytes_moved < capacity ? capacity - op->bytes_moved : 0;
		if (kept > chunk->chunk_bytes)
			kept = chunk->chunk_bytes;
		if (kept)
			memcpy((unsigned char *)op->recvbuff + op->bytes_moved,
			       double_ring_chunk_data(ring, tail), kept);
		op->bytes_moved += chunk->chunk_bytes;
		op->chunks_moved++;
		atomic_store_explicit(&ring->tail, ++tail, memory_order_release);
		moved = true;
	}
	if (op->chunks_moved > 0 && op->bytes_moved >= op->message_bytes)
		return DOUBLE_DONE;
	return moved ? DOUBLE_PROGRESSED : DOUBLE_NO_PROGRESS;
}

enum double_progress double_p2p_progress(struct double_op *op)
{
	struct ncclComm *comm = op->comm;
	bool sending = op->kind == DOUBLE_OP_SEND;
	_Atomic uint64_t *completed =
		sending ? &comm->send_completed[op->root] : &comm->recv_completed[op->root];
	enum double_progress progress;

	if (atomic_load(&comm->local_abort)) {
		op->result = ncclInvalidUsage;
		return DOUBLE_DONE;
	}
	/* Messages between two ranks keep their issue order, so they match one for one. */
	if (op->state == DOUBLE_OP_WAITING_TURN) {
		if (atomic_load(completed) + 1 < op->sequence)
			return double_stalled(op);
		op->state = DOUBLE_OP_ACTIVE;
	}
	if (sending)
		progress = progress_send(op, double_ring_between(comm, comm->rank, op->root));
	else
		progress = progress_recv(op, double_ring_between(comm, op->root, comm->rank));
	if (progress == DOUBLE_NO_PROGRESS)
		return double_stalled(op);
	double_wake(comm);
	return progress;
}

static ncclResult_t issue_p2p(enum double_op_kind kind, const void *sendbuff, void *recvbuff,
			      size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
			      cudaStream_t stream)
{
	struct double_op op = {
		.kind = kind,
		.sendbuff = sendbuff,
		.recvbuff = recvbuff,
		.count = count,
		.datatype = datatype,
		.root = peer,
		.comm = comm,
		.stream = stream,
	};
	ncclResult_t result = double_p2p_check(&op);

	if (result != ncclSuccess)
		return result;
	return double_issue(&op);
}

ncclResult_t pncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return issue_p2p(DOUBLE_OP_SEND, sendbuff, NULL, count, datatype, peer, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclSend);

ncclResult_t pncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
		       ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return issue_p2p(DOUBLE_OP_RECV, NULL, recvbuff, count, datatype, peer, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclRecv);
