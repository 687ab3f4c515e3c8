// SPDX-License-Identifier: MIT
/* Formats the live one-line-per-second summary of `attach`. */
#include "record/live_status.h"

#include <inttypes.h>
#include <string.h>

#include "network/work_requests.h"

#define SHOWN_FUNCTIONS 5

void live_status_init(struct live_status *status, uint64_t now_ns)
{
	memset(status, 0, sizeof(*status));
	status->started_ns = now_ns;
}

void live_status_count(struct live_status *status, const struct nccl_function *function)
{
	int index = function ? nccl_function_index(function) : -1;

	if (index >= 0 && index < 64)
		status->calls_by_function[index]++;
	status->total++;
}

void live_status_print(struct live_status *status, FILE *out, uint64_t now_ns,
		       const uint64_t *counters, unsigned processes, unsigned communicators)
{
	int shown[SHOWN_FUNCTIONS] = { 0 };
	int shown_count = 0;

	/* The busiest functions first: a short line that still says the most. */
	for (int slot = 0; slot < SHOWN_FUNCTIONS; slot++) {
		int best = -1;

		for (size_t i = 0; i < nccl_function_count() && i < 64; i++) {
			int taken = 0;

			for (int j = 0; j < shown_count; j++)
				taken |= shown[j] == (int)i;
			if (!taken && status->calls_by_function[i] &&
			    (best < 0 ||
			     status->calls_by_function[i] > status->calls_by_function[best]))
				best = (int)i;
		}
		if (best < 0)
			break;
		shown[shown_count++] = best;
	}
	fprintf(out, "[%6.1fs] calls %llu (+%llu/s) processes %u comms %u |",
		(double)(now_ns - status->started_ns) / 1e9, (unsigned long long)status->total,
		(unsigned long long)(status->total - status->previous_total), processes,
		communicators);
	for (int i = 0; i < shown_count; i++)
		fprintf(out, " %s %llu", nccl_function_at((size_t)shown[i])->name + 4,
			(unsigned long long)status->calls_by_function[shown[i]]);
	fprintf(out, " | drops %" PRIu64 "\n",
		counters[TCHECK_COUNTER_RINGBUF_DROPS] + counters[TCHECK_COUNTER_PROCESS_DROPS] +
			counters[TCHECK_COUNTER_NESTING_OVERFLOWS]);
	fflush(out);
	status->previous_total = status->total;
}

static int count_call(void *context, const struct trace_record *record)
{
	if (record->kind == TRACE_RECORD_NCCL_CALL)
		live_status_count(context, record->call.api);
	return 0;
}

static void print_progress(void *context, const struct recording_progress *progress)
{
	struct live_status *status = context;

	status->started_ns = progress->started_ns;
	live_status_print(status, stdout, progress->now_ns, progress->counters, progress->processes,
			  progress->communicators);
	if (progress->network)
		work_requests_print_live(progress->network, stdout);
}

struct record_consumer live_status_consumer(struct live_status *status)
{
	live_status_init(status, 0);
	return (struct record_consumer){ .context = status,
					 .record = count_call,
					 .progress = print_progress };
}
