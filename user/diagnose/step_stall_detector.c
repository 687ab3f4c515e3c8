// SPDX-License-Identifier: MIT
/* Hangs from step progress; see step_stall_detector.h. */
#include <string.h>

#include "diagnose/step_stall_detector.h"

struct step_stall_process *step_stall_process(struct step_stall_detector *detector, uint32_t pid)
{
	struct step_stall_process *process;

	for (unsigned i = 0; i < detector->count; i++)
		if (detector->processes[i].pid == pid)
			return &detector->processes[i];
	if (detector->count == STEP_STALL_PROCESSES)
		return NULL;
	process = &detector->processes[detector->count++];
	memset(process, 0, sizeof(*process));
	process->pid = pid;
	process->step = -1;
	return process;
}

static void active(struct step_stall_detector *detector, struct step_stall_process *process,
		   uint64_t until_ns)
{
	if (until_ns > process->last_activity_ns) {
		process->last_activity_ns = until_ns;
		detector->reported = false;
	}
}

void step_stall_python(struct step_stall_detector *detector, struct step_stall_process *process,
		       const struct trace_python_call *call, int64_t time_shift_ns)
{
	uint64_t entry_ns = (uint64_t)((int64_t)call->entry_ns + time_shift_ns);

	if (!process || (call->flags & TRACE_PYTHON_UNCAUGHT))
		return;
	active(detector, process, entry_ns + call->duration_ns);
	if (call->step <= process->step)
		return;
	if (process->step >= STEP_STALL_WARMUP_STEPS && call->step == process->step + 1 &&
	    entry_ns > process->step_since_ns &&
	    (double)(entry_ns - process->step_since_ns) > process->longest_step_ns)
		process->longest_step_ns = (double)(entry_ns - process->step_since_ns);
	process->step = call->step;
	process->step_since_ns = entry_ns;
}

void step_stall_nccl(struct step_stall_detector *detector, struct step_stall_process *process,
		     const struct trace_nccl_call *call)
{
	if (process)
		active(detector, process,
		       call->entry_ns + ((call->flags & TRACE_CALL_OPEN) ? 0 : call->duration_ns));
}

void step_stall_process_ended(struct step_stall_process *process)
{
	if (process)
		process->ended = true;
}

static bool any_communicator_hang(const struct progress_model *model)
{
	for (unsigned i = 0; i < model->comm_count; i++)
		if (model->comms[i].hang_reported)
			return true;
	return false;
}

/* A process that steps: it learned a step interval and is still running. */
static bool stepping(const struct step_stall_process *process)
{
	return !process->ended && process->longest_step_ns > 0;
}

bool step_stall_check(struct step_stall_detector *detector, const struct progress_model *model,
		      const struct flight_recorder *flights, struct diagnosis_report *report)
{
	double longest = 0, limit;
	uint64_t latest = 0;
	unsigned count = 0;

	if (detector->reported)
		return false;
	for (unsigned i = 0; i < detector->count; i++) {
		const struct step_stall_process *process = &detector->processes[i];

		if (!stepping(process))
			continue;
		/* Blocked inside a call: the hang detector's, on that communicator. */
		if (progress_model_blocked_elsewhere(model, NULL, process->pid))
			return false;
		if (process->longest_step_ns > longest)
			longest = process->longest_step_ns;
		if (process->last_activity_ns > latest)
			latest = process->last_activity_ns;
		count++;
	}
	if (!count || any_communicator_hang(model))
		return false;
	limit = model->options.hang_factor * longest;
	if (limit < model->options.stall_min_ns)
		limit = model->options.stall_min_ns;
	if (model->now_ns <= latest || progress_model_silence_ns(model, latest) <= limit)
		return false;
	detector->reported = true;
	memset(report, 0, sizeof(*report));
	report->kind = DIAGNOSIS_HANG;
	report->step_progress = true;
	report->hang_class = HANG_HOST;
	report->detected_ns = watched_time_silent_since(&model->watched, latest) + (uint64_t)limit;
	report->stalled_ns = model->now_ns - latest;
	report->expected_step_ns = longest;
	report->seq = -1;
	report->step = -1;
	for (unsigned i = 0; i < detector->count && report->rank_count < PROGRESS_MAX_RANKS; i++) {
		const struct step_stall_process *process = &detector->processes[i];
		struct diagnosis_rank *rank = &report->ranks[report->rank_count];
		const struct flight_process *kept;

		if (!stepping(process))
			continue;
		rank->rank = (int32_t)report->rank_count++;
		rank->job_rank = -1;
		rank->pid = process->pid;
		kept = flight_recorder_find(flights, process->pid);
		rank->last.function = kept && kept->last_python[0] ? kept->last_python : NULL;
		rank->last.entry_ns = process->last_activity_ns;
		rank->last.seq = -1;
		rank->last.step = process->step;
	}
	report->nranks = (int32_t)report->rank_count;
	return true;
}
