/* SPDX-License-Identifier: MIT */
/*
 * c10d calls awaiting their work's end: a gloo collective queues an
 * AsyncWork and returns; a worker thread runs it, and it ends once every
 * rank of the group took part. A call entered is kept here, given the work
 * built on its thread while inside it, and taken when that work ends, so
 * its duration runs from its entry to the end of its work, as a blocking
 * NCCL call's runs to its return. Needs no kernel: the unit tests drive it.
 */
#ifndef TCHECK_C10D_PENDING_H
#define TCHECK_C10D_PENDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

struct c10d_pending_call {
	struct trace_nccl_call call;
	uint64_t work; /* the AsyncWork built for it; 0 not yet */
	bool ended;    /* its work ended, at call.entry_ns + call.duration_ns */
};

struct c10d_pending {
	struct c10d_pending_call *calls; /* in the order entered */
	size_t count;
	size_t capacity;
};

void c10d_pending_free(struct c10d_pending *pending);

/* Keeps an entered call until its work ends. 0 or -ENOMEM. */
int c10d_pending_add(struct c10d_pending *pending, const struct trace_nccl_call *call);

/*
 * A work built on thread 'tid' of 'pid': the work of that thread's newest
 * call without one. False when the thread has none (a work of a call not
 * traced).
 */
bool c10d_pending_work_built(struct c10d_pending *pending, uint32_t pid, uint32_t tid,
			     uint64_t work);

/*
 * The work of 'pid' ended at 'end_ns': its call's duration runs to then,
 * flagged 'flags' too. Returns the call's thread, 0 when no call waits on it.
 */
uint32_t c10d_pending_work_ended(struct c10d_pending *pending, uint32_t pid, uint64_t work,
				 uint64_t end_ns, uint32_t flags);

/*
 * Takes the calls of thread 'tid' of 'pid' whose work ended, up to its
 * first one still waiting, handing each to 'visit' in the order entered: a
 * thread's calls leave in the order it made them, whatever order their works
 * end in. Returns the first non-zero result of 'visit', else 0.
 */
int c10d_pending_take_ended(struct c10d_pending *pending, uint32_t pid, uint32_t tid,
			    int (*visit)(void *context, struct c10d_pending_call *taken),
			    void *context);

/* Which calls c10d_pending_take_each takes. */
struct c10d_pending_filter {
	uint32_t pid;		 /* 0: any process */
	uint32_t tid;		 /* 0: any thread */
	bool without_work_only;	 /* only calls no work was built for */
	uint64_t entered_before; /* 0: whenever entered */
};

/*
 * Takes every call the filter selects, in the order entered, handing each
 * to 'visit' (whose non-zero result is returned at once, the calls handed
 * so far taken). 0 otherwise.
 */
int c10d_pending_take_each(struct c10d_pending *pending, const struct c10d_pending_filter *filter,
			   int (*visit)(void *context, struct c10d_pending_call *taken),
			   void *context);

#endif /* TCHECK_C10D_PENDING_H */
