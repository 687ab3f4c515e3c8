// SPDX-License-Identifier: MIT
/*
 * The agent's violation, step-time and attach-failure series: their labels
 * (the process's rank from its record, the rule's position, the library's
 * name without its version) and their values, read back from the exposition.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/agent_metrics.h"
#include "agent/metrics.h"
#include "unit.h"

static void rank_process(struct agent_metrics *metrics, uint32_t pid, int32_t rank)
{
	struct trace_record record;

	memset(&record, 0, sizeof(record));
	record.kind = TRACE_RECORD_PROCESS;
	record.process.pid = pid;
	record.process.rank = rank;
	record.process.start_ns = 1;
	record.process.command = "train.py";
	agent_metrics_observe(metrics, &record);
}

UNIT_TEST(agent_metrics, library_label_drops_the_version_and_the_directory)
{
	char name[64];

	agent_metrics_library_name("/proc/12/root/usr/lib/libnccl.so.2.21.5", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "libnccl.so");
	agent_metrics_library_name("libtorch_cuda.so", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "libtorch_cuda.so");
	agent_metrics_library_name("/opt/python3.11", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "python3.11");
	agent_metrics_library_name("/lib/", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "unknown");
}

UNIT_TEST(agent_metrics, recorded_losses_become_counters)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct agent_metrics *metrics;
	struct trace_record record = { .kind = TRACE_RECORD_STATS };
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	record.stats = (struct trace_stats){ .ringbuf_drops = 7,
					     .process_drops = 2,
					     .python_events_lost = 31 };
	agent_metrics_observe(metrics, &record);
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\ntcheck_ringbuf_drops_total 7\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\ntcheck_process_notices_lost_total 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "\ntcheck_python_events_lost_total 31\n"));
	free(text);
	agent_metrics_free(metrics);
	metrics_registry_free(registry);
}

UNIT_TEST(agent_metrics, violations_steps_and_attach_failures_are_labelled)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct agent_metrics *metrics;
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	/* A directory without container links: empty pod labels. */
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	/* A pid that is not running here, so no pod is found for it. */
	rank_process(metrics, 999999, 3);
	agent_metrics_violation(metrics, 999999, "12", "Consistent", "ncclAllReduce");
	agent_metrics_violation(metrics, 999999, "12", "Consistent", "ncclAllReduce");
	agent_metrics_step(metrics, 999999, 0xabcULL, 0.2, 0);
	agent_metrics_step(metrics, 999999, 0xabcULL, 0.3, 0.25);
	agent_metrics_attach_failure(metrics, "/usr/lib/libnccl.so.2");
	agent_metrics_attach_failure(metrics, "/other/libnccl.so.2.18");
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(
		text,
		"tcheck_violations_total{pid=\"999999\",rank=\"3\",pod=\"\",namespace=\"\","
		"container=\"\",rule=\"12\",relation=\"Consistent\",function=\"ncclAllReduce\"} "
		"2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_step_duration_seconds_bucket{pid=\"999999\","
					    "rank=\"3\",pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0000000000000abc\",le=\"0.25\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_step_duration_seconds_count{pid=\"999999\","
					    "rank=\"3\",pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0000000000000abc\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_step_expected_duration_seconds{pid=\"999999\","
					    "rank=\"3\",pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0000000000000abc\"} 0.25\n"));
	CU_ASSERT_PTR_NOT_NULL(
		strstr(text, "tcheck_probe_attach_failures_total{library=\"libnccl.so\"} 2\n"));
	free(text);
	agent_metrics_free(metrics);
	metrics_registry_free(registry);
}
