// SPDX-License-Identifier: MIT
/* The collective entry points and how each collective runs over the shared per-rank slots. */
#include <stdio.h>
#include <string.h>

#include "double_internal.h"

static bool is_rooted(enum double_op_kind kind)
{
	return kind == DOUBLE_OP_BROADCAST || kind == DOUBLE_OP_REDUCE ||
	       kind == DOUBLE_OP_GATHER || kind == DOUBLE_OP_SCATTER;
}

static bool is_reducing(enum double_op_kind kind)
{
	return kind == DOUBLE_OP_ALL_REDUCE || kind == DOUBLE_OP_REDUCE ||
	       kind == DOUBLE_OP_REDUCE_SCATTER;
}

/* Elements a rank copies into its slot for a collective of 'count'. */
static size_t contributed_elements(enum double_op_kind kind, size_t count, int rank, int root,
				   int nranks)
{
	switch (kind) {
	case DOUBLE_OP_BROADCAST:
		return rank == root ? count : 0;
	case DOUBLE_OP_SCATTER:
		return rank == root ? count * (size_t)nranks : 0;
	case DOUBLE_OP_REDUCE_SCATTER:
	case DOUBLE_OP_ALL_TO_ALL:
		return count * (size_t)nranks;
	default:
		return count;
	}
}

/* Elements a rank finds in its receive buffer afterwards. */
static size_t received_elements(enum double_op_kind kind, size_t count, int rank, int root,
				int nranks)
{
	switch (kind) {
	case DOUBLE_OP_REDUCE:
		return rank == root ? count : 0;
	case DOUBLE_OP_GATHER:
		return rank == root ? count * (size_t)nranks : 0;
	case DOUBLE_OP_ALL_GATHER:
	case DOUBLE_OP_ALL_TO_ALL:
		return count * (size_t)nranks;
	default:
		return count;
	}
}

ncclResult_t double_collective_check(const struct double_op *op)
{
	const struct ncclComm *comm = op->comm;
	ncclResult_t result = double_comm_check(comm);
	size_t element_bytes;

	if (result != ncclSuccess)
		return result;
	if (!double_stream_from(op->stream) || !double_datatype_valid(op->datatype))
		return ncclInvalidArgument;
	if (is_reducing(op->kind) && !double_redop_valid(op->redop))
		return ncclInvalidArgument;
	if (is_rooted(op->kind) && (op->root < 0 || op->root >= comm->nRanks))
		return ncclInvalidArgument;
	element_bytes = double_datatype_size(op->datatype);
	if (op->count > DOUBLE_MAX_MESSAGE_BYTES ||
	    contributed_elements(op->kind, op->count, comm->rank, op->root, comm->nRanks) *
			    element_bytes >
		    DOUBLE_MAX_MESSAGE_BYTES)
		return ncclInvalidArgument;
	if (!op->sendbuff &&
	    contributed_elements(op->kind, op->count, comm->rank, op->root, comm->nRanks) > 0)
		return ncclInvalidArgument;
	if (!op->recvbuff &&
	    received_elements(op->kind, op->count, comm->rank, op->root, comm->nRanks) > 0)
		return ncclInvalidArgument;
	return ncclSuccess;
}

static void post(struct double_op *op)
{
	struct ncclComm *comm = op->comm;
	struct double_rank_state *self = &comm->rank_states[comm->rank];
	struct double_collective_descriptor *descriptor = &self->descriptors[op->sequence & 1];
	size_t bytes =
		contributed_elements(op->kind, op->count, comm->rank, op->root, comm->nRanks) *
		double_datatype_size(op->datatype);

	if (bytes)
		memcpy(double_collective_slot(comm, op->sequence, comm->rank), op->sendbuff, bytes);
	descriptor->sequence = op->sequence;
	descriptor->count = op->count;
	descriptor->kind = op->kind;
	descriptor->datatype = op->datatype;
	descriptor->redop = is_reducing(op->kind) ? op->redop : 0;
	descriptor->root = is_rooted(op->kind) ? op->root : 0;
	atomic_store_explicit(&self->posted_sequence, op->sequence, memory_order_release);
}

static bool all_posted(const struct ncclComm *comm, uint64_t sequence)
{
	for (int peer = 0; peer < comm->nRanks; peer++)
		if (atomic_load_explicit(&comm->rank_states[peer].posted_sequence,
					 memory_order_acquire) < sequence)
			return false;
	return true;
}

/*
 * Ranks must agree on what the collective is. When they do not (a rank skipped a call, or called
 * another one), nothing matches and the operation waits, as NCCL would hang: the timeout or an
 * abort ends it. A different count alone is tolerated: every rank then works on the smallest
 * count and leaves the rest of its receive buffer untouched. So is a different datatype of the
 * same element size (int32 and uint32): NCCL moves bytes, and each rank reads them as its own
 * type, silently.
 */
static bool agreed_count(struct double_op *op, size_t *agreed)
{
	const struct ncclComm *comm = op->comm;
	const struct double_collective_descriptor *mine =
		&comm->rank_states[comm->rank].descriptors[op->sequence & 1];

	*agreed = op->count;
	for (int peer = 0; peer < comm->nRanks; peer++) {
		const struct double_collective_descriptor *theirs =
			&comm->rank_states[peer].descriptors[op->sequence & 1];

		if (theirs->sequence != mine->sequence || theirs->kind != mine->kind ||
		    double_datatype_size(theirs->datatype) !=
			    double_datatype_size(mine->datatype) ||
		    theirs->redop != mine->redop || theirs->root != mine->root) {
			if (!op->mismatch_reported)
				fprintf(stderr,
					"NCCL WARN double: rank %d of comm %016llx: collective "
					"#%llu "
					"is kind %d datatype %d op %d root %d here but kind %d "
					"datatype %d op %d root %d on rank %d: waiting\n",
					comm->rank, (unsigned long long)comm->commHash,
					(unsigned long long)op->sequence, mine->kind,
					mine->datatype, mine->redop, mine->root, theirs->kind,
					theirs->datatype, theirs->redop, theirs->root, peer);
			op->mismatch_reported = true;
			return false;
		}
		if (theirs->count < *agreed)
			*agreed = theirs->count;
	}
	if (*agreed != op->count)
		fprintf(stderr,
			"NCCL WARN double: rank %d of comm %016llx: collective #%llu has count %zu "
			"here but only %zu on some rank: using %zu\n",
			comm->rank, (unsigned long long)comm->commHash,
			(unsigned long long)op->sequence, op->count, *agreed, *agreed);
	return true;
}

static ncclResult_t complete(const struct double_op *op, size_t agreed)
{
	const struct ncclComm *comm = op->comm;
	const unsigned char *inputs[DOUBLE_MAX_RANKS];
	size_t element_bytes = double_datatype_size(op->datatype);
	unsigned char *out = op->recvbuff;
	int nranks = comm->nRanks;
	int rank = comm->rank;

	for (int peer = 0; peer < nranks; peer++) {
		size_t peer_count = comm->rank_states[peer].descriptors[op->sequence & 1].count;
		size_t offset = 0;

		/* Chunked collectives read this rank's share of each peer's slot. */
		if (op->kind == DOUBLE_OP_REDUCE_SCATTER || op->kind == DOUBLE_OP_ALL_TO_ALL ||
		    op->kind == DOUBLE_OP_SCATTER)
			offset = (size_t)rank * peer_count * element_bytes;
		inputs[peer] = double_collective_slot(comm, op->sequence, peer) + offset;
	}
	switch (op->kind) {
	case DOUBLE_OP_ALL_REDUCE:
	case DOUBLE_OP_REDUCE_SCATTER:
		double_reduce(out, inputs, nranks, agreed, op->datatype, op->redop);
		break;
	case DOUBLE_OP_REDUCE:
		if (rank == op->root)
			double_reduce(out, inputs, nranks, agreed, op->datatype, op->redop);
		break;
	case DOUBLE_OP_BROADCAST:
	case DOUBLE_OP_SCATTER:
		memcpy(out, inputs[op->root], agreed * element_bytes);
		break;
	case DOUBLE_OP_GATHER:
		if (rank != op->root)
			break;
		/* fall through */
	case DOUBLE_OP_ALL_GATHER:
	case DOUBLE_OP_ALL_TO_ALL:
		for (int peer = 0; peer < nranks; peer++)
			memcpy(out + (size_t)peer * op->count * element_bytes, inputs[peer],
			       agreed * element_bytes);
		break;
	default:
		return ncclInternalError;
	}
	return ncclSuccess;
}

enum double_progress double_collective_progress(struct double_op *op)
{
	struct ncclComm *comm = op->comm;
	size_t agreed;

	if (atomic_load(&comm->local_abort)) {
		op->result = ncclInvalidUsage;
		return DOUBLE_DONE;
	}
	if (op->state == DOUBLE_OP_WAITING_TURN) {
		/* Collectives of one communicator run in issue order, whatever their stream. */
		if (atomic_load(&comm->collective_completed) + 1 < op->sequence)
			return double_stalled(op);
		post(op);
		op->state = DOUBLE_OP_ACTIVE;
		double_wake(comm);
		return DOUBLE_PROGRESSED;
	}
	if (!all_posted(comm, op->sequence) || !agreed_count(op, &agreed))
		return double_stalled(op);
	op->result = complete(op, agreed);
	return DOUBLE_DONE;
}

static ncclResult_t issue_collective(enum double_op_kind kind, const void *sendbuff, void *recvbuff,
				     size_t count, ncclDataType_t datatype, ncclRedOp_t redop,
				     int root, ncclComm_t comm, cudaStream_t stream)
{
	struct double_op op = {
		.kind = kind,
		.sendbuff = sendbuff,
		.recvbuff = recvbuff,
		.count = count,
		.datatype = datatype,
		.redop = redop,
		.root = root,
		.comm = comm,
		.stream = stream,
	};
	ncclResult_t result = double_collective_check(&op);

	if (result != ncclSuccess)
		return result;
	return double_issue(&op);
}

ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			    cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_ALL_REDUCE, sendbuff, recvbuff, count, datatype, op, 0,
				comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclAllReduce);

ncclResult_t pncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum,
				root, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclBroadcast);

/* The in-place legacy form goes through the public ncclBroadcast, as NCCL's own does. */
ncclResult_t pncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclBcast);

ncclResult_t pncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			 cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_REDUCE, sendbuff, recvbuff, count, datatype, op, root,
				comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclReduce);

ncclResult_t pncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_ALL_GATHER, sendbuff, recvbuff, sendcount, datatype,
				ncclSum, 0, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclAllGather);

ncclResult_t pncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_REDUCE_SCATTER, sendbuff, recvbuff, recvcount, datatype,
				op, 0, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclReduceScatter);

ncclResult_t pncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			   ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_ALL_TO_ALL, sendbuff, recvbuff, count, datatype, ncclSum,
				0, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclAlltoAll);

ncclResult_t pncclGather(const void *sendbuff, void *recvbuff, size_t count,
			 ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_GATHER, sendbuff, recvbuff, count, datatype, ncclSum,
				root, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclGather);

ncclResult_t pncclScatter(const void *sendbuff, void *recvbuff, size_t count,
			  ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream)
{
	double_library_init();
	return issue_collective(DOUBLE_OP_SCATTER, sendbuff, recvbuff, count, datatype, ncclSum,
				root, comm, stream);
}
DOUBLE_WEAK_ALIAS(ncclScatter);
