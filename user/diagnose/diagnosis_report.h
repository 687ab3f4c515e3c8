/* SPDX-License-Identifier: MIT */
/*
 * What the hang and slowdown detectors found, as one structure, and its
 * two forms: a line a person reads and a JSON Lines object for scripts.
 */
#ifndef TCHECK_DIAGNOSIS_REPORT_H
#define TCHECK_DIAGNOSIS_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "diagnose/progress_model.h"

enum diagnosis_kind { DIAGNOSIS_HANG = 1, DIAGNOSIS_SLOWDOWN = 2, DIAGNOSIS_MISMATCH = 3 };

enum hang_class {
	HANG_HOST = 1,		    /* a rank never issued the collective */
	HANG_NETWORK = 2,	    /* all issued; work requests outstanding, no completions */
	HANG_DEVICE = 3,	    /* all issued; no work-request activity */
	HANG_DEVICE_OR_NETWORK = 4, /* all issued; no work-request probes to tell which */
};

/* A rank named by a report, with what it was last doing on the communicator. */
struct diagnosis_rank {
	int32_t rank;	  /* in the communicator */
	int32_t job_rank; /* RANK of the process, -1 unknown */
	uint32_t pid;
	struct progress_event last;
	/*
	 * A rank that never issued the call: the first call its own pattern
	 * says it did not make, on whichever communicator (function NULL: none
	 * found).
	 */
	struct progress_call_mark missed;
	bool missed_from_pattern; /* its own pattern; false: the collective its peers issued */
};

struct diagnosis_report {
	enum diagnosis_kind kind;
	uint64_t comm_id;
	int32_t nranks;
	uint64_t detected_ns;	 /* when the evidence was complete */
	uint64_t reported_ns;	 /* when it was published */
	double expected_step_ns; /* the job's expected step */
	/* The collective concerned: where the job is stuck, or where a slow step lost its time. */
	const char *function;
	uint64_t count;
	int64_t collective_index; /* n-th collective on the communicator */
	int64_t seq;		  /* NCCL sequence number of that call */
	/* Hangs. */
	enum hang_class hang_class;
	uint64_t stalled_ns;	 /* time without progress */
	uint64_t quiet_since_ns; /* the lagging ranks' last call on any communicator */
	unsigned waiting_comms;	 /* other stuck communicators that wait on this one */
	/* Ranks seen blocked inside the collective concerned (calls in flight), since when. */
	unsigned inside_count;
	uint64_t inside_since_ns;
	/* Every rank that never issued it is blocked inside a call on another communicator. */
	bool waits_elsewhere;
	/* The communicator is still being created: ranks[] never entered its init call. */
	bool creating;
	/*
	 * No communicator involved: the job's processes stopped stepping, and
	 * ranks[] holds each one's step and last Python call (expected_step_ns is
	 * the longest step it learned).
	 */
	bool step_progress;
	unsigned rank_count; /* lagging ranks (hang) or the straggler (slowdown) */
	struct diagnosis_rank ranks[PROGRESS_MAX_RANKS];
	/* Slowdowns. */
	int64_t step;		      /* the slow step on this communicator */
	double step_ns;		      /* its duration: so far, plus the expected rest */
	double comm_expected_step_ns; /* the communicator's expected step */
	double late_ns;		      /* how late the step is at the stage */
	double excess_ns;	      /* beyond the expected wait at the stage */
	int in_collective; /* 1: the time went inside the previous call, 0: compute before */
	const char *previous_function; /* the call before the stage, NULL at a step's start */
	uint64_t skew_ns;	       /* the straggler's lateness at the stage */
	uint64_t lead_ns;	       /* how long after the latest of the other ranks it came */
	/*
	 * The others arrived with it, having waited for it inside blocking
	 * calls: lead_ns is how much longer it computed than any of them.
	 */
	bool others_waited;
	/* The straggler's arrival at the communicator's previous collective: its delay came after.
	 */
	uint64_t since_ns;
	/* Mismatches: ranks[] holds every rank's call; the rank outside the majority, or -1. */
	int32_t odd_rank;
};

const char *hang_class_name(enum hang_class hang_class);

/* One line (no newline) a person reads. */
void diagnosis_report_text(const struct diagnosis_report *report, char *text, size_t size);

/* The JSON Lines object of a report ("kind": "hang", "slowdown" or "mismatch"); NULL when out of
 * memory. */
json_t *diagnosis_report_json(const struct diagnosis_report *report);

#endif /* TCHECK_DIAGNOSIS_REPORT_H */
