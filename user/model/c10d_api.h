/* SPDX-License-Identifier: MIT */
/*
 * PyTorch's own collectives (c10d) as the tracer knows them: each
 * operation it probes in the backends it knows (ProcessGroupGloo in
 * libtorch_cpu, ProcessGroupNCCL in libtorch_cuda, whose methods keep the
 * same signatures), where its arguments sit at entry,
 * and the call-table entry its trace calls carry ("c10d::allreduce", a
 * collective with tensors, count and dtype), so the progress model, the
 * detectors, exports and rules take them as they take NCCL calls.
 *
 * Every method returns c10::intrusive_ptr<Work> by value: the caller passes
 * the return slot in rdi, so 'this' is in rsi and the arguments follow.
 */
#ifndef TCHECK_C10D_API_H
#define TCHECK_C10D_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/nccl_api.h"

struct c10d_operation {
	const char *method;	    /* "allreduce": the member function of the backend */
	const char *mangled_method; /* its mangled name after the class (torch 1.13 and 2.x) */
	int tensor_register;	    /* 1 rdi ... 5 r8; 0 none */
	bool tensor_is_reference;   /* one at::Tensor & rather than a std::vector<at::Tensor> & */
	int peer_register;	    /* point-to-point: the other rank's int; 0 none */
	bool gloo_async_work;	    /* gloo runs it as a ProcessGroupGloo::AsyncWork */
	struct nccl_function api;   /* name "c10d::allreduce", kind, parameters */
};

/* The backends' numbers, in c10d_api.c's table. */
enum c10d_backend_index {
	C10D_BACKEND_GLOO,
	C10D_BACKEND_NCCL,
};

/* A process-group backend whose operations are probed. */
struct c10d_backend {
	const char *name;	   /* "gloo", "nccl" */
	const char *mangled_class; /* "16ProcessGroupGloo" */
	const char *library_name;  /* the library that defines it: "libtorch_cpu.so" */
};

size_t c10d_backend_count(void);
const struct c10d_backend *c10d_backend_at(size_t index);
/* The mangled name of 'operation' in 'backend'; -ENAMETOOLONG when 'size' is short. */
int c10d_operation_symbol(const struct c10d_operation *operation,
			  const struct c10d_backend *backend, char *symbol, size_t size);

/* The register of 'this' in every operation. */
#define C10D_GROUP_REGISTER 2

size_t c10d_operation_count(void);
const struct c10d_operation *c10d_operation_at(size_t index);
/* The call-table entry of a c10d operation named "c10d::allreduce"; NULL otherwise. */
const struct nccl_function *c10d_function_by_name(const char *name);

/*
 * The parameters of a c10d call, in the order of its table entry, and
 * last the calling thread's time waiting for a CPU (after the peer of a
 * point-to-point call; trace_call_cpu_wait finds it).
 */
enum c10d_param {
	C10D_PARAM_GROUP,
	C10D_PARAM_TENSORS,
	C10D_PARAM_COUNT,
	C10D_PARAM_DTYPE,
	C10D_PARAM_PEER,
};

/* c10::ScalarType names ("Float", "BFloat16"), NULL outside the known set. */
const char *torch_scalar_type_name(int64_t scalar_type);
/* Bytes of one element of a c10::ScalarType; 0 outside the known set. */
size_t torch_scalar_type_size(int64_t scalar_type);

#endif /* TCHECK_C10D_API_H */
