// SPDX-License-Identifier: MIT
/* Step and stage of a traced process over time, looked up at each event's entry. */
#include "python/python_meta.h"

#include <string.h>

#include "model/trace_records.h"

void python_meta_init(struct python_meta_timeline *timeline)
{
	memset(timeline, 0, sizeof(*timeline));
	timeline->initial.stage = TRACE_STAGE_UNKNOWN;
	timeline->current = timeline->initial;
}

static void remember(struct python_meta_timeline *timeline, uint64_t at_ns,
		     struct python_meta_state after)
{
	struct python_meta_change *slot = &timeline->changes[timeline->next];

	/* The oldest change is overwritten: the state it made becomes the initial one. */
	if (timeline->count == PYTHON_META_CHANGES)
		timeline->initial = slot->after;
	else
		timeline->count++;
	slot->at_ns = at_ns;
	slot->after = after;
	timeline->next = (timeline->next + 1) % PYTHON_META_CHANGES;
	timeline->current = after;
}

void python_meta_advance_step(struct python_meta_timeline *timeline, uint64_t at_ns)
{
	struct python_meta_state after = timeline->current;

	after.step++;
	remember(timeline, at_ns, after);
}

/* The last step's end, while it is still remembered and still the newest step change. */
static struct python_meta_change *last_step_end(struct python_meta_timeline *timeline)
{
	struct python_meta_change *last = &timeline->changes[timeline->step_end_slot];

	if (!timeline->step_ended || !timeline->count)
		return NULL;
	return last->after.step == timeline->current.step + (timeline->continuing ? 1 : 0) ? last
											   : NULL;
}

/* The held end is placed at at_ns: calls entered after it are in the next step. */
static void release_held_end(struct python_meta_timeline *timeline, uint64_t at_ns)
{
	struct python_meta_change *last = last_step_end(timeline);

	if (!timeline->continuing)
		return;
	timeline->continuing = false;
	timeline->current.step++;
	if (last)
		last->at_ns = at_ns;
}

void python_meta_marker_opens(struct python_meta_timeline *timeline, uint64_t entry_ns)
{
	struct python_meta_change *last = last_step_end(timeline);

	if (!timeline->open_marker_entry_ns)
		timeline->open_marker_entry_ns = entry_ns;

	if (!last || timeline->continuing || entry_ns < last->at_ns ||
	    !timeline->backward_entry_ns ||
	    timeline->backward_entry_ns >= timeline->step_end_entry_ns)
		return;
	timeline->continuing = true;
	timeline->current.step--;
	last->at_ns = UINT64_MAX; /* held: no lookup finds it until the marker returns */
}

/* The outer marker returned (or its return was lost): the held inner end is placed at at_ns. */
static void release_nested_end(struct python_meta_timeline *timeline, uint64_t at_ns)
{
	struct python_meta_change *last = last_step_end(timeline);

	timeline->open_marker_entry_ns = 0;
	if (!timeline->nested_end_held)
		return;
	timeline->nested_end_held = false;
	if (last)
		last->at_ns = at_ns;
}

void python_meta_note_backward(struct python_meta_timeline *timeline, uint64_t entry_ns)
{
	/* A held end whose marker's return was lost: the next pass starts the next step. */
	release_held_end(timeline, entry_ns);
	release_nested_end(timeline, entry_ns);
	if (entry_ns > timeline->backward_entry_ns)
		timeline->backward_entry_ns = entry_ns;
}

void python_meta_end_step(struct python_meta_timeline *timeline, uint64_t entry_ns,
			  uint64_t return_ns)
{
	struct python_meta_change *last;
	bool nested = timeline->open_marker_entry_ns && entry_ns > timeline->open_marker_entry_ns;

	/* The outer marker returns: the step ends here, where the inner one's end was held. */
	if (!nested && timeline->open_marker_entry_ns) {
		bool held = timeline->nested_end_held;

		release_nested_end(timeline, return_ns);
		if (held)
			return;
	}
	if (timeline->continuing) {
		release_held_end(timeline, return_ns);
		return;
	}
	last = last_step_end(timeline);
	/* The last step's end is still remembered, and lies inside this marker. */
	if (last && entry_ns <= timeline->step_end_entry_ns && last->at_ns <= return_ns) {
		last->at_ns = return_ns;
		return;
	}
	timeline->step_end_slot = timeline->next;
	timeline->step_ended = true;
	timeline->step_end_entry_ns = entry_ns;
	python_meta_advance_step(timeline, return_ns);
	if (nested) {
		/* No lookup finds the end until the outer marker returns. */
		timeline->changes[timeline->step_end_slot].at_ns = UINT64_MAX;
		timeline->nested_end_held = true;
	}
}

void python_meta_set_stage(struct python_meta_timeline *timeline, uint64_t at_ns, uint32_t stage)
{
	struct python_meta_state after = timeline->current;

	if (after.stage == stage)
		return;
	after.stage = stage;
	remember(timeline, at_ns, after);
}

struct python_meta_state python_meta_at(const struct python_meta_timeline *timeline, uint64_t at_ns)
{
	struct python_meta_state state = timeline->initial;
	uint64_t best_ns = 0;
	int found = 0;

	/* Changes are remembered in arrival order, which is not quite time order. */
	for (uint32_t i = 0; i < timeline->count; i++) {
		const struct python_meta_change *change = &timeline->changes[i];

		if (change->at_ns <= at_ns && (!found || change->at_ns >= best_ns)) {
			best_ns = change->at_ns;
			state = change->after;
			found = 1;
		}
	}
	return state;
}
