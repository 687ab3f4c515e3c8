/* SPDX-License-Identifier: MIT */
/*
 * Both runs of a diff side by side in one Chrome Trace Event file (for
 * ui.perfetto.dev): each side's ranks as processes ("reference rank 0",
 * "candidate rank 0", ...), each run from its own start, its communication
 * calls on one track per communicator, its Python calls and torch events as
 * instants, and every difference marked on both runs where they part.
 */
#ifndef TCHECK_DIFF_PERFETTO_H
#define TCHECK_DIFF_PERFETTO_H

#include <stdio.h>

#include "diff/run_diff.h"
#include "diff/run_model.h"

/* Returns 0, or -1 when the file could not be written (errno set). */
int diff_perfetto_write(FILE *out, const struct run_model *reference,
			const struct run_model *candidate, const struct run_diff *diff);

#endif /* TCHECK_DIFF_PERFETTO_H */
