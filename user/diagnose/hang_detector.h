/* SPDX-License-Identifier: MIT */
/*
 * Hang detection: a communicator with no new call for hang_factor times
 * the expected step is stuck. The report names the collective it is stuck
 * at, the ranks that never issued it, what they were last doing, and
 * whether the stall is on the host, the network or the device (from the
 * processes' work-request samples, when there are any).
 */
#ifndef TCHECK_HANG_DETECTOR_H
#define TCHECK_HANG_DETECTOR_H

#include <stdbool.h>

#include "diagnose/diagnosis_report.h"
#include "diagnose/pause_tracker.h"
#include "diagnose/progress_model.h"
#include "model/trace_records.h"

#define HANG_MAX_SAMPLED_PROCESSES 256

/* The latest work-request sample of each process that has them. */
struct network_samples {
	unsigned count;
	struct trace_network_sample latest[HANG_MAX_SAMPLED_PROCESSES];
	struct trace_network_sample earlier[HANG_MAX_SAMPLED_PROCESSES]; /* the one before */
};

void network_samples_add(struct network_samples *samples,
			 const struct trace_network_sample *sample);

/*
 * The class of a hang where every rank issued the collective, from the
 * samples of the ranks' processes: network when work requests are in
 * flight and none completed since 'since_ns'; device when none is in
 * flight; device-or-network when no process has samples.
 */
enum hang_class hang_classify_issued(const struct network_samples *samples, const uint32_t *pids,
				     unsigned pid_count, uint64_t since_ns);

/*
 * Checks every communicator at the model's current time. Fills up to
 * 'capacity' reports (each communicator is reported once) and returns how
 * many; reports naming lagging ranks come first. While some rank is left
 * behind on a communicator, the stuck communicators whose ranks all
 * issued their last collective wait on it: they are counted in the first
 * report's waiting_comms, not reported on their own. Without one, such
 * communicators stuck together are one stall, reported once, on the one
 * that went quiet first.
 *
 * 'pauses' (NULL: none) says what each process did since its last call: a
 * rank left behind that is at work of its own, or pauses where it paused
 * before, is not stuck while that lasts (its stretch is held, to be
 * reported as a pause when it comes back).
 */
unsigned hang_detector_check(struct progress_model *model, const struct network_samples *samples,
			     struct pause_tracker *pauses, struct diagnosis_report *reports,
			     unsigned capacity);

#endif /* TCHECK_HANG_DETECTOR_H */
