// SPDX-License-Identifier: MIT
/* Writes both runs of a diff, and their differences, as one Perfetto file. */
#include "diff/diff_perfetto.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>

/* Process ids: the candidate's ranks after the reference's. */
#define CANDIDATE_PID_BASE 100000
/* Python calls and torch events share one track per rank, after the communicators'. */
#define PYTHON_TRACK 1000

struct side {
	const char *name;
	const struct run_model *model;
	int pid_base;
	uint64_t start_ns; /* the run's first event: each run is shown from its start */
};

static uint64_t run_start(const struct run_model *model)
{
	uint64_t start = UINT64_MAX;

	for (int r = 0; r < run_model_rank_limit(model); r++) {
		const struct run_rank *rank = run_model_rank(model, r);

		for (size_t i = 0; rank && i < rank->call_count; i++)
			if (rank->calls[i].entry_ns < start)
				start = rank->calls[i].entry_ns;
		for (size_t i = 0; rank && i < rank->python_count; i++)
			if (rank->python[i].entry_ns < start)
				start = rank->python[i].entry_ns;
	}
	return start == UINT64_MAX ? 0 : start;
}

static double microseconds(const struct side *side, uint64_t ns)
{
	return ns > side->start_ns ? (double)(ns - side->start_ns) / 1000.0 : 0.0;
}

static int append(json_t *events, json_t *event)
{
	return event ? json_array_append_new(events, event) : -1;
}

static int add_rank(json_t *events, const struct side *side, const struct run_rank *rank)
{
	int pid = side->pid_base + rank->job_rank, failed = 0;
	char name[64];

	snprintf(name, sizeof(name), "%s rank %d", side->name, rank->job_rank);
	failed |= append(events, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name", "ph",
					   "M", "pid", pid, "args", "name", name));
	for (size_t i = 0; i < rank->call_count && !failed; i++) {
		const struct run_call *call = &rank->calls[i];

		failed |= append(events,
				 json_pack("{s:s, s:s, s:f, s:f, s:i, s:i, s:{s:i}}", "name",
					   call->api->name, "ph", "X", "ts",
					   microseconds(side, call->entry_ns), "dur",
					   (double)call->duration_ns / 1000.0, "pid", pid, "tid",
					   call->communicator, "args", "step", call->step));
	}
	for (size_t i = 0; i < rank->python_count && !failed; i++) {
		const struct run_python_event *event = &rank->python[i];

		failed |= append(events, json_pack("{s:s, s:s, s:s, s:f, s:i, s:i, s:{s:i, s:s}}",
						   "name", event->name, "ph", "i", "s", "t", "ts",
						   microseconds(side, event->entry_ns), "pid", pid,
						   "tid", PYTHON_TRACK, "args", "step", event->step,
						   "arguments", event->arguments));
	}
	return failed;
}

static int add_side(json_t *events, const struct side *side)
{
	for (int r = 0; r < run_model_rank_limit(side->model); r++) {
		const struct run_rank *rank = run_model_rank(side->model, r);

		if (rank && add_rank(events, side, rank))
			return -1;
	}
	return 0;
}

/* A difference as a process-wide instant on one side's rank, where that side has the call. */
static int mark(json_t *events, const struct side *side, const struct run_difference *difference,
		uint64_t at_ns)
{
	char name[96], reference[192], candidate[192];

	if (!at_ns || difference->job_rank < 0)
		return 0;
	snprintf(name, sizeof(name), "difference: %s", difference->what);
	run_value_describe(&difference->reference, reference, sizeof(reference));
	run_value_describe(&difference->candidate, candidate, sizeof(candidate));
	return append(events,
		      json_pack("{s:s, s:s, s:s, s:f, s:i, s:i, s:{s:s, s:s, s:s}}", "name", name,
				"ph", "i", "s", "p", "ts", microseconds(side, at_ns), "pid",
				side->pid_base + difference->job_rank, "tid", 0, "args", "event",
				difference->event, "reference", reference, "candidate", candidate));
}

int diff_perfetto_write(FILE *out, const struct run_model *reference,
			const struct run_model *candidate, const struct run_diff *diff)
{
	struct side sides[2] = {
		{ "reference", reference, 0, run_start(reference) },
		{ "candidate", candidate, CANDIDATE_PID_BASE, run_start(candidate) },
	};
	json_t *events = json_array();
	int failed = !events;

	for (int s = 0; s < 2 && !failed; s++)
		failed |= add_side(events, &sides[s]);
	for (size_t i = 0; i < diff->count && !failed; i++) {
		failed |= mark(events, &sides[0], &diff->differences[i],
			       diff->differences[i].reference_ns);
		failed |= mark(events, &sides[1], &diff->differences[i],
			       diff->differences[i].candidate_ns);
	}
	if (!failed) {
		json_t *root = json_pack("{s:O}", "traceEvents", events);

		failed = !root || json_dumpf(root, out, JSON_COMPACT) != 0 || fflush(out) != 0;
		json_decref(root);
	}
	json_decref(events);
	if (failed && !errno)
		errno = ENOMEM;
	return failed ? -1 : 0;
}
