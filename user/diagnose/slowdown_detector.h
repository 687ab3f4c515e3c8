/* SPDX-License-Identifier: MIT */
/*
 * Slowdown detection, judged at every collective as its last rank
 * arrives: the communicator's step is late there by more than
 * slowdown_threshold - 1 job steps, the wait before this collective grew
 * by as much, and one rank's late arrival explains it (it came more than
 * the threshold after all the others). The stage is that collective, or the compute gap before it;
 * the straggler is the rank that arrived last. Waits measured at the last
 * arrival only grow on the critical path, so a delay a pipeline bubble
 * absorbs does not make the step late and is not reported; every rank
 * late together (they all waited for something else) names no straggler
 * and is not reported either, nor a straggler within the job's own jitter.
 * Where calls block (gloo, NCCL's blocking mode, a receive posted before
 * its send), the ranks that waited for a straggler inside those calls
 * arrive with it: then the straggler is the rank that spent more time
 * outside calls since the communicator's previous collective than any
 * other, by more than the threshold and beyond the job's jitter of that.
 */
#ifndef TCHECK_SLOWDOWN_DETECTOR_H
#define TCHECK_SLOWDOWN_DETECTOR_H

#include <stdbool.h>

#include "diagnose/diagnosis_report.h"
#include "diagnose/progress_model.h"

/*
 * Looks at collective 'index' of 'comm', which every rank has just
 * reached. Returns true with 'report' filled when a straggler made the
 * step late there.
 */
bool slowdown_detector_check(const struct progress_model *model, const struct progress_comm *comm,
			     int64_t index, struct diagnosis_report *report);

/*
 * Learns the communicator's jitter from collective 'index', every rank
 * reached and judged: how long its last rank came after the others (and
 * how much longer the rank that computed longest computed), running mean
 * and mean deviation. A straggler is reported only when it came later than
 * the mean plus SLOWDOWN_JITTER_FACTOR deviations: a job of short steps on
 * a busy host has ranks late by a good share of a step all the time, while
 * a pipeline stage that always comes last by its bubble has no deviation.
 * Until a communicator has learned from SLOWDOWN_JITTER_SAMPLES
 * collectives, the widest bound of those of the job that have stands in.
 */
#define SLOWDOWN_JITTER_FACTOR 8.0
#define SLOWDOWN_JITTER_SAMPLES 6 /* collectives learned from before anything is judged */
void slowdown_detector_learn(struct progress_comm *comm, int64_t index);

/*
 * The collective that the call just added completed (every rank reached
 * it), or -1: each once, so a call seen again (in flight, then returned or
 * still open) does not have its collective judged again.
 */
int64_t slowdown_completed_collective(struct progress_comm *comm, int32_t rank);

#endif /* TCHECK_SLOWDOWN_DETECTOR_H */
