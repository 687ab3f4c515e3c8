/* SPDX-License-Identifier: MIT */
/*
 * What follows a recording as it happens: the trace file, the detectors,
 * the live status line, the rule checker, the agent's metrics. Each is a
 * consumer behind this one interface; the verb decides which are
 * registered, and the recorder hands every record to each of them in the
 * order they were registered, knowing none by name. Every hook but
 * 'record' may be NULL.
 */
#ifndef TCHECK_RECORD_CONSUMER_H
#define TCHECK_RECORD_CONSUMER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct trace_record;
struct work_requests;

/* Where the recording stands, once a second, for a consumer that shows it. */
struct recording_progress {
	uint64_t started_ns; /* monotonic, when the recording began */
	uint64_t now_ns;
	const uint64_t *counters; /* the BPF loss counters (TCHECK_COUNTER_*) */
	unsigned processes;	  /* traced and alive */
	unsigned communicators;
	struct work_requests *network; /* RDMA work requests seen, or NULL */
};

struct record_consumer {
	void *context;
	/* Before the first record, once the probes load; nonzero: the recording is abandoned. */
	int (*start)(void *context);
	/*
	 * Every record, as it is (or would be) written to the trace: calls,
	 * processes, libraries, statistics. Nonzero: the consumer cannot go on,
	 * so the recording stops and fails (it said why).
	 */
	int (*record)(void *context, const struct trace_record *record);
	/*
	 * A call a thread is still inside, read at each tick: who is inside
	 * what. Its record comes again when it ends. A consumer with this hook
	 * makes the recorder read the calls in flight every tick.
	 */
	void (*in_flight)(void *context, const struct trace_record *record);
	/* How often it wants 'tick', in milliseconds; NULL: the recorder's own pace. */
	int (*tick_interval_ms)(void *context);
	/* After each read of the ring buffer ('read_ok': the read succeeded). */
	void (*tick)(void *context, uint64_t now_ns, bool read_ok);
	/* About five times a second: a file consumer writes out what it holds. */
	void (*flush)(void *context);
	/* Once a second: where the recording stands. */
	void (*progress)(void *context, const struct recording_progress *progress);
	/* The recording ended: every record has been handed. */
	void (*finish)(void *context);
	/*
	 * Last: 'recorded' is false when the recording never began (nothing
	 * should be left that looks like one). Nonzero: closing failed (said).
	 */
	int (*close)(void *context, bool recorded);
};

#endif /* TCHECK_RECORD_CONSUMER_H */
