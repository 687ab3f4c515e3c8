// SPDX-License-Identifier: MIT
/*
 * Step and collective times of two runs side by side. A rank's step time
 * is the mean time between the first calls of consecutive steps; a run's
 * is the mean over its ranks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff/run_timing.h"
#include "model/nccl_api.h"

/* Mean step time over the ranks, 0 when no rank ran two steps. */
static double step_time_ns(const struct run_model *model)
{
	double total = 0;
	int ranks = 0;

	for (int r = 0; r < run_model_rank_limit(model); r++) {
		const struct run_rank *rank = run_model_rank(model, r);
		uint64_t first = 0, last = 0;
		int steps = 0, step = -1;

		for (size_t i = 0; rank && i < rank->call_count; i++) {
			if (rank->calls[i].step <= step)
				continue;
			step = rank->calls[i].step;
			if (!steps++)
				first = rank->calls[i].entry_ns;
			last = rank->calls[i].entry_ns;
		}
		if (steps > 1) {
			total += (double)(last - first) / (steps - 1);
			ranks++;
		}
	}
	return ranks ? total / ranks : 0;
}

/* Mean duration of the calls of one function over all ranks, 0 when there is none. */
static double function_time_ns(const struct run_model *model, const char *function)
{
	double total = 0;
	size_t calls = 0;

	for (int r = 0; r < run_model_rank_limit(model); r++) {
		const struct run_rank *rank = run_model_rank(model, r);

		for (size_t i = 0; rank && i < rank->call_count; i++)
			if (strcmp(rank->calls[i].function, function) == 0) {
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
	timing->rows = calloc(nccl_function_count() + 1, sizeof(*timing->rows));
	if (!timing->rows)
		return -ENOMEM;
	add_row(timing, "step", step_time_ns(reference), step_time_ns(candidate), tolerance);
	for (size_t i = 0; i < nccl_function_count(); i++) {
		const struct nccl_function *function = nccl_function_at(i);
		double left, right;

		if (!nccl_function_is_communication(function))
			continue;
		left = function_time_ns(reference, function->name);
		right = function_time_ns(candidate, function->name);
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
