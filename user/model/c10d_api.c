// SPDX-License-Identifier: MIT
/* The table of probed c10d operations and torch's dtype names. */
#include "model/c10d_api.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define P(param_name, param_type)                                   \
	{                                                           \
		.name = param_name, .type = NCCL_PARAM_##param_type \
	}

#define COLLECTIVE_PARAMS                                                                       \
	5,                                                                                      \
	{                                                                                       \
		P("group", COMM), P("tensors", INT), P("count", SIZE), P("dtype", TORCH_DTYPE), \
			P("cpu_wait_ns", THREAD_CPU_WAIT)                                       \
	}
#define POINT_TO_POINT_PARAMS                                                                   \
	6,                                                                                      \
	{                                                                                       \
		P("group", COMM), P("tensors", INT), P("count", SIZE), P("dtype", TORCH_DTYPE), \
			P("peer", INT), P("cpu_wait_ns", THREAD_CPU_WAIT)                       \
	}

/* A member function's mangled name after its class: length and name, 'E', the arguments. */
#define METHOD(length_and_name, arguments) length_and_name "E" arguments

/* Each backend's methods keep the same signatures: one table serves both. */
static const struct c10d_backend backends[] = {
	{ "gloo", "16ProcessGroupGloo", "libtorch_cpu.so" },
	{ "nccl", "16ProcessGroupNCCL", "libtorch_cuda.so" },
};

/*
 * Registers: rdi the return slot, rsi 'this', rdx (3) the first argument,
 * rcx (4) the second. gloo runs every operation but send and recv as an
 * AsyncWork on a worker thread (send and recv complete in wait()).
 */
static const struct c10d_operation operations[] = {
	{ "allreduce",
	  METHOD("9allreduce", "RSt6vectorIN2at6TensorESaIS3_EERKNS_16AllreduceOptionsE"),
	  3,
	  false,
	  0,
	  true,
	  { "c10d::allreduce", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "allreduce_coalesced",
	  METHOD("19allreduce_coalesced",
		 "RSt6vectorIN2at6TensorESaIS3_EERKNS_25AllreduceCoalescedOptionsE"),
	  3,
	  false,
	  0,
	  true,
	  { "c10d::allreduce_coalesced", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "broadcast",
	  METHOD("9broadcast", "RSt6vectorIN2at6TensorESaIS3_EERKNS_16BroadcastOptionsE"),
	  3,
	  false,
	  0,
	  true,
	  { "c10d::broadcast", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "reduce",
	  METHOD("6reduce", "RSt6vectorIN2at6TensorESaIS3_EERKNS_13ReduceOptionsE"),
	  3,
	  false,
	  0,
	  true,
	  { "c10d::reduce", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	/* allgather(outputs, inputs, options): the inputs are what this rank sends. */
	{ "allgather",
	  METHOD("9allgather",
		 "RSt6vectorIS1_IN2at6TensorESaIS3_EESaIS5_EERS5_RKNS_16AllgatherOptionsE"),
	  4,
	  false,
	  0,
	  true,
	  { "c10d::allgather", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "allgather_coalesced",
	  METHOD("19allgather_coalesced",
		 "RSt6vectorIS1_IN2at6TensorESaIS3_EESaIS5_EERS5_RKNS_16AllgatherOptionsE"),
	  4,
	  false,
	  0,
	  true,
	  { "c10d::allgather_coalesced", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "_allgather_base",
	  METHOD("15_allgather_base", "RN2at6TensorES3_RKNS_16AllgatherOptionsE"),
	  4,
	  true,
	  0,
	  true,
	  { "c10d::_allgather_base", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "gather",
	  METHOD("6gather", "RSt6vectorIS1_IN2at6TensorESaIS3_EESaIS5_EERS5_RKNS_13GatherOptionsE"),
	  4,
	  false,
	  0,
	  true,
	  { "c10d::gather", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	/* scatter(outputs, inputs, options): the outputs are what this rank gets. */
	{ "scatter",
	  METHOD("7scatter",
		 "RSt6vectorIN2at6TensorESaIS3_EERS1_IS5_SaIS5_EERKNS_14ScatterOptionsE"),
	  3,
	  false,
	  0,
	  true,
	  { "c10d::scatter", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "reduce_scatter",
	  METHOD("14reduce_scatter",
		 "RSt6vectorIN2at6TensorESaIS3_EERS1_IS5_SaIS5_EERKNS_20ReduceScatterOptionsE"),
	  3,
	  false,
	  0,
	  true,
	  { "c10d::reduce_scatter", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "_reduce_scatter_base",
	  METHOD("20_reduce_scatter_base", "RN2at6TensorES3_RKNS_20ReduceScatterOptionsE"),
	  4,
	  true,
	  0,
	  true,
	  { "c10d::_reduce_scatter_base", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "alltoall_base",
	  METHOD("13alltoall_base", "RN2at6TensorES3_RSt6vectorIlSaIlEES7_RKNS_15AllToAllOptionsE"),
	  4,
	  true,
	  0,
	  true,
	  { "c10d::alltoall_base", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	{ "barrier",
	  METHOD("7barrier", "RKNS_14BarrierOptionsE"),
	  0,
	  false,
	  0,
	  true,
	  { "c10d::barrier", NCCL_KIND_COLLECTIVE, COLLECTIVE_PARAMS } },
	/* send(tensors, dstRank, tag) and recv(tensors, srcRank, tag): the rank in rcx. */
	{ "send",
	  METHOD("4send", "RSt6vectorIN2at6TensorESaIS3_EEii"),
	  3,
	  false,
	  4,
	  false,
	  { "c10d::send", NCCL_KIND_POINT_TO_POINT, POINT_TO_POINT_PARAMS } },
	{ "recv",
	  METHOD("4recv", "RSt6vectorIN2at6TensorESaIS3_EEii"),
	  3,
	  false,
	  4,
	  false,
	  { "c10d::recv", NCCL_KIND_POINT_TO_POINT, POINT_TO_POINT_PARAMS } },
};

#define OPERATION_COUNT (sizeof(operations) / sizeof(operations[0]))

size_t c10d_backend_count(void)
{
	return sizeof(backends) / sizeof(backends[0]);
}

const struct c10d_backend *c10d_backend_at(size_t index)
{
	return index < c10d_backend_count() ? &backends[index] : NULL;
}

int c10d_operation_symbol(const struct c10d_operation *operation,
			  const struct c10d_backend *backend, char *symbol, size_t size)
{
	int length = snprintf(symbol, size, "_ZN4c10d%s%s", backend->mangled_class,
			      operation->mangled_method);

	return length < 0 || (size_t)length >= size ? -ENAMETOOLONG : 0;
}

size_t c10d_operation_count(void)
{
	return OPERATION_COUNT;
}

const struct c10d_operation *c10d_operation_at(size_t index)
{
	return index < OPERATION_COUNT ? &operations[index] : NULL;
}

const struct nccl_function *c10d_function_by_name(const char *name)
{
	if (!name || strncmp(name, "c10d::", 6) != 0)
		return NULL;
	for (size_t i = 0; i < OPERATION_COUNT; i++)
		if (strcmp(operations[i].api.name, name) == 0)
			return &operations[i].api;
	return NULL;
}

/* c10/core/ScalarType.h's order, the same in torch 1.13 and 2.x for these. */
static const char *const scalar_type_names[] = {
	"Byte",	 "Char",   "Short",	  "Int",	  "Long",	   "Half",
	"Float", "Double", "ComplexHalf", "ComplexFloat", "ComplexDouble", "Bool",
	"QInt8", "QUInt8", "QInt32",	  "BFloat16",
};

/* Bytes of one element of each, in the same order. */
static const size_t scalar_type_sizes[] = {
	1, 1, 2, 4, 8, 2, 4, 8, 4, 8, 16, 1, 1, 1, 4, 2,
};

size_t torch_scalar_type_size(int64_t scalar_type)
{
	_Static_assert(sizeof(scalar_type_sizes) / sizeof(scalar_type_sizes[0]) ==
			       sizeof(scalar_type_names) / sizeof(scalar_type_names[0]),
		       "one size per scalar type");
	if (scalar_type < 0 ||
	    (uint64_t)scalar_type >= sizeof(scalar_type_sizes) / sizeof(scalar_type_sizes[0]))
		return 0;
	return scalar_type_sizes[scalar_type];
}

const char *torch_scalar_type_name(int64_t scalar_type)
{
	if (scalar_type < 0 ||
	    (uint64_t)scalar_type >= sizeof(scalar_type_names) / sizeof(scalar_type_names[0]))
		return NULL;
	return scalar_type_names[scalar_type];
}
