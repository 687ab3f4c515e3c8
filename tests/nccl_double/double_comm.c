// SPDX-License-Identifier: MIT
/* Communicator life cycle: creation from unique ids, split, shrink, finalize, destroy, abort. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "double_internal.h"

uint64_t double_hash_bytes(uint64_t hash, const void *bytes, size_t length)
{
	const signed char *next = bytes;

	for (size_t i = 0; i < length; i++)
		hash = ((hash << 5) + hash) ^ (uint64_t)(int64_t)next[i];
	return hash;
}

uint64_t doubleUniqueIdHash(const ncclUniqueId *id)
{
	double_library_init();
	return double_hash_bytes(5381, id->internal, sizeof(id->internal));
}

ncclResult_t double_comm_check(const struct ncclComm *comm)
{
	int error;

	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || comm->endMagic != DOUBLE_COMM_MAGIC)
		return ncclInvalidArgument;
	if (atomic_load(&comm->local_abort))
		return ncclInvalidUsage;
	error = atomic_load(&comm->async_error);
	return (ncclResult_t)error;
}

static ncclResult_t config_check(const ncclConfig_t *config)
{
	if (config && config->magic != NCCL_CONFIG_MAGIC)
		return ncclInvalidArgument;
	return ncclSuccess;
}

static int local_device(void)
{
	const char *local_rank = getenv("LOCAL_RANK");

	return local_rank ? atoi(local_rank) : 0;
}

static void comm_free(struct ncclComm *comm)
{
	if (!comm)
		return;
	double_segment_detach(comm);
	free(comm->send_issued);
	free(comm->recv_issued);
	free((void *)comm->send_completed);
	free((void *)comm->recv_completed);
	comm->startMagic = 0;
	comm->endMagic = 0;
	free(comm);
}

/*
 * Named after, and shaped like, the internal function real NCCL calls for every communicator it
 * creates, so a tracer can hook creation of all kinds in one place. commHash is set before.
 */
DOUBLE_NO_IPA ncclResult_t commAlloc(struct ncclComm *comm, struct ncclComm *parent, int ndev,
				     int rank)
{
	size_t peers = (size_t)ndev;

	double_library_init();
	if (ndev < 1 || rank < 0 || rank >= ndev)
		return ncclInvalidArgument;
	comm->startMagic = DOUBLE_COMM_MAGIC;
	comm->endMagic = DOUBLE_COMM_MAGIC;
	comm->rank = rank;
	comm->nRanks = ndev;
	comm->cudaDev = parent ? parent->cudaDev : local_device();
	comm->send_issued = calloc(peers, sizeof(*comm->send_issued));
	comm->recv_issued = calloc(peers, sizeof(*comm->recv_issued));
	comm->send_completed = calloc(peers, sizeof(*comm->send_completed));
	comm->recv_completed = calloc(peers, sizeof(*comm->recv_completed));
	if (!comm->send_issued || !comm->recv_issued || !comm->send_completed ||
	    !comm->recv_completed)
		return ncclSystemError;
	return ncclSuccess;
}

/* First half of creation: allocate and join the segment, without waiting for the others. */
static ncclResult_t comm_start(struct ncclComm **created, const char *shm_name, uint64_t hash,
			       struct ncclComm *parent, int nranks, int rank)
{
	struct ncclComm *comm = calloc(1, sizeof(*comm));
	ncclResult_t result;

	*created = NULL;
	if (!comm)
		return ncclSystemError;
	comm->commHash = hash;
	result = commAlloc(comm, parent, nranks, rank);
	if (result == ncclSuccess)
		result = double_segment_attach(comm, shm_name);
	if (result != ncclSuccess) {
		comm_free(comm);
		return result;
	}
	*created = comm;
	return ncclSuccess;
}

static ncclResult_t comm_create(struct ncclComm **created, const char *shm_name, uint64_t hash,
				struct ncclComm *parent, int nranks, int rank)
{
	ncclResult_t result = comm_start(created, shm_name, hash, parent, nranks, rank);

	if (result == ncclSuccess)
		result = double_segment_wait_arrival(*created);
	if (result != ncclSuccess) {
		comm_free(*created);
		*created = NULL;
	}
	return result;
}

static ncclResult_t id_shm_name(const ncclUniqueId *id, char *name, size_t size)
{
	struct double_unique_id fields;

	memcpy(&fields, id->internal, sizeof(fields));
	if (fields.magic != DOUBLE_UNIQUE_ID_MAGIC || fields.shm_name[0] != '/' ||
	    !memchr(fields.shm_name, '\0', sizeof(fields.shm_name)))
		return ncclInvalidArgument;
	snprintf(name, size, "%s", fields.shm_name);
	return ncclSuccess;
}

static ncclResult_t init_from_id(ncclComm_t *comm, int nranks, const ncclUniqueId *id, int rank,
				 const ncclConfig_t *config)
{
	char shm_name[DOUBLE_SHM_NAME_BYTES];
	ncclResult_t result;

	if (!comm)
		return ncclInvalidArgument;
	*comm = NULL;
	if (nranks < 1 || nranks > DOUBLE_MAX_RANKS || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	result = config_check(config);
	if (result == ncclSuccess)
		result = id_shm_name(id, shm_name, sizeof(shm_name));
	if (result != ncclSuccess)
		return result;
	return comm_create(comm, shm_name, doubleUniqueIdHash(id), NULL, nranks, rank);
}

ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	double_library_init();
	return init_from_id(comm, nranks, &commId, rank, NULL);
}
DOUBLE_WEAK_ALIAS(ncclCommInitRank);

ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				     ncclConfig_t *config)
{
	double_library_init();
	return init_from_id(comm, nranks, &commId, rank, config);
}
DOUBLE_WEAK_ALIAS(ncclCommInitRankConfig);

/* Several ids only spread NCCL's bootstrap load; the first one names the communicator. */
ncclResult_t pncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank, int nId,
				       ncclUniqueId *commIds, ncclConfig_t *config)
{
	double_library_init();
	if (nId < 1 || !commIds) {
		if (newcomm)
			*newcomm = NULL;
		return ncclInvalidArgument;
	}
	return init_from_id(newcomm, nranks, &commIds[0], myrank, config);
}
DOUBLE_WEAK_ALIAS(ncclCommInitRankScalable);

ncclResult_t pncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist)
{
	char shm_name[DOUBLE_SHM_NAME_BYTES];
	ncclResult_t result = ncclSuccess;
	ncclUniqueId id;

	double_library_init();
	if (!comm || ndev < 1 || ndev > DOUBLE_MAX_RANKS)
		return ncclInvalidArgument;
	memset(comm, 0, (size_t)ndev * sizeof(*comm));
	result = double_new_unique_id(&id);
	if (result == ncclSuccess)
		result = id_shm_name(&id, shm_name, sizeof(shm_name));
	/* Every rank joins before any waits: they all live in this one thread. */
	for (int rank = 0; rank < ndev && result == ncclSuccess; rank++) {
		result = comm_start(&comm[rank], shm_name, doubleUniqueIdHash(&id), NULL, ndev,
				    rank);
		if (result == ncclSuccess)
			comm[rank]->cudaDev = devlist ? devlist[rank] : rank;
	}
	for (int rank = 0; rank < ndev && result == ncclSuccess; rank++)
		result = double_segment_wait_arrival(comm[rank]);
	if (result != ncclSuccess) {
		for (int rank = 0; rank < ndev; rank++) {
			comm_free(comm[rank]);
			comm[rank] = NULL;
		}
	}
	return result;
}
DOUBLE_WEAK_ALIAS(ncclCommInitAll);

struct split_round {
	uint32_t count;
	const bool *excluded;
};

static bool split_all_posted(struct ncclComm *comm, void *context)
{
	const struct split_round *round = context;

	for (int peer = 0; peer < comm->nRanks; peer++) {
		if (round->excluded && round->excluded[peer])
			continue;
		if (atomic_load_explicit(&comm->rank_states[peer].split_sequence,
					 memory_order_acquire) < round->count)
			return false;
	}
	return true;
}

/* Child identities depend only on what every member knows: parent, split number, colour. */
static uint64_t child_hash(const struct ncclComm *parent, uint32_t count, int32_t color)
{
	uint64_t hash = double_hash_bytes(parent->commHash, &count, sizeof(count));

	return double_hash_bytes(hash, &color, sizeof(color));
}

static void child_shm_name(const struct ncclComm *parent, uint32_t count, int32_t color, char *name,
			   size_t size)
{
	int length = snprintf(name, size, "%s.%u.%d", parent->shm_name, count, color);

	if (length < 0 || (size_t)length >= size || length > 200)
		snprintf(name, size, "/nccl-double-%016llx",
			 (unsigned long long)child_hash(parent, count, color));
}

/*
 * Every taking-part rank publishes (colour, key) under the parent's next split number, waits
 * for the others, then joins the ranks of its colour ordered by (key, parent rank).
 */
static ncclResult_t comm_split(struct ncclComm *parent, int color, int key, ncclComm_t *newcomm,
			       const bool *excluded)
{
	struct double_rank_state *self = &parent->rank_states[parent->rank];
	struct split_round round = { .count = ++parent->splitCount, .excluded = excluded };
	int parity = round.count & 1;
	char name[DOUBLE_COMM_NAME_BYTES];
	int members = 0;
	int new_rank = 0;
	ncclResult_t result;

	self->split_color[parity] = color;
	self->split_key[parity] = key;
	atomic_store_explicit(&self->split_sequence, round.count, memory_order_release);
	double_wake(parent);
	result = double_wait_for(parent, split_all_posted, &round, excluded);
	if (result != ncclSuccess || color == NCCL_SPLIT_NOCOLOR)
		return result;

	for (int peer = 0; peer < parent->nRanks; peer++) {
		const struct double_rank_state *state = &parent->rank_states[peer];

		if ((excluded && excluded[peer]) || state->split_color[parity] != color)
			continue;
		members++;
		if (state->split_key[parity] < key ||
		    (state->split_key[parity] == key && peer < parent->rank))
			new_rank++;
	}
	child_shm_name(parent, round.count, color, name, sizeof(name));
	return comm_create(newcomm, name, child_hash(parent, round.count, color), parent, members,
			   new_rank);
}

ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			    ncclConfig_t *config)
{
	ncclResult_t result;

	double_library_init();
	result = double_comm_check(comm);
	if (newcomm)
		*newcomm = NULL;
	if (result != ncclSuccess)
		return result;
	if (!newcomm || color < NCCL_SPLIT_NOCOLOR)
		return ncclInvalidArgument;
	result = config_check(config);
	if (result != ncclSuccess)
		return result;
	return comm_split(comm, color, key, newcomm, NULL);
}
DOUBLE_WEAK_ALIAS(ncclCommSplit);

/*
 * The ranks left out take no part (they may be dead), so the remaining ones split among
 * themselves, even over a revoked or broken parent: recovering from those is what shrink is for.
 */
ncclResult_t pncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
			     ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
	bool excluded[DOUBLE_MAX_RANKS] = { false };

	double_library_init();
	if (newcomm)
		*newcomm = NULL;
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC ||
	    atomic_load(&comm->local_abort) == DOUBLE_ABORTED)
		return ncclInvalidArgument;
	if (!newcomm || excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList) ||
	    config_check(config) != ncclSuccess ||
	    (shrinkFlags & ~(NCCL_SHRINK_DEFAULT | NCCL_SHRINK_ABORT)))
		return ncclInvalidArgument;
	for (int i = 0; i < excludeRanksCount; i++) {
		if (excludeRanksList[i] < 0 || excludeRanksList[i] >= comm->nRanks ||
		    excludeRanksList[i] == comm->rank)
			return ncclInvalidArgument;
		excluded[excludeRanksList[i]] = true;
	}
	return comm_split(comm, DOUBLE_SHRINK_COLOR, comm->rank, newcomm, excluded);
}
DOUBLE_WEAK_ALIAS(ncclCommShrink);

ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC)
		return ncclInvalidArgument;
	double_comm_wait_idle(comm);
	return (ncclResult_t)atomic_load(&comm->async_error);
}
DOUBLE_WEAK_ALIAS(ncclCommFinalize);

ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC)
		return ncclInvalidArgument;
	double_comm_wait_idle(comm);
	comm_free(comm);
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommDestroy);

/* Pending operations fail at once, and so do the peers' on this communicator. */
static void stop_operations(struct ncclComm *comm, enum double_local_abort how)
{
	atomic_store(&comm->local_abort, how);
	double_comm_break(comm, ncclRemoteError);
	double_comm_wait_idle(comm);
}

ncclResult_t pncclCommAbort(ncclComm_t comm)
{
	double_library_init();
	if (!comm)
		return ncclSuccess;
	if (comm->startMagic != DOUBLE_COMM_MAGIC)
		return ncclInvalidArgument;
	stop_operations(comm, DOUBLE_ABORTED);
	comm_free(comm);
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommAbort);

ncclResult_t pncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
	double_library_init();
	if (!comm || comm->startMagic != DOUBLE_COMM_MAGIC || revokeFlags != NCCL_REVOKE_DEFAULT)
		return ncclInvalidArgument;
	stop_operations(comm, DOUBLE_REVOKED);
	return ncclSuccess;
}
DOUBLE_WEAK_ALIAS(ncclCommRevoke);
