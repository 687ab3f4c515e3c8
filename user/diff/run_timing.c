// SPDX-License-Identifier: MIT
/*
 * Step and collective times of two runs side by side. A rank's step time
 * is the mean time between the starts of consecutive steps from step 1 on
 * (a step starts with its first communication call or Python event); a
 * run's is the mean over its ranks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "diff/run_timing.h"
#include "model/nccl_api.h"

/* Where step 'step' starts: the earliest of its events seen so far. */
static void note_step_start(uint64_t *starts, int steps, int step, uint64_t entry_ns)
{
	if (step >= 0 && step < steps && (!starts[step] || entry_ns < starts[step]))
		starts[step] = entry_ns;
}

/* A rank's mean step time in *mean; 0 when it ran fewer than three steps; -ENOMEM. */
static int rank_step_time_ns(const struct run_rank *rank, double *mean)
{
	uint64_t *starts = calloc(rank->steps > 0 ? (size_t)rank->steps : 1, sizeof(*starts));
	int first = -1, last = -1;

	*mean = 0;
	if (!starts)
		return -ENOMEM;
	for (size_t i = 0; i < rank->call_count; i++)
		note_step_start(starts, rank->steps, rank->calls[i].step, rank->calls[i].entry_ns);
	for (size_t i = 0; i < rank->python_count; i++)
		note_step_start(starts, rank->steps, rank->python[i].step,
				rank->python[i].entry_ns);
	/* Step 0 also holds the set-up before training (imports, construction): from step 1. */
	for (int step = 1; step < rank->steps; step++) {
		if (!starts[step])
			continue;
		if (first < 0)
			first = step;
		last = step;
	}
	if (last > first)
		*mean = (double)(starts[last] - starts[first]) / (last - first);
	free(starts);
	return 0;
}

/* Mean step time over the ranks in *mean, 0 when no rank ran two steps; -ENOMEM. */
static int step_time_ns(const struct run_model *model, double *mean)
{
	double total = 0, rank_mean;
	int ranks = 0;

	for (int r = 0; r < run_model_rank_limit(model); r++) {
		const struct run_rank *rank = run_model_rank(model, r);

		if (!rank)
			continue;
		if (rank_step_time_ns(rank, &rank_mean))
			return -ENOMEM;
		if (rank_mean > 0) {
			total += rank_mean;
			ranks++;
		}
	}
	*mean = ranks ? total / ranks : 0;
	return 0;
}

/* Mean duration of the calls of one function over all ranks, 0 when there is none. */
static double function_time_ns(const struct run_model *model, const struct nccl_function *function)
{
	double total = 0;
	size_t calls = 0;

	for (int r = 0; r < run_model_rank_limit(model); r++) {
		const struct run_rank *rank = run_model_rank(model, r);

		for (size_t i = 0; rank && i < rank->call_count; i++)
			if (rank->calls[i].api == function) {
				total += (double)rank->calls[i].duration_ns;
				calls++;
			}
	}
	return calls ? total / (double)calls : 0;
}

static void add_row(struct run_timing *timing, const char *name, double reference, double candidate,
		    double tolerance)
{
	struct run_timing_row *row = &timing->rows[timing->count++];

	snprintf(row->name, sizeof(row->name), "%s", name);
	row->reference_ns = reference;
	row->candidate_ns = candidate;
	row->flagged =
		reference > 0 && candidate > 0 && fabs(candidate / reference - 1) > tolerance;
}

int run_timing_summarise(const struct run_model *reference, const struct run_model *candidate,
			 double tolerance, struct run_timing *timing)
{
	double left_step, right_step;

	timing->rows = calloc(nccl_function_count() + 1, sizeof(*timing->rows));
	if (!timing->rows || step_time_ns(reference, &left_step) ||
	    step_time_ns(candidate, &right_step))
		return -ENOMEM;
	add_row(timing, "step", left_step, right_step, tolerance);
	for (size_t i = 0; i < nccl_function_count(); i++) {
		const struct nccl_function *function = nccl_function_at(i);
		double left, right;

		if (!nccl_function_is_communication(function))
			continue;
		left = function_time_ns(reference, function);
		right = function_time_ns(candidate, function);
		if (left > 0 || right > 0)
			add_row(timing, function->name, left, right, tolerance);
	}
	return 0;
}

void run_timing_destroy(struct run_timing *timing)
{
	free(timing->rows);
	*timing = (struct run_timing){ 0 };
}
