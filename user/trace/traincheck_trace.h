/* SPDX-License-Identifier: MIT */
/*
 * Reads TrainCheck's JSON Lines traces (trace_API_* function calls,
 * trace_VAR_* variable states) as trace records, so that infer and check
 * run on the same input as TrainCheck's own engine. A call becomes a
 * Python call record at its "(post)" record: function name, process,
 * thread, rank, step and stage from its meta variables, primitive
 * arguments, return value, callers. A variable state becomes a Python call
 * record named "state:VAR_NAME" whose arguments are the variable's
 * primitive attributes (data hash, grad, dtype, shape, requires_grad...).
 */
#ifndef TCHECK_TRAINCHECK_TRACE_H
#define TCHECK_TRAINCHECK_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace/trace_record_callback.h"

/* Prefix of the names given to variable states. */
#define TRAINCHECK_STATE_PREFIX "state:"

/* What one file held. */
struct traincheck_stats {
	uint64_t lines;
	uint64_t calls;	     /* paired pre and post records */
	uint64_t unfinished; /* pre records never closed: handed out with no duration */
	uint64_t states;     /* state_change records */
	uint64_t ignored;    /* records of a type this reader does not know */
};

/*
 * Whether 'path' holds a TrainCheck trace: its first character other than
 * white space opens a JSON object. 1 yes, 0 no, -1 when it cannot be read
 * (errno set).
 */
int traincheck_trace_detect(const char *path);

/*
 * Hands every record of a TrainCheck trace read from 'in' to 'callback';
 * 'name' names the input in error messages. Returns the records handed
 * out, or -1 with 'error' saying why ("FILE:LINE: ..."): a line that is
 * not a JSON object, a record without its type or function, or the
 * callback's failure. The strings of a record live until the callback
 * returns.
 */
int64_t traincheck_trace_read(FILE *in, const char *name, trace_replay_fn callback, void *context,
			      struct traincheck_stats *stats, char *error, size_t error_size);

#endif /* TCHECK_TRAINCHECK_TRACE_H */
