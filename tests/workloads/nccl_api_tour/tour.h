/* SPDX-License-Identifier: MIT */
/*
 * What the parts of nccl-api-tour share: the counts and colours that tell
 * its calls apart, the rank's state, and the functions one part calls in
 * another.
 */
#ifndef TCHECK_NCCL_API_TOUR_H
#define TCHECK_NCCL_API_TOUR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"

#define PROGRAM "nccl-api-tour"
#define UNIQUE_ID_FILE_FORMAT "%s/unique-ids-%d"
/* Ids each rank makes: for the world, the configured communicator and the scalable one. */
#define IDS_PER_RANK 3
/* A blocked double operation gives up after this long, so a broken tour fails, not hangs. */
#define DEFAULT_DOUBLE_TIMEOUT_MS "30000"
/* After a rank fails, the others get this long to finish before being killed. */
#define FAILURE_GRACE_SECONDS 5
#define EXIT_MISBEHAVED 3
/* Most allocations one rank keeps until teardown. */
#define MAX_ALLOCATIONS 64
#define DATATYPE_COUNT 12
#define OP_COUNT 5
/* A datatype and a reduction op the double rejects. */
#define BAD_DATATYPE 99
#define BAD_OP ncclMaxRedOp
/* Counts of more than 32 bits show that the whole size_t is captured. */
#define OVERSIZED_COUNT 0x123456789aULL

/* Element counts, one per call, so that every call is told apart by its count alone. */
#define ALL_REDUCE_FIRST_COUNT 101
#define BROADCAST_COUNT 23
#define BCAST_COUNT 29
#define REDUCE_COUNT 31
#define ALL_GATHER_COUNT 37
#define REDUCE_SCATTER_COUNT 41
#define ALL_TO_ALL_COUNT 43
#define GATHER_COUNT 47
#define SCATTER_COUNT 53
#define SEND_RECV_COUNT 59
#define PAIR_COUNT 61
#define DOOMED_COUNT 67
#define RECOVERED_COUNT 71
#define SHRUNK_COUNT 73
#define COLORED_COUNT 79
#define BARRIER_COUNT 3
#define FAILED_CALL_COUNT 5
#define REGISTERED_BYTES 4096

/* Split colours: each split of the world uses its own. */
#define REVERSED_COLOR 3
#define SOME_COLOR 5
#define DOOMED_COLOR 9
#define INVALID_COLOR (-7)
/* Devices named to ncclCommInitAll. */
#define PAIR_DEVICE_0 7
#define PAIR_DEVICE_1 3

struct options {
	int ranks;
	const char *log_dir;
	long linger_ms;
	bool lone_refused_split;
	bool worker;
};

struct tour {
	const struct options *options;
	int rank;
	int nranks;
	struct ground_truth_log log;
	cudaStream_t stream;
	ncclUniqueId own_ids[IDS_PER_RANK];
	ncclConfig_t config;
	ncclComm_t world, configured, scalable, pair[2];
	ncclComm_t reversed, colored, shrunk, doomed, recovered;
	void *registration;
	void *allocations[MAX_ALLOCATIONS];
	int allocation_count;
};

/* A collective to check once the stream is synchronized. */
struct expectation {
	const char *what;
	const void *buffer;
	int datatype;
	size_t count;
};

/* ---- logged_calls.c ---- */

void die(const struct tour *tour, int status, const char *what);

/* Every call is made for a known outcome: anything else ends the rank. */
void expect_result(const struct tour *tour, const char *call, ncclResult_t got,
		   ncclResult_t expected);

void *allocate(struct tour *tour, size_t bytes);

uint64_t hash_of(ncclComm_t comm);

void log_scalable(struct tour *tour, ncclResult_t ret, const ncclComm_t *newcomm, int nranks,
		  int myrank, int id_count, const ncclUniqueId *ids, const ncclConfig_t *config);

/* The communicators written go after "args": the trace keeps them in no argument. */
void log_init_all(struct tour *tour, ncclResult_t ret, const ncclComm_t *comms, int ndev,
		  const int *devlist);

void log_revoke(struct tour *tour, ncclResult_t ret, ncclComm_t comm, int flags);

/* A failed ncclGetUniqueId writes no id: logged without one. */
void log_failed_unique_id(struct tour *tour, ncclResult_t ret);

void all_reduce(struct tour *tour, ncclComm_t comm, const void *send, void *recv, size_t count,
		int datatype, int op, ncclResult_t expected);

void broadcast(struct tour *tour, ncclComm_t comm, const void *send, void *recv, size_t count,
	       int datatype, int root, ncclResult_t expected);

void group_start(struct tour *tour);

void group_end(struct tour *tour, ncclResult_t expected);

void send_receive(struct tour *tour, bool send, ncclComm_t comm, void *buffer, size_t count,
		  int datatype, int peer, ncclResult_t expected);

ncclComm_t split(struct tour *tour, ncclComm_t parent, int color, int key, ncclConfig_t *config,
		 ncclResult_t expected);

ncclComm_t shrink(struct tour *tour, ncclComm_t parent, int *excluded, int excluded_count,
		  int flags, ncclResult_t expected);

void comm_end(struct tour *tour, const char *name, ncclComm_t comm, ncclResult_t expected);

void async_error_query(struct tour *tour, ncclComm_t comm, bool with_result, ncclResult_t expected,
		       ncclResult_t expected_error);

/* ---- element_values.c ---- */

size_t datatype_bytes(int datatype);

void fill(void *buffer, int datatype, size_t count, int rank, size_t salt);

void check_reduction(const struct tour *tour, const char *what, const void *buffer,
		     const int *members, int member_count, int datatype, int op, size_t count,
		     size_t first_index, size_t salt);

/* 'count' elements contributed by 'rank' from 'first_index' on, found at 'offset' of buffer. */
void check_copy(const struct tour *tour, const char *what, const void *buffer, int datatype,
		size_t offset, size_t count, int rank, size_t first_index, size_t salt);

void synchronize(const struct tour *tour, const char *what);

/* ---- communicators.c ---- */

/* Every rank makes its ids and publishes them; a communicator uses one rank's id. */
void make_unique_ids(struct tour *tour);

void create_communicators(struct tour *tour);

/* Every rank makes every split of the world in the same order: a split is collective. */
void split_world(struct tour *tour);

/* ---- collectives.c ---- */

/* One all-reduce per datatype, the ops in turn, each with its own count; one in place. */
void all_reduce_every_datatype(struct tour *tour);

/* Calls the double refuses at once: nothing is enqueued, the peers never see them. */
void refused_collectives(struct tour *tour);

void rooted_collectives(struct tour *tour);

/* Collectives on the other communicators made from ids and splits. */
void collectives_elsewhere(struct tour *tour);

/* Around a ring, one group: each rank sends to the next and receives from the previous. */
void ring_exchange(struct tour *tour);

/* One thread drives both ranks of ncclCommInitAll: their calls must share a group. */
void pair_all_reduce(struct tour *tour);

void registration(struct tour *tour);

void poll_from_another_thread(struct tour *tour);

/*
 * Revoke is local and immediate, so no rank waits for another's: each revokes 'doomed', sees
 * the error it caused, fails to use it, and all but the last rank shrink it without the last.
 */
void revoke_and_recover(struct tour *tour);

#endif /* TCHECK_NCCL_API_TOUR_H */
