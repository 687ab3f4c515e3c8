// SPDX-License-Identifier: MIT
/* The model of each weight read: its outermost module call (model_calls.h). */
#include "model_calls.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/trace_records.h"

bool model_calls_is_module_call(const char *name)
{
	return name && strcmp(name, TRACE_MODULE_CALL_NAME) == 0;
}

uint64_t model_calls_weight_read(const struct infer_event *event)
{
	return (event->flags & TRACE_PYTHON_TORCH_OP) ? infer_event_tensor(event, "tensor:weight")
						      : 0;
}

bool model_calls_wants(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON &&
	       !(event->flags & (TRACE_PYTHON_TORCH_OP | TRACE_PYTHON_TORCH_SCOPE)) &&
	       model_calls_is_module_call(event->name);
}

static int by_thread_then_entry(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->entry_ns != b->entry_ns)
		return a->entry_ns < b->entry_ns ? -1 : 1;
	/* The outer of two calls entered at once ends last. */
	return a->exit_ns > b->exit_ns ? -1 : a->exit_ns < b->exit_ns;
}

int model_calls_find(struct model_calls *calls, const struct infer_event *const *events,
		     size_t count)
{
	size_t found = 0, kept = 0;

	memset(calls, 0, sizeof(*calls));
	u64_map_init(&calls->trained);
	for (size_t i = 0; i < count; i++)
		found += model_calls_wants(events[i]);
	if (found == 0)
		return 0;
	calls->outermost = malloc(found * sizeof(*calls->outermost));
	if (!calls->outermost)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		if (model_calls_wants(events[i]))
			calls->outermost[kept++] = events[i];
	qsort(calls->outermost, kept, sizeof(*calls->outermost), by_thread_then_entry);
	/* A call inside the last kept one on its thread is nested: dropped. */
	calls->count = 0;
	for (size_t i = 0; i < kept; i++) {
		const struct infer_event *call = calls->outermost[i];
		const struct infer_event *last =
			calls->count ? calls->outermost[calls->count - 1] : NULL;

		if (last && last->tid == call->tid && call->entry_ns <= last->exit_ns)
			continue;
		calls->outermost[calls->count++] = call;
	}
	return 0;
}

const struct infer_event *model_calls_around(const struct model_calls *calls,
					     const struct infer_event *event)
{
	const struct infer_event *call;
	size_t low = 0, high = calls->count;

	/* The last outermost call entered at or before the event, on its thread. */
	while (low < high) {
		size_t middle = low + (high - low) / 2;

		call = calls->outermost[middle];
		if (call->tid < event->tid ||
		    (call->tid == event->tid && call->entry_ns <= event->entry_ns))
			low = middle + 1;
		else
			high = middle;
	}
	if (low == 0)
		return NULL;
	call = calls->outermost[low - 1];
	return call->tid == event->tid && event->entry_ns <= call->exit_ns ? call : NULL;
}

int model_calls_note_changed(struct model_calls *calls, const struct infer_event *read)
{
	const struct infer_event *model = model_calls_around(calls, read);

	if (!model || u64_map_get(&calls->trained, (uintptr_t)model))
		return 0;
	return u64_map_put(&calls->trained, (uintptr_t)model, (void *)model);
}

bool model_calls_of_another_model(const struct model_calls *calls, const struct infer_event *read)
{
	const struct infer_event *model;

	if (calls->trained.count == 0)
		return false;
	model = model_calls_around(calls, read);
	return model && model->stage == TRACE_STAGE_EVAL &&
	       !u64_map_get(&calls->trained, (uintptr_t)model);
}

void model_calls_free(struct model_calls *calls)
{
	free(calls->outermost);
	u64_map_free(&calls->trained);
	memset(calls, 0, sizeof(*calls));
}
