/* SPDX-License-Identifier: MIT */
/* Reads every record of one trace file into a callback, with a progress line on a terminal. */
#ifndef TCHECK_TRACE_REPLAY_H
#define TCHECK_TRACE_REPLAY_H

#include <stdint.h>

#include "trace/trace_record_callback.h"

/*
 * Hands every record of 'path' to 'callback'. Returns the records read, or
 * -1 after printing why the trace could not be read or the callback failed.
 */
int64_t trace_replay(const char *path, trace_replay_fn callback, void *context, int progress);

#endif /* TCHECK_TRACE_REPLAY_H */
