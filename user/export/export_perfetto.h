/* SPDX-License-Identifier: MIT */
/*
 * Exports a trace as Chrome Trace Event JSON, the format ui.perfetto.dev
 * and chrome://tracing open: one track group per rank (its OS pid when
 * the rank is unknown), one track per thread, each NCCL call a slice.
 *
 * The output is streamed event by event, so memory stays bounded by the
 * number of processes and threads, not by the length of the trace.
 */
#ifndef TCHECK_EXPORT_PERFETTO_H
#define TCHECK_EXPORT_PERFETTO_H

#include <stddef.h>
#include <stdio.h>

#include "export/export_jsonl.h"
#include "trace/trace_reader.h"

/*
 * Writes the trace 'reader' has left to 'out'. With EXPORT_CALLS_ONLY only
 * calls become events (no communicator markers, loss counters or step
 * track). Otherwise each process whose Python events carry a step gets a
 * "steps" thread with one slice per step; torch operators, seen at entry
 * only, are instants with their arguments (docs/trace-format.md).
 *
 * When the trace is a regular file it is read twice, so that every
 * process's track is numbered by the rank its process record gives even
 * when that record comes after its first calls; a pipe is read once and
 * processes whose rank comes late keep their OS pid as track number.
 *
 * Returns 0, or a negative errno with 'error' filled. A trace cut short
 * exports what it has and returns 0: the caller shows
 * trace_reader_truncated().
 */
int export_perfetto(struct trace_reader *reader, FILE *out, unsigned flags, char *error,
		    size_t error_size);

#endif /* TCHECK_EXPORT_PERFETTO_H */
