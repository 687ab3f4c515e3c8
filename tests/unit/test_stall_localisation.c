// SPDX-License-Identifier: MIT
/* Stalled communicators from per-rank sequence numbers: hand-built positions, known answers. */
#include <stdio.h>
#include <string.h>

#include "diagnose/stall_localisation.h"
#include "unit.h"

static struct stall_sample sample(const char *comm, const char *rank, int64_t sequence,
				  double last_progress)
{
	struct stall_sample out = { .sequence = sequence, .last_progress_seconds = last_progress };

	snprintf(out.comm, sizeof(out.comm), "%s", comm);
	snprintf(out.rank, sizeof(out.rank), "%s", rank);
	snprintf(out.node, sizeof(out.node), "node-%s", rank);
	return out;
}

UNIT_TEST(stall_localisation, the_ranks_at_the_lowest_sequence_are_named)
{
	/* World: ranks 0, 1, 3 at #41, rank 2 still at #40. A TP pair waits (all at #7). A healthy
	 * one. */
	struct stall_sample samples[] = {
		sample("world", "0", 41, 1000.0),  sample("world", "1", 41, 1000.5),
		sample("world", "2", 40, 990.0),   sample("world", "3", 41, 1000.2),
		sample("tp01", "0", 7, 995.0),	   sample("tp01", "1", 7, 995.0),
		sample("healthy", "4", 9, 1099.0), sample("healthy", "5", 9, 1099.5),
	};
	struct stall_finding *findings = NULL;
	long found = stall_localise(samples, 8, 1100.0, 60.0, &findings);

	CU_ASSERT_EQUAL_FATAL(found, 2);
	/* The missing-rank finding comes first: it is the cause. */
	CU_ASSERT_EQUAL(findings[0].kind, STALL_RANKS_MISSING);
	CU_ASSERT_STRING_EQUAL(findings[0].comm, "world");
	CU_ASSERT_EQUAL(findings[0].stuck_sequence, 41);
	CU_ASSERT_EQUAL(findings[0].highest_sequence, 41);
	CU_ASSERT_EQUAL(findings[0].rank_count, 4);
	CU_ASSERT_EQUAL_FATAL(findings[0].lagging_count, 1);
	CU_ASSERT_STRING_EQUAL(findings[0].lagging[0]->rank, "2");
	CU_ASSERT_DOUBLE_EQUAL(findings[0].idle_seconds, 99.5, 1e-9);
	CU_ASSERT_EQUAL(findings[1].kind, STALL_ALL_WAITING);
	CU_ASSERT_STRING_EQUAL(findings[1].comm, "tp01");
	CU_ASSERT_EQUAL(findings[1].stuck_sequence, 7);
	stall_findings_free(findings, found);

	/* Before the threshold nothing is stalled. */
	found = stall_localise(samples, 8, 1030.0, 60.0, &findings);
	CU_ASSERT_EQUAL(found, 0);
	stall_findings_free(findings, found);
}

UNIT_TEST(stall_localisation, several_missing_ranks_and_no_samples)
{
	struct stall_sample samples[] = {
		sample("dp", "0", 12, 500.0),
		sample("dp", "1", 10, 400.0),
		sample("dp", "2", 10, 401.0),
		sample("dp", "3", 11, 450.0),
	};
	struct stall_finding *findings = NULL;
	long found = stall_localise(samples, 4, 600.0, 30.0, &findings);

	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_EQUAL(findings[0].stuck_sequence, 11);
	CU_ASSERT_EQUAL(findings[0].highest_sequence, 12);
	CU_ASSERT_EQUAL_FATAL(findings[0].lagging_count, 2);
	CU_ASSERT_STRING_EQUAL(findings[0].lagging[0]->rank, "1");
	CU_ASSERT_STRING_EQUAL(findings[0].lagging[1]->rank, "2");
	stall_findings_free(findings, found);

	found = stall_localise(NULL, 0, 600.0, 30.0, &findings);
	CU_ASSERT_EQUAL(found, 0);
	stall_findings_free(findings, found);
}
