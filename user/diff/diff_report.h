/* SPDX-License-Identifier: MIT */
/* Writes a diff's differences and timing summary: sentences, or JSON Lines. */
#ifndef TCHECK_DIFF_REPORT_H
#define TCHECK_DIFF_REPORT_H

#include <stdio.h>

#include "diff/run_diff.h"
#include "diff/run_timing.h"

/* One line per difference, then the timing table. Returns 0 or a negative errno. */
int diff_report_text(FILE *out, const struct run_diff *diff, const struct run_timing *timing);

/*
 * {"kind":"difference","job_rank":R,"step":S,"communicator":...,"what":...,
 * "reference":...,"candidate":...,"event":...} per difference, then
 * {"kind":"timing","name":...,"reference_ns":...,"candidate_ns":...,"flagged":...}
 * per timing row. Returns 0 or a negative errno.
 */
int diff_report_json(FILE *out, const struct run_diff *diff, const struct run_timing *timing);

#endif /* TCHECK_DIFF_REPORT_H */
