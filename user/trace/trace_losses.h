/* SPDX-License-Identifier: MIT */
/*
 * What a trace's recording lost, as its readers say it: the recorder's
 * cumulative loss counters, kept in the trace's stats records, become one
 * warning when the trace is checked, inferred from or merged, so a
 * finding built on a trace with holes is never taken at face value.
 */
#ifndef TCHECK_TRACE_LOSSES_H
#define TCHECK_TRACE_LOSSES_H

#include <stddef.h>

#include "model/trace_records.h"
#include "trace/trace_reader.h"

/*
 * Writes into 'out' the sentence naming each kind of loss the counters
 * hold (calls, process notices, Python events), with what it can do to
 * the findings. Returns 1 when there was a loss, 0 (and "") when none.
 */
int trace_losses_sentence(const struct trace_stats *counters, char *out, size_t size);

/*
 * Warns, once the trace was read to its end, of what of it is missing:
 * damaged chunks skipped, and a trace cut short or never closed (when its
 * last record was written). Nothing when the trace is whole.
 */
void trace_incomplete_warn(struct trace_reader *reader);

/* Warns, once the trace was read, of what its recording lost; nothing when it lost nothing. */
void trace_losses_warn(const char *path, const struct trace_reader *reader);

#endif /* TCHECK_TRACE_LOSSES_H */
