// SPDX-License-Identifier: MIT
/* c10d calls awaiting their work's end; see c10d_pending.h. */
#include "record/c10d_pending.h"

#include <errno.h>
#include <stdlib.h>

void c10d_pending_free(struct c10d_pending *pending)
{
	free(pending->calls);
	pending->calls = NULL;
	pending->count = pending->capacity = 0;
}

int c10d_pending_add(struct c10d_pending *pending, const struct trace_nccl_call *call)
{
	if (pending->count == pending->capacity) {
		size_t capacity = pending->capacity ? pending->capacity * 2 : 16;
		struct c10d_pending_call *grown =
			realloc(pending->calls, capacity * sizeof(*grown));

		if (!grown)
			return -ENOMEM;
		pending->calls = grown;
		pending->capacity = capacity;
	}
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

int c10d_pending_take_ended(struct c10d_pending *pending, uint32_t pid, uint32_t tid,
			    int (*visit)(void *context, struct c10d_pending_call *taken),
			    void *context)
{
	size_t i = 0;

	while (i < pending->count) {
		struct c10d_pending_call taken;
		int result;

		if (pending->calls[i].call.pid != pid || pending->calls[i].call.tid != tid) {
			i++;
			continue;
		}
		if (!pending->calls[i].ended)
			return 0;
		taken = pending->calls[i];
		remove_at(pending, i);
		result = visit(context, &taken);
		if (result)
			return result;
	}
	return 0;
}

static bool selected(const struct c10d_pending_call *entry,
		     const struct c10d_pending_filter *filter)
{
	return (!filter->pid || entry->call.pid == filter->pid) &&
	       (!filter->tid || entry->call.tid == filter->tid) &&
	       (!filter->without_work_only || !entry->work) &&
	       (!filter->entered_before || entry->call.entry_ns < filter->entered_before);
}

int c10d_pending_take_each(struct c10d_pending *pending, const struct c10d_pending_filter *filter,
			   int (*visit)(void *context, struct c10d_pending_call *taken),
			   void *context)
{
	size_t i = 0;

	while (i < pending->count) {
		struct c10d_pending_call taken;
		int result;

		if (!selected(&pending->calls[i], filter)) {
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
