// SPDX-License-Identifier: MIT
/* Regions run under reentrant activation checkpointing, and whether their reads get gradients. */
#include "checkpoint_regions.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model_calls.h"

bool checkpoint_regions_is_forward(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON &&
	       !(event->flags & (TRACE_PYTHON_TORCH_SCOPE | TRACE_PYTHON_TORCH_OP)) &&
	       event->name && strcmp(event->name, CHECKPOINT_FORWARD_NAME) == 0;
}

static bool inside_some_region(const struct checkpoint_regions *regions,
			       const struct infer_event *event)
{
	for (size_t i = 0; i < regions->count; i++)
		if (infer_event_runs_inside(event, regions->forwards[i]))
			return true;
	return false;
}

/*
 * Whether the nearest read outside every region had autograd on: of the
 * module call around the region when there is one, else of its thread.
 */
static bool run_for_training(const struct checkpoint_regions *regions,
			     const struct model_calls *models, const struct infer_event *forward,
			     const struct infer_event *const *events, size_t count)
{
	const struct infer_event *before = NULL, *after = NULL, *nearest, *model;

	if (!forward)
		return false;
	model = model_calls_around(models, forward);
	for (size_t i = 0; i < count; i++) {
		const struct infer_event *read = events[i];

		if (read->pid != forward->pid || read->tid != forward->tid ||
		    !model_calls_weight_read(read) || inside_some_region(regions, read) ||
		    (model && !infer_event_runs_inside(read, model)))
			continue;
		if (read->entry_ns < forward->entry_ns) {
			if (!before || read->entry_ns > before->entry_ns)
				before = read;
		} else if (read->entry_ns >= forward->exit_ns) {
			if (!after || read->entry_ns < after->entry_ns)
				after = read;
		}
	}
	nearest = before ? before : after;
	return nearest && !infer_event_read_without_grad(nearest);
}

int checkpoint_regions_find(struct checkpoint_regions *regions,
			    const struct infer_event *const *events, size_t count,
			    const struct model_calls *models)
{
	size_t found = 0;

	memset(regions, 0, sizeof(*regions));
	for (size_t i = 0; i < count; i++)
		found += checkpoint_regions_is_forward(events[i]);
	if (!found)
		return 0;
	regions->forwards = calloc(found, sizeof(*regions->forwards));
	regions->for_training = calloc(found, sizeof(*regions->for_training));
	if (!regions->forwards || !regions->for_training) {
		checkpoint_regions_free(regions);
		return -ENOMEM;
	}
	for (size_t i = 0; i < count; i++)
		if (checkpoint_regions_is_forward(events[i]))
			regions->forwards[regions->count++] = events[i];
	for (size_t i = 0; i < regions->count; i++)
		regions->for_training[i] =
			run_for_training(regions, models, regions->forwards[i], events, count);
	return 0;
}

bool checkpoint_regions_read_gets_no_gradient(const struct checkpoint_regions *regions,
					      const struct infer_event *read)
{
	if (!infer_event_read_without_grad(read))
		return false;
	if (!regions || !infer_event_in_training_order(read))
		return true;
	for (size_t i = 0; i < regions->count; i++)
		if (regions->for_training[i] && infer_event_runs_inside(read, regions->forwards[i]))
			return false;
	return true;
}

void checkpoint_regions_free(struct checkpoint_regions *regions)
{
	free(regions->forwards);
	free(regions->for_training);
	memset(regions, 0, sizeof(*regions));
}
