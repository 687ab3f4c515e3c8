/* SPDX-License-Identifier: MIT */
/*
 * A hand-built job for the detectors' unit tests: RANKS ranks on one
 * communicator whose steps, calls and answers are known by construction,
 * fed to the progress model as the call builder would hand them over.
 */
#ifndef TCHECK_TEST_DIAGNOSIS_JOB_H
#define TCHECK_TEST_DIAGNOSIS_JOB_H

#include <stdint.h>

#include "diagnose/diagnosis_report.h"
#include "diagnose/job_diagnosis.h"
#include "diagnose/progress_model.h"

#define RANKS 4
#define STEP_NS 10000000ull /* 10 ms */
#define COMM_ID 0xabcdef0123456789ull
#define PAIR_COMM_ID 0x1234000000000002ull /* ranks 0 and 1 of the job */

struct job {
	struct progress_model *model;
	struct diagnosis_report slow[8];
	unsigned slow_count;
};

/* One collective of 'rank' as the call builder would hand it over. */
struct trace_nccl_call job_collective(const char *function, uint64_t count, int rank, int64_t seq,
				      uint64_t entry_ns);
/* Adds a call to the model and judges the collective it completes, as job_diagnosis does. */
void job_feed(struct job *job, const struct trace_nccl_call *call);
/*
 * Step 'step' of every rank but 'missing', 'shift_ns' after its usual
 * start: an all-reduce at 1 ms into the step and an all-gather at 6 ms.
 * 'late_rank' reaches the all-reduce 'late_ns' later, and every rank
 * waits for it, so the all-gather is late for all.
 */
void job_run_step(struct job *job, int step, int missing, int late_rank, uint64_t late_ns,
		  uint64_t shift_ns);
/* Steps of 10 ms judged by hang_factor alone (no floor of a second). */
struct job job_new(void);
/* Feeds the call to a job_diagnosis as a trace record. */
void job_record_call(struct job_diagnosis *diagnosis, const struct trace_nccl_call *call);

#endif /* TCHECK_TEST_DIAGNOSIS_JOB_H */
