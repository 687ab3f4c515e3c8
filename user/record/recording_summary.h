/* SPDX-License-Identifier: MIT */
/*
 * What a recording says as it ends: what was recorded, from how many
 * processes, and what was lost and why, so a trace is never quietly short.
 */
#ifndef TCHECK_RECORDING_SUMMARY_H
#define TCHECK_RECORDING_SUMMARY_H

#include <stdint.h>

struct python_tracer;

/* Processes whose steps are counted; records of more are left out of the step hits. */
#define RECORDING_STEPPING_PROCESSES_MAX 256

struct recording_counts {
	uint64_t calls;		     /* NCCL calls written */
	uint64_t c10d_calls;	     /* PyTorch's own collectives (gloo) */
	uint64_t python_events;	     /* Python calls, torch scopes and operators written */
	uint64_t python_lost;	     /* those the kernel or the tracer is known to have missed */
	uint32_t python_unseen;	     /* processes that ran Python before they were followed */
	uint64_t open_calls_written; /* calls left open at the end, kept in the trace */
	uint64_t processes_seen;     /* every process traced, alive or not */
	/* Records made from the first step on (step >= 1), by probe kind (enum probe_hit_kind). */
	uint64_t step_hits[4];
	/* Per process the highest step its records carried: their sum is the steps seen. */
	struct {
		uint32_t pid;
		int32_t step;
	} step_reached[RECORDING_STEPPING_PROCESSES_MAX];
	uint32_t stepping_processes;
};

/* What the probes' hits are counted as: a record received of each kind. */
enum probe_hit_kind {
	PROBE_HIT_NCCL_CALL,
	PROBE_HIT_PYTHON_CALL,
	PROBE_HIT_TORCH_SCOPE,
	PROBE_HIT_TORCH_OP,
};

struct trace_record;

/*
 * Counts 'record' among the step hits when it was made from the first step
 * on (the records of step 0 are the start-up and the first step).
 */
void recording_count_step_hit(struct recording_counts *counts, const struct trace_record *record);

/* The Python events known missed; 0 without Python tracing ('python' NULL). */
uint64_t recording_python_events_lost(struct python_tracer *python, const uint64_t *counters);
/* Warns of calls, process notices and Python events lost (counters: TCHECK_COUNTER_*). */
void recording_report_losses(struct python_tracer *python, const uint64_t *counters);
/* The closing lines: calls recorded (to 'output_path', or NULL), and those left open. */
void recording_report_totals(const struct recording_counts *counts, const char *output_path);
/*
 * The closing line of a Python recording, and a warning when --python
 * found no Python or the step marker ('step_marker' as asked, NULL: the
 * default) matched nothing.
 */
void recording_report_python(struct python_tracer *python, const struct recording_counts *counts,
			     const char *step_marker);
/*
 * The probe hits a step: the records the probes sent (NCCL calls, Python
 * calls, torch scopes, operators) from step 1 on, over the steps their
 * records reached in all processes; says why when no step was seen.
 */
void recording_report_hits_per_step(const struct recording_counts *counts);
/*
 * Warns of the processes whose Python ran before the probes followed it
 * (the window each process record carries); returns how many.
 */
struct process_registry;
uint32_t recording_report_unseen(const struct process_registry *processes);

#endif /* TCHECK_RECORDING_SUMMARY_H */
