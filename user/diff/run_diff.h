/* SPDX-License-Identifier: MIT */
/*
 * Compares two runs of one job (run_model.h) and lists where they part:
 * per job rank and communicator, the first call that is missing, extra or
 * different (count, datatype, op, root or peer, communicator); per rank,
 * the first different Python call, argument or torch operator; and a
 * different number of ranks, steps or communicators. What always differs
 * (pids, addresses, handles, hashes, times) is never compared.
 */
#ifndef TCHECK_RUN_DIFF_H
#define TCHECK_RUN_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "diff/run_model.h"

enum run_value_kind {
	RUN_VALUE_ABSENT, /* the side has nothing there */
	RUN_VALUE_NUMBER,
	RUN_VALUE_TEXT,
};

struct run_value {
	enum run_value_kind kind;
	int64_t number;
	char text[160];
};

struct run_difference {
	int job_rank;	       /* -1: the job as a whole */
	int step;	       /* -1: before the first step, or not about one step */
	char communicator[48]; /* "comm 1 (2 ranks)", "" when not about one */
	/* Its comm_id in the reference run (the candidate's when only it has it); 0 unknown. */
	uint64_t comm_id;
	const char *what; /* "count", "datatype", "missing_call", ... (docs: man page) */
	struct run_value reference;
	struct run_value candidate;
	char event[256]; /* the call where the runs part */
	/* Where each run has that call, on its side's clock; 0 where it has none. */
	uint64_t reference_ns, candidate_ns;
};

struct run_diff {
	struct run_difference *differences;
	size_t count, capacity;
};

/* Fills 'diff' (zeroed by the caller). Returns 0 or -ENOMEM. */
int run_diff_compare(const struct run_model *reference, const struct run_model *candidate,
		     struct run_diff *diff);
void run_diff_destroy(struct run_diff *diff);

/* A value as the reports write it: the number, the text, or "none". */
void run_value_describe(const struct run_value *value, char *text, size_t size);

/* "ncclAllReduce count=1000 datatype=ncclFloat32 op=ncclSum". */
void run_call_describe(const struct run_call *call, char *text, size_t size);

#endif /* TCHECK_RUN_DIFF_H */
