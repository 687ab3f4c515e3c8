/* SPDX-License-Identifier: MIT */
/* Ground-truth logs of the NCCL calls a test program made: one JSON object per line, per call. */
#ifndef TCHECK_NCCL_GROUND_TRUTH_H
#define TCHECK_NCCL_GROUND_TRUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nccl.h"

/*
 * Each line: {"name":"ncclX","pid":P,"tid":T,"step":S,"ret":R,"args":{...}} where args are keyed
 * by the nccl.h parameter names and hold integers only: pointers as the unsigned value passed,
 * enums as their integer value, unique ids as their DJB2a hash. Out-values written by the call
 * come under extra keys (comm_out, newcomm_out, comm_hash, handle_out). Lines are flushed as they
 * are written, so a log read while the program hangs holds every call that returned.
 */
struct ground_truth_log {
	FILE *file;
	int pid;
	int step;
	bool in_args;
	bool first_field;
};

static inline int ground_truth_open(struct ground_truth_log *log, const char *path)
{
	log->file = fopen(path, "w");
	if (!log->file)
		return -1;
	setvbuf(log->file, NULL, _IOLBF, 0);
	log->pid = (int)getpid();
	log->step = -1;
	log->in_args = false;
	return 0;
}

static inline void ground_truth_close(struct ground_truth_log *log)
{
	if (log->file)
		fclose(log->file);
	log->file = NULL;
}

/* DJB2a over the 128 id bytes as signed chars: the commHash NCCL derives from an id. */
static inline uint64_t ground_truth_id_hash(const ncclUniqueId *id)
{
	uint64_t hash = 5381;

	for (size_t i = 0; i < sizeof(id->internal); i++)
		hash = ((hash << 5) + hash) ^ (uint64_t)(int64_t)(signed char)id->internal[i];
	return hash;
}

static inline void ground_truth_begin(struct ground_truth_log *log, const char *name, int ret)
{
	fprintf(log->file,
		"{\"name\":\"%s\",\"pid\":%d,\"tid\":%d,\"step\":%d,\"ret\":%d,\"args\":{", name,
		log->pid, (int)gettid(), log->step, ret);
	log->in_args = true;
	log->first_field = true;
}

static inline void ground_truth_key(struct ground_truth_log *log, const char *key)
{
	fprintf(log->file, "%s\"%s\":", log->first_field ? "" : ",", key);
	log->first_field = false;
}

static inline void ground_truth_unsigned(struct ground_truth_log *log, const char *key,
					 uint64_t value)
{
	ground_truth_key(log, key);
	fprintf(log->file, "%llu", (unsigned long long)value);
}

static inline void ground_truth_signed(struct ground_truth_log *log, const char *key, int64_t value)
{
	ground_truth_key(log, key);
	fprintf(log->file, "%lld", (long long)value);
}

static inline void ground_truth_pointer(struct ground_truth_log *log, const char *key,
					const void *pointer)
{
	ground_truth_unsigned(log, key, (uint64_t)(uintptr_t)pointer);
}

/* Closes "args": fields written afterwards belong to the call object itself. */
static inline void ground_truth_end_args(struct ground_truth_log *log)
{
	fputc('}', log->file);
	log->in_args = false;
	log->first_field = false;
}

static inline void ground_truth_end(struct ground_truth_log *log)
{
	if (log->in_args)
		ground_truth_end_args(log);
	fputs("}\n", log->file);
}

static inline void ground_truth_unique_id(struct ground_truth_log *log, int ret,
					  const ncclUniqueId *id)
{
	ground_truth_begin(log, "ncclGetUniqueId", ret);
	ground_truth_unsigned(log, "uniqueId", ground_truth_id_hash(id));
	ground_truth_end(log);
}

/* ncclCommInitRank, or ncclCommInitRankConfig when 'with_config' (config may be NULL). */
static inline void ground_truth_init_rank(struct ground_truth_log *log, int ret,
					  const ncclComm_t *comm, int nranks,
					  const ncclUniqueId *id, int rank, bool with_config,
					  const ncclConfig_t *config, uint64_t comm_hash)
{
	ground_truth_begin(log, with_config ? "ncclCommInitRankConfig" : "ncclCommInitRank", ret);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_signed(log, "nranks", nranks);
	ground_truth_unsigned(log, "commId", ground_truth_id_hash(id));
	ground_truth_signed(log, "rank", rank);
	if (with_config)
		ground_truth_pointer(log, "config", config);
	ground_truth_pointer(log, "comm_out", *comm);
	ground_truth_unsigned(log, "comm_hash", comm_hash);
	ground_truth_end(log);
}

static inline void ground_truth_split(struct ground_truth_log *log, int ret, ncclComm_t comm,
				      int color, int key, const ncclComm_t *newcomm,
				      const ncclConfig_t *config, uint64_t comm_hash)
{
	ground_truth_begin(log, "ncclCommSplit", ret);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_signed(log, "color", color);
	ground_truth_signed(log, "key", key);
	ground_truth_pointer(log, "newcomm", newcomm);
	ground_truth_pointer(log, "config", config);
	ground_truth_pointer(log, "newcomm_out", *newcomm);
	ground_truth_unsigned(log, "comm_hash", comm_hash);
	ground_truth_end(log);
}

/* ncclCommFinalize, ncclCommDestroy, ncclCommAbort: the communicator is the only argument. */
static inline void ground_truth_comm_only(struct ground_truth_log *log, const char *name, int ret,
					  ncclComm_t comm)
{
	ground_truth_begin(log, name, ret);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_end(log);
}

static inline void ground_truth_no_args(struct ground_truth_log *log, const char *name, int ret)
{
	ground_truth_begin(log, name, ret);
	ground_truth_end(log);
}

static inline void ground_truth_register(struct ground_truth_log *log, int ret, ncclComm_t comm,
					 const void *buff, size_t size, void *const *handle)
{
	ground_truth_begin(log, "ncclCommRegister", ret);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_pointer(log, "buff", buff);
	ground_truth_unsigned(log, "size", size);
	ground_truth_pointer(log, "handle", handle);
	ground_truth_pointer(log, "handle_out", *handle);
	ground_truth_end(log);
}

static inline void ground_truth_deregister(struct ground_truth_log *log, int ret, ncclComm_t comm,
					   const void *handle)
{
	ground_truth_begin(log, "ncclCommDeregister", ret);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_pointer(log, "handle", handle);
	ground_truth_end(log);
}

/*
 * A tracer reports ncclCommGetAsyncError only when the error it returns is not ncclSuccess:
 * "tracer_filtered" says whether this call is one it is expected to leave out.
 */
static inline void ground_truth_async_error(struct ground_truth_log *log, int ret, ncclComm_t comm,
					    const ncclResult_t *async_error)
{
	ground_truth_begin(log, "ncclCommGetAsyncError", ret);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_pointer(log, "asyncError", async_error);
	ground_truth_end_args(log);
	ground_truth_signed(log, "async_error", *async_error);
	ground_truth_signed(log, "tracer_filtered",
			    ret == ncclSuccess && *async_error == ncclSuccess);
	ground_truth_end(log);
}

/*
 * The collectives, named by their public name. The count goes under the key nccl.h gives it
 * ("sendcount" for ncclAllGather, "recvcount" for ncclReduceScatter, "count" otherwise);
 * ncclBcast has the single buffer "buff" ('recvbuff' is ignored); 'op' and 'root' are left out
 * when negative, for calls that have none.
 */
static inline void ground_truth_collective(struct ground_truth_log *log, int ret, const char *name,
					   const void *sendbuff, const void *recvbuff, size_t count,
					   int datatype, int op, int root, ncclComm_t comm,
					   cudaStream_t stream)
{
	const char *count_key = "count";

	if (strcmp(name, "ncclAllGather") == 0)
		count_key = "sendcount";
	else if (strcmp(name, "ncclReduceScatter") == 0)
		count_key = "recvcount";
	ground_truth_begin(log, name, ret);
	if (strcmp(name, "ncclBcast") == 0) {
		ground_truth_pointer(log, "buff", sendbuff);
	} else {
		ground_truth_pointer(log, "sendbuff", sendbuff);
		ground_truth_pointer(log, "recvbuff", recvbuff);
	}
	ground_truth_unsigned(log, count_key, count);
	ground_truth_signed(log, "datatype", datatype);
	if (op >= 0)
		ground_truth_signed(log, "op", op);
	if (root >= 0)
		ground_truth_signed(log, "root", root);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_pointer(log, "stream", stream);
	ground_truth_end(log);
}

/* ncclSend ("sendbuff") and ncclRecv ("recvbuff"). */
static inline void ground_truth_p2p(struct ground_truth_log *log, int ret, bool send,
				    const void *buffer, size_t count, int datatype, int peer,
				    ncclComm_t comm, cudaStream_t stream)
{
	ground_truth_begin(log, send ? "ncclSend" : "ncclRecv", ret);
	ground_truth_pointer(log, send ? "sendbuff" : "recvbuff", buffer);
	ground_truth_unsigned(log, "count", count);
	ground_truth_signed(log, "datatype", datatype);
	ground_truth_signed(log, "peer", peer);
	ground_truth_pointer(log, "comm", comm);
	ground_truth_pointer(log, "stream", stream);
	ground_truth_end(log);
}

#endif /* TCHECK_NCCL_GROUND_TRUTH_H */
