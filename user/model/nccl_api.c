// SPDX-License-Identifier: MIT
/* The table of probed NCCL functions and the decoders of their enum values. */
#include "model/nccl_api.h"

#include "model/c10d_api.h"

#include <string.h>

#include "tcheck/probe_abi.h"

#define P(param_name, param_type)                                   \
	{                                                           \
		.name = param_name, .type = NCCL_PARAM_##param_type \
	}

/* Parameter names and order follow nccl.h (v2.18 to v2.28). */
static const struct nccl_function functions[] = {
	{ "ncclAllReduce",
	  NCCL_KIND_COLLECTIVE,
	  7,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("count", SIZE),
	    P("datatype", DATATYPE), P("op", REDOP), P("comm", COMM), P("stream", STREAM) } },
	{ "ncclBroadcast",
	  NCCL_KIND_COLLECTIVE,
	  7,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("count", SIZE),
	    P("datatype", DATATYPE), P("root", INT), P("comm", COMM), P("stream", STREAM) } },
	{ "ncclBcast",
	  NCCL_KIND_COLLECTIVE,
	  6,
	  { P("buff", POINTER), P("count", SIZE), P("datatype", DATATYPE), P("root", INT),
	    P("comm", COMM), P("stream", STREAM) } },
	{ "ncclReduce",
	  NCCL_KIND_COLLECTIVE,
	  8,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("count", SIZE),
	    P("datatype", DATATYPE), P("op", REDOP), P("root", INT), P("comm", COMM),
	    P("stream", STREAM) } },
	{ "ncclAllGather",
	  NCCL_KIND_COLLECTIVE,
	  6,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("sendcount", SIZE),
	    P("datatype", DATATYPE), P("comm", COMM), P("stream", STREAM) } },
	{ "ncclReduceScatter",
	  NCCL_KIND_COLLECTIVE,
	  7,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("recvcount", SIZE),
	    P("datatype", DATATYPE), P("op", REDOP), P("comm", COMM), P("stream", STREAM) } },
	{ "ncclAlltoAll",
	  NCCL_KIND_COLLECTIVE,
	  6,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("count", SIZE),
	    P("datatype", DATATYPE), P("comm", COMM), P("stream", STREAM) } },
	{ "ncclGather",
	  NCCL_KIND_COLLECTIVE,
	  7,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("count", SIZE),
	    P("datatype", DATATYPE), P("root", INT), P("comm", COMM), P("stream", STREAM) } },
	{ "ncclScatter",
	  NCCL_KIND_COLLECTIVE,
	  7,
	  { P("sendbuff", POINTER), P("recvbuff", POINTER), P("count", SIZE),
	    P("datatype", DATATYPE), P("root", INT), P("comm", COMM), P("stream", STREAM) } },
	{ "ncclSend",
	  NCCL_KIND_POINT_TO_POINT,
	  6,
	  { P("sendbuff", POINTER), P("count", SIZE), P("datatype", DATATYPE), P("peer", INT),
	    P("comm", COMM), P("stream", STREAM) } },
	{ "ncclRecv",
	  NCCL_KIND_POINT_TO_POINT,
	  6,
	  { P("recvbuff", POINTER), P("count", SIZE), P("datatype", DATATYPE), P("peer", INT),
	    P("comm", COMM), P("stream", STREAM) } },
	{ "ncclGroupStart", NCCL_KIND_GROUP_START, 0, { { 0 } } },
	{ "ncclGroupEnd", NCCL_KIND_GROUP_END, 0, { { 0 } } },
	{ "ncclGetUniqueId", NCCL_KIND_UNIQUE_ID, 1, { P("uniqueId", UNIQUE_ID_OUT) } },
	{ "ncclCommInitRank",
	  NCCL_KIND_COMM_INIT,
	  4,
	  { P("comm", COMM_OUT), P("nranks", INT), P("commId", UNIQUE_ID), P("rank", INT) } },
	{ "ncclCommInitRankConfig",
	  NCCL_KIND_COMM_INIT,
	  5,
	  { P("comm", COMM_OUT), P("nranks", INT), P("commId", UNIQUE_ID), P("rank", INT),
	    P("config", POINTER) } },
	{ "ncclCommInitRankScalable",
	  NCCL_KIND_COMM_INIT,
	  6,
	  { P("newcomm", COMM_OUT), P("nranks", INT), P("myrank", INT), P("nId", INT),
	    P("commIds", UNIQUE_ID_ARRAY), P("config", POINTER) } },
	{ "ncclCommInitAll",
	  NCCL_KIND_COMM_INIT_ALL,
	  3,
	  { P("comm", POINTER), P("ndev", INT), P("devlist", POINTER) } },
	{ "ncclCommSplit",
	  NCCL_KIND_COMM_SPLIT,
	  5,
	  { P("comm", COMM), P("color", INT), P("key", INT), P("newcomm", COMM_OUT),
	    P("config", POINTER) } },
	{ "ncclCommShrink",
	  NCCL_KIND_COMM_SPLIT,
	  6,
	  { P("comm", COMM), P("excludeRanksList", POINTER), P("excludeRanksCount", INT),
	    P("newcomm", COMM_OUT), P("config", POINTER), P("shrinkFlags", INT) } },
	{ "ncclCommFinalize", NCCL_KIND_COMM_END, 1, { P("comm", COMM) } },
	{ "ncclCommDestroy", NCCL_KIND_COMM_END, 1, { P("comm", COMM) } },
	{ "ncclCommAbort", NCCL_KIND_COMM_END, 1, { P("comm", COMM) } },
	{ "ncclCommRevoke", NCCL_KIND_COMM_END, 2, { P("comm", COMM), P("revokeFlags", INT) } },
	{ "ncclCommRegister",
	  NCCL_KIND_REGISTER,
	  4,
	  { P("comm", COMM), P("buff", POINTER), P("size", SIZE), P("handle", POINTER) } },
	{ "ncclCommDeregister", NCCL_KIND_REGISTER, 2, { P("comm", COMM), P("handle", POINTER) } },
	{ "ncclCommGetAsyncError",
	  NCCL_KIND_ERROR_QUERY,
	  2,
	  { P("comm", COMM), P("asyncError", RESULT_OUT) } },
};

#define FUNCTION_COUNT (sizeof(functions) / sizeof(functions[0]))

size_t nccl_function_count(void)
{
	return FUNCTION_COUNT;
}

const struct nccl_function *nccl_function_at(size_t index)
{
	return index < FUNCTION_COUNT ? &functions[index] : NULL;
}

const struct nccl_function *nccl_function_by_name(const char *name)
{
	if (!name)
		return NULL;
	/* "pncclX" is the strong profiling symbol behind the weak "ncclX". */
	if (name[0] == 'p' && strncmp(name + 1, "nccl", 4) == 0)
		name++;
	for (size_t i = 0; i < FUNCTION_COUNT; i++)
		if (strcmp(functions[i].name, name) == 0)
			return &functions[i];
	return c10d_function_by_name(name);
}

int nccl_function_index(const struct nccl_function *function)
{
	if (function < functions || function >= functions + FUNCTION_COUNT)
		return -1;
	return (int)(function - functions);
}

enum nccl_param_source nccl_param_location(const struct nccl_function *function, int param,
					   int *slot)
{
	int slots[NCCL_MAX_PARAMS] = { 0 };
	int last = param < function->param_count ? param : function->param_count - 1;

	nccl_param_slots(function, slots);
	if (param >= 0 && param == last && function->params[param].type == NCCL_PARAM_UNIQUE_ID) {
		*slot = -1;
		return NCCL_SOURCE_STACK_BLOB;
	}
	/* Past the last parameter: the last one's slot. */
	for (int i = last; i >= 0; i--)
		if (function->params[i].type != NCCL_PARAM_UNIQUE_ID) {
			*slot = slots[i];
			break;
		}
	return NCCL_SOURCE_ARG_SLOT;
}

int nccl_param_slots(const struct nccl_function *function, int slots[NCCL_MAX_PARAMS])
{
	int next_register = 0, next_stack_word = 0, any_on_stack = 0;

	for (int i = 0; i < function->param_count && i < NCCL_MAX_PARAMS; i++) {
		/* A 128-byte struct by value is passed in memory, using no register. */
		if (function->params[i].type == NCCL_PARAM_UNIQUE_ID) {
			slots[i] = -1;
			continue;
		}
		if (next_register < TCHECK_REGISTER_ARGS) {
			slots[i] = next_register++;
		} else {
			slots[i] = TCHECK_REGISTER_ARGS + next_stack_word++;
			any_on_stack = 1;
		}
	}
	return any_on_stack;
}

int nccl_param_find(const struct nccl_function *function, enum nccl_param_type type)
{
	for (int i = 0; i < function->param_count; i++)
		if (function->params[i].type == type)
			return i;
	return -1;
}

/* 1 + the argument slot of a parameter when it is below 'slots' (registers, or all), or 0. */
static uint64_t slot_field(const struct nccl_function *function, int param, int slots)
{
	int slot = -1;

	if (param < 0 || nccl_param_location(function, param, &slot) != NCCL_SOURCE_ARG_SLOT ||
	    slot < 0 || slot >= slots)
		return 0;
	return (uint64_t)slot + 1;
}

static uint64_t register_field(const struct nccl_function *function, int param)
{
	return slot_field(function, param, TCHECK_REGISTER_ARGS);
}

/*
 * Most calls fit in registers, and a collective's seventh argument is most
 * often its stream, which no check uses: a read of the caller's stack costs
 * the probe as much as the rest of its entry, so it reads the stack only
 * where an argument there is more than the stream (ncclReduce's comm).
 */
int nccl_function_reads_stack(const struct nccl_function *function)
{
	for (int i = 0; i < function->param_count; i++)
		if (nccl_param_on_stack(function, i) &&
		    function->params[i].type != NCCL_PARAM_STREAM)
			return 1;
	return 0;
}

int nccl_param_on_stack(const struct nccl_function *function, int param)
{
	int slot = -1;

	return nccl_param_location(function, param, &slot) == NCCL_SOURCE_ARG_SLOT &&
	       slot >= TCHECK_REGISTER_ARGS;
}

uint64_t nccl_function_cookie(size_t index)
{
	const struct nccl_function *function = nccl_function_at(index);
	uint64_t cookie = index & TCHECK_COOKIE_FUNCTION_MASK;
	int param;

	if (!function)
		return 0;
	param = nccl_param_find(function, NCCL_PARAM_COMM_OUT);
	if (param >= 0)
		cookie |= register_field(function, param) << TCHECK_COOKIE_OUT_ARG_SHIFT;
	param = nccl_param_find(function, NCCL_PARAM_RESULT_OUT);
	if (param >= 0)
		cookie |= register_field(function, param) << TCHECK_COOKIE_OUT_ARG_SHIFT |
			  TCHECK_COOKIE_OUT_IS_32BIT | TCHECK_COOKIE_ONLY_FAILURES;
	if (nccl_param_find(function, NCCL_PARAM_UNIQUE_ID) >= 0)
		cookie |= TCHECK_COOKIE_BLOB_FROM_STACK;
	if (nccl_function_reads_stack(function))
		cookie |= TCHECK_COOKIE_STACK_ARGS;
	param = nccl_param_find(function, NCCL_PARAM_UNIQUE_ID_OUT);
	if (param < 0)
		param = nccl_param_find(function, NCCL_PARAM_UNIQUE_ID_ARRAY);
	/* ncclCommInitAll writes an array of communicators: keep its first 16. */
	if (param < 0 && function->kind == NCCL_KIND_COMM_INIT_ALL)
		param = 0;
	if (param >= 0)
		cookie |= register_field(function, param) << TCHECK_COOKIE_BLOB_ARG_SHIFT;
	if (nccl_function_is_communication(function))
		cookie |= slot_field(function, nccl_param_find(function, NCCL_PARAM_COMM),
				     TCHECK_CALL_ARGS)
			  << TCHECK_COOKIE_COMM_ARG_SHIFT;
	return cookie;
}

int nccl_function_is_communication(const struct nccl_function *function)
{
	return function->kind == NCCL_KIND_COLLECTIVE || function->kind == NCCL_KIND_POINT_TO_POINT;
}

static const char *const datatype_names[] = {
	"ncclInt8",    "ncclUint8",    "ncclInt32",	 "ncclUint32",
	"ncclInt64",   "ncclUint64",   "ncclFloat16",	 "ncclFloat32",
	"ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2",
};
static const size_t datatype_sizes[] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };
static const char *const redop_names[] = { "ncclSum", "ncclProd", "ncclMax", "ncclMin", "ncclAvg" };
static const char *const result_names[] = {
	"ncclSuccess",	       "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage",	 "ncclRemoteError", "ncclInProgress",
};

#define NAME_AT(table, value) \
	((value) >= 0 && (uint64_t)(value) < sizeof(table) / sizeof(table[0]) ? table[value] : NULL)

const char *nccl_datatype_name(int64_t datatype)
{
	return NAME_AT(datatype_names, datatype);
}

size_t nccl_datatype_size(int64_t datatype)
{
	return datatype >= 0 && (uint64_t)datatype < sizeof(datatype_sizes) / sizeof(size_t)
		       ? datatype_sizes[datatype]
		       : 0;
}

const char *nccl_redop_name(int64_t op)
{
	/* Values from 5 on are per-communicator ops (ncclRedOpCreatePreMulSum). */
	if (op >= 5 && op < 0x7fffffff)
		return "ncclPreMulSum";
	return NAME_AT(redop_names, op);
}

const char *nccl_result_name(int64_t result)
{
	return NAME_AT(result_names, result);
}

uint64_t nccl_unique_id_hash(const uint8_t *bytes, size_t length)
{
	uint64_t hash = 5381;

	/* DJB2a over signed chars, as NCCL's getHash() computes commHash. */
	for (size_t i = 0; i < length; i++)
		hash = ((hash << 5) + hash) ^ (uint64_t)(int64_t)(signed char)bytes[i];
	return hash;
}

static uint64_t mix64(uint64_t value)
{
	/* splitmix64 finaliser: every input bit reaches every output bit. */
	value ^= value >> 30;
	value *= 0xbf58476d1ce4e5b9ULL;
	value ^= value >> 27;
	value *= 0x94d049bb133111ebULL;
	value ^= value >> 31;
	return value;
}

uint64_t nccl_split_comm_id(uint64_t parent_id, uint32_t split_index, int32_t color)
{
	uint64_t state = mix64(parent_id ^ 0x5350u);

	state = mix64(state ^ split_index);
	state = mix64(state ^ (uint32_t)color);
	return state;
}
