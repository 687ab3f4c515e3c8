/* SPDX-License-Identifier: MIT */
/*
 * The time side of a diff: mean step time and mean time per collective
 * function, reference against candidate, each flagged when the candidate
 * is off by more than a tolerance. Times never make two runs differ.
 */
#ifndef TCHECK_RUN_TIMING_H
#define TCHECK_RUN_TIMING_H

#include <stddef.h>

#include "diff/run_model.h"

struct run_timing_row {
	char name[48]; /* "step", or the function: "ncclAllReduce" */
	double reference_ns;
	double candidate_ns;
	int flagged; /* |candidate / reference - 1| > tolerance */
};

struct run_timing {
	struct run_timing_row *rows;
	size_t count;
};

/* Fills 'timing' (zeroed by the caller). Returns 0 or -ENOMEM. */
int run_timing_summarise(const struct run_model *reference, const struct run_model *candidate,
			 double tolerance, struct run_timing *timing);
void run_timing_destroy(struct run_timing *timing);

#endif /* TCHECK_RUN_TIMING_H */
