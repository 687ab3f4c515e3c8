/* SPDX-License-Identifier: MIT */
/* Private types of the NCCL test double: communicators, shared segments, streams, operations. */
#ifndef NCCL_DOUBLE_INTERNAL_H
#define NCCL_DOUBLE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "nccl_double.h"

#pragma GCC visibility push(hidden)

/* Defines the strong pnccl entry point's weak public alias, as the real library does. */
#define DOUBLE_WEAK_ALIAS(name) \
	extern __typeof__(p##name) name __attribute__((weak, alias("p" #name)))

/* Keeps a function whole and called, never inlined or cloned, so probes find it by name. */
#if defined(__clang__)
#define DOUBLE_NO_IPA __attribute__((noinline))
#else
#define DOUBLE_NO_IPA __attribute__((noipa))
#endif

#define DOUBLE_UNIQUE_ID_MAGIC 0x31424443434e4458ULL /* bytes "XDNCCDB1" */
/* NCCL's own value (NCCL_MAGIC), so that readers that check it accept the double's. */
#define DOUBLE_COMM_MAGIC 0x0280028002800280ULL
#define DOUBLE_STREAM_MAGIC 0x6d61657274536244ULL
#define DOUBLE_SHM_NAME_BYTES 64
#define DOUBLE_COMM_NAME_BYTES 256
#define DOUBLE_RING_SLOTS 4
#define DOUBLE_RING_CHUNK_BYTES (64u << 10)
#define DOUBLE_CACHE_LINE 64
/* Colour that names the child of ncclCommShrink, which has no colour of its own. */
#define DOUBLE_SHRINK_COLOR (-2)

/* How the double fills ncclUniqueId.internal: all ranks derive the shared segment's name from it.
 */
struct double_unique_id {
	uint64_t magic;
	char shm_name[DOUBLE_SHM_NAME_BYTES];
	unsigned char entropy[NCCL_UNIQUE_ID_BYTES - 8 - DOUBLE_SHM_NAME_BYTES];
};

enum double_op_kind {
	DOUBLE_OP_ALL_REDUCE,
	DOUBLE_OP_BROADCAST,
	DOUBLE_OP_REDUCE,
	DOUBLE_OP_ALL_GATHER,
	DOUBLE_OP_REDUCE_SCATTER,
	DOUBLE_OP_ALL_TO_ALL,
	DOUBLE_OP_GATHER,
	DOUBLE_OP_SCATTER,
	DOUBLE_OP_SEND,
	DOUBLE_OP_RECV,
};

/* What a rank publishes about its collective so that peers can check they run the same one. */
struct double_collective_descriptor {
	uint64_t sequence;
	uint64_t count;
	int32_t kind;
	int32_t datatype;
	int32_t redop;
	int32_t root;
};

/*
 * One rank's public state in the shared segment. Collectives and splits use two buffers picked
 * by sequence parity: a rank can run one operation ahead of the slowest peer, never two.
 */
struct double_rank_state {
	_Atomic int32_t pid;
	_Atomic uint64_t posted_sequence;
	_Atomic uint64_t split_sequence;
	struct double_collective_descriptor descriptors[2];
	int32_t split_color[2];
	int32_t split_key[2];
} __attribute__((aligned(DOUBLE_CACHE_LINE)));

struct double_ring_chunk {
	uint64_t message_sequence;
	uint64_t message_bytes;
	uint32_t chunk_bytes;
};

/* A single-producer single-consumer queue of chunks from one rank to another. */
struct double_ring {
	_Atomic uint64_t head __attribute__((aligned(DOUBLE_CACHE_LINE)));
	_Atomic uint64_t tail __attribute__((aligned(DOUBLE_CACHE_LINE)));
	struct double_ring_chunk chunks[DOUBLE_RING_SLOTS];
};

struct double_segment_header {
	uint64_t magic;
	/* Bumped on every state change; waiters sleep on it with FUTEX_WAIT. */
	_Atomic uint32_t wake_word;
	_Atomic uint32_t waiters;
	_Atomic int32_t nranks;
	_Atomic int32_t arrived;
	/* Set when a rank aborted, revoked or gave up: every pending operation fails. */
	_Atomic int32_t broken;
};

/* Where each part of a segment for 'nranks' ranks lies. */
struct double_segment_layout {
	size_t rank_states;
	size_t rings;
	size_t ring_stride;
	size_t collective_data;
	size_t total;
};

/*
 * A communicator. The first members carry the names real NCCL uses, so that a tracer reading
 * them by DWARF offset from a running process finds them here too.
 */
struct ncclComm {
	uint64_t startMagic;
	uint64_t commHash;
	int rank;
	int nRanks;
	uint64_t opCount;
	int cudaDev;
	/* ncclCommSplit and ncclCommShrink calls made on this communicator as a parent. */
	uint32_t splitCount;

	char shm_name[DOUBLE_COMM_NAME_BYTES];
	void *segment_base;
	size_t segment_size;
	struct double_segment_header *header;
	struct double_rank_state *rank_states;
	unsigned char *rings;
	size_t ring_stride;
	unsigned char *collective_data;

	/* Sequences are handed out when a call is issued and completed in that order. */
	uint64_t collective_issued;
	_Atomic uint64_t collective_completed;
	uint64_t *send_issued;
	uint64_t *recv_issued;
	_Atomic uint64_t *send_completed;
	_Atomic uint64_t *recv_completed;

	/* Operations enqueued and not finished; guarded by the lock in double_queue.c. */
	int pending_ops;
	_Atomic int async_error;
	_Atomic int local_abort;
	uint64_t endMagic;
};

enum double_local_abort {
	DOUBLE_NOT_ABORTED,
	DOUBLE_ABORTED,
	DOUBLE_REVOKED,
};

enum double_op_state {
	DOUBLE_OP_WAITING_TURN,
	DOUBLE_OP_ACTIVE,
	DOUBLE_OP_FINISHED,
};

enum double_progress {
	DOUBLE_NO_PROGRESS,
	DOUBLE_PROGRESSED,
	DOUBLE_DONE,
};

struct double_op {
	enum double_op_kind kind;
	const void *sendbuff;
	void *recvbuff;
	size_t count;
	ncclDataType_t datatype;
	ncclRedOp_t redop;
	/* The root of rooted collectives, the peer of sends and receives. */
	int root;
	struct ncclComm *comm;
	cudaStream_t stream;
	uint64_t sequence;
	enum double_op_state state;
	size_t bytes_moved;
	uint64_t message_bytes;
	uint64_t chunks_moved;
	bool mismatch_reported;
	ncclResult_t result;
};

/* One launch: a single call, or everything a group put on one stream. */
struct double_work {
	struct double_work *next;
	int op_count;
	struct double_op ops[];
};

struct double_stream {
	uint64_t magic;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct double_work *head;
	struct double_work *tail;
	uint64_t enqueued;
	uint64_t completed;
	ncclResult_t first_error;
	bool thread_started;
	bool stopping;
	pthread_t thread;
	struct double_stream *next_created;
};

/*
 * double_segment.c: shared memory, waiting, timeouts and peer liveness.
 *
 * double_library_init() reads the settings once. Every exported function calls it first, which
 * also makes each one open with a real frame (push %rbp), as NCCL's entry points do: a uprobe
 * there is emulated rather than single-stepped, so probe costs measured here are the real ones.
 */
void double_library_init(void);
struct double_segment_layout double_segment_layout_for(int nranks);
ncclResult_t double_segment_attach(struct ncclComm *comm, const char *name);
ncclResult_t double_segment_wait_arrival(struct ncclComm *comm);
void double_segment_detach(struct ncclComm *comm);
void double_wake(struct ncclComm *comm);
uint32_t double_wake_word(const struct ncclComm *comm);
void double_wait(struct ncclComm *comm, uint32_t seen, int slice_ms);
uint64_t double_now_ms(void);
uint64_t double_timeout_ms(void);
/* Whether calls wait for their operations to finish (DOUBLE_BLOCKING_ENV). */
bool double_blocking(void);
bool double_peer_died(const struct ncclComm *comm, const bool *ignored_ranks);
bool double_comm_failed(const struct ncclComm *comm);
void double_comm_break(struct ncclComm *comm, ncclResult_t reason);
/*
 * What an operation that cannot move returns: no progress, or, on a broken communicator, done
 * with ncclRemoteError. Operations whose data is all there still complete after a peer's abort.
 */
enum double_progress double_stalled(struct double_op *op);
/*
 * Waits for ready(context), failing on a broken communicator, the timeout or a dead peer. A
 * shrink passes the ranks it leaves out: they are not watched, and a broken parent is no failure.
 */
ncclResult_t double_wait_for(struct ncclComm *comm, bool (*ready)(struct ncclComm *, void *),
			     void *context, const bool *ignored_ranks);
unsigned char *double_collective_slot(const struct ncclComm *comm, uint64_t sequence, int rank);
struct double_ring *double_ring_between(const struct ncclComm *comm, int from, int to);
unsigned char *double_ring_chunk_data(struct double_ring *ring, uint64_t slot);

/* double_comm.c */
ncclResult_t double_comm_check(const struct ncclComm *comm);
ncclResult_t commAlloc(struct ncclComm *comm, struct ncclComm *parent, int ndev, int rank);
/* Hashing the id bytes as DJB2a over signed chars, the way NCCL computes commHash. */
uint64_t double_hash_bytes(uint64_t hash, const void *bytes, size_t length);

/* double_api.c: a fresh random id naming a new shared segment. */
ncclResult_t double_new_unique_id(ncclUniqueId *id);

/* double_reduce.c */
size_t double_datatype_size(ncclDataType_t datatype);
/* Moves a launch's bytes as RDMA work requests when NCCL_DOUBLE_VERBS_LIBRARY is set. */
ncclResult_t double_network_transfer(const struct double_work *work);
bool double_datatype_valid(int datatype);
bool double_redop_valid(int redop);
void double_reduce(void *out, const unsigned char *const *inputs, int input_count, size_t count,
		   ncclDataType_t datatype, ncclRedOp_t redop);

/* double_queue.c: issuing, groups and streams. */
ncclResult_t double_issue(const struct double_op *op);
struct double_stream *double_stream_from(cudaStream_t stream);
/* Blocks until every operation enqueued on the communicator has finished. */
void double_comm_wait_idle(struct ncclComm *comm);

/* double_collectives.c and double_p2p.c: non-blocking steps of one operation. */
enum double_progress double_collective_progress(struct double_op *op);
enum double_progress double_p2p_progress(struct double_op *op);
ncclResult_t double_collective_check(const struct double_op *op);
ncclResult_t double_p2p_check(const struct double_op *op);

#pragma GCC visibility pop

#endif /* NCCL_DOUBLE_INTERNAL_H */
