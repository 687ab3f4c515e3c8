// SPDX-License-Identifier: MIT
/* Slowdown detection over the progress model; see slowdown_detector.h. */
#include <string.h>

#include "diagnose/slowdown_detector.h"

int64_t slowdown_completed_collective(const struct progress_comm *comm, int32_t rank)
{
	int64_t index;

	if (rank < 0 || rank >= comm->nranks || comm->ranks[rank].collectives <= 0)
		return -1;
	index = comm->ranks[rank].collectives - 1;
	return progress_comm_last_arrival(comm, index) ? index : -1;
}

/* The arrivals at a collective: who came last, when, and when the others came. */
struct arrivals {
	int32_t last_rank;
	uint64_t first_ns, second_latest_ns, last_ns;
};

static void arrivals_of(const struct progress_comm *comm, const struct progress_slot *slot,
			struct arrivals *out)
{
	memset(out, 0, sizeof(*out));
	out->last_rank = -1;
	out->first_ns = UINT64_MAX;
	for (int32_t r = 0; r < comm->nranks; r++) {
		uint64_t arrival = slot->arrival_ns[r];

		if (arrival < out->first_ns)
			out->first_ns = arrival;
		if (arrival > out->last_ns) {
			out->second_latest_ns = out->last_ns;
			out->last_ns = arrival;
			out->last_rank = r;
		} else if (arrival > out->second_latest_ns) {
			out->second_latest_ns = arrival;
		}
	}
	if (comm->nranks < 2)
		out->second_latest_ns = out->last_ns;
}

static void fill_report(const struct progress_model *model, const struct progress_comm *comm,
			int64_t index, int64_t step, const struct arrivals *arrivals,
			double excess_ns, struct diagnosis_report *report)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	const struct progress_slot *previous = progress_comm_slot(comm, index - 1);
	int32_t straggler = arrivals->last_rank;

	memset(report, 0, sizeof(*report));
	report->kind = DIAGNOSIS_SLOWDOWN;
	report->comm_id = comm->comm_id;
	report->nranks = comm->nranks;
	report->detected_ns = arrivals->last_ns;
	report->expected_step_ns = progress_model_job_step_ns(model);
	report->comm_expected_step_ns = comm->expected_step_ns;
	report->function = slot->function;
	report->count = slot->count;
	report->collective_index = index;
	report->seq = slot->seq[straggler];
	report->step = step;
	report->excess_ns = excess_ns;
	report->skew_ns = arrivals->last_ns - arrivals->first_ns;
	report->lead_ns = arrivals->last_ns - arrivals->second_latest_ns;
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
		report->in_collective = (double)previous->duration_ns[straggler] > excess_ns / 2;
	}
}

bool slowdown_detector_check(const struct progress_model *model, const struct progress_comm *comm,
			     int64_t index, struct diagnosis_report *report)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	double threshold_ns, expected_so_far = 0, late_ns, excess_ns, remaining = 0;
	int64_t step, position;
	uint64_t start_ns, previous_ns;
	struct arrivals arrivals;

	/* Judged once the expected waits come from two job steps or more. */
	if (!slot || !comm->period || index < comm->offset ||
	    (double)comm->learned_steps * comm->steps_per_period < 2)
		return false;
	step = (index - comm->offset) / comm->period;
	position = (index - comm->offset) % comm->period;
	if (step < 1 || comm->period > PROGRESS_MAX_PERIOD)
		return false;
	start_ns = progress_comm_last_arrival(comm, progress_comm_step_end(comm, step - 1));
	previous_ns = progress_comm_last_arrival(comm, index - 1);
	arrivals_of(comm, slot, &arrivals);
	if (!start_ns || !previous_ns || arrivals.last_rank < 0 || arrivals.last_ns <= start_ns ||
	    arrivals.last_ns < previous_ns)
		return false;
	for (int64_t p = 0; p < comm->period; p++) {
		if (p <= position)
			expected_so_far += comm->expected_gap_ns[p];
		else
			remaining += comm->expected_gap_ns[p];
	}
	/*
	 * Judged against the job's step, so a communicator whose pattern
	 * spans several steps sees a one-step delay as the others do.
	 */
	threshold_ns = (model->options.slowdown_threshold - 1) * progress_model_job_step_ns(model);
	if (threshold_ns < model->options.slowdown_min_ns)
		threshold_ns = model->options.slowdown_min_ns;
	/* The step is late here, and the time went just before this collective. */
	late_ns = (double)(arrivals.last_ns - start_ns) - expected_so_far;
	excess_ns = (double)(arrivals.last_ns - previous_ns) - comm->expected_gap_ns[position];
	if (late_ns <= threshold_ns || excess_ns <= threshold_ns)
		return false;
	/*
	 * One rank explains it: it came more than the threshold after the
	 * latest of the others. Every rank late together (they waited on
	 * something else, or the host stalled) names no straggler.
	 */
	if ((double)(arrivals.last_ns - arrivals.second_latest_ns) <= threshold_ns)
		return false;
	/* Within what this job does all the time, or before that is known: no straggler. */
	if (comm->lead_samples < SLOWDOWN_JITTER_SAMPLES ||
	    (double)(arrivals.last_ns - arrivals.second_latest_ns) <=
		    comm->lead_mean_ns + SLOWDOWN_JITTER_FACTOR * comm->lead_jitter_ns)
		return false;
	fill_report(model, comm, index, step, &arrivals, excess_ns, report);
	report->late_ns = late_ns;
	/* What the step will take if the rest of it keeps to the expected waits. */
	report->step_ns = (double)(arrivals.last_ns - start_ns) + remaining;
	return true;
}

void slowdown_detector_learn(struct progress_comm *comm, int64_t index)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	struct arrivals arrivals;
	double lead, weight;

	if (!slot || comm->nranks < 2 || index <= comm->lead_learned_index || !comm->period)
		return;
	arrivals_of(comm, slot, &arrivals);
	if (arrivals.last_rank < 0 || !arrivals.second_latest_ns)
		return;
	comm->lead_learned_index = index;
	lead = (double)(arrivals.last_ns - arrivals.second_latest_ns);
	if (comm->lead_samples++ == 0) {
		comm->lead_mean_ns = lead; /* the first sample sets the mean, with no deviation */
		return;
	}
	weight = 1.0 / (comm->lead_samples < 64 ? comm->lead_samples : 64);
	/* Upwards only: a rank earlier than usual (a delay a bubble absorbed) is no jitter. */
	comm->lead_jitter_ns += ((lead > comm->lead_mean_ns ? lead - comm->lead_mean_ns : 0.0) -
				 comm->lead_jitter_ns) *
				weight;
	comm->lead_mean_ns += (lead - comm->lead_mean_ns) * weight;
}
