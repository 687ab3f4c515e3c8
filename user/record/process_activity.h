/* SPDX-License-Identifier: MIT */
/*
 * What a traced process is doing, read from /proc with no help from it:
 * its CPU time and I/O counters, and its threads' states. The recorder
 * writes one sample per process with each statistics record, so the
 * detectors live and `check` offline judge a lagging rank on the same
 * samples (docs/hang-detection.md, "Pauses").
 */
#ifndef TCHECK_PROCESS_ACTIVITY_H
#define TCHECK_PROCESS_ACTIVITY_H

#include <stdint.h>

#include "model/trace_records.h"

/*
 * Fills 'sample' for process 'pid' at 'now_ns'. Returns 0, or a negative
 * errno when its stat file cannot be read (the process has gone). I/O
 * counters that cannot be read (no permission) are left 0.
 */
int process_activity_read(uint32_t pid, uint64_t now_ns, struct trace_activity_sample *sample);

#endif /* TCHECK_PROCESS_ACTIVITY_H */
