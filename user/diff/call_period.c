// SPDX-License-Identifier: MIT
/*
 * Finds the period of a rank's call pattern (call_period.h): tried shortest
 * first, each candidate rejected at its first mismatch, so a periodic
 * sequence of n calls costs about n times its period; a bounded number of
 * comparisons, then no period.
 */
#include "diff/call_period.h"

/* Set-up calls tried before the steps: at most this share of the sequence, and this many. */
#define SETUP_SHARE 4
#define SETUP_MAX 64
/* Comparisons spent before giving up (an aperiodic sequence of many calls). */
#define COMPARISON_BUDGET (64u * 1024 * 1024)

static bool periodic_from(const void *sequence, size_t count, call_period_same_fn same,
			  size_t start, size_t period, size_t *budget)
{
	for (size_t i = start; i + period < count; i++) {
		if (*budget == 0)
			return false;
		--*budget;
		if (!same(sequence, i, i + period))
			return false;
	}
	return true;
}

size_t call_period_find(const void *sequence, size_t count, call_period_same_fn same, size_t *start)
{
	size_t budget = COMPARISON_BUDGET;

	for (size_t from = 0; from <= count / SETUP_SHARE && from <= SETUP_MAX; from++)
		for (size_t period = 1; from + 2 * period <= count && budget; period++)
			if (periodic_from(sequence, count, same, from, period, &budget)) {
				*start = from;
				return period;
			}
	return 0;
}
