/* SPDX-License-Identifier: MIT */
/* NCCL and Python call records built by hand for the inference and checking tests. */
#ifndef TCHECK_TESTS_NCCL_RECORDS_H
#define TCHECK_TESTS_NCCL_RECORDS_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

#define FLOAT32 7 /* ncclFloat32 */

/*
 * A call of 'function' (a collective of the nccl.h table) on 'count' float32
 * values (sum) by 'rank' of 'nranks' on communicator 'comm', its 'seq'-th
 * call there, entered at 'entry_ns', with no step from Python.
 */
struct trace_record nccl_call_record(const char *function, uint32_t pid, int rank, int nranks,
				     uint64_t comm, int64_t seq, uint64_t count, uint64_t entry_ns);

/* nccl_call_record of an ncclAllReduce entered at 1000 + seq * 100 ns. */
struct trace_record all_reduce_record(uint32_t pid, int rank, int nranks, uint64_t comm,
				      int64_t seq, uint64_t count);

/*
 * A Python call, torch scope or operator ('flags': TRACE_PYTHON_TORCH_SCOPE,
 * TRACE_PYTHON_TORCH_OP) of process 'pid' on its main thread, in step 'step'
 * and training mode, with no rank and no argument.
 */
struct trace_record python_call_record(uint32_t pid, int step, uint64_t entry_ns,
				       uint64_t duration_ns, const char *name, uint32_t flags);

/* The records of one step or a few, in the order a trace gives them. */
struct python_records {
	struct trace_record at[16];
	size_t count;
};

/* python_call_record appended to 'records'; the record, to add arguments to. */
struct trace_record *python_records_add(struct python_records *records, uint32_t pid, int step,
					uint64_t entry_ns, uint64_t duration_ns, const char *name,
					uint32_t flags);

/* One more argument of a Python call record. */
void python_call_add_arg(struct trace_record *record, struct trace_python_arg value);

#endif /* TCHECK_TESTS_NCCL_RECORDS_H */
