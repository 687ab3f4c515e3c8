// SPDX-License-Identifier: MIT
/* The closing lines of a recording: totals, losses, Python coverage. */
#include "record/recording_summary.h"

#include <stdbool.h>

#include "base/log.h"
#include "model/trace_records.h"
#include "python/python_losses.h"
#include "python/python_tracer.h"
#include "record/process_registry.h"
#include "tcheck/probe_abi.h"

uint64_t recording_python_events_lost(struct python_tracer *python, const uint64_t *counters)
{
	struct python_tracer_losses losses;

	if (!python)
		return 0;
	python_tracer_get_losses(python, &losses);
	return python_losses_events(&losses, python_kernel_drops_of(counters));
}

void recording_report_losses(struct python_tracer *python, const uint64_t *counters)
{
	uint64_t lost =
		counters[TCHECK_COUNTER_RINGBUF_DROPS] + counters[TCHECK_COUNTER_NESTING_OVERFLOWS];

	if (lost)
		log_warning("%llu calls were lost (ring buffer full: %llu, nested too deep: %llu); "
			    "raise --ring-buffer-mb",
			    (unsigned long long)lost,
			    (unsigned long long)counters[TCHECK_COUNTER_RINGBUF_DROPS],
			    (unsigned long long)counters[TCHECK_COUNTER_NESTING_OVERFLOWS]);
	if (counters[TCHECK_COUNTER_PROCESS_DROPS])
		log_warning("%llu process notices were lost",
			    (unsigned long long)counters[TCHECK_COUNTER_PROCESS_DROPS]);
	if (python) {
		struct python_tracer_losses losses;

		python_tracer_get_losses(python, &losses);
		python_losses_report(&losses, python_kernel_drops_of(counters));
	}
}

void recording_report_totals(const struct recording_counts *counts, const char *output_path)
{
	if (counts->c10d_calls)
		log_notice("%llu NCCL calls recorded, and %llu of PyTorch's c10d collectives%s%s",
			   (unsigned long long)counts->calls,
			   (unsigned long long)counts->c10d_calls, output_path ? " to " : "",
			   output_path ? output_path : "");
	else
		log_notice("%llu NCCL calls recorded%s%s", (unsigned long long)counts->calls,
			   output_path ? " to " : "", output_path ? output_path : "");
	if (counts->open_calls_written)
		log_notice("%llu of them never returned (a thread blocked or ended inside): "
			   "kept as open calls",
			   (unsigned long long)counts->open_calls_written);
}

void recording_report_python(struct python_tracer *python, const struct recording_counts *counts,
			     const char *step_marker)
{
	struct python_tracer_losses losses;
	uint32_t seen;

	python_tracer_get_losses(python, &losses);
	seen = losses.followed_processes + losses.refused_processes;
	log_notice("%llu Python calls, torch scopes and operators recorded from %u of %u Python "
		   "process%s, %llu lost%s",
		   (unsigned long long)counts->python_events,
		   losses.followed_processes - losses.unprobed_processes, seen,
		   seen == 1 ? "" : "es", (unsigned long long)counts->python_lost,
		   counts->python_unseen
			   ? ", and the start of some processes' Python unseen (said above)"
			   : "");
	if (seen == 0)
		log_warning("Python tracing was asked for, but none of the %llu processes traced "
			    "ran a CPython interpreter this tool could find: the trace holds no "
			    "Python calls (tcheck-bpf -vv says what each process maps)",
			    (unsigned long long)counts->processes_seen);
	/* The default marker missing is a program without an optimizer: no warning. */
	if (step_marker && counts->python_events > 0 && losses.step_marks == 0)
		log_warning(
			"the step marker '%s' matched no call or torch scope: every event is at "
			"step 0, and step-based rules and step times have nothing to go on. "
			"CPython 3.11+ shows only the Python calls entered from C (a function "
			"called from Python code is not seen); a torch scope such as "
			"'Optimizer.step#' (the default) or 'Optimizer.zero_grad#' marks steps "
			"on every Python",
			python_tracer_step_marker(python));
}

/* Raises the process's highest step seen; false when there is no room for another process. */
static bool step_reached(struct recording_counts *counts, uint32_t pid, int32_t step)
{
	uint32_t i;

	for (i = 0; i < counts->stepping_processes; i++)
		if (counts->step_reached[i].pid == pid) {
			if (step > counts->step_reached[i].step)
				counts->step_reached[i].step = step;
			return true;
		}
	if (i == RECORDING_STEPPING_PROCESSES_MAX)
		return false;
	counts->step_reached[i].pid = pid;
	counts->step_reached[i].step = step;
	counts->stepping_processes++;
	return true;
}

void recording_count_step_hit(struct recording_counts *counts, const struct trace_record *record)
{
	if (record->kind == TRACE_RECORD_NCCL_CALL && record->call.step >= 1) {
		if (step_reached(counts, record->call.pid, record->call.step))
			counts->step_hits[PROBE_HIT_NCCL_CALL]++;
		return;
	}
	if (record->kind != TRACE_RECORD_PYTHON_CALL || record->python_call.step < 1 ||
	    !step_reached(counts, record->python_call.pid, record->python_call.step))
		return;
	if (record->python_call.flags & TRACE_PYTHON_TORCH_SCOPE)
		counts->step_hits[PROBE_HIT_TORCH_SCOPE]++;
	else if (record->python_call.flags & TRACE_PYTHON_TORCH_OP)
		counts->step_hits[PROBE_HIT_TORCH_OP]++;
	else
		counts->step_hits[PROBE_HIT_PYTHON_CALL]++;
}

void recording_report_hits_per_step(const struct recording_counts *counts)
{
	const uint64_t *hits = counts->step_hits;
	uint64_t steps = 0;
	uint32_t i;

	for (i = 0; i < counts->stepping_processes; i++)
		steps += (uint64_t)counts->step_reached[i].step;
	if (steps == 0) {
		log_notice(
			"probe hits a step: not measured, no record was made after a step marker");
		return;
	}
	log_notice("probe hits a step: %.1f over %llu steps (%.1f NCCL calls, %.1f Python calls, "
		   "%.1f torch scopes, %.1f operators; records received from step 1 on)",
		   (double)(hits[0] + hits[1] + hits[2] + hits[3]) / (double)steps,
		   (unsigned long long)steps, (double)hits[PROBE_HIT_NCCL_CALL] / (double)steps,
		   (double)hits[PROBE_HIT_PYTHON_CALL] / (double)steps,
		   (double)hits[PROBE_HIT_TORCH_SCOPE] / (double)steps,
		   (double)hits[PROBE_HIT_TORCH_OP] / (double)steps);
}

uint32_t recording_report_unseen(const struct process_registry *processes)
{
	const struct traced_process *process;
	uint32_t unseen = 0;

	for (size_t i = 0; (process = process_registry_next(processes, &i));) {
		const struct trace_process *record = &process->record;

		if (!record->python_unseen_to_ns)
			continue;
		unseen++;
		log_warning(
			"process %u ran Python for %.1f ms, from its fork or exec until its "
			"probes followed it: the Python calls it made then are not in the trace",
			record->pid,
			(double)(record->python_unseen_to_ns - record->python_unseen_from_ns) /
				1e6);
	}
	return unseen;
}
