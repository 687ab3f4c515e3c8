/* SPDX-License-Identifier: MIT */
/*
 * The NCCL API as the tracer knows it: every function it can probe, its
 * parameters as nccl.h names them, and how to read each one from the
 * x86-64 calling convention. One table drives attaching, decoding and
 * export, so adding a function is one entry here.
 */
#ifndef TCHECK_NCCL_API_H
#define TCHECK_NCCL_API_H

#include <stddef.h>
#include <stdint.h>

#define NCCL_MAX_PARAMS 10

enum nccl_param_type {
	NCCL_PARAM_POINTER,	    /* a buffer or opaque pointer */
	NCCL_PARAM_SIZE,	    /* size_t */
	NCCL_PARAM_INT,		    /* int */
	NCCL_PARAM_DATATYPE,	    /* ncclDataType_t */
	NCCL_PARAM_REDOP,	    /* ncclRedOp_t */
	NCCL_PARAM_COMM,	    /* ncclComm_t */
	NCCL_PARAM_STREAM,	    /* cudaStream_t */
	NCCL_PARAM_COMM_OUT,	    /* ncclComm_t*: a communicator is written there */
	NCCL_PARAM_UNIQUE_ID,	    /* ncclUniqueId by value: 128 bytes on the stack */
	NCCL_PARAM_UNIQUE_ID_OUT,   /* ncclUniqueId*: written by the call */
	NCCL_PARAM_UNIQUE_ID_ARRAY, /* ncclUniqueId*: read by the call */
	NCCL_PARAM_RESULT_OUT,	    /* ncclResult_t*: written by the call */
	NCCL_PARAM_INT_OUT,	    /* int*: written by the call */
	NCCL_PARAM_TORCH_DTYPE,	    /* c10::ScalarType of a c10d call's tensors (c10d_api.h) */
	/*
	 * Not an argument: measured by the tracer at the entry, the calling
	 * thread's time so far waiting for a CPU (ns; 0 unknown). c10d calls.
	 */
	NCCL_PARAM_THREAD_CPU_WAIT,
};

enum nccl_function_kind {
	NCCL_KIND_COLLECTIVE,
	NCCL_KIND_POINT_TO_POINT,
	NCCL_KIND_GROUP_START,
	NCCL_KIND_GROUP_END,
	NCCL_KIND_UNIQUE_ID,
	NCCL_KIND_COMM_INIT,	 /* creates a communicator from unique id(s) */
	NCCL_KIND_COMM_INIT_ALL, /* creates one communicator per device */
	NCCL_KIND_COMM_SPLIT,	 /* creates a communicator from a parent */
	NCCL_KIND_COMM_END,	 /* finalize, destroy, abort, revoke */
	NCCL_KIND_REGISTER,
	NCCL_KIND_ERROR_QUERY,
	NCCL_KIND_QUERY,
};

struct nccl_param {
	const char *name;
	enum nccl_param_type type;
};

struct nccl_function {
	const char *name; /* the public name, "ncclAllReduce" */
	enum nccl_function_kind kind;
	int param_count;
	struct nccl_param params[NCCL_MAX_PARAMS];
};

/* Where one parameter's raw value lives in a captured call. */
enum nccl_param_source {
	NCCL_SOURCE_ARG_SLOT,	/* args[slot]: a register or a stack word */
	NCCL_SOURCE_STACK_BLOB, /* the by-value unique id copied at entry */
};

size_t nccl_function_count(void);
const struct nccl_function *nccl_function_at(size_t index);
/* Looks a function up by its public or its "pnccl" profiling name, or a c10d operation's. */
const struct nccl_function *nccl_function_by_name(const char *name);
/* Index of a function in the table, or -1. */
int nccl_function_index(const struct nccl_function *function);

/*
 * Fills *slot with the index into the captured args[] (registers 0-5,
 * then stack words) that holds parameter 'param'; returns the source.
 */
enum nccl_param_source nccl_param_location(const struct nccl_function *function, int param,
					   int *slot);

/*
 * nccl_param_location of every parameter in one pass (what a decoder of
 * each call needs): slots[i] as *slot, -1 for the struct passed in memory
 * (NCCL_SOURCE_STACK_BLOB). Returns whether any parameter is passed on the
 * stack (nccl_param_on_stack of one of them).
 */
int nccl_param_slots(const struct nccl_function *function, int slots[NCCL_MAX_PARAMS]);

/* Whether parameter 'param' is passed on the stack (an argument word past the sixth). */
int nccl_param_on_stack(const struct nccl_function *function, int param);

/* Index of the first parameter of 'type', or -1. */
int nccl_param_find(const struct nccl_function *function, enum nccl_param_type type);

/* Whether the probe reads the arguments passed on the stack (not for the stream alone). */
int nccl_function_reads_stack(const struct nccl_function *function);

/* The attach cookie (probe_abi.h) telling the BPF side what to capture. */
uint64_t nccl_function_cookie(size_t index);

/* True for functions that move data over a communicator (sequence-numbered). */
int nccl_function_is_communication(const struct nccl_function *function);

/* ncclResult_t values the tracer tells apart: success, and a non-blocking call still at work. */
#define NCCL_RESULT_SUCCESS 0
#define NCCL_RESULT_IN_PROGRESS 7

/* Names of enum values, or NULL when the value is outside the known set. */
const char *nccl_datatype_name(int64_t datatype);
const char *nccl_redop_name(int64_t op);
const char *nccl_result_name(int64_t result);
/* Size in bytes of one element of a datatype, or 0 when unknown. */
size_t nccl_datatype_size(int64_t datatype);

/*
 * Identity of a communicator made from unique id bytes: the DJB2a hash
 * NCCL itself stores as comm->commHash, so ids recovered from a running
 * process's memory agree with those computed at creation.
 */
uint64_t nccl_unique_id_hash(const uint8_t *bytes, size_t length);
/* Identity of a child communicator: (parent identity, split index, colour). */
uint64_t nccl_split_comm_id(uint64_t parent_id, uint32_t split_index, int32_t color);

#endif /* TCHECK_NCCL_API_H */
