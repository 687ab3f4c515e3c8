// SPDX-License-Identifier: MIT
/* Ranks that disagree on a collective's function or element count. */
#include "diagnose/mismatch_detector.h"

#include <string.h>

static bool same_call(const struct progress_slot *slot, int32_t a, int32_t b)
{
	const char *first = slot->functions[a], *second = slot->functions[b];

	return slot->counts[a] == slot->counts[b] &&
	       (first == second || (first && second && strcmp(first, second) == 0));
}

/* How many ranks made the same call as rank r. */
static int32_t agreeing(const struct progress_comm *comm, const struct progress_slot *slot,
			int32_t r)
{
	int32_t count = 0;

	for (int32_t other = 0; other < comm->nranks; other++)
		count += same_call(slot, r, other);
	return count;
}

bool mismatch_detector_check(const struct progress_model *model, const struct progress_comm *comm,
			     int64_t index, struct diagnosis_report *report)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	int32_t odd = -1, alone = -1, most = 0;
	bool differ = false;

	/* A rank whose call there never reached the model: nothing to hold against the others. */
	if (!slot || comm->nranks < 2 || slot->guessed)
		return false;
	for (int32_t r = 1; r < comm->nranks; r++)
		differ |= !same_call(slot, 0, r);
	if (!differ)
		return false;
	/* The odd rank: one that stands alone while every other rank agrees. */
	for (int32_t r = 0; r < comm->nranks; r++) {
		int32_t with = agreeing(comm, slot, r);

		if (with > most)
			most = with;
		if (with == 1)
			alone = r;
	}
	if (comm->nranks > 2 && most == comm->nranks - 1)
		odd = alone;
	memset(report, 0, sizeof(*report));
	report->kind = DIAGNOSIS_MISMATCH;
	report->comm_id = comm->comm_id;
	report->nranks = comm->nranks;
	report->detected_ns = progress_comm_last_arrival(comm, index);
	report->expected_step_ns = progress_model_job_step_ns(model);
	report->collective_index = index;
	report->odd_rank = odd;
	/* What the majority did, or rank 0 without one. */
	for (int32_t r = 0; r < comm->nranks; r++)
		if (agreeing(comm, slot, r) == most) {
			report->function = slot->functions[r];
			report->count = slot->counts[r];
			report->seq = slot->seq[r];
			break;
		}
	report->step = -1;
	for (int32_t r = 0; r < comm->nranks && report->rank_count < PROGRESS_MAX_RANKS; r++) {
		struct diagnosis_rank *out = &report->ranks[report->rank_count++];

		out->rank = r;
		out->job_rank = -1;
		out->pid = comm->ranks[r].pid;
		out->last = (struct progress_event){ slot->functions[r],
						     slot->counts[r],
						     slot->arrival_ns[r],
						     slot->duration_ns[r],
						     slot->seq[r],
						     -1,
						     false };
	}
	return true;
}
