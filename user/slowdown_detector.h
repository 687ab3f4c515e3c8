/* SPDX-License-Identifier: MIT */
/*
 * Slowdown detection: a completed step longer than slowdown_threshold
 * times the expected one. The stage is the position in the step whose
 * wait grew the most (the collective, or the compute gap before it); the
 * straggler is the rank that arrived last there. Waits measured at the
 * last arrival only grow on the critical path, so a delay a pipeline
 * bubble absorbs does not lengthen the step and is not reported.
 */
#ifndef TCHECK_SLOWDOWN_DETECTOR_H
#define TCHECK_SLOWDOWN_DETECTOR_H

#include <stdbool.h>

#include "diagnosis_report.h"
#include "progress_model.h"

/* Looks at step 'step' of 'comm', just completed. Returns true with 'report' filled when slow. */
bool slowdown_detector_check(const struct progress_model *model, const struct progress_comm *comm,
			     int64_t step, struct diagnosis_report *report);

#endif /* TCHECK_SLOWDOWN_DETECTOR_H */
