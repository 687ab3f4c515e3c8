// SPDX-License-Identifier: MIT
/* Slowdown detection over the progress model; see slowdown_detector.h. */
#include <string.h>

#include "slowdown_detector.h"

/* The rank that reached collective 'index' last, and how long after the first. */
static int32_t last_to_arrive(const struct progress_comm *comm, int64_t index, uint64_t *skew_ns)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	uint64_t first = UINT64_MAX, last = 0;
	int32_t straggler = -1;

	*skew_ns = 0;
	if (!slot)
		return -1;
	for (int32_t r = 0; r < comm->nranks; r++) {
		if (slot->arrival_ns[r] < first)
			first = slot->arrival_ns[r];
		if (slot->arrival_ns[r] > last) {
			last = slot->arrival_ns[r];
			straggler = r;
		}
	}
	*skew_ns = last - first;
	return straggler;
}

bool slowdown_detector_check(const struct progress_model *model, const struct progress_comm *comm,
			     int64_t step, struct diagnosis_report *report)
{
	int64_t first_index, end_index;
	uint64_t start_ns, end_ns;
	double duration, job_step_ns, worst_excess = 0;
	const struct progress_slot *slot, *previous;
	int32_t worst = -1, straggler;
	uint64_t skew;

	if (step < 1 || !comm->period || comm->learned_steps < 2 ||
	    (uint64_t)step < model->options.warmup_steps)
		return false;
	end_index = progress_comm_step_end(comm, step);
	first_index = progress_comm_step_end(comm, step - 1) + 1;
	start_ns = progress_comm_last_arrival(comm, first_index - 1);
	end_ns = progress_comm_last_arrival(comm, end_index);
	if (!start_ns || !end_ns || end_ns <= start_ns)
		return false;
	duration = (double)(end_ns - start_ns);
	/*
	 * Measured against the job's step, so a communicator whose pattern
	 * spans several steps sees a one-step delay as well as the others do.
	 */
	job_step_ns = progress_model_job_step_ns(model);
	if (duration - comm->expected_step_ns <=
	    (model->options.slowdown_threshold - 1) * job_step_ns)
		return false;
	for (int32_t p = 0; p < comm->period; p++) {
		int64_t index = first_index + p;
		double gap = (double)(progress_comm_last_arrival(comm, index) -
				      progress_comm_last_arrival(comm, index - 1));
		double excess = gap - comm->expected_gap_ns[p];

		if (worst < 0 || excess > worst_excess) {
			worst = p;
			worst_excess = excess;
		}
	}
	straggler = last_to_arrive(comm, first_index + worst, &skew);
	slot = progress_comm_slot(comm, first_index + worst);
	previous = progress_comm_slot(comm, first_index + worst - 1);
	if (straggler < 0 || !slot)
		return false;
	memset(report, 0, sizeof(*report));
	report->kind = DIAGNOSIS_SLOWDOWN;
	report->comm_id = comm->comm_id;
	report->nranks = comm->nranks;
	report->detected_ns = end_ns;
	report->expected_step_ns = comm->expected_step_ns;
	report->function = slot->function;
	report->count = slot->count;
	report->collective_index = first_index + worst;
	report->seq = slot->seq[straggler];
	report->step = step;
	report->step_ns = duration;
	report->excess_ns = worst_excess;
	report->skew_ns = skew;
	report->rank_count = 1;
	report->ranks[0].rank = straggler;
	report->ranks[0].job_rank = -1;
	report->ranks[0].pid = comm->ranks[straggler].pid;
	report->ranks[0].last = (struct progress_event){ slot->function,
							 slot->count,
							 slot->arrival_ns[straggler],
							 slot->duration_ns[straggler],
							 slot->seq[straggler],
							 -1 };
	/*
	 * Time spent inside the previous call by the straggler (a blocking
	 * collective) rather than computing between the two.
	 */
	if (previous) {
		report->previous_function = previous->function;
		report->in_collective = (double)previous->duration_ns[straggler] > worst_excess / 2;
	}
	return true;
}
