// SPDX-License-Identifier: MIT
/* A hang named by the job's state on arrival, as a line and as JSON; see arrival_finding.h. */
#include "diagnose/arrival_finding.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static void stack_text(const struct trace_python_stack *stack, char *text, size_t size)
{
	size_t used = 0;

	text[0] = '\0';
	for (uint32_t i = 0; i < stack->depth && used < size; i++) {
		int written = snprintf(text + used, size - used, "%s%s", i ? " < " : "",
				       stack->frames[i] ? stack->frames[i] : "?");

		if (written < 0)
			break;
		used += (size_t)written;
	}
}

bool arrival_ranks_add(struct arrival_ranks *ranks, const struct trace_arrival_state *state)
{
	struct arrival_rank *kept = NULL;

	if (ranks->timestamp_ns != state->timestamp_ns) {
		ranks->timestamp_ns = state->timestamp_ns;
		ranks->count = 0;
	}
	for (unsigned i = 0; i < ranks->count; i++)
		if (ranks->ranks[i].pid == state->pid)
			kept = &ranks->ranks[i];
	/* A launcher (no NCCL, no libtorch) is no rank: its stack says nothing of the job. */
	if (!kept && !(state->flags & TRACE_ARRIVAL_RANK))
		return (state->flags & TRACE_ARRIVAL_LAGGING) != 0;
	if (!kept && ranks->count < ARRIVAL_RANKS_MAX)
		kept = &ranks->ranks[ranks->count++];
	if (kept) {
		kept->pid = state->pid;
		kept->rank = state->rank;
		kept->seq = state->seq;
		/* A lagging c10d rank's record holds the number it never issued: its own is one
		 * less. */
		if ((state->flags & TRACE_ARRIVAL_LAGGING) && !state->comm_hash && state->seq > 0)
			kept->seq = state->seq - 1;
		snprintf(kept->collective, sizeof(kept->collective), "%s",
			 state->flags & TRACE_ARRIVAL_LAGGING ? ""
			 : state->collective		      ? state->collective
							      : "");
		stack_text(&state->py_stack, kept->stack, sizeof(kept->stack));
	}
	return (state->flags & TRACE_ARRIVAL_LAGGING) != 0;
}

static const char *text_or(const char *text, const char *otherwise)
{
	return text && text[0] ? text : otherwise;
}

void arrival_finding_text(const struct arrival_ranks *ranks,
			  const struct trace_arrival_state *lagging, char *text, size_t size)
{
	char sequence[96];
	size_t used;

	if (lagging->seq > 0 && !lagging->comm_hash)
		snprintf(sequence, sizeof(sequence), " seq %" PRId64 " (its last: %" PRId64 ")",
			 lagging->seq, lagging->seq - 1);
	else if (lagging->seq >= 0)
		snprintf(sequence, sizeof(sequence), " seq %" PRId64, lagging->seq);
	else
		snprintf(sequence, sizeof(sequence), " (sequence number unknown)");
	used = (size_t)snprintf(
		text, size,
		"hang on arrival: rank %d (pid %u) never joined %s%s that rank(s) %s wait in; it "
		"is "
		"%s",
		lagging->rank, lagging->pid, text_or(lagging->collective, "the collective"),
		sequence, text_or(lagging->waiting, "?"), text_or(lagging->doing, "not readable"));
	if (lagging->missed && lagging->missed[0] && used < size)
		used += (size_t)snprintf(text + used, size - used,
					 "; the first call it did not make: %s", lagging->missed);
	for (unsigned i = 0; i < ranks->count && used < size; i++)
		used += (size_t)snprintf(text + used, size - used, "%s rank %d (pid %u): %s",
					 i ? ";" : "; Python stacks:", ranks->ranks[i].rank,
					 ranks->ranks[i].pid,
					 text_or(ranks->ranks[i].stack, "not read"));
}

json_t *arrival_finding_json(const struct arrival_ranks *ranks,
			     const struct trace_arrival_state *lagging)
{
	json_t *stacks = json_array();
	json_t *object;
	char comm_id[24];

	for (unsigned i = 0; stacks && i < ranks->count; i++) {
		const struct arrival_rank *rank = &ranks->ranks[i];

		json_array_append_new(
			stacks, json_pack("{s:i, s:I, s:s?, s:o, s:s}", "rank", rank->rank, "pid",
					  (json_int_t)rank->pid, "inside",
					  rank->collective[0] ? rank->collective : NULL, "seq",
					  rank->seq >= 0 ? json_integer(rank->seq) : json_null(),
					  "python_stack", rank->stack));
	}
	snprintf(comm_id, sizeof(comm_id), "0x%016" PRIx64, lagging->comm_hash);
	object = json_pack("{s:s, s:b, s:i, s:I, s:s, s:o, s:s?, s:s, s:s, s:s?, s:o}", "kind",
			   "hang", "on_arrival", 1, "rank", lagging->rank, "pid",
			   (json_int_t)lagging->pid, "collective", text_or(lagging->collective, ""),
			   "seq", lagging->seq >= 0 ? json_integer(lagging->seq) : json_null(),
			   "comm_id", lagging->comm_hash ? comm_id : NULL, "waiting_ranks",
			   text_or(lagging->waiting, ""), "doing", text_or(lagging->doing, ""),
			   "missed", lagging->missed && lagging->missed[0] ? lagging->missed : NULL,
			   "ranks", stacks ? stacks : json_array());
	return object;
}
