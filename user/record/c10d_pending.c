// SPDX-License-Identifier: MIT
/* c10d calls awaiting their work's end; see c10d_pending.h. */
#include "record/c10d_pending.h"

#include <errno.h>
#include <stdlib.h>

#include "base/growable_array.h"

void c10d_pending_free(struct c10d_pending *pending)
{
	free(pending->calls);
	pending->calls = NULL;
	pending->count = pending->capacity = 0;
}

int c10d_pending_add(struct c10d_pending *pending, const struct trace_nccl_call *call)
{
	if (growable_array_room_for_one((void **)&pending->calls, pending->count,
					&pending->capacity, sizeof(*pending->calls)))
		return -ENOMEM;
	pending->calls[pending->count++] = (struct c10d_pending_call){ *call, 0, false };
	return 0;
}

bool c10d_pending_work_built(struct c10d_pending *pending, uint32_t pid, uint32_t tid,
			     uint64_t work)
{
	for (size_t i = pending->count; i-- > 0;) {
		struct c10d_pending_call *entry = &pending->calls[i];

		if (entry->call.pid == pid && entry->call.tid == tid) {
			if (entry->work)
				return false; /* the thread's newest call has its work */
			entry->work = work;
			return true;
		}
	}
	return false;
}

static void remove_at(struct c10d_pending *pending, size_t index)
{
	for (size_t i = index + 1; i < pending->count; i++)
		pending->calls[i - 1] = pending->calls[i];
	pending->count--;
}

uint32_t c10d_pending_work_ended(struct c10d_pending *pending, uint32_t pid, uint64_t work,
				 uint64_t end_ns, uint32_t flags)
{
	for (size_t i = 0; i < pending->count; i++) {
		struct c10d_pending_call *entry = &pending->calls[i];

		if (entry->call.pid != pid || entry->work != work || entry->ended)
			continue;
		entry->ended = true;
		entry->call.duration_ns =
			end_ns > entry->call.entry_ns ? end_ns - entry->call.entry_ns : 0;
		entry->call.flags |= flags;
		return entry->call.tid;
	}
	return 0;
}

/* Which calls a walk takes, and where it stops. */
enum walk_step { WALK_SKIP, WALK_TAKE, WALK_STOP };

typedef enum walk_step (*walk_choice_fn)(const struct c10d_pending_call *entry,
					 const void *choice_context);

/* Takes the calls 'choose' picks, in the order entered, handing each to 'visit'. */
static int take_walk(struct c10d_pending *pending, walk_choice_fn choose,
		     const void *choice_context,
		     int (*visit)(void *context, struct c10d_pending_call *taken), void *context)
{
	size_t i = 0;

	while (i < pending->count) {
		enum walk_step step = choose(&pending->calls[i], choice_context);
		struct c10d_pending_call taken;
		int result;

		if (step == WALK_STOP)
			return 0;
		if (step == WALK_SKIP) {
			i++;
			continue;
		}
		taken = pending->calls[i];
		remove_at(pending, i);
		result = visit(context, &taken);
		if (result)
			return result;
	}
	return 0;
}

struct thread_of {
	uint32_t pid, tid;
};

/* The thread's calls while their work ended; stops at its first still waiting. */
static enum walk_step ended_of_thread(const struct c10d_pending_call *entry,
				      const void *choice_context)
{
	const struct thread_of *thread = choice_context;

	if (entry->call.pid != thread->pid || entry->call.tid != thread->tid)
		return WALK_SKIP;
	return entry->ended ? WALK_TAKE : WALK_STOP;
}

int c10d_pending_take_ended(struct c10d_pending *pending, uint32_t pid, uint32_t tid,
			    int (*visit)(void *context, struct c10d_pending_call *taken),
			    void *context)
{
	struct thread_of thread = { pid, tid };

	return take_walk(pending, ended_of_thread, &thread, visit, context);
}

static enum walk_step selected(const struct c10d_pending_call *entry, const void *choice_context)
{
	const struct c10d_pending_filter *filter = choice_context;

	return (!filter->pid || entry->call.pid == filter->pid) &&
			       (!filter->tid || entry->call.tid == filter->tid) &&
			       (!filter->without_work_only || !entry->work) &&
			       (!filter->entered_before ||
				entry->call.entry_ns < filter->entered_before)
		       ? WALK_TAKE
		       : WALK_SKIP;
}

int c10d_pending_take_each(struct c10d_pending *pending, const struct c10d_pending_filter *filter,
			   int (*visit)(void *context, struct c10d_pending_call *taken),
			   void *context)
{
	return take_walk(pending, selected, filter, visit, context);
}
