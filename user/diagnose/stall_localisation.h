/* SPDX-License-Identifier: MIT */
/*
 * Where a job spread over many nodes is stuck, from every rank's last
 * collective sequence number per communicator (as the agents export them):
 * a communicator idle for longer than a threshold whose ranks disagree is
 * waiting for the ranks at the lowest sequence, which never issued the
 * next collective; one whose ranks agree is stuck inside that collective
 * (network or device) or waits for another communicator. Pure logic.
 */
#ifndef TCHECK_STALL_LOCALISATION_H
#define TCHECK_STALL_LOCALISATION_H

#include <stddef.h>
#include <stdint.h>

/* One rank's position on one communicator. */
struct stall_sample {
	char comm[24];
	char rank[16];
	char pod[254];
	char node[254];
	char pid[16];
	int64_t sequence;
	double last_progress_seconds; /* Unix time */
};

enum stall_kind {
	STALL_RANKS_MISSING = 1, /* some ranks never issued the next collective */
	STALL_ALL_WAITING = 2,	 /* every rank issued it: stuck inside it, or waiting elsewhere */
};

struct stall_finding {
	enum stall_kind kind;
	char comm[24];
	int64_t stuck_sequence;		     /* the collective not finished (missing: lowest + 1) */
	int64_t highest_sequence;	     /* how far the furthest rank got */
	double idle_seconds;		     /* since any rank of the communicator issued a call */
	size_t rank_count;		     /* ranks seen on the communicator */
	size_t lagging_count;		     /* ranks at the lowest sequence (missing) */
	const struct stall_sample **lagging; /* those ranks' samples, into the input */
};

/*
 * Findings for every communicator idle longer than idle_threshold_seconds
 * at now_seconds: the missing-rank ones first, then by idle time. Returns
 * the number (0 when nothing is stalled) and *findings (free with
 * stall_findings_free), or -ENOMEM.
 */
long stall_localise(const struct stall_sample *samples, size_t count, double now_seconds,
		    double idle_threshold_seconds, struct stall_finding **findings);
void stall_findings_free(struct stall_finding *findings, long count);

#endif /* TCHECK_STALL_LOCALISATION_H */
