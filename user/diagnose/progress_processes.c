// SPDX-License-Identifier: MIT
/* The progress model's processes, across their communicators; see progress_processes.h. */
#include <string.h>

#include "diagnose/progress_processes.h"

static const struct progress_process *find_process(const struct progress_model *model, uint32_t pid)
{
	for (unsigned i = 0; i < model->process_count; i++)
		if (model->processes[i].pid == pid)
			return &model->processes[i];
	return NULL;
}

struct progress_process *progress_process_of(struct progress_model *model, uint32_t pid)
{
	struct progress_process *process = (struct progress_process *)find_process(model, pid);

	if (process || model->process_count == PROGRESS_PROCESSES_MAX)
		return process;
	process = &model->processes[model->process_count++];
	memset(process, 0, sizeof(*process));
	process->pid = pid;
	return process;
}

void progress_process_remember(struct progress_process *process, const struct trace_nccl_call *call)
{
	if (process)
		process->calls[process->call_count++ % PROGRESS_CALLS_KEPT] =
			(struct progress_call_mark){ call->comm_id, call->function, call->seq };
}

/* The process's i-th latest call (0: the last one). */
static const struct progress_call_mark *latest_call(const struct progress_process *process,
						    uint64_t i)
{
	return &process->calls[(process->call_count - 1 - i) % PROGRESS_CALLS_KEPT];
}

static bool same_place(const struct progress_call_mark *a, const struct progress_call_mark *b)
{
	return a->comm_id == b->comm_id && a->function && b->function &&
	       strcmp(a->function, b->function) == 0;
}

/* How many of the process's latest calls (of 'kept') follow 'period'. */
static uint64_t periodic_suffix(const struct progress_process *process, uint64_t kept,
				uint64_t period)
{
	uint64_t i = 0;

	while (i + period < kept &&
	       same_place(latest_call(process, i), latest_call(process, i + period)))
		i++;
	return i + period;
}

bool progress_model_next_call(const struct progress_model *model, uint32_t pid,
			      struct progress_call_mark *next)
{
	const struct progress_process *process = find_process(model, pid);
	uint64_t kept, best_period = 0, best_stretch = 0;

	if (!process)
		return false;
	kept = process->call_count < PROGRESS_CALLS_KEPT ? process->call_count
							 : PROGRESS_CALLS_KEPT;
	/*
	 * Of the periods that hold long enough, the one that explains the
	 * longest stretch: a step's run of four all-reduces is a period of one
	 * over its last three, but not over the step.
	 */
	for (uint64_t period = 1; period <= kept / 2; period++) {
		uint64_t repeats = period >= 4 ? 2 : 3,
			 stretch = periodic_suffix(process, kept, period);

		if (stretch >= repeats * period && stretch > best_stretch) {
			best_stretch = stretch;
			best_period = period;
		}
	}
	if (!best_period)
		return false;
	*next = *latest_call(process, best_period - 1);
	next->seq = -1;
	for (uint64_t i = 0; i < kept; i++)
		if (latest_call(process, i)->comm_id == next->comm_id) {
			next->seq = latest_call(process, i)->seq + 1;
			break;
		}
	return true;
}

bool progress_call_counts_inside(const struct trace_nccl_call *call)
{
	return call->depth == 0 && !(call->flags & (TRACE_CALL_OPEN | TRACE_CALL_WORK_AWAITED));
}

void progress_process_count_inside(struct progress_process *process,
				   const struct trace_nccl_call *call)
{
	if (process && progress_call_counts_inside(call))
		process->inside_ns += call->duration_ns;
}
