/* SPDX-License-Identifier: MIT */
/*
 * Turns raw c10d records into trace calls: keeps each process's process
 * groups (the object, its rank and size as built), numbers each group's
 * calls, and gives every group of the job's full size an identity all its
 * ranks share, so a gloo collective reaches the trace and the detectors as
 * an NCCL collective does. Needs no kernel: the unit tests drive it.
 *
 * Identity: the n-th group of the world's size that a process builds is the
 * same group on every rank (every rank builds it, in the same order).
 * Smaller groups (subgroups) are built only by their members. torch gives
 * every group a name, the same on every rank (a count of the groups the job
 * made, or a hash of its ranks), and builds it on a c10d PrefixStore of
 * that name, made just before on the same thread: a subgroup's identity is
 * the name of the last PrefixStore its thread built (with the prefixes of
 * the stores it wraps) and its size. A subgroup built with no new store
 * before it carries no shared identity: its calls are recorded, not
 * matched across ranks. A group built before the tracer came is taken as a
 * world group numbered by first use, when the process's job rank and size
 * are known.
 */
#ifndef TCHECK_C10D_CALLS_H
#define TCHECK_C10D_CALLS_H

#include <stdint.h>

#include "model/trace_records.h"
#include "tcheck/probe_abi.h"

struct c10d_calls;
/*
 * One process's groups and stores. The caller keeps it (the recorder, in its
 * process registry's slot): NULL until the process's first group, store or
 * call makes it, handed to each call for that process, emptied by
 * c10d_calls_forget_process.
 */
struct c10d_process;

typedef int (*c10d_calls_emit_fn)(void *context, const struct trace_record *record);

/*
 * 'emit' takes the records for the trace and the detectors; 'in_flight'
 * (NULL: none) takes awaited calls as they are entered, flagged
 * TRACE_CALL_OPEN, for the detectors only: their records come when their
 * work ends.
 */
struct c10d_calls *c10d_calls_new(c10d_calls_emit_fn emit, c10d_calls_emit_fn in_flight,
				  void *context);
void c10d_calls_free(struct c10d_calls *calls);

/* A process group being built: its object, rank and size. 0 or -ENOMEM. */
int c10d_calls_group_built(struct c10d_calls *calls, struct c10d_process **process,
			   const struct tcheck_process_group_record *record);

/* A PrefixStore being built: the name of the group its thread builds next. 0 or -ENOMEM. */
int c10d_calls_store_prefix(struct c10d_calls *calls, struct c10d_process **process,
			    const struct tcheck_store_prefix_record *record);

/*
 * One collective entered: emits its communicator the first time the group
 * is used, then the call. job_rank and job_size are the process's (-1
 * unknown); python is its step and stage then, or NULL. Returns the
 * emitter's result, or -ENOMEM.
 */
int c10d_calls_add(struct c10d_calls *calls, struct c10d_process **process,
		   const struct tcheck_c10d_call_record *record, int32_t job_rank, int32_t job_size,
		   const struct trace_python_context *python);

/*
 * A gloo work built or ended. Built, it is the work of its thread's newest
 * awaited call; ended, that call is emitted, flagged
 * TRACE_CALL_WORK_AWAITED, its duration up to the end (and
 * TRACE_CALL_WORK_FAILED after an error). Returns the emitter's result.
 */
int c10d_calls_work(struct c10d_calls *calls, const struct tcheck_c10d_work_record *record);

/*
 * How soon after its entry an awaited call's work is built (inside the
 * call, on its thread); later, none will be (the call failed first), and
 * the call is emitted as entered only.
 */
#define C10D_WORK_BUILT_WITHIN_NS 1000000000ull

/* Emits the awaited calls whose work was not built in time, as entered only. */
int c10d_calls_tick(struct c10d_calls *calls, uint64_t now_ns);

/*
 * Emits the awaited calls of process 'pid' (0: every process) still
 * waiting at 'end_ns' (the process ended, or the recording did) as open
 * calls that lasted until then.
 */
int c10d_calls_end(struct c10d_calls *calls, uint32_t pid, uint64_t end_ns);

/*
 * Forgets a process's groups and stores (its image ended, or its entry
 * went): '*process' freed and set to NULL. Its awaited calls are
 * c10d_calls_end's.
 */
void c10d_calls_forget_process(struct c10d_calls *calls, struct c10d_process **process);

#endif /* TCHECK_C10D_CALLS_H */
