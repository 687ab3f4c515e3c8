// SPDX-License-Identifier: MIT
/* Feeds a live recording to the detectors: the diagnosis behind the consumer interface. */
#include "diagnose/diagnosis_consumer.h"

#include "base/system_clock.h"
#include "diagnose/job_diagnosis.h"

static int take_record(void *context, const struct trace_record *record)
{
	job_diagnosis_record(context, record, 0);
	return 0;
}

/* Who is inside what: the detectors see a call before its return is recorded. */
static void take_in_flight(void *context, const struct trace_record *record)
{
	job_diagnosis_record(context, record, 0);
}

static int tick_interval_ms(void *context)
{
	return job_diagnosis_tick_interval_ms(context);
}

static void tick(void *context, uint64_t now_ns, bool read_ok)
{
	(void)read_ok;
	job_diagnosis_watch(context, now_ns, own_cpu_ns());
}

static void finish(void *context)
{
	job_diagnosis_finish(context);
}

struct record_consumer diagnosis_consumer(struct job_diagnosis *diagnosis)
{
	return (struct record_consumer){
		.context = diagnosis,
		.record = take_record,
		.in_flight = take_in_flight,
		.tick_interval_ms = tick_interval_ms,
		.tick = tick,
		.finish = finish,
	};
}
