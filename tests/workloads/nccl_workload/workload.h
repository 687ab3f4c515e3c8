/* SPDX-License-Identifier: MIT */
/*
 * What the parts of nccl-workload share: the buffer sizes, the options, the
 * rank's state, and the functions one part calls in another.
 */
#ifndef TCHECK_NCCL_WORKLOAD_H
#define TCHECK_NCCL_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "checkpoint_pause.h"
#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"

#define UNIQUE_ID_FILE "nccl-unique-id"
/* After a rank fails, the others get this long to fail on their own before being stopped. */
#define FAILURE_GRACE_SECONDS 3
/* Exit status of a rank whose results were wrong. */
#define EXIT_WRONG_RESULT 3

/* Element counts of the buffers each phase moves. */
#define TP_REDUCE_COUNT 256
#define TP_GATHER_COUNT 64
#define PIPELINE_COUNT 512
#define SHARD_COUNT 128
#define BUCKET0_COUNT 1000 /* elements of gradient bucket 0 unless --bucket-elements */
#define BUCKET0_MAX 4096
#define BUCKET1_COUNT 333
#define BUCKET2_COUNT 17
#define BUCKET3_COUNT 31
#define BUCKET4_COUNT 8
#define METRICS_COUNT 4
#define BROADCAST_COUNT 8
#define BCAST_COUNT 16
#define REDUCE_COUNT 32
#define ALL_TO_ALL_COUNT 4
#define GATHER_COUNT 2
#define SCATTER_COUNT 3
/* World collectives beyond the per-step reductions run on every this many steps. */
#define WORLD_COLLECTIVE_PERIOD 3

/* A fault switch "RANK:STEP"; rank is -1 when it is off. */
struct rank_step {
	int rank;
	int step;
};

/* Where in a step --delay holds a rank. */
enum delay_position {
	DELAY_FORWARD,	  /* before the forward compute */
	DELAY_BACKWARD,	  /* before the backward compute */
	DELAY_COLLECTIVE, /* before the world collectives of the step */
	DELAY_SEND,	  /* before the backward pipeline send/recv group */
	DELAY_INIT,	  /* before ncclCommInitRank of the world (step 0 only) */
	DELAY_POSITIONS,
};

/* A fault switch "RANK:STEP:POSITION:MS"; ms 0 holds the rank for ever. rank -1: off. */
struct delay {
	int rank;
	int step;
	enum delay_position position;
	long ms;
};

struct options {
	int ranks;
	int steps;
	int tp; /* 0: pick a default that fits 'ranks' */
	int pp;
	long compute_us;
	long step_sleep_ms;
	const char *log_dir;
	const char *wait_file;
	const char *stop_file;
	struct rank_step skip;
	struct rank_step stall;
	struct rank_step crash;
	struct rank_step mismatch;
	struct rank_step mismatch_datatype;
	struct rank_step skip_replicated;
	struct rank_step extra_call;
	int wrong_comm_step; /* -1: off */
	int bucket_elements; /* of gradient bucket 0 */
	int slow_rank;
	double slow_factor;
	struct delay delay;
	struct checkpoint_pause checkpoint;
	bool spawned; /* --spawn: no RANK in the ranks' environment */
	bool worker;
};

struct buffers {
	float tp_send[TP_REDUCE_COUNT], tp_reduced[TP_REDUCE_COUNT];
	int32_t tp_shard[TP_GATHER_COUNT], *tp_gathered;
	float activations_out[PIPELINE_COUNT], activations_in[PIPELINE_COUNT];
	float gradients_out[PIPELINE_COUNT], gradients_in[PIPELINE_COUNT];
	float *shards_send, shard_reduced[SHARD_COUNT];
	float shard_params[SHARD_COUNT], *params_gathered;
	float bucket0[BUCKET0_MAX + 1];
	double bucket1[BUCKET1_COUNT];
	int64_t bucket2[BUCKET2_COUNT];
	uint8_t bucket3[BUCKET3_COUNT];
	int32_t bucket4[BUCKET4_COUNT];
	double grad_norm[2];
	float metrics[METRICS_COUNT];
	float echo_out[METRICS_COUNT], echo_in[METRICS_COUNT];
	float loss;
	int64_t broadcast_send[BROADCAST_COUNT], broadcast_recv[BROADCAST_COUNT];
	int32_t bcast[BCAST_COUNT];
	float reduce_send[REDUCE_COUNT], reduce_recv[REDUCE_COUNT];
	int32_t *all_to_all_send, *all_to_all_recv;
	int64_t gather_send[GATHER_COUNT], *gather_recv;
	int32_t *scatter_send, scatter_recv[SCATTER_COUNT];
};

struct worker {
	const struct options *options;
	int rank;
	int world_size;
	int tp, pp, dp;
	int tp_index, dp_index, stage;
	ncclComm_t world, tp_comm, dp_comm, pp_comm, log_comm;
	cudaStream_t stream;
	void *registration;
	struct ground_truth_log log;
	struct buffers *data;
	/* What this step issued, so only that is checked. */
	bool skipped, mismatched, world_collectives;
	bool mismatched_datatype, skipped_replicated, wrong_comm, extra_call;
};

extern const char *const delay_position_names[DELAY_POSITIONS];

/* ---- workload_options.c ---- */

int parse_options(int argc, char **argv, struct options *options);

/* ---- logged_calls.c ---- */

uint64_t now_ns(void);

/* Burns the CPU like a kernel would occupy the GPU: the rank is busy, not waiting. */
void compute(const struct worker *worker);

void die(const struct worker *worker, int status, const char *what);

void check_call(const struct worker *worker, const char *name, ncclResult_t ret);

void expect(const struct worker *worker, const char *what, size_t index, double got,
	    double expected);

int rank_at(const struct worker *worker, int tp_index, int dp_index, int stage);

/* The value every rank contributes at position i: small integers, exact in any float type. */
double value_of(int rank, int step, size_t i);

void all_reduce(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
		ncclDataType_t datatype, ncclRedOp_t op);

void all_gather(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		size_t sendcount, ncclDataType_t datatype);

void reduce_scatter(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		    size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op);

void broadcast(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	       ncclDataType_t datatype, int root);

void bcast(struct worker *worker, ncclComm_t comm, void *buff, size_t count,
	   ncclDataType_t datatype, int root);

void reduce(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	    ncclDataType_t datatype, ncclRedOp_t op, int root);

void all_to_all(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
		ncclDataType_t datatype);

void gather(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	    ncclDataType_t datatype, int root);

void scatter(struct worker *worker, ncclComm_t comm, const void *send, void *recv, size_t count,
	     ncclDataType_t datatype, int root);

void send_to(struct worker *worker, ncclComm_t comm, const void *buffer, size_t count, int peer);

void receive_from(struct worker *worker, ncclComm_t comm, void *buffer, size_t count, int peer);

void group_start(struct worker *worker);

void group_end(struct worker *worker);

uint64_t hash_of(ncclComm_t comm);

ncclComm_t split(struct worker *worker, int color, int key, ncclConfig_t *config);

void destroy(struct worker *worker, ncclComm_t comm);

/* ---- training_step.c ---- */

/*
 * The --delay fault: the ground truth goes to rank-R.fault before the
 * rank waits, so a hang still leaves it.
 */
void inject_delay(const struct worker *worker, int step, enum delay_position position);

void run_step(struct worker *worker, int step);

#endif /* TCHECK_NCCL_WORKLOAD_H */
