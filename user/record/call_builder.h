/* SPDX-License-Identifier: MIT */
/*
 * Turns raw probe records into NCCL calls: decodes arguments by the
 * nccl.h table, tracks group depth per thread, and keeps each process's
 * communicators (identity shared across ranks, rank, size, sequence of
 * communication calls). Needs no kernel: the unit tests drive it directly.
 */
#ifndef TCHECK_CALL_BUILDER_H
#define TCHECK_CALL_BUILDER_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"
#include "tcheck/probe_abi.h"

struct call_builder;

/*
 * What the builder keeps of one process: its threads' group depth and its
 * communicators. The caller holds one slot per process (the recorder: in
 * the process's registry entry), NULL at first; the builder fills it on the
 * process's first call and empties it in call_builder_forget_process.
 */
struct call_builder_process;

/* Receives every record the builder makes, in order. Non-zero stops. */
typedef int (*call_builder_emit_fn)(void *context, const struct trace_record *record);

/*
 * Asked about a communicator handle the builder never saw created (the
 * process was attached mid-run). Fills identity, rank and size (origin
 * TRACE_COMM_RECOVERED) or explains in 'note' why it cannot (then
 * TRACE_COMM_UNKNOWN). 'note' points at storage the resolver keeps alive.
 */
typedef void (*call_builder_resolve_fn)(void *context, uint32_t pid, uint64_t handle,
					struct trace_communicator *communicator);

struct call_builder *call_builder_new(call_builder_emit_fn emit, call_builder_resolve_fn resolve,
				      void *context);
/* Every process's slot must have been forgotten first. */
void call_builder_free(struct call_builder *builder);

/*
 * The call record a ring-buffer record of 'size' bytes holds, whole: a short
 * record (TCHECK_CALL_RECORD_SHORT_BYTES, a call with no blob and no Python
 * caller) is copied into 'whole' with the rest zero. NULL when 'size' is too
 * small for either.
 */
const struct tcheck_call_record *call_record_whole(const void *data, size_t size,
						   struct tcheck_call_record *whole);

/*
 * Feeds one TCHECK_RECORD_CALL record, with the slot of its process and the
 * Python side of the process when the call was made (NULL where Python is
 * not followed). Returns the emitter's result.
 */
int call_builder_add(struct call_builder *builder, struct call_builder_process **process,
		     const struct tcheck_call_record *record,
		     const struct trace_python_context *python);

/* Forgets a process's threads and communicators (it exec'ed or is gone); empties the slot. */
void call_builder_forget_process(struct call_builder *builder,
				 struct call_builder_process **process);

/* Communicators currently known (for status lines and tests). */
size_t call_builder_communicator_count(const struct call_builder *builder);

#endif /* TCHECK_CALL_BUILDER_H */
