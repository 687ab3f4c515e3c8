/* SPDX-License-Identifier: MIT */
/*
 * Collectives whose ranks disagree on what they are: at the same position
 * on a communicator, one rank called another function, or passed another
 * element count, than the others. NCCL and gloo then reduce garbage, hang
 * or fail with an unrelated transport error; the report comes as the last
 * rank enters, before any of that. The odd rank is the one outside the
 * majority; when no majority exists (two ranks) every rank's value is
 * listed and none is named.
 */
#ifndef TCHECK_MISMATCH_DETECTOR_H
#define TCHECK_MISMATCH_DETECTOR_H

#include <stdbool.h>

#include "diagnose/diagnosis_report.h"
#include "diagnose/progress_model.h"

/*
 * Looks at collective 'index' of 'comm', which every rank has just
 * reached. Returns true with 'report' filled (kind DIAGNOSIS_MISMATCH:
 * ranks[] every rank's call, rank_count of them; odd_rank the rank outside
 * the majority, or -1) when the ranks' calls differ.
 */
bool mismatch_detector_check(const struct progress_model *model, const struct progress_comm *comm,
			     int64_t index, struct diagnosis_report *report);

#endif /* TCHECK_MISMATCH_DETECTOR_H */
