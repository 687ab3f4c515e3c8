// SPDX-License-Identifier: MIT
/* The hand-built job the detectors' unit tests share; see diagnosis_job.h. */
#include "diagnosis_job.h"

#include <string.h>

#include "diagnose/slowdown_detector.h"
#include "model/nccl_api.h"
#include "unit.h"

/* One collective of 'rank' as the call builder would hand it over. */
struct trace_nccl_call job_collective(const char *function, uint64_t count, int rank, int64_t seq,
				      uint64_t entry_ns)
{
	struct trace_nccl_call call;

	memset(&call, 0, sizeof(call));
	call.function = function;
	call.api = nccl_function_by_name(function);
	call.entry_ns = entry_ns;
	call.duration_ns = 1000;
	call.pid = 1000 + (uint32_t)rank;
	call.tid = call.pid;
	call.param_count = 7;
	call.params[2] = count;
	call.comm = 0x5000;
	call.comm_id = COMM_ID;
	call.rank = rank;
	call.nranks = RANKS;
	call.seq = seq;
	return call;
}

/* Adds a call to the model and judges the collective it completes, as job_diagnosis does. */
void job_feed(struct job *job, const struct trace_nccl_call *call)
{
	int64_t completed_step, index;
	struct progress_comm *comm = progress_model_add_call(job->model, call, &completed_step);

	index = comm ? slowdown_completed_collective(comm, call->rank) : -1;
	if (index >= 0 && job->slow_count < 8 &&
	    slowdown_detector_check(job->model, comm, index, &job->slow[job->slow_count]))
		job->slow_count++;
	if (index >= 0)
		slowdown_detector_learn(comm, index);
}

/*
 * Step 'step' of every rank but 'missing', 'shift_ns' after its usual
 * start: an all-reduce at 1 ms into the step and an all-gather at 6 ms.
 * 'late_rank' reaches the all-reduce 'late_ns' later, and every rank
 * waits for it, so the all-gather is late for all.
 */
void job_run_step(struct job *job, int step, int missing, int late_rank, uint64_t late_ns,
		  uint64_t shift_ns)
{
	uint64_t start = (uint64_t)step * STEP_NS + 1000000000ull + shift_ns;

	for (int rank = 0; rank < RANKS; rank++) {
		struct trace_nccl_call call;
		uint64_t delay = rank == late_rank ? late_ns : 0;

		if (rank == missing)
			continue;
		call = job_collective("ncclAllReduce", 256, rank, 2 * step,
				      start + 1000000 + delay);
		job_feed(job, &call);
		call = job_collective("ncclAllGather", 64, rank, 2 * step + 1,
				      start + 6000000 + (late_rank >= 0 ? late_ns : 0));
		job_feed(job, &call);
	}
}

/* Steps of 10 ms judged by hang_factor alone (no floor of a second). */
struct job job_new(void)
{
	struct progress_options options;
	struct job job;

	progress_options_default(&options);
	options.hang_min_ns = 0;
	options.slowdown_min_ns = 0;
	job.model = progress_model_new(&options);
	job.slow_count = 0;
	CU_ASSERT_PTR_NOT_NULL_FATAL(job.model);
	return job;
}

/* Feeds the call to a job_diagnosis as a trace record. */
void job_record_call(struct job_diagnosis *diagnosis, const struct trace_nccl_call *call)
{
	struct trace_record record;

	memset(&record, 0, sizeof(record));
	record.kind = TRACE_RECORD_NCCL_CALL;
	record.call = *call;
	job_diagnosis_record(diagnosis, &record, 0);
}
