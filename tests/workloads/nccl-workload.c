// SPDX-License-Identifier: MIT
/* A training-like NCCL job on the test double: N rank processes, checked results, ground truth. */
/*
 * Ranks are laid out as rank = stage * (dp * tp) + dp_index * tp + tp_index. Setup (step -1):
 * rank 0 calls ncclGetUniqueId and passes the id on in DIR/nccl-unique-id; every rank calls
 * ncclCommInitRank (world), ncclCommSplit for the tensor-parallel group (when tp > 1, with a
 * config), the data-parallel group (dp > 1), the pipeline group (pp > 1) and a logging group of
 * tp_index 0 ranks (the others pass NCCL_SPLIT_NOCOLOR and get NULL), then ncclCommRegister.
 *
 * Each step, on one stream: compute; TP ncclAllReduce + ncclAllGather; a group of ncclSend to
 * the next stage and ncclRecv from the previous; compute; a group sending gradients back; DP
 * ncclReduceScatter + ncclAllGather and five in-place gradient-bucket ncclAllReduce calls
 * (float32 sum, float64 avg, int64 max, uint8 min, int32 prod); world ncclAllReduce of the
 * grad norm (float64) and of metrics (float32 max); the logging-group ncclAllReduce; every
 * third step from step 0 world ncclBroadcast, ncclBcast, ncclReduce, ncclAlltoAll, ncclGather
 * and ncclScatter; ncclCommGetAsyncError; then doubleStreamSynchronize and checks of every
 * result. Teardown (step -1): ncclCommDeregister, ncclCommDestroy of the sub-communicators,
 * ncclCommFinalize and ncclCommDestroy of the world.
 */
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

static const char *const delay_position_names[DELAY_POSITIONS] = { "forward", "backward",
								   "collective", "send", "init" };

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

static void inject_delay(const struct worker *worker, int step, enum delay_position position);

static volatile double compute_sink;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nccl-workload --log-dir DIR [--ranks N] [--steps S] [--tp T] [--pp P]\n"
		"                     [--compute-us U] [--step-sleep-ms M] [--skip-collective "
		"R:K]\n"
		"                     [--stall R:K] [--crash R:K] [--slow R:F] [--mismatch-count "
		"R:K]\n"
		"                     [--mismatch-datatype R:K] [--skip-replicated R:K]\n"
		"                     [--wrong-comm K] [--extra-call R:K] [--bucket-elements N]\n"
		"                     [--wait-file PATH] [--stop-file PATH]\n"
		"Runs N rank processes of a training-like job over libnccl.so.2 and writes\n"
		"DIR/rank-R.jsonl (every NCCL call made, as JSON lines) and DIR/rank-R.progress\n"
		"(the last finished step). Defaults: N=4 S=10 U=200 M=0; T=2 and P=2 where N "
		"allows.\n"
		"  --skip-collective R:K  rank R skips the data-parallel gradient all-reduces of\n"
		"                         step K (the world grad-norm all-reduce when dp is 1)\n"
		"  --stall R:K            rank R sleeps for ever at the start of step K\n"
		"  --crash R:K            rank R writes through a null pointer (SIGSEGV) at the\n"
		"                         start of step K, after writing rank-R.fault\n"
		"  --slow R:F             rank R computes F times longer\n"
		"  --delay R:K:WHERE:MS   rank R waits MS ms (0: for ever) at step K, WHERE is\n"
		"                         forward, backward, collective, send, or init (before\n"
		"                         ncclCommInitRank; K 0); the rank\n"
		"                         writes what it injected to rank-R.fault first\n"
		"  --checkpoint R:N:MS    rank R writes a checkpoint file for MS ms at the start\n"
		"                         of every N-th step (a healthy pause), logged to\n"
		"                         DIR/rank-R.checkpoints\n"
		"  --mismatch-count R:K   rank R passes count+1 to one gradient all-reduce of step "
		"K\n"
		"  --bucket-elements N    gradient bucket 0 (a float32 data-parallel all-reduce)\n"
		"                         has N elements (333-4096; default 1000)\n"
		"  --mismatch-datatype R:K  rank R reduces the int32 gradient bucket of step K as\n"
		"                         uint32 (same size: silent)\n"
		"  --skip-replicated R:K  rank R skips the all-reduce of one bucket of replicated\n"
		"                         parameters at step K: its next call takes its place\n"
		"  --wrong-comm K         at step K every rank issues its tensor-parallel "
		"all-reduce\n"
		"                         on the data-parallel communicator\n"
		"  --extra-call R:K       rank R makes one call more at step K: it sends its "
		"metrics\n"
		"                         to itself and receives them (ncclSend and ncclRecv in a\n"
		"                         group on the world communicator), which no other rank\n"
		"                         waits for\n"
		"  --wait-file PATH       ranks wait for PATH to exist before their first NCCL "
		"call\n"
		"  --stop-file PATH       once PATH holds a step number K, ranks stop after\n"
		"                         step K (read before every step: all ranks stop after\n"
		"                         the same step when K lies ahead of each; write it\n"
		"                         atomically)\n"
		"Example: nccl-workload --ranks 8 --steps 20 --log-dir /tmp/job\n");
}

static bool parse_rank_step(const char *text, struct rank_step *switch_value)
{
	const char *colon = strchr(text, ':');
	char rank_text[32];
	long rank, step;

	if (!colon || (size_t)(colon - text) >= sizeof(rank_text))
		return false;
	memcpy(rank_text, text, (size_t)(colon - text));
	rank_text[colon - text] = '\0';
	if (!parse_int(rank_text, 0, INT_MAX, &rank) || !parse_int(colon + 1, 0, INT_MAX, &step))
		return false;
	switch_value->rank = (int)rank;
	switch_value->step = (int)step;
	return true;
}

/* "RANK:STEP:POSITION:MS" for --delay. */
static bool parse_delay(const char *text, struct delay *delay)
{
	char position[16];
	int consumed = 0;

	if (sscanf(text, "%d:%d:%15[a-z]:%ld%n", &delay->rank, &delay->step, position, &delay->ms,
		   &consumed) != 4 ||
	    text[consumed] || delay->rank < 0 || delay->step < 0 || delay->ms < 0)
		return false;
	for (int i = 0; i < DELAY_POSITIONS; i++)
		if (strcmp(position, delay_position_names[i]) == 0) {
			delay->position = (enum delay_position)i;
			return true;
		}
	return false;
}

/* "RANK:FACTOR" for --slow. */
static bool parse_slow(const char *text, struct options *options)
{
	const char *colon = strchr(text, ':');
	char rank_text[32];
	char *end;
	long rank;

	if (!colon || (size_t)(colon - text) >= sizeof(rank_text))
		return false;
	memcpy(rank_text, text, (size_t)(colon - text));
	rank_text[colon - text] = '\0';
	options->slow_factor = strtod(colon + 1, &end);
	if (!parse_int(rank_text, 0, INT_MAX, &rank) || end == colon + 1 || *end != '\0' ||
	    !(options->slow_factor > 0))
		return false;
	options->slow_rank = (int)rank;
	return true;
}

static int parse_options(int argc, char **argv, struct options *options)
{
	static const struct option long_options[] = {
		{ "ranks", required_argument, NULL, 'n' },
		{ "steps", required_argument, NULL, 's' },
		{ "log-dir", required_argument, NULL, 'l' },
		{ "tp", required_argument, NULL, 't' },
		{ "pp", required_argument, NULL, 'p' },
		{ "compute-us", required_argument, NULL, 'c' },
		{ "step-sleep-ms", required_argument, NULL, 'S' },
		{ "skip-collective", required_argument, NULL, 'k' },
		{ "stall", required_argument, NULL, 'x' },
		{ "crash", required_argument, NULL, 'X' },
		{ "slow", required_argument, NULL, 'w' },
		{ "delay", required_argument, NULL, 'D' },
		{ "checkpoint", required_argument, NULL, 'K' },
		{ "mismatch-count", required_argument, NULL, 'm' },
		{ "mismatch-datatype", required_argument, NULL, 'T' },
		{ "skip-replicated", required_argument, NULL, 'R' },
		{ "wrong-comm", required_argument, NULL, 'C' },
		{ "extra-call", required_argument, NULL, 'E' },
		{ "bucket-elements", required_argument, NULL, 'B' },
		{ "wait-file", required_argument, NULL, 'f' },
		{ "stop-file", required_argument, NULL, 'F' },
		{ "worker", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int option;
	long value;

	*options = (struct options){
		.ranks = 4,
		.steps = 10,
		.compute_us = 200,
		.skip = { -1, -1 },
		.stall = { -1, -1 },
		.crash = { -1, -1 },
		.mismatch = { -1, -1 },
		.mismatch_datatype = { -1, -1 },
		.skip_replicated = { -1, -1 },
		.extra_call = { -1, -1 },
		.wrong_comm_step = -1,
		.bucket_elements = BUCKET0_COUNT,
		.slow_rank = -1,
		.slow_factor = 1.0,
		.delay = { .rank = -1, .step = -1 },
		.checkpoint = { .rank = -1 },
	};
	while ((option = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		bool valid = true;

		switch (option) {
		case 'n':
			valid = parse_int(optarg, 1, DOUBLE_MAX_RANKS, &value);
			options->ranks = (int)value;
			break;
		case 's':
			valid = parse_int(optarg, 0, INT_MAX, &value);
			options->steps = (int)value;
			break;
		case 'l':
			options->log_dir = optarg;
			break;
		case 't':
			valid = parse_int(optarg, 1, DOUBLE_MAX_RANKS, &value);
			options->tp = (int)value;
			break;
		case 'p':
			valid = parse_int(optarg, 1, DOUBLE_MAX_RANKS, &value);
			options->pp = (int)value;
			break;
		case 'c':
			valid = parse_int(optarg, 0, 10000000, &options->compute_us);
			break;
		case 'S':
			valid = parse_int(optarg, 0, 3600000, &options->step_sleep_ms);
			break;
		case 'k':
			valid = parse_rank_step(optarg, &options->skip);
			break;
		case 'x':
			valid = parse_rank_step(optarg, &options->stall);
			break;
		case 'X':
			valid = parse_rank_step(optarg, &options->crash);
			break;
		case 'w':
			valid = parse_slow(optarg, options);
			break;
		case 'm':
			valid = parse_rank_step(optarg, &options->mismatch);
			break;
		case 'D':
			valid = parse_delay(optarg, &options->delay);
			break;
		case 'K':
			valid = parse_checkpoint_pause(optarg, &options->checkpoint);
			break;
		case 'T':
			valid = parse_rank_step(optarg, &options->mismatch_datatype);
			break;
		case 'R':
			valid = parse_rank_step(optarg, &options->skip_replicated);
			break;
		case 'E':
			valid = parse_rank_step(optarg, &options->extra_call);
			break;
		case 'B':
			/* At least bucket 1's size: its check walks bucket 0's elements. */
			valid = parse_int(optarg, BUCKET1_COUNT, BUCKET0_MAX, &value);
			options->bucket_elements = (int)value;
			break;
		case 'C':
			valid = parse_int(optarg, 0, INT_MAX, &value);
			options->wrong_comm_step = (int)value;
			break;
		case 'f':
			options->wait_file = optarg;
			break;
		case 'F':
			options->stop_file = optarg;
			break;
		case 'W':
			options->worker = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		if (!valid) {
			fprintf(stderr, "nccl-workload: bad value '%s' for %s\n", optarg,
				argv[optind - 1]);
			return -1;
		}
	}
	if (optind != argc || !options->log_dir) {
		usage(stderr);
		return -1;
	}
	/* Defaults that make the tensor-, pipeline- and data-parallel groups real where N allows.
	 */
	if (!options->tp)
		options->tp = options->ranks % 2 == 0 ? 2 : 1;
	if (!options->pp)
		options->pp = options->ranks % (options->tp * 2) == 0 ? 2 : 1;
	if (options->ranks % (options->tp * options->pp) != 0) {
		fprintf(stderr, "nccl-workload: --ranks %d is not a multiple of tp %d x pp %d\n",
			options->ranks, options->tp, options->pp);
		return -1;
	}
	return 0;
}

/* ---- the worker: one rank of the job ---- */

static uint64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

/* Burns the CPU like a kernel would occupy the GPU: the rank is busy, not waiting. */
static void compute(const struct worker *worker)
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

static void die(const struct worker *worker, int status, const char *what)
{
	/* The log is line buffered: exit() has nothing of it left to lose. */
	fprintf(stderr, "nccl-workload: rank %d step %d: %s\n", worker->rank, worker->log.step,
		what);
	exit(status);
}

static void check_call(const struct worker *worker, const char *name, ncclResult_t ret)
{
	char message[160];

	if (ret == ncclSuccess)
		return;
	snprintf(message, sizeof(message), "%s failed: %d (%s)", name, ret,
		 ncclGetErrorString(ret));
	die(worker, 1, message);
}

static void expect(const struct worker *worker, const char *what, size_t index, double got,
		   double expected)
{
	char message[200];

	if (fabs(got - expected) <= 1e-6 * fmax(1.0, fabs(expected)))
		return;
	snprintf(message, sizeof(message), "wrong result: %s[%zu] is %.17g, expected %.17g", what,
		 index, got, expected);
	die(worker, EXIT_WRONG_RESULT, message);
}

static int rank_at(const struct worker *worker, int tp_index, int dp_index, int stage)
{
	return stage * worker->dp * worker->tp + dp_index * worker->tp + tp_index;
}

/* The value every rank contributes at position i: small integers, exact in any float type. */
static double value_of(int rank, int step, size_t i)
{
	return (double)(rank + 1) + (double)(i % 7) + (double)(step % 5);
}

/* ---- logged NCCL calls: each returns through check_call after its ground truth is written ---- */

static void all_reduce(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		       size_t count, ncclDataType_t datatype, ncclRedOp_t op)
{
	ncclResult_t ret = ncclAllReduce(send, recv, count, datatype, op, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclAllReduce", send, recv, count, datatype, op,
				-1, comm, worker->stream);
	check_call(worker, "ncclAllReduce", ret);
}

static void all_gather(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		       size_t sendcount, ncclDataType_t datatype)
{
	ncclResult_t ret = ncclAllGather(send, recv, sendcount, datatype, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclAllGather", send, recv, sendcount, datatype,
				-1, -1, comm, worker->stream);
	check_call(worker, "ncclAllGather", ret);
}

static void reduce_scatter(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
			   size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op)
{
	ncclResult_t ret =
		ncclReduceScatter(send, recv, recvcount, datatype, op, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclReduceScatter", send, recv, recvcount,
				datatype, op, -1, comm, worker->stream);
	check_call(worker, "ncclReduceScatter", ret);
}

static void broadcast(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		      size_t count, ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclBroadcast(send, recv, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclBroadcast", send, recv, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclBroadcast", ret);
}

static void bcast(struct worker *worker, ncclComm_t comm, void *buff, size_t count,
		  ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclBcast(buff, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclBcast", buff, NULL, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclBcast", ret);
}

static void reduce(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		   size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root)
{
	ncclResult_t ret = ncclReduce(send, recv, count, datatype, op, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclReduce", send, recv, count, datatype, op,
				root, comm, worker->stream);
	check_call(worker, "ncclReduce", ret);
}

static void all_to_all(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		       size_t count, ncclDataType_t datatype)
{
	ncclResult_t ret = ncclAlltoAll(send, recv, count, datatype, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclAlltoAll", send, recv, count, datatype, -1,
				-1, comm, worker->stream);
	check_call(worker, "ncclAlltoAll", ret);
}

static void gather(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		   size_t count, ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclGather(send, recv, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclGather", send, recv, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclGather", ret);
}

static void scatter(struct worker *worker, ncclComm_t comm, const void *send, void *recv,
		    size_t count, ncclDataType_t datatype, int root)
{
	ncclResult_t ret = ncclScatter(send, recv, count, datatype, root, comm, worker->stream);

	ground_truth_collective(&worker->log, ret, "ncclScatter", send, recv, count, datatype, -1,
				root, comm, worker->stream);
	check_call(worker, "ncclScatter", ret);
}

static void send_to(struct worker *worker, ncclComm_t comm, const void *buffer, size_t count,
		    int peer)
{
	ncclResult_t ret = ncclSend(buffer, count, ncclFloat32, peer, comm, worker->stream);

	ground_truth_p2p(&worker->log, ret, true, buffer, count, ncclFloat32, peer, comm,
			 worker->stream);
	check_call(worker, "ncclSend", ret);
}

static void receive_from(struct worker *worker, ncclComm_t comm, void *buffer, size_t count,
			 int peer)
{
	ncclResult_t ret = ncclRecv(buffer, count, ncclFloat32, peer, comm, worker->stream);

	ground_truth_p2p(&worker->log, ret, false, buffer, count, ncclFloat32, peer, comm,
			 worker->stream);
	check_call(worker, "ncclRecv", ret);
}

static void group_start(struct worker *worker)
{
	ncclResult_t ret = ncclGroupStart();

	ground_truth_no_args(&worker->log, "ncclGroupStart", ret);
	check_call(worker, "ncclGroupStart", ret);
}

static void group_end(struct worker *worker)
{
	ncclResult_t ret = ncclGroupEnd();

	ground_truth_no_args(&worker->log, "ncclGroupEnd", ret);
	check_call(worker, "ncclGroupEnd", ret);
}

static uint64_t hash_of(ncclComm_t comm)
{
	uint64_t hash = 0;

	if (comm)
		doubleCommGetHash(comm, &hash);
	return hash;
}

static ncclComm_t split(struct worker *worker, int color, int key, ncclConfig_t *config)
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

static void destroy(struct worker *worker, ncclComm_t comm)
{
	ncclResult_t ret;

	if (!comm)
		return;
	ret = ncclCommDestroy(comm);
	ground_truth_comm_only(&worker->log, "ncclCommDestroy", ret, comm);
	check_call(worker, "ncclCommDestroy", ret);
}

/* ---- setup ---- */

static void wait_for_file(const char *path)
{
	while (access(path, F_OK) != 0)
		sleep_ns(POLL_INTERVAL_NS);
}

/* Rank 0 makes the id and publishes it through a file; the others poll for it. */
static void exchange_unique_id(struct worker *worker, ncclUniqueId *id)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", worker->options->log_dir, UNIQUE_ID_FILE);
	if (worker->rank == 0) {
		ncclResult_t ret = ncclGetUniqueId(id);

		ground_truth_unique_id(&worker->log, ret, id);
		check_call(worker, "ncclGetUniqueId", ret);
		if (write_file_atomically(path, id, sizeof(*id)) < 0)
			die(worker, 1, "cannot write a file in the log directory");
		return;
	}
	read_published_file(path, id, sizeof(*id));
}

static void *allocate(const struct worker *worker, size_t count, size_t size)
{
	void *memory = calloc(count, size);

	if (!memory)
		die(worker, 1, "out of memory");
	return memory;
}

static void setup(struct worker *worker)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	struct buffers *data;
	ncclUniqueId id;
	ncclResult_t ret;
	size_t world = (size_t)worker->world_size;

	data = allocate(worker, 1, sizeof(*data));
	data->tp_gathered = allocate(worker, (size_t)worker->tp * TP_GATHER_COUNT, sizeof(int32_t));
	data->shards_send = allocate(worker, (size_t)worker->dp * SHARD_COUNT, sizeof(float));
	data->params_gathered = allocate(worker, (size_t)worker->dp * SHARD_COUNT, sizeof(float));
	data->all_to_all_send = allocate(worker, world * ALL_TO_ALL_COUNT, sizeof(int32_t));
	data->all_to_all_recv = allocate(worker, world * ALL_TO_ALL_COUNT, sizeof(int32_t));
	data->gather_recv = allocate(worker, world * GATHER_COUNT, sizeof(int64_t));
	data->scatter_send = allocate(worker, world * SCATTER_COUNT, sizeof(int32_t));
	worker->data = data;
	if (doubleStreamCreate(&worker->stream) != ncclSuccess)
		die(worker, 1, "doubleStreamCreate failed");

	exchange_unique_id(worker, &id);
	inject_delay(worker, 0, DELAY_INIT);
	ret = ncclCommInitRank(&worker->world, worker->world_size, id, worker->rank);
	ground_truth_init_rank(&worker->log, ret, &worker->world, worker->world_size, &id,
			       worker->rank, false, NULL, hash_of(worker->world));
	check_call(worker, "ncclCommInitRank", ret);

	/* Every rank makes every split, in the same order: a split is collective over the world. */
	if (worker->tp > 1)
		worker->tp_comm = split(worker, worker->stage * worker->dp + worker->dp_index,
					worker->tp_index, &config);
	if (worker->dp > 1)
		worker->dp_comm = split(worker, worker->stage * worker->tp + worker->tp_index,
					worker->dp_index, NULL);
	if (worker->pp > 1)
		worker->pp_comm = split(worker, worker->dp_index * worker->tp + worker->tp_index,
					worker->stage, NULL);
	/* A logging group of the first rank of each tensor-parallel group: the rest stay out. */
	worker->log_comm =
		split(worker, worker->tp_index == 0 ? 0 : NCCL_SPLIT_NOCOLOR, worker->rank, NULL);

	ret = ncclCommRegister(worker->world, data->bucket0, sizeof(data->bucket0),
			       &worker->registration);
	ground_truth_register(&worker->log, ret, worker->world, data->bucket0,
			      sizeof(data->bucket0), &worker->registration);
	check_call(worker, "ncclCommRegister", ret);
}

static void teardown(struct worker *worker)
{
	ncclResult_t ret;

	worker->log.step = -1;
	ret = ncclCommDeregister(worker->world, worker->registration);
	ground_truth_deregister(&worker->log, ret, worker->world, worker->registration);
	check_call(worker, "ncclCommDeregister", ret);
	destroy(worker, worker->log_comm);
	destroy(worker, worker->pp_comm);
	destroy(worker, worker->dp_comm);
	destroy(worker, worker->tp_comm);
	ret = ncclCommFinalize(worker->world);
	ground_truth_comm_only(&worker->log, "ncclCommFinalize", ret, worker->world);
	check_call(worker, "ncclCommFinalize", ret);
	destroy(worker, worker->world);
	doubleStreamDestroy(worker->stream);
}

/* ---- one training step: issue everything, synchronize, then check every result ---- */

static void tensor_parallel(struct worker *worker, int step)
{
	struct buffers *data = worker->data;

	for (size_t i = 0; i < TP_REDUCE_COUNT; i++)
		data->tp_send[i] = (float)value_of(worker->rank, step, i);
	for (size_t i = 0; i < TP_GATHER_COUNT; i++)
		data->tp_shard[i] = (int32_t)value_of(worker->rank, step, i);
	/* --wrong-comm: the group chosen is the data-parallel one, on every rank alike. */
	all_reduce(worker, worker->wrong_comm ? worker->dp_comm : worker->tp_comm, data->tp_send,
		   data->tp_reduced, TP_REDUCE_COUNT, ncclFloat32, ncclSum);
	all_gather(worker, worker->tp_comm, data->tp_shard, data->tp_gathered, TP_GATHER_COUNT,
		   ncclInt32);
}

static void check_tensor_parallel(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;

	for (size_t i = 0; i < TP_REDUCE_COUNT; i++) {
		double expected = 0;

		for (int member = 0; member < worker->tp; member++)
			expected += value_of(
				rank_at(worker, member, worker->dp_index, worker->stage), step, i);
		expect(worker, "tensor-parallel all-reduce", i, data->tp_reduced[i], expected);
	}
	for (int member = 0; member < worker->tp; member++) {
		int peer = rank_at(worker, member, worker->dp_index, worker->stage);

		for (size_t i = 0; i < TP_GATHER_COUNT; i++)
			expect(worker, "tensor-parallel all-gather",
			       (size_t)member * TP_GATHER_COUNT + i,
			       data->tp_gathered[(size_t)member * TP_GATHER_COUNT + i],
			       value_of(peer, step, i));
	}
}

/* Activations go down the pipeline, gradients come back: one group per direction. */
static void pipeline(struct worker *worker, int step, bool forward)
{
	struct buffers *data = worker->data;
	int next = worker->stage + (forward ? 1 : -1);
	int previous = worker->stage + (forward ? -1 : 1);
	float *out = forward ? data->activations_out : data->gradients_out;
	float *in = forward ? data->activations_in : data->gradients_in;

	for (size_t i = 0; i < PIPELINE_COUNT; i++)
		out[i] = (float)(value_of(worker->rank, step, i) + (forward ? 1000 : 2000));
	group_start(worker);
	if (next >= 0 && next < worker->pp)
		send_to(worker, worker->pp_comm, out, PIPELINE_COUNT, next);
	if (previous >= 0 && previous < worker->pp)
		receive_from(worker, worker->pp_comm, in, PIPELINE_COUNT, previous);
	group_end(worker);
}

static void check_pipeline(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;

	for (size_t i = 0; i < PIPELINE_COUNT; i++) {
		if (worker->stage > 0)
			expect(worker, "pipeline activations", i, data->activations_in[i],
			       value_of(rank_at(worker, worker->tp_index, worker->dp_index,
						worker->stage - 1),
					step, i) +
				       1000);
		if (worker->stage < worker->pp - 1)
			expect(worker, "pipeline gradients", i, data->gradients_in[i],
			       value_of(rank_at(worker, worker->tp_index, worker->dp_index,
						worker->stage + 1),
					step, i) +
				       2000);
	}
}

static void fill_buckets(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	int rank = worker->rank;

	for (size_t i = 0; i < BUCKET0_MAX + 1; i++)
		data->bucket0[i] = (float)value_of(rank, step, i);
	for (size_t i = 0; i < BUCKET1_COUNT; i++)
		data->bucket1[i] = value_of(rank, step, i);
	for (size_t i = 0; i < BUCKET2_COUNT; i++)
		data->bucket2[i] = (int64_t)rank * 100 + (int64_t)i + step;
	for (size_t i = 0; i < BUCKET3_COUNT; i++)
		data->bucket3[i] = (uint8_t)(((size_t)rank + i + (size_t)step) % 200);
	for (size_t i = 0; i < BUCKET4_COUNT; i++)
		data->bucket4[i] = (int32_t)(1 + ((size_t)rank + i) % 2);
}

/* ZeRO-style shard exchange, then gradient buckets reduced in place, as DDP does. */
static void data_parallel(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	ncclComm_t comm = worker->dp_comm;

	for (size_t i = 0; i < (size_t)worker->dp * SHARD_COUNT; i++)
		data->shards_send[i] = (float)value_of(worker->rank, step, i);
	for (size_t i = 0; i < SHARD_COUNT; i++)
		data->shard_params[i] = (float)(2 * value_of(worker->rank, step, i));
	reduce_scatter(worker, comm, data->shards_send, data->shard_reduced, SHARD_COUNT,
		       ncclFloat32, ncclSum);
	all_gather(worker, comm, data->shard_params, data->params_gathered, SHARD_COUNT,
		   ncclFloat32);
	fill_buckets(worker, step);
	if (worker->skipped)
		return;
	all_reduce(worker, comm, data->bucket0, data->bucket0,
		   (size_t)worker->options->bucket_elements + (worker->mismatched ? 1 : 0),
		   ncclFloat32, ncclSum);
	all_reduce(worker, comm, data->bucket1, data->bucket1, BUCKET1_COUNT, ncclFloat64, ncclAvg);
	if (!worker->skipped_replicated)
		all_reduce(worker, comm, data->bucket2, data->bucket2, BUCKET2_COUNT, ncclInt64,
			   ncclMax);
	all_reduce(worker, comm, data->bucket3, data->bucket3, BUCKET3_COUNT, ncclUint8, ncclMin);
	all_reduce(worker, comm, data->bucket4, data->bucket4, BUCKET4_COUNT,
		   worker->mismatched_datatype ? ncclUint32 : ncclInt32, ncclProd);
}

static void check_data_parallel(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;

	for (size_t i = 0; i < SHARD_COUNT; i++) {
		double reduced = 0;

		for (int member = 0; member < worker->dp; member++)
			reduced +=
				value_of(rank_at(worker, worker->tp_index, member, worker->stage),
					 step, (size_t)worker->dp_index * SHARD_COUNT + i);
		expect(worker, "data-parallel reduce-scatter", i, data->shard_reduced[i], reduced);
	}
	for (int member = 0; member < worker->dp; member++) {
		int peer = rank_at(worker, worker->tp_index, member, worker->stage);

		for (size_t i = 0; i < SHARD_COUNT; i++)
			expect(worker, "data-parallel all-gather", (size_t)member * SHARD_COUNT + i,
			       data->params_gathered[(size_t)member * SHARD_COUNT + i],
			       2 * value_of(peer, step, i));
	}
	for (size_t i = 0; i < (size_t)worker->options->bucket_elements; i++) {
		double sum = 0;

		for (int member = 0; member < worker->dp; member++)
			sum += value_of(rank_at(worker, worker->tp_index, member, worker->stage),
					step, i);
		expect(worker, "bucket 0 (float32 sum)", i, data->bucket0[i], sum);
		if (i < BUCKET1_COUNT)
			expect(worker, "bucket 1 (float64 avg)", i, data->bucket1[i],
			       sum / worker->dp);
	}
	for (size_t i = 0; i < BUCKET2_COUNT; i++) {
		int highest = rank_at(worker, worker->tp_index, worker->dp - 1, worker->stage);

		expect(worker, "bucket 2 (int64 max)", i, (double)data->bucket2[i],
		       (double)highest * 100 + (double)i + step);
	}
	for (size_t i = 0; i < BUCKET3_COUNT; i++) {
		unsigned lowest = 255;
		double product = 1;

		for (int member = 0; member < worker->dp; member++) {
			size_t peer =
				(size_t)rank_at(worker, worker->tp_index, member, worker->stage);
			unsigned value = (unsigned)((peer + i + (size_t)step) % 200);

			lowest = value < lowest ? value : lowest;
			if (i < BUCKET4_COUNT)
				product *= (double)(1 + (peer + i) % 2);
		}
		expect(worker, "bucket 3 (uint8 min)", i, data->bucket3[i], lowest);
		if (i < BUCKET4_COUNT)
			expect(worker, "bucket 4 (int32 prod)", i, data->bucket4[i], product);
	}
}

/*
 * The gradient-norm and metrics all-reduces over the world, every step, after the data-parallel
 * ones and on the same stream: a rank that skipped those blocks here instead of running ahead.
 */
static void world_reductions(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	bool skip_norm = worker->skipped && worker->dp == 1;
	bool longer_norm = worker->mismatched && worker->dp == 1;

	data->grad_norm[0] = worker->rank + 1 + step;
	data->grad_norm[1] = 0;
	for (size_t i = 0; i < METRICS_COUNT; i++)
		data->metrics[i] = (float)(worker->rank + (int)i);
	if (!skip_norm)
		all_reduce(worker, worker->world, data->grad_norm, data->grad_norm,
			   longer_norm ? 2 : 1, ncclFloat64, ncclSum);
	all_reduce(worker, worker->world, data->metrics, data->metrics, METRICS_COUNT, ncclFloat32,
		   ncclMax);
	if (worker->log_comm) {
		data->loss = (float)(worker->rank + step);
		all_reduce(worker, worker->log_comm, &data->loss, &data->loss, 1, ncclFloat32,
			   ncclSum);
	}
}

static void check_world_reductions(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;
	double world = worker->world_size;
	double loss = 0;

	expect(worker, "grad-norm all-reduce", 0, data->grad_norm[0],
	       world * (world + 1) / 2 + world * step);
	for (size_t i = 0; i < METRICS_COUNT; i++)
		expect(worker, "metrics all-reduce (float32 max)", i, data->metrics[i],
		       world - 1 + (double)i);
	if (!worker->log_comm)
		return;
	for (int stage = 0; stage < worker->pp; stage++)
		for (int member = 0; member < worker->dp; member++)
			loss += rank_at(worker, 0, member, stage) + step;
	expect(worker, "logging-group all-reduce", 0, data->loss, loss);
}

static void world_collectives(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	int world = worker->world_size;
	int rank = worker->rank;
	int broadcast_root = step % world;
	int bcast_root = (step + 1) % world;
	int reduce_root = (step + 2) % world;

	for (int i = 0; i < BROADCAST_COUNT; i++)
		data->broadcast_send[i] = (int64_t)rank * 1000 + i + step;
	for (int i = 0; i < BCAST_COUNT; i++)
		data->bcast[i] = rank == bcast_root ? rank * 100 + i + step : -1;
	for (size_t i = 0; i < REDUCE_COUNT; i++)
		data->reduce_send[i] = (float)value_of(rank, step, i);
	for (int peer = 0; peer < world; peer++)
		for (int i = 0; i < ALL_TO_ALL_COUNT; i++)
			data->all_to_all_send[peer * ALL_TO_ALL_COUNT + i] =
				rank * 1000 + peer * 10 + i;
	for (int i = 0; i < GATHER_COUNT; i++)
		data->gather_send[i] = (int64_t)rank * 10 + i + step;
	for (int peer = 0; peer < world; peer++)
		for (int i = 0; i < SCATTER_COUNT; i++)
			data->scatter_send[peer * SCATTER_COUNT + i] = peer * 100 + i + step;

	broadcast(worker, worker->world, data->broadcast_send, data->broadcast_recv,
		  BROADCAST_COUNT, ncclInt64, broadcast_root);
	bcast(worker, worker->world, data->bcast, BCAST_COUNT, ncclInt32, bcast_root);
	reduce(worker, worker->world, data->reduce_send, data->reduce_recv, REDUCE_COUNT,
	       ncclFloat32, ncclSum, reduce_root);
	all_to_all(worker, worker->world, data->all_to_all_send, data->all_to_all_recv,
		   ALL_TO_ALL_COUNT, ncclInt32);
	gather(worker, worker->world, data->gather_send, data->gather_recv, GATHER_COUNT, ncclInt64,
	       0);
	scatter(worker, worker->world, data->scatter_send, data->scatter_recv, SCATTER_COUNT,
		ncclInt32, world - 1);
}

static void check_world_collectives(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;
	int world = worker->world_size;
	int rank = worker->rank;
	int broadcast_root = step % world;
	int bcast_root = (step + 1) % world;
	int reduce_root = (step + 2) % world;

	for (int i = 0; i < BROADCAST_COUNT; i++)
		expect(worker, "broadcast", (size_t)i, (double)data->broadcast_recv[i],
		       (double)broadcast_root * 1000 + i + step);
	for (int i = 0; i < BCAST_COUNT; i++)
		expect(worker, "bcast", (size_t)i, data->bcast[i], bcast_root * 100 + i + step);
	for (size_t i = 0; i < REDUCE_COUNT && rank == reduce_root; i++) {
		double sum = 0;

		for (int peer = 0; peer < world; peer++)
			sum += value_of(peer, step, i);
		expect(worker, "reduce", i, data->reduce_recv[i], sum);
	}
	for (int peer = 0; peer < world; peer++)
		for (int i = 0; i < ALL_TO_ALL_COUNT; i++)
			expect(worker, "all-to-all", (size_t)(peer * ALL_TO_ALL_COUNT + i),
			       data->all_to_all_recv[peer * ALL_TO_ALL_COUNT + i],
			       peer * 1000 + rank * 10 + i);
	for (int peer = 0; peer < world && rank == 0; peer++)
		for (int i = 0; i < GATHER_COUNT; i++)
			expect(worker, "gather", (size_t)(peer * GATHER_COUNT + i),
			       (double)data->gather_recv[peer * GATHER_COUNT + i],
			       peer * 10 + i + step);
	for (int i = 0; i < SCATTER_COUNT; i++)
		expect(worker, "scatter", (size_t)i, data->scatter_recv[i], rank * 100 + i + step);
}

/* The --extra-call fault: a message to itself, which needs no other rank. */
static void echo_to_self(struct worker *worker)
{
	struct buffers *data = worker->data;

	for (size_t i = 0; i < METRICS_COUNT; i++)
		data->echo_out[i] = (float)(worker->rank * 10 + (int)i);
	group_start(worker);
	send_to(worker, worker->world, data->echo_out, METRICS_COUNT, worker->rank);
	receive_from(worker, worker->world, data->echo_in, METRICS_COUNT, worker->rank);
	group_end(worker);
}

static void write_progress(const struct worker *worker, int step)
{
	char path[PATH_MAX];
	char text[32];
	int length;

	snprintf(path, sizeof(path), "%s/rank-%d.progress", worker->options->log_dir, worker->rank);
	length = snprintf(text, sizeof(text), "%d\n", step);
	if (write_file_atomically(path, text, (size_t)length) < 0)
		die(worker, 1, "cannot write a file in the log directory");
}

/*
 * The --delay fault: the ground truth goes to rank-R.fault before the
 * rank waits, so a hang still leaves it.
 */
static void inject_delay(const struct worker *worker, int step, enum delay_position position)
{
	const struct delay *delay = &worker->options->delay;
	char path[PATH_MAX], text[256];
	int length;

	if (delay->rank != worker->rank || delay->step != step || delay->position != position)
		return;
	length = snprintf(text, sizeof(text),
			  "{\"rank\":%d,\"step\":%d,\"where\":\"%s\",\"delay_ms\":%ld,"
			  "\"start_ns\":%llu}\n",
			  worker->rank, step, delay_position_names[position], delay->ms,
			  (unsigned long long)now_ns());
	snprintf(path, sizeof(path), "%s/rank-%d.fault", worker->options->log_dir, worker->rank);
	if (write_file_atomically(path, text, (size_t)length) < 0)
		die(worker, 1, "cannot write a file in the log directory");
	if (!delay->ms)
		for (;;)
			pause();
	sleep_ns(delay->ms * 1000000L);
}

/* The --crash fault: the ground truth first, then a write through a null pointer. */
static void crash(const struct worker *worker, int step)
{
	char path[PATH_MAX], text[256];
	int length = snprintf(text, sizeof(text),
			      "{\"rank\":%d,\"step\":%d,\"where\":\"crash\",\"signal\":\"SIGSEGV\","
			      "\"start_ns\":%llu}\n",
			      worker->rank, step, (unsigned long long)now_ns());
	volatile uintptr_t nowhere = 0; /* opaque to the compiler: a real fault, not a raise() */

	snprintf(path, sizeof(path), "%s/rank-%d.fault", worker->options->log_dir, worker->rank);
	if (write_file_atomically(path, text, (size_t)length) < 0)
		die(worker, 1, "cannot write a file in the log directory");
	/* The fault asked for: a real invalid write, as a bug in native code makes. */
	/* cppcheck-suppress nullPointer */
	*(volatile int *)nowhere = step;
}

static void run_step(struct worker *worker, int step)
{
	const struct options *options = worker->options;
	ncclResult_t async_error = ncclSuccess;
	ncclResult_t ret;

	worker->log.step = step;
	worker->skipped = options->skip.rank == worker->rank && options->skip.step == step;
	worker->mismatched =
		options->mismatch.rank == worker->rank && options->mismatch.step == step;
	worker->mismatched_datatype = options->mismatch_datatype.rank == worker->rank &&
				      options->mismatch_datatype.step == step;
	worker->skipped_replicated = options->skip_replicated.rank == worker->rank &&
				     options->skip_replicated.step == step;
	worker->extra_call =
		options->extra_call.rank == worker->rank && options->extra_call.step == step;
	worker->wrong_comm = options->wrong_comm_step == step && worker->tp > 1 && worker->dp > 1;
	worker->world_collectives = step % WORLD_COLLECTIVE_PERIOD == 0;
	if (options->crash.rank == worker->rank && options->crash.step == step)
		crash(worker, step);
	if (options->stall.rank == worker->rank && options->stall.step == step) {
		fprintf(stderr, "nccl-workload: rank %d stalls at step %d\n", worker->rank, step);
		for (;;)
			pause();
	}
	if (worker->skipped)
		fprintf(stderr, "nccl-workload: rank %d skips its gradient all-reduce at step %d\n",
			worker->rank, step);

	if (checkpoint_pause_run(&options->checkpoint, options->log_dir, worker->rank, step) < 0)
		die(worker, 1, "cannot write a checkpoint in the log directory");
	inject_delay(worker, step, DELAY_FORWARD);
	compute(worker);
	if (worker->tp > 1)
		tensor_parallel(worker, step);
	if (worker->pp > 1)
		pipeline(worker, step, true);
	inject_delay(worker, step, DELAY_BACKWARD);
	compute(worker);
	inject_delay(worker, step, DELAY_SEND);
	if (worker->pp > 1)
		pipeline(worker, step, false);
	if (worker->dp > 1)
		data_parallel(worker, step);
	inject_delay(worker, step, DELAY_COLLECTIVE);
	world_reductions(worker, step);
	if (worker->world_collectives)
		world_collectives(worker, step);
	if (worker->extra_call)
		echo_to_self(worker);

	ret = ncclCommGetAsyncError(worker->world, &async_error);
	ground_truth_async_error(&worker->log, ret, worker->world, &async_error);
	check_call(worker, "ncclCommGetAsyncError", ret);
	check_call(worker, "an earlier operation (ncclCommGetAsyncError)", async_error);
	ret = doubleStreamSynchronize(worker->stream);
	check_call(worker, "an operation of this step (doubleStreamSynchronize)", ret);

	/* The wrong group reduced other ranks' values: nothing to compare with. */
	if (worker->tp > 1 && !worker->wrong_comm)
		check_tensor_parallel(worker, step);
	if (worker->pp > 1)
		check_pipeline(worker, step);
	if (worker->dp > 1 && !worker->skipped)
		check_data_parallel(worker, step);
	if (!worker->skipped)
		check_world_reductions(worker, step);
	if (worker->world_collectives)
		check_world_collectives(worker, step);
	for (size_t i = 0; worker->extra_call && i < METRICS_COUNT; i++)
		expect(worker, "send to self", i, worker->data->echo_in[i],
		       worker->data->echo_out[i]);
	fflush(worker->log.file);
	if (options->step_sleep_ms)
		sleep_ns(options->step_sleep_ms * 1000000L);
	write_progress(worker, step);
}

/* True when --stop-file names a step before 'step': the job ends after that one. */
static bool stop_before(const struct options *options, int step)
{
	FILE *file;
	long last;
	bool stop;

	if (!options->stop_file || !(file = fopen(options->stop_file, "re")))
		return false;
	stop = fscanf(file, "%ld", &last) == 1 && step > last;
	fclose(file);
	return stop;
}

static int run_worker(const struct options *options)
{
	struct worker worker = { .options = options };
	char path[PATH_MAX];

	worker.rank = env_int("RANK");
	worker.world_size = env_int("WORLD_SIZE");
	worker.log.step = -1;
	if (worker.rank < 0 || worker.world_size != options->ranks || worker.rank >= options->ranks)
		die(&worker, 2, "RANK and WORLD_SIZE must be set by the launcher");
	worker.tp = options->tp;
	worker.pp = options->pp;
	worker.dp = options->ranks / (options->tp * options->pp);
	worker.tp_index = worker.rank % worker.tp;
	worker.dp_index = (worker.rank / worker.tp) % worker.dp;
	worker.stage = worker.rank / (worker.tp * worker.dp);

	snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, worker.rank);
	if (ground_truth_open(&worker.log, path) < 0)
		die(&worker, 2, "cannot create the ground-truth log");
	if (options->wait_file)
		wait_for_file(options->wait_file);

	setup(&worker);
	for (int step = 0; step < options->steps && !stop_before(options, step); step++)
		run_step(&worker, step);
	teardown(&worker);
	ground_truth_close(&worker.log);
	return 0;
}

/* ---- the launcher: one process per rank, environment as torchrun sets it ---- */

static void remove_stale_outputs(const struct options *options)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", options->log_dir, UNIQUE_ID_FILE);
	unlink(path);
	for (int rank = 0; rank < options->ranks; rank++) {
		snprintf(path, sizeof(path), "%s/rank-%d.progress", options->log_dir, rank);
		unlink(path);
		snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, rank);
		unlink(path);
	}
}

static int launch(const struct options *options, int argc, char **argv)
{
	const struct rank_launcher launcher = {
		.program = "nccl-workload",
		.ranks = options->ranks,
		.grace_seconds = FAILURE_GRACE_SECONDS,
		.master_env = true,
		.escalate = true,
	};
	int status;

	if (make_log_directory(launcher.program, options->log_dir) < 0)
		return 2;
	remove_stale_outputs(options);
	status = launch_ranks(&launcher, argc, argv);
	if (status != 0)
		return status;
	printf("nccl-workload: %d ranks finished %d steps\n", options->ranks, options->steps);
	return 0;
}

int main(int argc, char **argv)
{
	struct options options;

	if (parse_options(argc, argv, &options) < 0)
		return 2;
	if (options.worker)
		return run_worker(&options);
	return launch(&options, argc, argv);
}
