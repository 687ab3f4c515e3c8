/* SPDX-License-Identifier: MIT */
/*
 * The processes of the progress model, across their communicators: the
 * time each spent inside calls (what it did not spend there between two
 * collectives, it spent computing) and its latest communication calls in
 * its own order, from which the call it would make next is found
 * (progress_model_next_call, declared in progress_model.h).
 */
#ifndef TCHECK_PROGRESS_PROCESSES_H
#define TCHECK_PROGRESS_PROCESSES_H

#include "diagnose/progress_model.h"

/*
 * The process's entry, added when new; NULL when PROGRESS_PROCESSES_MAX are
 * kept. It stays where it is while the model lives.
 */
struct progress_process *progress_process_of(struct progress_model *model, uint32_t pid);

/* A communication call the process made (seen for the first time), in its order; NULL: none. */
void progress_process_remember(struct progress_process *process,
			       const struct trace_nccl_call *call);

/*
 * Whether a call's duration is time its thread spent inside it: one made
 * from the application (depth 0) that returned. Not an awaited c10d call's,
 * which runs to its work's end while the thread goes on.
 */
bool progress_call_counts_inside(const struct trace_nccl_call *call);

/* A call of the process returned (depth 0): its time inside calls grows by its duration. */
void progress_process_count_inside(struct progress_process *process,
				   const struct trace_nccl_call *call);

#endif /* TCHECK_PROGRESS_PROCESSES_H */
