// SPDX-License-Identifier: MIT
/* Which optimizer steps are the first of their optimizer (optimizer_firsts.h). */
#include "optimizer_firsts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "optimizer_turns.h"
#include "parameter_updates.h"

/* Updates kept per process while no optimizer step has ended around them. */
#define PENDING_UPDATES_MAX 16384

struct pending_update {
	uint32_t tid;
	uint64_t entry_ns;
	uint64_t tensor;
};

struct firsts_process {
	bool built;  /* an optimizer was built (and no state loaded) since the last step */
	bool loaded; /* a state dict was loaded into an optimizer since the last step */
	struct u64_map changed; /* parameter -> non-NULL once an optimizer step changed it */
	struct pending_update *pending;
	size_t pending_count;
	size_t pending_capacity;
};

void optimizer_firsts_init(struct optimizer_firsts *firsts)
{
	u64_map_init(&firsts->processes);
}

void optimizer_firsts_free(struct optimizer_firsts *firsts)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&firsts->processes, &i, &key, &value);) {
		struct firsts_process *process = value;

		u64_map_free(&process->changed);
		free(process->pending);
		free(process);
	}
	u64_map_free(&firsts->processes);
}

static bool starts_with(const char *text, const char *prefix)
{
	return strncmp(text, prefix, strlen(prefix)) == 0;
}

static bool is_python_frame(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON &&
	       !(event->flags & (TRACE_PYTHON_TORCH_OP | TRACE_PYTHON_TORCH_SCOPE));
}

bool optimizer_firsts_is_construction(const struct infer_event *event)
{
	static const char init[] = ".__init__";
	size_t length;

	if (!is_python_frame(event) || !starts_with(event->name, OPTIMIZER_CODE_PREFIX) ||
	    starts_with(event->name, OPTIMIZER_SCHEDULER_PREFIX))
		return false;
	length = strlen(event->name);
	return length > strlen(init) && strcmp(event->name + length - strlen(init), init) == 0;
}

bool optimizer_firsts_is_state_load(const struct infer_event *event)
{
	return is_python_frame(event) && starts_with(event->name, OPTIMIZER_LOAD_STATE_PREFIX);
}

static int keep_pending(struct firsts_process *process, const struct infer_event *update)
{
	/* A long run of updates no step ends around (a loop of its own): the older half goes. */
	if (process->pending_count == PENDING_UPDATES_MAX) {
		size_t half = PENDING_UPDATES_MAX / 2;

		memmove(process->pending, process->pending + half,
			(process->pending_count - half) * sizeof(*process->pending));
		process->pending_count -= half;
	}
	if (growable_array_room_for_one((void **)&process->pending, process->pending_count,
					&process->pending_capacity, sizeof(*process->pending)))
		return -ENOMEM;
	process->pending[process->pending_count++] = (struct pending_update){
		.tid = update->tid,
		.entry_ns = update->entry_ns,
		.tensor = infer_event_tensor(update, "tensor:self"),
	};
	return 0;
}

/*
 * The updates of the step's thread that ran inside it go to 'changed'; they
 * and older ones of that thread leave the pending list. Whether one of them
 * changed a parameter for the first time.
 */
static int take_step_updates(struct firsts_process *process, const struct infer_event *step,
			     bool *new_parameter)
{
	size_t kept = 0;
	int failed = 0;

	*new_parameter = false;
	for (size_t i = 0; i < process->pending_count; i++) {
		const struct pending_update *update = &process->pending[i];

		if (update->tid != step->tid || update->entry_ns > step->exit_ns) {
			process->pending[kept++] = *update;
			continue;
		}
		if (update->entry_ns < step->entry_ns || failed ||
		    u64_map_get(&process->changed, update->tensor))
			continue;
		*new_parameter = true;
		failed = u64_map_put(&process->changed, update->tensor, process);
	}
	process->pending_count = kept;
	return failed;
}

int optimizer_firsts_observe(struct optimizer_firsts *firsts, struct infer_event *event,
			     void **cached)
{
	bool is_update = optimizer_turn_is_update(event);
	bool is_step = parameter_updates_is_optimizer_step(event);
	bool builds = optimizer_firsts_is_construction(event);
	bool loads = optimizer_firsts_is_state_load(event);
	struct firsts_process *process;
	size_t changed_before;
	bool new_parameter;

	if (!is_update && !is_step && !builds && !loads)
		return 0;
	process = u64_map_get_or_add_cached(&firsts->processes,
					    (uint64_t)event->pipeline << 32 | event->pid,
					    sizeof(*process), NULL, cached);
	if (!process)
		return -ENOMEM;
	if (builds || loads) {
		process->built = builds;
		process->loaded = loads;
		return 0;
	}
	if (is_update)
		return keep_pending(process, event);
	changed_before = process->changed.count;
	if (take_step_updates(process, event, &new_parameter))
		return -ENOMEM;
	if (new_parameter && changed_before)
		event->flags |= INFER_EVENT_NEW_PARAMETERS;
	if (process->built)
		event->flags |= INFER_EVENT_NEW_OPTIMIZER;
	if (process->loaded)
		event->flags |= INFER_EVENT_AFTER_STATE_LOAD;
	process->built = false;
	process->loaded = false;
	return 0;
}
