/* SPDX-License-Identifier: MIT */
/*
 * Rule violations as JSON Lines, the same from every checker: `check
 * --rules --jsonl`, `record`/`attach --rules --events` and `agent --rules
 * --events`. One object a line:
 *   {"kind":"violation","rule":N,"pid":P,"job_rank":R,"step":S,
 *    "relation":...,"invariant":...,"event":{...},"other":{...}}
 * The job rank is the process's RANK (from its process record) or, for a
 * Python event, the rank the tracer gave it; null when it has none (a
 * single process), as every report says "no job rank". A step is null when
 * unknown. The events say "job_rank" the same way; an NCCL call's rank in
 * its communicator is "comm_rank", beside "comm" and "seq".
 */
#ifndef TCHECK_VIOLATION_STREAM_H
#define TCHECK_VIOLATION_STREAM_H

#include <stdio.h>

#include "base/u64_map.h"

struct infer_event;
struct rule_violation;
struct trace_record;

struct violation_stream {
	FILE *out;		  /* NULL: nothing is written */
	struct u64_map job_ranks; /* pid -> RANK + 1 */
};

void violation_stream_init(struct violation_stream *stream, FILE *out);
void violation_stream_free(struct violation_stream *stream);

/* Learns job ranks from process records; other records are ignored. */
void violation_stream_note(struct violation_stream *stream, const struct trace_record *record);

/* The job rank of a violation's process, or -1. */
int violation_stream_job_rank(const struct violation_stream *stream,
			      const struct rule_violation *violation);

/* The job rank of an event's process, or -1. */
int violation_stream_event_job_rank(const struct violation_stream *stream,
				    const struct infer_event *event);

/* Writes one violation as a line and flushes it (live readers follow the file). */
void violation_stream_write(struct violation_stream *stream,
			    const struct rule_violation *violation);

#endif /* TCHECK_VIOLATION_STREAM_H */
