/* SPDX-License-Identifier: MIT */
/*
 * The consumers a verb registered with the recorder, and the hand-out of
 * each event to all of them in the order they were registered.
 */
#ifndef TCHECK_RECORD_CONSUMERS_H
#define TCHECK_RECORD_CONSUMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/record_consumer.h"

struct record_consumers {
	const struct record_consumer *items;
	size_t count;
};

/* Starts each in turn; nonzero when one refused (then close them all, unrecorded). */
int record_consumers_start(const struct record_consumers *consumers);
/* Nonzero when a consumer cannot go on. */
int record_consumers_record(const struct record_consumers *consumers,
			    const struct trace_record *record);
void record_consumers_in_flight(const struct record_consumers *consumers,
				const struct trace_record *record);
/* Whether one wants the calls in flight at every tick. */
bool record_consumers_want_in_flight(const struct record_consumers *consumers);
/* Whether one shows where the recording stands. */
bool record_consumers_want_progress(const struct record_consumers *consumers);
/* The shortest tick a consumer asks for, or 'default_ms'. */
int record_consumers_tick_interval_ms(const struct record_consumers *consumers, int default_ms);
void record_consumers_tick(const struct record_consumers *consumers, uint64_t now_ns, bool read_ok);
void record_consumers_flush(const struct record_consumers *consumers);
void record_consumers_progress(const struct record_consumers *consumers,
			       const struct recording_progress *progress);
void record_consumers_finish(const struct record_consumers *consumers);
/* Closes every one; nonzero when one failed to. */
int record_consumers_close(const struct record_consumers *consumers, bool recorded);

#endif /* TCHECK_RECORD_CONSUMERS_H */
