/* SPDX-License-Identifier: MIT */
/*
 * Hangs seen from step progress alone: a job with no collective in the
 * stretch (a single process, or ranks that all stopped outside their
 * collectives) is stuck when no traced process that had been stepping
 * made a step, a traced Python call or an NCCL or c10d call for the stall
 * limit: hang_factor times the longest interval between two of its steps
 * after warm-up, and stall_min_ns at least. A process busy in traced
 * Python (an evaluation, a checkpoint written through torch's APIs) keeps
 * returning calls and is not stuck; one blocked inside a call on a
 * communicator is the hang detector's. The report names each process's
 * job rank, step and last Python call.
 */
#ifndef TCHECK_STEP_STALL_DETECTOR_H
#define TCHECK_STEP_STALL_DETECTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "diagnose/diagnosis_report.h"
#include "diagnose/flight_recorder.h"
#include "diagnose/progress_model.h"
#include "model/trace_records.h"

#define STEP_STALL_PROCESSES 256
#define STEP_STALL_WARMUP_STEPS 2 /* intervals before this step are not learned from */

/* One traced process: its step and the last time it did anything the probes see. */
struct step_stall_process {
	uint32_t pid;
	bool ended;
	int32_t step;		   /* the latest step seen, -1 none */
	uint64_t step_since_ns;	   /* when it reached that step */
	double longest_step_ns;	   /* the longest step interval after warm-up, 0 none yet */
	uint64_t last_activity_ns; /* the end of its latest Python or NCCL call */
};

struct step_stall_detector {
	struct step_stall_process processes[STEP_STALL_PROCESSES];
	unsigned count;
	bool reported; /* the current stall was reported; any activity ends it */
};

/*
 * The process's entry, added when new; NULL when STEP_STALL_PROCESSES are
 * kept. It stays where it is while the detector lives.
 */
struct step_stall_process *step_stall_process(struct step_stall_detector *detector, uint32_t pid);

/*
 * A call of 'process' (its entry; NULL: nothing). 'time_shift_ns' is added
 * to the call's times (traces of several hosts on one clock).
 */
void step_stall_python(struct step_stall_detector *detector, struct step_stall_process *process,
		       const struct trace_python_call *call, int64_t time_shift_ns);
void step_stall_nccl(struct step_stall_detector *detector, struct step_stall_process *process,
		     const struct trace_nccl_call *call);
void step_stall_process_ended(struct step_stall_process *process);

/*
 * At the model's current time: true with 'report' filled (a hang with
 * step_progress set, one rank per stepping process, its last Python call
 * as 'flights' kept it) when the job stalled. Reported once per stall.
 */
bool step_stall_check(struct step_stall_detector *detector, const struct progress_model *model,
		      const struct flight_recorder *flights, struct diagnosis_report *report);

#endif /* TCHECK_STEP_STALL_DETECTOR_H */
