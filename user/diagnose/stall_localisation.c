// SPDX-License-Identifier: MIT
/* Stalled communicators and the ranks behind them, from per-rank sequence numbers. */
#include "diagnose/stall_localisation.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int compare_findings(const void *a, const void *b)
{
	const struct stall_finding *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->idle_seconds != y->idle_seconds)
		return x->idle_seconds > y->idle_seconds ? -1 : 1;
	return strcmp(x->comm, y->comm);
}

/* The finding for one communicator, or kind 0 when it is not stalled. */
static int examine(const struct stall_sample *samples, size_t count, const char *comm,
		   double now_seconds, double threshold, struct stall_finding *finding)
{
	int64_t lowest = INT64_MAX, highest = INT64_MIN;
	double latest = 0;

	memset(finding, 0, sizeof(*finding));
	for (size_t i = 0; i < count; i++) {
		if (strcmp(samples[i].comm, comm) != 0)
			continue;
		finding->rank_count++;
		if (samples[i].sequence < lowest)
			lowest = samples[i].sequence;
		if (samples[i].sequence > highest)
			highest = samples[i].sequence;
		if (samples[i].last_progress_seconds > latest)
			latest = samples[i].last_progress_seconds;
	}
	if (!finding->rank_count || now_seconds - latest <= threshold)
		return 0;
	strncpy(finding->comm, comm, sizeof(finding->comm) - 1);
	finding->idle_seconds = now_seconds - latest;
	finding->highest_sequence = highest;
	if (lowest == highest) {
		finding->kind = STALL_ALL_WAITING;
		finding->stuck_sequence = highest;
		return 0;
	}
	finding->kind = STALL_RANKS_MISSING;
	finding->stuck_sequence = lowest + 1;
	finding->lagging = calloc(finding->rank_count, sizeof(*finding->lagging));
	if (!finding->lagging)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++)
		if (strcmp(samples[i].comm, comm) == 0 && samples[i].sequence == lowest)
			finding->lagging[finding->lagging_count++] = &samples[i];
	return 0;
}

long stall_localise(const struct stall_sample *samples, size_t count, double now_seconds,
		    double idle_threshold_seconds, struct stall_finding **findings)
{
	struct stall_finding *out = calloc(count ? count : 1, sizeof(*out));
	long found = 0;

	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < count; i++) {
		size_t earlier = 0;

		while (earlier < i && strcmp(samples[earlier].comm, samples[i].comm) != 0)
			earlier++;
		if (earlier < i)
			continue; /* this communicator was examined already */
		if (examine(samples, count, samples[i].comm, now_seconds, idle_threshold_seconds,
			    &out[found])) {
			stall_findings_free(out, found + 1);
			return -ENOMEM;
		}
		if (out[found].kind)
			found++;
	}
	qsort(out, (size_t)found, sizeof(*out), compare_findings);
	*findings = out;
	return found;
}

void stall_findings_free(struct stall_finding *findings, long count)
{
	if (!findings)
		return;
	for (long i = 0; i < count; i++)
		free(findings[i].lagging);
	free(findings);
}
