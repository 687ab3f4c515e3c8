// SPDX-License-Identifier: MIT
/* Hands each recording event to every registered consumer, in order. */
#include "record/record_consumers.h"

int record_consumers_start(const struct record_consumers *consumers)
{
	for (size_t i = 0; i < consumers->count; i++) {
		const struct record_consumer *consumer = &consumers->items[i];

		if (consumer->start && consumer->start(consumer->context))
			return -1;
	}
	return 0;
}

int record_consumers_record(const struct record_consumers *consumers,
			    const struct trace_record *record)
{
	int failed = 0;

	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].record(consumers->items[i].context, record))
			failed = -1;
	return failed;
}

void record_consumers_in_flight(const struct record_consumers *consumers,
				const struct trace_record *record)
{
	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].in_flight)
			consumers->items[i].in_flight(consumers->items[i].context, record);
}

bool record_consumers_want_in_flight(const struct record_consumers *consumers)
{
	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].in_flight)
			return true;
	return false;
}

bool record_consumers_want_progress(const struct record_consumers *consumers)
{
	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].progress)
			return true;
	return false;
}

int record_consumers_tick_interval_ms(const struct record_consumers *consumers, int default_ms)
{
	int shortest = -1;

	for (size_t i = 0; i < consumers->count; i++) {
		const struct record_consumer *consumer = &consumers->items[i];
		int interval;

		if (!consumer->tick_interval_ms)
			continue;
		interval = consumer->tick_interval_ms(consumer->context);
		if (shortest < 0 || interval < shortest)
			shortest = interval;
	}
	return shortest < 0 ? default_ms : shortest;
}

void record_consumers_tick(const struct record_consumers *consumers, uint64_t now_ns, bool read_ok)
{
	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].tick)
			consumers->items[i].tick(consumers->items[i].context, now_ns, read_ok);
}

void record_consumers_flush(const struct record_consumers *consumers)
{
	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].flush)
			consumers->items[i].flush(consumers->items[i].context);
}

void record_consumers_progress(const struct record_consumers *consumers,
			       const struct recording_progress *progress)
{
	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].progress)
			consumers->items[i].progress(consumers->items[i].context, progress);
}

void record_consumers_finish(const struct record_consumers *consumers)
{
	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].finish)
			consumers->items[i].finish(consumers->items[i].context);
}

int record_consumers_close(const struct record_consumers *consumers, bool recorded)
{
	int failed = 0;

	for (size_t i = 0; i < consumers->count; i++)
		if (consumers->items[i].close &&
		    consumers->items[i].close(consumers->items[i].context, recorded))
			failed = -1;
	return failed;
}
