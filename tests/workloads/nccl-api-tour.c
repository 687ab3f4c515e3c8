// SPDX-License-Identifier: MIT
/* Calls every NCCL function the tracer probes, from N rank processes, and logs each call made. */
/*
 * Every rank calls each of the 27 functions of user/model/nccl_api.c at least once, with argument
 * values that tell the calls apart (a different count per call, every datatype and every
 * reduction op across the world all-reduces, roots and peers other than 0), checks the return
 * code of each against what the test double documents, checks the data every collective moved,
 * and writes the call to DIR/rank-R.jsonl (tests/workloads/nccl_ground_truth.h, step -1).
 *
 * The tour, in order, on each rank:
 *  - ids: ncclGetUniqueId three times (world, config and scalable ids; each rank publishes its
 *    own in DIR/unique-ids-R and the world uses rank 0's) and once with NULL;
 *  - creation: ncclCommInitRank (world), ncclCommInitRankConfig (a valid config, and a zeroed
 *    one that fails), ncclCommInitRankScalable (nId 1, and nId 0 that fails), ncclCommInitRank
 *    with nranks 0, ncclCommInitAll (ndev 2 in this one process, and ndev 0 that fails);
 *  - splits of the world: all ranks reversed by key, with a config; a colour for all but the
 *    last rank, which passes NCCL_SPLIT_NOCOLOR; a colour of -7 that fails (on rank 0 only
 *    with --lone-refused-split); ncclCommShrink excluding nobody; a split kept for the revoke;
 *  - collectives: twelve ncclAllReduce (one per datatype, ops cycling), ncclBroadcast,
 *    ncclBcast, ncclReduce, ncclAllGather, ncclReduceScatter, ncclAlltoAll, ncclGather,
 *    ncclScatter, grouped ncclSend/ncclRecv around a ring, a grouped all-reduce over the two
 *    communicators of ncclCommInitAll, and calls that fail: a NULL comm, datatype 99, an op
 *    out of range, a root out of range, a peer of -1 inside a group, an unmatched ncclGroupEnd;
 *  - ncclCommRegister/ncclCommDeregister, and both with bad arguments;
 *  - ncclCommGetAsyncError: on healthy communicators (the tracer leaves these out), and from a
 *    second thread with a NULL result pointer, with a NULL comm, and after ncclCommRevoke,
 *    where it reports ncclRemoteError;
 *  - fault handling on the kept split: ncclCommRevoke with bad flags, then for real; a
 *    collective and a split on it fail with ncclInvalidUsage; ranks but the last shrink it
 *    (NCCL_SHRINK_ABORT) leaving the last rank out, which instead tries to exclude itself;
 *  - after --linger-ms, teardown: ncclCommAbort of the revoked communicator and of NULL,
 *    ncclCommFinalize and ncclCommDestroy (and both of NULL).
 * No communicator is freed before teardown, so no handle is reused within one run.
 */
#include <errno.h>
#include <getopt.h>
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

static void usage(FILE *out)
{
	fprintf(out,
		"usage: " PROGRAM " --log-dir DIR [--ranks N] [--linger-ms M] "
		"[--lone-refused-split]\n"
		"Runs N rank processes (default 2, at least 2) over libnccl.so.2 that each call\n"
		"every NCCL function tcheck-bpf probes, with distinct arguments, and writes\n"
		"DIR/rank-R.jsonl: every NCCL call made, as JSON lines. Exits 0 when every call\n"
		"returned and computed what the NCCL test double documents.\n"
		"  --linger-ms M          ranks wait M ms before teardown, their communicators\n"
		"                         alive (the tour itself lasts a few milliseconds)\n"
		"  --lone-refused-split   only rank 0 makes the split the library refuses, so\n"
		"                         the ranks' counts of calls to ncclCommSplit differ\n"
		"Example: " PROGRAM " --ranks 4 --log-dir /tmp/tour\n");
}

static int parse_options(int argc, char **argv, struct options *options)
{
	static const struct option long_options[] = {
		{ "ranks", required_argument, NULL, 'n' },
		{ "log-dir", required_argument, NULL, 'l' },
		{ "linger-ms", required_argument, NULL, 'g' },
		{ "lone-refused-split", no_argument, NULL, 'r' },
		{ "worker", no_argument, NULL, 'W' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int option;
	long value;

	*options = (struct options){ .ranks = 2 };
	while ((option = getopt_long(argc, argv, "", long_options, NULL)) != -1) {
		switch (option) {
		case 'n':
			if (!parse_int(optarg, 2, DOUBLE_MAX_RANKS, &value)) {
				fprintf(stderr, PROGRAM ": --ranks takes 2 to %d, not '%s'\n",
					DOUBLE_MAX_RANKS, optarg);
				return -1;
			}
			options->ranks = (int)value;
			break;
		case 'l':
			options->log_dir = optarg;
			break;
		case 'g':
			if (!parse_int(optarg, 0, 3600000, &options->linger_ms)) {
				fprintf(stderr, PROGRAM ": bad value '%s' for --linger-ms\n",
					optarg);
				return -1;
			}
			break;
		case 'r':
			options->lone_refused_split = true;
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
	}
	if (optind != argc || !options->log_dir) {
		usage(stderr);
		return -1;
	}
	return 0;
}

/* ---- one rank ---- */

static void die(const struct tour *tour, int status, const char *what)
{
	fprintf(stderr, PROGRAM ": rank %d: %s\n", tour->rank, what);
	exit(status);
}

/* Every call is made for a known outcome: anything else ends the rank. */
static void expect_result(const struct tour *tour, const char *call, ncclResult_t got,
			  ncclResult_t expected)
{
	char message[256];

	if (got == expected)
		return;
	snprintf(message, sizeof(message), "%s returned %d (%s), the double documents %d (%s)",
		 call, got, ncclGetErrorString(got), expected, ncclGetErrorString(expected));
	die(tour, EXIT_MISBEHAVED, message);
}

static void *allocate(struct tour *tour, size_t bytes)
{
	void *memory;

	if (tour->allocation_count == MAX_ALLOCATIONS)
		die(tour, 2, "too many buffers");
	memory = calloc(1, bytes);
	if (!memory)
		die(tour, 2, "out of memory");
	tour->allocations[tour->allocation_count++] = memory;
	return memory;
}

static uint64_t hash_of(ncclComm_t comm)
{
	uint64_t hash = 0;

	if (comm)
		doubleCommGetHash(comm, &hash);
	return hash;
}

/* ---- element values: what each rank contributes, and what a reduction makes of them ---- */

static size_t datatype_bytes(int datatype)
{
	static const size_t sizes[DATATYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return datatype >= 0 && datatype < DATATYPE_COUNT ? sizes[datatype] : 0;
}

static bool is_float(int datatype)
{
	return datatype == ncclFloat32 || datatype == ncclFloat64;
}

/* Half, bfloat16 and fp8 are not reduced by the double: their result is rank 0's data. */
static bool is_reduced(int datatype)
{
	return datatype <= ncclUint64 || is_float(datatype);
}

/* What a rank puts at 'index' of a buffer: small integers, exact in every type. */
static int64_t contribution(int rank, size_t index, size_t salt)
{
	return rank + 1 + (int64_t)((index + salt) % 3);
}

/* Stores an integer ('whole', wrapped to the type) or, for float types, 'real'. */
static void store_element(void *buffer, int datatype, size_t index, uint64_t whole, double real)
{
	unsigned char *at = (unsigned char *)buffer + index * datatype_bytes(datatype);
	uint8_t byte = (uint8_t)whole;
	uint16_t half = (uint16_t)whole;
	uint32_t word = (uint32_t)whole;
	float single = (float)real;

	switch (datatype_bytes(datatype)) {
	case 1:
		memcpy(at, &byte, sizeof(byte));
		break;
	case 2:
		memcpy(at, &half, sizeof(half));
		break;
	case 4:
		if (datatype == ncclFloat32)
			memcpy(at, &single, sizeof(single));
		else
			memcpy(at, &word, sizeof(word));
		break;
	default:
		if (datatype == ncclFloat64)
			memcpy(at, &real, sizeof(real));
		else
			memcpy(at, &whole, sizeof(whole));
		break;
	}
}

static bool element_matches(const void *buffer, int datatype, size_t index, uint64_t whole,
			    double real)
{
	const unsigned char *at = (const unsigned char *)buffer + index * datatype_bytes(datatype);
	unsigned char expected[8];
	float single;
	double got;

	if (is_float(datatype)) {
		if (datatype == ncclFloat32) {
			memcpy(&single, at, sizeof(single));
			got = single;
		} else {
			memcpy(&got, at, sizeof(got));
		}
		return fabs(got - real) <= 1e-6 * fmax(1.0, fabs(real));
	}
	store_element(expected, datatype, 0, whole, real);
	return memcmp(at, expected, datatype_bytes(datatype)) == 0;
}

static void fill(void *buffer, int datatype, size_t count, int rank, size_t salt)
{
	for (size_t i = 0; i < count; i++) {
		int64_t value = contribution(rank, i, salt);

		store_element(buffer, datatype, i, (uint64_t)value, (double)value);
	}
}

/*
 * The reduction of element 'index' over 'members' (their world ranks in communicator order),
 * as the double computes it: integers wrap, averages of integers truncate.
 */
static void reduction_of(const int *members, int member_count, int datatype, int op, size_t index,
			 size_t salt, uint64_t *whole, double *real)
{
	int64_t first = contribution(members[0], index, salt);

	*whole = (uint64_t)first;
	*real = (double)first;
	if (!is_reduced(datatype))
		return;
	for (int i = 1; i < member_count; i++) {
		int64_t value = contribution(members[i], index, salt);

		switch (op) {
		case ncclProd:
			*whole *= (uint64_t)value;
			*real *= (double)value;
			break;
		case ncclMax:
			*whole = (int64_t)*whole > value ? *whole : (uint64_t)value;
			*real = fmax(*real, (double)value);
			break;
		case ncclMin:
			*whole = (int64_t)*whole < value ? *whole : (uint64_t)value;
			*real = fmin(*real, (double)value);
			break;
		default:
			*whole += (uint64_t)value;
			*real += (double)value;
			break;
		}
	}
	if (op == ncclAvg) {
		*whole /= (uint64_t)member_count;
		*real /= member_count;
	}
}

static void check_element(const struct tour *tour, const char *what, const void *buffer,
			  int datatype, size_t index, uint64_t whole, double real)
{
	char message[256];

	if (element_matches(buffer, datatype, index, whole, real))
		return;
	snprintf(message, sizeof(message),
		 "wrong result: %s[%zu] (datatype %d) is not %llu / %.17g as expected", what, index,
		 datatype, (unsigned long long)whole, real);
	die(tour, EXIT_MISBEHAVED, message);
}

static void check_reduction(const struct tour *tour, const char *what, const void *buffer,
			    const int *members, int member_count, int datatype, int op,
			    size_t count, size_t first_index, size_t salt)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t whole;
		double real;

		reduction_of(members, member_count, datatype, op, first_index + i, salt, &whole,
			     &real);
		check_element(tour, what, buffer, datatype, i, whole, real);
	}
}

/* 'count' elements contributed by 'rank' from 'first_index' on, found at 'offset' of buffer. */
static void check_copy(const struct tour *tour, const char *what, const void *buffer, int datatype,
		       size_t offset, size_t count, int rank, size_t first_index, size_t salt)
{
	for (size_t i = 0; i < count; i++) {
		int64_t value = contribution(rank, first_index + i, salt);

		check_element(tour, what, buffer, datatype, offset + i, (uint64_t)value,
			      (double)value);
	}
}

static void synchronize(const struct tour *tour, const char *what)
{
	char message[160];
	ncclResult_t ret = doubleStreamSynchronize(tour->stream);

	if (ret == ncclSuccess)
		return;
	snprintf(message, sizeof(message), "operations of %s failed: %s", what,
		 ncclGetErrorString(ret));
	die(tour, EXIT_MISBEHAVED, message);
}

/* ---- ground truth for the calls nccl_ground_truth.h has no helper for ---- */

static void log_scalable(struct tour *tour, ncclResult_t ret, const ncclComm_t *newcomm, int nranks,
			 int myrank, int id_count, const ncclUniqueId *ids,
			 const ncclConfig_t *config)
{
	ground_truth_begin(&tour->log, "ncclCommInitRankScalable", ret);
	ground_truth_pointer(&tour->log, "newcomm", newcomm);
	ground_truth_signed(&tour->log, "nranks", nranks);
	ground_truth_signed(&tour->log, "myrank", myrank);
	ground_truth_signed(&tour->log, "nId", id_count);
	ground_truth_pointer(&tour->log, "commIds", ids);
	ground_truth_pointer(&tour->log, "config", config);
	ground_truth_pointer(&tour->log, "newcomm_out", *newcomm);
	ground_truth_unsigned(&tour->log, "comm_hash", hash_of(*newcomm));
	ground_truth_end(&tour->log);
}

/* The communicators written go after "args": the trace keeps them in no argument. */
static void log_init_all(struct tour *tour, ncclResult_t ret, const ncclComm_t *comms, int ndev,
			 const int *devlist)
{
	ground_truth_begin(&tour->log, "ncclCommInitAll", ret);
	ground_truth_pointer(&tour->log, "comm", comms);
	ground_truth_signed(&tour->log, "ndev", ndev);
	ground_truth_pointer(&tour->log, "devlist", devlist);
	ground_truth_end_args(&tour->log);
	for (int i = 0; i < ndev && ret == ncclSuccess; i++) {
		char key[32];

		snprintf(key, sizeof(key), "comm_out_%d", i);
		ground_truth_pointer(&tour->log, key, comms[i]);
		snprintf(key, sizeof(key), "comm_hash_%d", i);
		ground_truth_unsigned(&tour->log, key, hash_of(comms[i]));
	}
	ground_truth_end(&tour->log);
}

static void log_shrink(struct tour *tour, ncclResult_t ret, ncclComm_t comm, const int *excluded,
		       int excluded_count, const ncclComm_t *newcomm, const ncclConfig_t *config,
		       int flags)
{
	ground_truth_begin(&tour->log, "ncclCommShrink", ret);
	ground_truth_pointer(&tour->log, "comm", comm);
	ground_truth_pointer(&tour->log, "excludeRanksList", excluded);
	ground_truth_signed(&tour->log, "excludeRanksCount", excluded_count);
	ground_truth_pointer(&tour->log, "newcomm", newcomm);
	ground_truth_pointer(&tour->log, "config", config);
	ground_truth_signed(&tour->log, "shrinkFlags", flags);
	ground_truth_pointer(&tour->log, "newcomm_out", *newcomm);
	ground_truth_unsigned(&tour->log, "comm_hash", hash_of(*newcomm));
	ground_truth_end(&tour->log);
}

static void log_revoke(struct tour *tour, ncclResult_t ret, ncclComm_t comm, int flags)
{
	ground_truth_begin(&tour->log, "ncclCommRevoke", ret);
	ground_truth_pointer(&tour->log, "comm", comm);
	ground_truth_signed(&tour->log, "revokeFlags", flags);
	ground_truth_end(&tour->log);
}

/*
 * A call the tracer keeps (it failed, or reported an error) is logged without "asyncError":
 * the trace gives that argument as the result read back, by name, where the log has the
 * pointer. The value read back goes under "async_error", absent when the pointer was NULL.
 */
static void log_async_error(struct tour *tour, ncclResult_t ret, ncclComm_t comm,
			    const ncclResult_t *async_error)
{
	if (async_error && ret == ncclSuccess && *async_error == ncclSuccess) {
		ground_truth_async_error(&tour->log, ret, comm, async_error);
		return;
	}
	ground_truth_begin(&tour->log, "ncclCommGetAsyncError", ret);
	ground_truth_pointer(&tour->log, "comm", comm);
	ground_truth_end_args(&tour->log);
	ground_truth_pointer(&tour->log, "async_error_pointer", async_error);
	if (async_error)
		ground_truth_signed(&tour->log, "async_error", *async_error);
	ground_truth_signed(&tour->log, "tracer_filtered", 0);
	ground_truth_end(&tour->log);
}

/* A failed ncclGetUniqueId writes no id: logged without one. */
static void log_failed_unique_id(struct tour *tour, ncclResult_t ret)
{
	ground_truth_begin(&tour->log, "ncclGetUniqueId", ret);
	ground_truth_end(&tour->log);
}

/* ---- logged calls ---- */

static void all_reduce(struct tour *tour, ncclComm_t comm, const void *send, void *recv,
		       size_t count, int datatype, int op, ncclResult_t expected)
{
	ncclResult_t ret = ncclAllReduce(send, recv, count, (ncclDataType_t)datatype,
					 (ncclRedOp_t)op, comm, tour->stream);

	ground_truth_collective(&tour->log, ret, "ncclAllReduce", send, recv, count, datatype, op,
				-1, comm, tour->stream);
	expect_result(tour, "ncclAllReduce", ret, expected);
}

static void broadcast(struct tour *tour, ncclComm_t comm, const void *send, void *recv,
		      size_t count, int datatype, int root, ncclResult_t expected)
{
	ncclResult_t ret = ncclBroadcast(send, recv, count, (ncclDataType_t)datatype, root, comm,
					 tour->stream);

	ground_truth_collective(&tour->log, ret, "ncclBroadcast", send, recv, count, datatype, -1,
				root, comm, tour->stream);
	expect_result(tour, "ncclBroadcast", ret, expected);
}

static void group_start(struct tour *tour)
{
	ncclResult_t ret = ncclGroupStart();

	ground_truth_no_args(&tour->log, "ncclGroupStart", ret);
	expect_result(tour, "ncclGroupStart", ret, ncclSuccess);
}

static void group_end(struct tour *tour, ncclResult_t expected)
{
	ncclResult_t ret = ncclGroupEnd();

	ground_truth_no_args(&tour->log, "ncclGroupEnd", ret);
	expect_result(tour, "ncclGroupEnd", ret, expected);
}

static void send_receive(struct tour *tour, bool send, ncclComm_t comm, void *buffer, size_t count,
			 int datatype, int peer, ncclResult_t expected)
{
	ncclResult_t ret =
		send ? ncclSend(buffer, count, (ncclDataType_t)datatype, peer, comm, tour->stream)
		     : ncclRecv(buffer, count, (ncclDataType_t)datatype, peer, comm, tour->stream);

	ground_truth_p2p(&tour->log, ret, send, buffer, count, datatype, peer, comm, tour->stream);
	expect_result(tour, send ? "ncclSend" : "ncclRecv", ret, expected);
}

static ncclComm_t split(struct tour *tour, ncclComm_t parent, int color, int key,
			ncclConfig_t *config, ncclResult_t expected)
{
	ncclComm_t created = NULL;
	ncclResult_t ret = ncclCommSplit(parent, color, key, &created, config);

	ground_truth_split(&tour->log, ret, parent, color, key, &created, config, hash_of(created));
	expect_result(tour, "ncclCommSplit", ret, expected);
	if ((ret == ncclSuccess && color != NCCL_SPLIT_NOCOLOR) != (created != NULL))
		die(tour, EXIT_MISBEHAVED, "ncclCommSplit: a comm exactly when one was asked for");
	return created;
}

static ncclComm_t shrink(struct tour *tour, ncclComm_t parent, int *excluded, int excluded_count,
			 int flags, ncclResult_t expected)
{
	ncclComm_t created = NULL;
	ncclResult_t ret = ncclCommShrink(parent, excluded, excluded_count, &created, NULL, flags);

	log_shrink(tour, ret, parent, excluded, excluded_count, &created, NULL, flags);
	expect_result(tour, "ncclCommShrink", ret, expected);
	if ((ret == ncclSuccess) != (created != NULL))
		die(tour, EXIT_MISBEHAVED, "ncclCommShrink: a comm exactly when it succeeds");
	return created;
}

static void comm_end(struct tour *tour, const char *name, ncclComm_t comm, ncclResult_t expected)
{
	ncclResult_t ret;

	if (strcmp(name, "ncclCommFinalize") == 0)
		ret = ncclCommFinalize(comm);
	else if (strcmp(name, "ncclCommAbort") == 0)
		ret = ncclCommAbort(comm);
	else
		ret = ncclCommDestroy(comm);
	ground_truth_comm_only(&tour->log, name, ret, comm);
	expect_result(tour, name, ret, expected);
}

static void async_error_query(struct tour *tour, ncclComm_t comm, bool with_result,
			      ncclResult_t expected, ncclResult_t expected_error)
{
	ncclResult_t async_error = ncclSuccess;
	ncclResult_t *pointer = with_result ? &async_error : NULL;
	ncclResult_t ret = ncclCommGetAsyncError(comm, pointer);

	log_async_error(tour, ret, comm, pointer);
	expect_result(tour, "ncclCommGetAsyncError", ret, expected);
	expect_result(tour, "the error ncclCommGetAsyncError reports", async_error, expected_error);
}

/* ---- ids and communicators ---- */

/* Every rank makes its ids and publishes them; a communicator uses one rank's id. */
static void make_unique_ids(struct tour *tour)
{
	char path[PATH_MAX];
	ncclResult_t ret;

	for (int i = 0; i < IDS_PER_RANK; i++) {
		ret = ncclGetUniqueId(&tour->own_ids[i]);
		ground_truth_unique_id(&tour->log, ret, &tour->own_ids[i]);
		expect_result(tour, "ncclGetUniqueId", ret, ncclSuccess);
	}
	ret = ncclGetUniqueId(NULL);
	log_failed_unique_id(tour, ret);
	expect_result(tour, "ncclGetUniqueId(NULL)", ret, ncclInvalidArgument);
	snprintf(path, sizeof(path), UNIQUE_ID_FILE_FORMAT, tour->options->log_dir, tour->rank);
	if (write_file_atomically(path, tour->own_ids, sizeof(tour->own_ids)) < 0)
		die(tour, 2,
		    errno == ENAMETOOLONG ? "the log directory's path is too long"
					  : "cannot write the unique ids to the log directory");
}

static void published_id(const struct tour *tour, int rank, int which, ncclUniqueId *id)
{
	ncclUniqueId ids[IDS_PER_RANK];
	char path[PATH_MAX];

	snprintf(path, sizeof(path), UNIQUE_ID_FILE_FORMAT, tour->options->log_dir, rank);
	read_published_file(path, ids, sizeof(ids));
	*id = ids[which];
}

static void init_rank(struct tour *tour, ncclComm_t *comm, int nranks, const ncclUniqueId *id,
		      int rank, bool with_config, ncclConfig_t *config, ncclResult_t expected)
{
	ncclResult_t ret = with_config ? ncclCommInitRankConfig(comm, nranks, *id, rank, config)
				       : ncclCommInitRank(comm, nranks, *id, rank);

	ground_truth_init_rank(&tour->log, ret, comm, nranks, id, rank, with_config, config,
			       hash_of(*comm));
	expect_result(tour, with_config ? "ncclCommInitRankConfig" : "ncclCommInitRank", ret,
		      expected);
}

static void create_communicators(struct tour *tour)
{
	ncclConfig_t zeroed_config;
	ncclUniqueId world_id, config_id, scalable_id;
	ncclComm_t failed = NULL;
	int devlist[2] = { PAIR_DEVICE_0, PAIR_DEVICE_1 };
	ncclResult_t ret;

	published_id(tour, 0, 0, &world_id);
	published_id(tour, tour->nranks - 1, 1, &config_id);
	published_id(tour, 1, 2, &scalable_id);

	init_rank(tour, &failed, 0, &world_id, 0, false, NULL, ncclInvalidArgument);
	init_rank(tour, &tour->world, tour->nranks, &world_id, tour->rank, false, NULL,
		  ncclSuccess);

	/* The double checks the magic of a config: a zeroed one is refused. */
	memset(&zeroed_config, 0, sizeof(zeroed_config));
	init_rank(tour, &failed, tour->nranks, &config_id, tour->rank, true, &zeroed_config,
		  ncclInvalidArgument);
	tour->config = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
	tour->config.blocking = 1;
	init_rank(tour, &tour->configured, tour->nranks, &config_id, tour->rank, true,
		  &tour->config, ncclSuccess);

	ret = ncclCommInitRankScalable(&failed, tour->nranks, tour->rank, 0, &scalable_id, NULL);
	log_scalable(tour, ret, &failed, tour->nranks, tour->rank, 0, &scalable_id, NULL);
	expect_result(tour, "ncclCommInitRankScalable(nId 0)", ret, ncclInvalidArgument);
	ret = ncclCommInitRankScalable(&tour->scalable, tour->nranks, tour->rank, 1, &scalable_id,
				       &tour->config);
	log_scalable(tour, ret, &tour->scalable, tour->nranks, tour->rank, 1, &scalable_id,
		     &tour->config);
	expect_result(tour, "ncclCommInitRankScalable", ret, ncclSuccess);

	ret = ncclCommInitAll(tour->pair, 0, devlist);
	log_init_all(tour, ret, tour->pair, 0, devlist);
	expect_result(tour, "ncclCommInitAll(ndev 0)", ret, ncclInvalidArgument);
	ret = ncclCommInitAll(tour->pair, 2, devlist);
	log_init_all(tour, ret, tour->pair, 2, devlist);
	expect_result(tour, "ncclCommInitAll", ret, ncclSuccess);
}

/* Every rank makes every split of the world in the same order: a split is collective. */
static void split_world(struct tour *tour)
{
	int last = tour->nranks - 1;
	int nobody = -1;

	tour->reversed = split(tour, tour->world, REVERSED_COLOR, last - tour->rank, &tour->config,
			       ncclSuccess);
	tour->colored =
		split(tour, tour->world, tour->rank == last ? NCCL_SPLIT_NOCOLOR : SOME_COLOR,
		      tour->rank, NULL, ncclSuccess);
	/*
	 * Refused before the split starts: no rank waits for the others, and the library does not
	 * count it among the parent's splits, so a rank may make it alone.
	 */
	if (tour->rank == 0 || !tour->options->lone_refused_split)
		split(tour, tour->world, INVALID_COLOR, tour->rank, NULL, ncclInvalidArgument);
	/* Nobody left out: every rank takes part and the child has them all. */
	tour->shrunk = shrink(tour, tour->world, &nobody, 0, NCCL_SHRINK_DEFAULT, ncclSuccess);
	tour->doomed = split(tour, tour->world, DOOMED_COLOR, tour->rank, NULL, ncclSuccess);
}

/* ---- collectives ---- */

static int *world_members(struct tour *tour, int first, int count, bool reversed)
{
	int *members = allocate(tour, (size_t)count * sizeof(*members));

	for (int i = 0; i < count; i++)
		members[i] = reversed ? first + count - 1 - i : first + i;
	return members;
}

/* One all-reduce per datatype, the ops in turn, each with its own count; one in place. */
static void all_reduce_every_datatype(struct tour *tour)
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
static void refused_collectives(struct tour *tour)
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

static void rooted_collectives(struct tour *tour)
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
static void collectives_elsewhere(struct tour *tour)
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
static void ring_exchange(struct tour *tour)
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
static void pair_all_reduce(struct tour *tour)
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

static void registration(struct tour *tour)
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

static void poll_from_another_thread(struct tour *tour)
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
static void revoke_and_recover(struct tour *tour)
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

static void teardown(struct tour *tour)
{
	ncclResult_t ret;

	ret = ncclCommDeregister(tour->world, tour->registration);
	ground_truth_deregister(&tour->log, ret, tour->world, tour->registration);
	expect_result(tour, "ncclCommDeregister", ret, ncclSuccess);

	comm_end(tour, "ncclCommAbort", tour->doomed, ncclSuccess);
	comm_end(tour, "ncclCommAbort", NULL, ncclSuccess);
	if (tour->recovered)
		comm_end(tour, "ncclCommDestroy", tour->recovered, ncclSuccess);
	if (tour->colored)
		comm_end(tour, "ncclCommDestroy", tour->colored, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->shrunk, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->reversed, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->pair[1], ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->pair[0], ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->scalable, ncclSuccess);
	comm_end(tour, "ncclCommFinalize", tour->configured, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->configured, ncclSuccess);
	comm_end(tour, "ncclCommFinalize", NULL, ncclInvalidArgument);
	comm_end(tour, "ncclCommDestroy", NULL, ncclInvalidArgument);
	comm_end(tour, "ncclCommFinalize", tour->world, ncclSuccess);
	comm_end(tour, "ncclCommDestroy", tour->world, ncclSuccess);
	doubleStreamDestroy(tour->stream);
	for (int i = 0; i < tour->allocation_count; i++)
		free(tour->allocations[i]);
	tour->allocation_count = 0;
}

static int run_rank(const struct options *options)
{
	struct tour tour = { .options = options };
	char path[PATH_MAX];

	tour.rank = env_int("RANK");
	tour.nranks = env_int("WORLD_SIZE");
	if (tour.rank < 0 || tour.nranks != options->ranks || tour.rank >= options->ranks)
		die(&tour, 2, "RANK and WORLD_SIZE must be set by the launcher");
	snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, tour.rank);
	if (ground_truth_open(&tour.log, path) < 0)
		die(&tour, 2, "cannot create the ground-truth log");
	if (doubleStreamCreate(&tour.stream) != ncclSuccess)
		die(&tour, 2, "doubleStreamCreate failed");

	make_unique_ids(&tour);
	create_communicators(&tour);
	split_world(&tour);
	all_reduce_every_datatype(&tour);
	refused_collectives(&tour);
	rooted_collectives(&tour);
	collectives_elsewhere(&tour);
	ring_exchange(&tour);
	pair_all_reduce(&tour);
	registration(&tour);
	async_error_query(&tour, tour.world, true, ncclSuccess, ncclSuccess);
	poll_from_another_thread(&tour);
	revoke_and_recover(&tour);
	if (options->linger_ms)
		sleep_ns(options->linger_ms * 1000000L);
	teardown(&tour);
	ground_truth_close(&tour.log);
	return 0;
}

/* ---- the launcher: one process per rank, with the environment torchrun gives ---- */

static void remove_stale_outputs(const struct options *options)
{
	char path[PATH_MAX];

	for (int rank = 0; rank < options->ranks; rank++) {
		snprintf(path, sizeof(path), UNIQUE_ID_FILE_FORMAT, options->log_dir, rank);
		unlink(path);
		snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, rank);
		unlink(path);
	}
}

static int launch(const struct options *options, int argc, char **argv)
{
	const struct rank_launcher launcher = {
		.program = PROGRAM,
		.ranks = options->ranks,
		.grace_seconds = FAILURE_GRACE_SECONDS,
	};
	int status;

	if (make_log_directory(PROGRAM, options->log_dir) < 0)
		return 2;
	remove_stale_outputs(options);
	setenv(DOUBLE_TIMEOUT_ENV, DEFAULT_DOUBLE_TIMEOUT_MS, 0);
	status = launch_ranks(&launcher, argc, argv);
	if (status != 0)
		return status;
	printf(PROGRAM ": %d ranks called every probed NCCL function\n", options->ranks);
	return 0;
}

int main(int argc, char **argv)
{
	struct options options;

	if (parse_options(argc, argv, &options) < 0)
		return 2;
	if (options.worker)
		return run_rank(&options);
	return launch(&options, argc, argv);
}
