/* SPDX-License-Identifier: MIT */
/*
 * A traced process that died: how (a fatal signal, a kill from outside, a
 * non-zero exit, or an NCCL call that reported an error), where it was (its last step, stage and
 * Python event), its last calls (the flight recorder's ring), and where every other rank of its
 * communicators stood at that moment (last call and sequence number, inside it or not). Built from
 * what the tracer already kept: nothing is read from the dead process.
 */
#ifndef TCHECK_CRASH_REPORT_H
#define TCHECK_CRASH_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diagnose/flight_recorder.h"
#include "diagnose/progress_model.h"

#define CRASH_COMMS_MAX 8

struct crash_rank {
	int32_t rank;
	int32_t job_rank; /* -1 unknown */
	uint32_t pid;
	const char *function; /* its last call there, NULL none */
	int64_t seq;
	bool inside;   /* blocked inside that call */
	bool finished; /* its process ended, or it destroyed the communicator */
};

struct crash_comm {
	uint64_t comm_id;
	int32_t nranks;
	struct crash_rank ranks[PROGRESS_MAX_RANKS];
};

struct crash_report {
	uint32_t pid;
	int32_t job_rank;
	uint64_t ended_ns;
	int32_t wait_status; /* as wait() reports it */
	int signal;	     /* the fatal signal, 0 none */
	bool core_dumped;
	int exit_status; /* when no signal */
	/* An NCCL error instead of a death: the call and what it returned (or polled). */
	const char *error_function;
	int32_t error_result;
	int32_t step;
	uint32_t stage;
	char last_python[128];
	struct flight_exception exception; /* type "" when none was seen */
	unsigned call_count;
	struct flight_call calls[FLIGHT_CALLS_MAX]; /* oldest first */
	unsigned comm_count;
	struct crash_comm comms[CRASH_COMMS_MAX];
};

/*
 * Fills 'report' for 'process' (ended), from the flight recorder and the
 * progress model as they stood when it died (before the model forgets it).
 * Job ranks are left -1 for the caller to fill.
 */
void crash_report_fill(const struct progress_model *model, const struct flight_recorder *flights,
		       const struct trace_process *process, struct crash_report *report);

/*
 * The ncclResult_t a call reports as an error: what it returned, or what an
 * async-error poll wrote; 0 when it reports none (ncclInProgress is none).
 */
int32_t crash_nccl_error_of(const struct trace_nccl_call *call);

/*
 * Fills 'report' for an NCCL call that reported error 'result' in process
 * 'pid' (job rank 'job_rank'): the process lives on, but its collectives
 * failed. The rest as crash_report_fill.
 */
void crash_report_fill_nccl_error(const struct progress_model *model,
				  const struct flight_recorder *flights,
				  const struct trace_nccl_call *call, int32_t result,
				  int32_t job_rank, struct crash_report *report);

/* One line a person reads (no newline). */
void crash_report_text(const struct crash_report *report, char *text, size_t size);

/* {"kind":"crash", ...}; NULL when out of memory. */
json_t *crash_report_json(const struct crash_report *report);

#endif /* TCHECK_CRASH_REPORT_H */
