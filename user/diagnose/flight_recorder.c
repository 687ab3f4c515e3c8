// SPDX-License-Identifier: MIT
/* Each process's last calls and Python state, for crash reports. */
#include "diagnose/flight_recorder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/progress_model.h"

void flight_recorder_init(struct flight_recorder *recorder, unsigned ring_size)
{
	memset(recorder, 0, sizeof(*recorder));
	if (!ring_size)
		ring_size = FLIGHT_CALLS_DEFAULT;
	recorder->ring_size = ring_size > FLIGHT_CALLS_MAX ? FLIGHT_CALLS_MAX : ring_size;
}

void flight_recorder_free(struct flight_recorder *recorder)
{
	for (unsigned i = 0; i < recorder->process_count; i++)
		free(recorder->processes[i].calls);
	recorder->process_count = 0;
}

struct flight_process *flight_recorder_process(struct flight_recorder *recorder, uint32_t pid)
{
	struct flight_process *process;

	for (unsigned i = recorder->process_count; i > 0; i--)
		if (recorder->processes[i - 1].pid == pid)
			return &recorder->processes[i - 1];
	if (recorder->process_count == FLIGHT_PROCESSES_MAX)
		return NULL;
	process = &recorder->processes[recorder->process_count];
	memset(process, 0, sizeof(*process));
	process->calls = calloc(recorder->ring_size, sizeof(*process->calls));
	if (!process->calls)
		return NULL;
	process->pid = pid;
	process->step = -1;
	recorder->process_count++;
	return process;
}

const struct flight_process *flight_recorder_find(const struct flight_recorder *recorder,
						  uint32_t pid)
{
	for (unsigned i = recorder->process_count; i > 0; i--)
		if (recorder->processes[i - 1].pid == pid)
			return &recorder->processes[i - 1];
	return NULL;
}

const struct flight_call *flight_process_call(const struct flight_process *process, unsigned i,
					      unsigned ring_size)
{
	unsigned oldest = process->count < ring_size ? 0 : process->next;

	return &process->calls[(oldest + i) % ring_size];
}

/* The i-th kept call, oldest first, for changing. */
static struct flight_call *kept_call(struct flight_process *process, unsigned i, unsigned ring_size)
{
	unsigned oldest = process->count < ring_size ? 0 : process->next;

	return &process->calls[(oldest + i) % ring_size];
}

/*
 * Keeps the ring in the order the calls were entered, whatever the order
 * they reach the recorder in: a call seen open at a tick, or a long one that
 * returned late, goes where it began; one older than every call of a full
 * ring is not kept. The ring then holds the process's last calls, not the
 * last ones to arrive.
 */
static void keep_call(struct flight_process *process, unsigned ring_size,
		      const struct flight_call *call)
{
	unsigned position = process->count;

	while (position > 0 &&
	       kept_call(process, position - 1, ring_size)->entry_ns > call->entry_ns)
		position--;
	if (process->count < ring_size) {
		/* Not yet full: the oldest is at 0 and logical order is physical order. */
		for (unsigned i = process->count; i > position; i--)
			process->calls[i] = process->calls[i - 1];
		process->calls[position] = *call;
		process->count++;
		process->next = (process->next + 1) % ring_size;
		return;
	}
	if (position == 0)
		return;
	if (position == process->count) {
		/* The common case: the newest call takes the oldest one's slot. */
		process->calls[process->next] = *call;
		process->next = (process->next + 1) % ring_size;
		return;
	}
	/* The oldest leaves; those entered before this call move down one. */
	for (unsigned i = 0; i + 1 < position; i++)
		*kept_call(process, i, ring_size) = *kept_call(process, i + 1, ring_size);
	*kept_call(process, position - 1, ring_size) = *call;
}

void flight_recorder_call(struct flight_recorder *recorder, const struct trace_nccl_call *call)
{
	flight_recorder_keep_call(recorder, flight_recorder_process(recorder, call->pid), call);
}

void flight_recorder_keep_call(const struct flight_recorder *recorder,
			       struct flight_process *process, const struct trace_nccl_call *call)
{
	struct flight_call kept;

	/*
	 * The program's own calls only: a call a library makes inside another
	 * (ncclBcast calls ncclBroadcast in NCCL itself) is not what the program
	 * called.
	 */
	if (!process || call->depth != 0)
		return;
	/* Seen open at a tick, then returned: one call, the latest state. */
	for (unsigned i = 0; i < process->count; i++) {
		struct flight_call *slot = &process->calls[i];

		if (slot->entry_ns == call->entry_ns && slot->function && call->function &&
		    strcmp(slot->function, call->function) == 0) {
			/* A returned call stays returned: a tick's late look cannot reopen it. */
			if (slot->open) {
				slot->open = (call->flags & TRACE_CALL_OPEN) != 0;
				slot->duration_ns = call->duration_ns;
			}
			return;
		}
	}
	kept = (struct flight_call){
		.function = call->function,
		.comm_id = call->comm_id,
		.rank = call->rank,
		.nranks = call->nranks,
		.seq = call->seq,
		.count = progress_call_count(call),
		.entry_ns = call->entry_ns,
		.duration_ns = call->duration_ns,
		.step = call->step,
		.open = (call->flags & TRACE_CALL_OPEN) != 0,
	};
	keep_call(process, recorder->ring_size, &kept);
	if (call->step >= 0 && call->step > process->step)
		process->step = call->step;
}

/* Copied: the record's strings live only while it is handed round. */
static void keep_exception(struct flight_exception *exception,
			   const struct trace_python_call *python)
{
	memset(exception, 0, sizeof(*exception));
	exception->handled_at_exit = python->flags & TRACE_PYTHON_HANDLED_AT_EXIT;
	snprintf(exception->type, sizeof(exception->type), "%s",
		 python->qualified_name ? python->qualified_name : "");
	for (uint32_t i = 0; i < python->arg_count; i++)
		if (python->args[i].type == TRACE_VALUE_STR && python->args[i].text &&
		    strcmp(python->args[i].name, "message") == 0)
			snprintf(exception->message, sizeof(exception->message), "%s",
				 python->args[i].text);
	for (uint32_t i = 0; i < python->py_stack.depth && i < TRACE_PY_STACK_MAX; i++)
		snprintf(exception->frames[exception->frame_count++], sizeof(exception->frames[0]),
			 "%s", python->py_stack.frames[i]);
}

void flight_recorder_python(struct flight_recorder *recorder,
			    const struct trace_python_call *python)
{
	flight_recorder_keep_python(flight_recorder_process(recorder, python->pid), python);
}

void flight_recorder_keep_python(struct flight_process *process,
				 const struct trace_python_call *python)
{
	if (!process)
		return;
	/* An exception's step counts: it may be raised before the step's first call. */
	if (python->step >= 0)
		process->step = python->step;
	if (python->flags & TRACE_PYTHON_UNCAUGHT) {
		keep_exception(&process->exception, python);
		return;
	}
	process->stage = python->stage;
	/* Copied: a live tracer drops a process's names when the process ends. */
	if (python->entry_ns >= process->last_python_ns && python->qualified_name) {
		snprintf(process->last_python, sizeof(process->last_python), "%s",
			 python->qualified_name);
		process->last_python_ns = python->entry_ns;
	}
}
