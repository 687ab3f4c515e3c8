/* SPDX-License-Identifier: MIT */
/*
 * A hang found in the job's state on arrival (trace records of kind
 * TRACE_RECORD_ARRIVAL): the rank the others wait for, the collective and
 * sequence number they wait in, what that rank is doing, and every rank's
 * Python stack. The same records make the same finding live (attach,
 * record --pid, the agent) and offline (check).
 */
#ifndef TCHECK_ARRIVAL_FINDING_H
#define TCHECK_ARRIVAL_FINDING_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

#define ARRIVAL_RANKS_MAX 256

/* One process's state as read on arrival, copied out of its record. */
struct arrival_rank {
	uint32_t pid;
	int32_t rank;
	int64_t seq;
	char collective[64]; /* the collective it is inside, "" none */
	char stack[512];     /* its Python frames, innermost first, " < " between */
};

/* The ranks of the latest arrival reading (launchers left out), for the finding's stacks. */
struct arrival_ranks {
	uint64_t timestamp_ns; /* of the reading they belong to */
	struct arrival_rank ranks[ARRIVAL_RANKS_MAX];
	unsigned count;
};

/*
 * Keeps a process's state (a reading with another time starts the list
 * again). Returns true when the record names the process as the one the
 * others wait for: a hang to report.
 */
bool arrival_ranks_add(struct arrival_ranks *ranks, const struct trace_arrival_state *state);

/* The finding of a lagging process's record: one line (no newline), and a JSON object. */
void arrival_finding_text(const struct arrival_ranks *ranks,
			  const struct trace_arrival_state *lagging, char *text, size_t size);
json_t *arrival_finding_json(const struct arrival_ranks *ranks,
			     const struct trace_arrival_state *lagging);

#endif /* TCHECK_ARRIVAL_FINDING_H */
