/* SPDX-License-Identifier: MIT */
/*
 * Step time per rank, from the progress model: the time between a rank's
 * arrivals at the collectives that end two consecutive steps of a
 * communicator. What the agent exports as tcheck_step_duration_seconds.
 */
#ifndef TCHECK_STEP_TIME_H
#define TCHECK_STEP_TIME_H

#include <stddef.h>
#include <stdint.h>

#include "diagnose/progress_model.h"

struct rank_step_time {
	int32_t rank; /* in the communicator */
	uint32_t pid;
	double seconds;
};

/*
 * The step times of the ranks of 'comm' for its step 'step', just
 * completed, at most 'capacity' of them; returns how many. None for the
 * first step (it has no start) or when the steps' ends are no longer
 * remembered.
 */
size_t step_time_of_ranks(const struct progress_comm *comm, int64_t step,
			  struct rank_step_time *times, size_t capacity);

#endif /* TCHECK_STEP_TIME_H */
