/* SPDX-License-Identifier: MIT */
/*
 * The period of a rank's call pattern: where its steps begin when no step
 * comes from Python. A step is one turn of the whole pattern, so a call
 * that recurs within a step (a tensor-parallel all-reduce of one size in
 * the forward and the backward) does not cut it.
 */
#ifndef TCHECK_CALL_PERIOD_H
#define TCHECK_CALL_PERIOD_H

#include <stdbool.h>
#include <stddef.h>

/* Whether items 'a' and 'b' of the sequence are the same call. */
typedef bool (*call_period_same_fn)(const void *sequence, size_t a, size_t b);

/*
 * The smallest period of items [start, count) of the sequence, over the
 * smallest 'start' (calls made once before the steps: set-up) for which one
 * exists: every item equals the one a period later, and the pattern turns
 * at least twice (a last, cut-off turn is allowed). Returns 0 and leaves
 * 'start' alone when the sequence has no such period.
 */
size_t call_period_find(const void *sequence, size_t count, call_period_same_fn same,
			size_t *start);

#endif /* TCHECK_CALL_PERIOD_H */
