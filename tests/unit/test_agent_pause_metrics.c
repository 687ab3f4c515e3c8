// SPDX-License-Identifier: MIT
/*
 * The agent's pause series: tcheck_pause_in_progress_seconds set for a
 * rank held back as a pause (with what it is doing and for how long),
 * removed once it comes back, ends, or is reported as a hang after all,
 * one series per rank; tcheck_pauses_total counting the pauses reported.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_metrics.h"
#include "agent/metrics.h"
#include "diagnose/pause_tracker.h"
#include "unit.h"

#define SECOND 1000000000ULL
#define PID 999996

static const char pause_series[] =
	"tcheck_pause_in_progress_seconds{pid=\"999996\",rank=\"0\",pod=\"\",namespace=\"\","
	"container=\"\",doing=\"";

static void rank_zero(struct agent_metrics *metrics)
{
	struct trace_record record;

	memset(&record, 0, sizeof(record));
	record.kind = TRACE_RECORD_PROCESS;
	record.process.pid = PID;
	record.process.rank = 0;
	record.process.start_ns = 1;
	record.process.command = "train.py";
	agent_metrics_observe(metrics, &record);
}

/* A sample at 'at_ns' of a process that wrote 'written' bytes to storage so far. */
static void sample(struct pause_tracker *tracker, uint64_t at_ns, uint64_t written)
{
	struct trace_activity_sample activity = {
		.timestamp_ns = at_ns,
		.pid = PID,
		.threads = 4,
		.write_bytes = written,
		.write_chars = written,
	};

	pause_tracker_sample(tracker, &activity);
}

/* The agent's metrics with rank 0 attached, and a pause tracker. */
struct pause_fixture {
	struct metrics_registry *registry;
	struct pause_tracker *tracker;
	struct agent_metrics *metrics;
};

static void fixture_start(struct pause_fixture *fixture)
{
	fixture->registry = metrics_registry_new();
	fixture->tracker = calloc(1, sizeof(*fixture->tracker));
	CU_ASSERT_PTR_NOT_NULL_FATAL(fixture->registry);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fixture->tracker);
	fixture->metrics = agent_metrics_new(fixture->registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(fixture->metrics);
	rank_zero(fixture->metrics);
}

static void fixture_end(struct pause_fixture *fixture)
{
	agent_metrics_free(fixture->metrics);
	metrics_registry_free(fixture->registry);
	free(fixture->tracker);
}

/* The exposition's pause series of the process, and how many there are. */
static char *render(struct metrics_registry *registry, unsigned *series)
{
	char *text = metrics_render(registry, NULL);

	*series = 0;
	for (const char *at = text; at && (at = strstr(at, pause_series)); at++)
		(*series)++;
	return text;
}

/* Rank 0 writes a checkpoint for 3 s after its call at 10 s; its peer waits. */
UNIT_TEST(agent_pause_metrics, a_held_pause_is_in_progress_until_the_rank_comes_back)
{
	struct pause_fixture fixture;
	struct pause_finding pause;
	unsigned series;
	char *text, expected[256];

	fixture_start(&fixture);
	struct metrics_registry *registry = fixture.registry;
	struct pause_tracker *tracker = fixture.tracker;
	struct agent_metrics *metrics = fixture.metrics;

	sample(tracker, 9 * SECOND, 0);
	CU_ASSERT_FALSE(pause_tracker_call(tracker, PID, 10 * SECOND, &pause));
	for (uint64_t at = 11; at <= 12; at++)
		sample(tracker, at * SECOND, (at - 10) * 8 * 1024 * 1024);
	/* Not held yet: the detector has not judged it: no series. */
	agent_metrics_pauses(metrics, tracker, 12 * SECOND);
	text = render(registry, &series);
	CU_ASSERT_EQUAL(series, 0);
	free(text);

	pause_tracker_hold(tracker, PID, 10 * SECOND, 0xabc, 0, 20);
	agent_metrics_pauses(metrics, tracker, 12 * SECOND + SECOND / 2);
	text = render(registry, &series);
	snprintf(expected, sizeof(expected), "%sfile_io\"} 2.5\n", pause_series);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, expected));
	CU_ASSERT_EQUAL(series, 1);
	CU_ASSERT_PTR_NULL(strstr(text, "tcheck_pauses_total{pid"));
	free(text);

	/* Back at 13 s with a call: reported as a pause of file I/O, no series in progress. */
	CU_ASSERT_TRUE_FATAL(pause_tracker_call(tracker, PID, 13 * SECOND, &pause));
	agent_metrics_pause(metrics, &pause);
	agent_metrics_pauses(metrics, tracker, 13 * SECOND);
	text = render(registry, &series);
	CU_ASSERT_EQUAL(series, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_pauses_total{pid=\"999996\",rank=\"0\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "doing=\"file_io\"} 1\n"));
	free(text);
	fixture_end(&fixture);
}

/* Held idle (its pattern of pauses), then busy, then reported as a hang after all. */
UNIT_TEST(agent_pause_metrics, one_series_per_rank_and_none_once_it_is_a_hang)
{
	struct pause_fixture fixture;
	struct pause_finding pause;
	unsigned series;
	char *text, expected[256];

	fixture_start(&fixture);
	struct metrics_registry *registry = fixture.registry;
	struct pause_tracker *tracker = fixture.tracker;
	struct agent_metrics *metrics = fixture.metrics;

	sample(tracker, 9 * SECOND, 0);
	pause_tracker_call(tracker, PID, 10 * SECOND, &pause);
	sample(tracker, 11 * SECOND, 0);
	pause_tracker_hold(tracker, PID, 10 * SECOND, 0xabc, 0, 20);
	agent_metrics_pauses(metrics, tracker, 11 * SECOND);
	text = render(registry, &series);
	snprintf(expected, sizeof(expected), "%srecurring\"} 1\n", pause_series);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, expected));
	CU_ASSERT_EQUAL(series, 1);
	free(text);

	sample(tracker, 12 * SECOND, 32 * 1024 * 1024);
	agent_metrics_pauses(metrics, tracker, 12 * SECOND);
	text = render(registry, &series);
	snprintf(expected, sizeof(expected), "%sfile_io\"} 2\n", pause_series);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, expected));
	CU_ASSERT_EQUAL(series, 1);
	free(text);

	pause_tracker_release(tracker, PID);
	agent_metrics_pauses(metrics, tracker, 13 * SECOND);
	text = render(registry, &series);
	CU_ASSERT_EQUAL(series, 0);
	free(text);
	fixture_end(&fixture);
}

/* A rank that ends while held is in no pause: its series goes with its end. */
UNIT_TEST(agent_pause_metrics, an_ended_rank_is_in_no_pause)
{
	struct pause_fixture fixture;
	struct pause_finding pause;
	struct trace_record end;
	unsigned series;
	char *text;

	fixture_start(&fixture);
	struct metrics_registry *registry = fixture.registry;
	struct pause_tracker *tracker = fixture.tracker;
	struct agent_metrics *metrics = fixture.metrics;

	pause_tracker_call(tracker, PID, 10 * SECOND, &pause);
	sample(tracker, 11 * SECOND, 0);
	pause_tracker_hold(tracker, PID, 10 * SECOND, 0xabc, 0, 20);
	agent_metrics_pauses(metrics, tracker, 11 * SECOND);
	text = render(registry, &series);
	CU_ASSERT_EQUAL(series, 1);
	free(text);

	memset(&end, 0, sizeof(end));
	end.kind = TRACE_RECORD_PROCESS;
	end.process.pid = PID;
	end.process.rank = 0;
	end.process.start_ns = 1;
	end.process.end_ns = 12 * SECOND;
	end.process.command = "train.py";
	agent_metrics_observe(metrics, &end);
	agent_metrics_pauses(metrics, tracker, 13 * SECOND);
	text = render(registry, &series);
	CU_ASSERT_EQUAL(series, 0);
	free(text);
	fixture_end(&fixture);
}
