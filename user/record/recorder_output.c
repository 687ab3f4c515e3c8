// SPDX-License-Identifier: MIT
/* The recorder's records, handed to every registered consumer and counted. */
#include <stdlib.h>

#include "base/system_clock.h"
#include "model/nccl_api.h"
#include "record/process_activity.h"
#include "record/recorder_state.h"

volatile sig_atomic_t recorder_stop_requested;

int recorder_write(struct recorder *recorder, const struct trace_record *record)
{
	if (record_consumers_record(&recorder->consumers, record) && !recorder->failed) {
		/* A consumer cannot go on (it said why): stop recording, never the job. */
		recorder->failed = 1;
		recorder_stop_requested = 1;
	}
	return 0;
}

/* A call still in flight, for the consumers that follow them: its record comes when it ends. */
int recorder_emit_in_flight(void *context, const struct trace_record *record)
{
	struct recorder *recorder = context;

	record_consumers_in_flight(&recorder->consumers, record);
	return 0;
}

int recorder_emit_built(void *context, const struct trace_record *record)
{
	struct recorder *recorder = context;

	if (record->kind == TRACE_RECORD_PYTHON_CALL)
		recorder->counts.python_events++;
	if (recorder->reading_calls_in_flight)
		/* Still in flight: the detectors see who is inside what; the trace gets the return.
		 */
		return recorder_emit_in_flight(recorder, record);
	recording_count_step_hit(&recorder->counts, record);
	if (record->kind == TRACE_RECORD_NCCL_CALL && (record->call.flags & TRACE_CALL_OPEN))
		recorder->counts.open_calls_written++;
	if (record->kind == TRACE_RECORD_NCCL_CALL) {
		/* Calls outside the nccl.h table are PyTorch's own collectives (c10d). */
		if (record->call.api && nccl_function_index(record->call.api) < 0)
			recorder->counts.c10d_calls++;
		else
			recorder->counts.calls++;
	}
	return recorder_write(recorder, record);
}

int recorder_emit_library(void *context, const struct trace_library *library)
{
	struct trace_record record = { .kind = TRACE_RECORD_LIBRARY };

	record.library = *library;
	return recorder_write(context, &record);
}

void recorder_emit_network_sample(void *context, const struct trace_network_sample *sample)
{
	struct trace_record record = { .kind = TRACE_RECORD_NETWORK };

	record.network = *sample;
	recorder_write(context, &record);
}

void recorder_write_process(struct recorder *recorder, const struct traced_process *process)
{
	struct trace_record record;

	process_registry_record(process, &record);
	recorder_write(recorder, &record);
}

/*
 * What every live traced process is doing, one activity sample each,
 * before the statistics record: the detectors judge a lagging rank on
 * them, live and in the trace alike.
 */
void recorder_write_activity(struct recorder *recorder, uint64_t now_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_ACTIVITY };
	struct traced_process *process;

	for (size_t i = 0; (process = process_registry_next(&recorder->processes, &i));)
		if (process->alive &&
		    process_activity_read(process->record.pid, now_ns, &record.activity) == 0)
			recorder_write(recorder, &record);
}

void recorder_write_stats(struct recorder *recorder, const uint64_t *counters)
{
	struct trace_record record = { .kind = TRACE_RECORD_STATS };

	record.stats.timestamp_ns = monotonic_ns();
	record.stats.calls = recorder->counts.calls;
	record.stats.ringbuf_drops = counters[TCHECK_COUNTER_RINGBUF_DROPS];
	record.stats.unmatched_returns = counters[TCHECK_COUNTER_UNMATCHED_RETURNS];
	record.stats.nesting_overflows = counters[TCHECK_COUNTER_NESTING_OVERFLOWS];
	record.stats.filtered = counters[TCHECK_COUNTER_FILTERED];
	record.stats.process_drops = counters[TCHECK_COUNTER_PROCESS_DROPS];
	record.stats.python_events_lost = recording_python_events_lost(recorder->python, counters);
	recorder_write(recorder, &record);
}
