// SPDX-License-Identifier: MIT
/*
 * The agent's violation, step-time and attach-failure series: their labels
 * (the process's rank from its record, the rule's position, the library's
 * name without its version) and their values, read back from the exposition;
 * the in-flight series, set while a rank is inside a call and removed once
 * it returned; the probe hits by kind and the highest step reached; the
 * per-communicator series bounded per process.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_metrics.h"
#include "agent/metrics.h"
#include "diagnose/progress_model.h"
#include "model/c10d_api.h"
#include "nccl_records.h"
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

/* One Python record of process 'pid' at 'step' (flags: TRACE_PYTHON_*). */
static void python_record(struct agent_metrics *metrics, uint32_t pid, int32_t step, uint32_t flags)
{
	struct trace_record record;

	memset(&record, 0, sizeof(record));
	record.kind = TRACE_RECORD_PYTHON_CALL;
	record.python_call.pid = pid;
	record.python_call.step = step;
	record.python_call.flags = flags;
	record.python_call.qualified_name = "Optimizer.step#SGD.step";
	record.python_call.file = "";
	agent_metrics_observe(metrics, &record);
}

UNIT_TEST(agent_metrics, probe_hits_by_kind_and_the_step_reached)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct agent_metrics *metrics;
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	rank_process(metrics, 999999, 1);
	python_record(metrics, 999999, -1, 0); /* before the step is known: no step series */
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NULL(strstr(text, "\ntcheck_training_step{"));
	free(text);
	python_record(metrics, 999999, 4, TRACE_PYTHON_TORCH_SCOPE);
	python_record(metrics, 999999, 5, TRACE_PYTHON_TORCH_OP);
	python_record(metrics, 999999, 5, TRACE_PYTHON_TORCH_OP);
	python_record(metrics, 999999, 3, 0); /* a call that began earlier, recorded at its end */
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_probe_hits_total{pid=\"999999\",rank=\"1\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "kind=\"python_call\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_probe_hits_total{pid=\"999999\",rank=\"1\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "kind=\"torch_scope\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_probe_hits_total{pid=\"999999\",rank=\"1\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "kind=\"torch_op\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_training_step{pid=\"999999\",rank=\"1\","
					    "pod=\"\",namespace=\"\",container=\"\"} 5\n"));
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
					    "comm=\"0x0000000000000abc\",le=\"0.25\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_step_duration_seconds_count{pid=\"999999\","
					    "rank=\"3\",pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0x0000000000000abc\"} 2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_step_expected_duration_seconds{pid=\"999999\","
					    "rank=\"3\",pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0x0000000000000abc\"} 0.25\n"));
	CU_ASSERT_PTR_NOT_NULL(
		strstr(text, "tcheck_probe_attach_failures_total{library=\"libnccl.so\"} 2\n"));
	free(text);
	agent_metrics_free(metrics);
	metrics_registry_free(registry);
}

/* Rank 0 blocked inside seq 10 of communicator 0xabc, rank 1 still at 9: a gloo hang's state. */
UNIT_TEST(agent_metrics, a_call_entered_and_not_returned_is_in_flight_until_it_returns)
{
	static const char rank0[] =
		"tcheck_collective_in_flight_sequence{pid=\"999998\",rank=\"0\","
		"pod=\"\",namespace=\"\",container=\"\",comm=\"0x0000000000000abc\"} 10\n";
	struct metrics_registry *registry = metrics_registry_new();
	struct progress_model *model = progress_model_new(NULL);
	struct agent_metrics *metrics;
	struct trace_record call;
	int64_t step;
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	CU_ASSERT_PTR_NOT_NULL_FATAL(model);
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	rank_process(metrics, 999998, 0);
	rank_process(metrics, 999999, 1);
	for (int64_t seq = 1; seq <= 9; seq++) {
		for (int rank = 0; rank < 2; rank++) {
			call = all_reduce_record(999998 + (uint32_t)rank, rank, 2, 0xabc, seq, 64);
			progress_model_add_call(model, &call.call, &step);
			agent_metrics_observe(metrics, &call);
		}
	}
	call = all_reduce_record(999998, 0, 2, 0xabc, 10, 64);
	call.call.flags |= TRACE_CALL_OPEN;
	progress_model_add_call(model, &call.call, &step);
	agent_metrics_in_flight(metrics, model);
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, rank0));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_collective_sequence{pid=\"999998\",rank=\"0\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0x0000000000000abc\"} 9\n"));
	/* Rank 1 is inside nothing: no in-flight series of it. */
	CU_ASSERT_PTR_NULL(strstr(text, "tcheck_collective_in_flight_sequence{pid=\"999999\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_collective_in_flight_entry_timestamp_seconds{"
					    "pid=\"999998\",rank=\"0\""));
	free(text);
	/* It returned: the series goes. */
	call.call.flags &= ~TRACE_CALL_OPEN;
	call.call.duration_ns = 50;
	progress_model_add_call(model, &call.call, &step);
	agent_metrics_in_flight(metrics, model);
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NULL(strstr(text, "tcheck_collective_in_flight_sequence{"));
	CU_ASSERT_PTR_NULL(strstr(text, "tcheck_collective_in_flight_entry_timestamp_seconds{"));
	free(text);
	agent_metrics_free(metrics);
	progress_model_free(model);
	metrics_registry_free(registry);
}

/* c10d's collectives name a torch dtype, not an NCCL datatype: their bytes count too. */
UNIT_TEST(agent_metrics, c10d_calls_count_their_bytes)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct agent_metrics *metrics;
	struct trace_record call = all_reduce_record(999997, 0, 2, 0xabc, 1, 64);
	const struct nccl_function *function = c10d_function_by_name("c10d::allreduce");
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	CU_ASSERT_PTR_NOT_NULL_FATAL(function);
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	rank_process(metrics, 999997, 0);
	/* 1000 Float (4 bytes), then 10 BFloat16 (2 bytes): 4020 bytes. */
	call.call.function = "c10d::allreduce";
	call.call.api = function;
	call.call.param_count = function->param_count;
	call.call.params[nccl_param_find(function, NCCL_PARAM_SIZE)] = 1000;
	call.call.params[nccl_param_find(function, NCCL_PARAM_TORCH_DTYPE)] = 6;
	agent_metrics_observe(metrics, &call);
	call.call.params[nccl_param_find(function, NCCL_PARAM_SIZE)] = 10;
	call.call.params[nccl_param_find(function, NCCL_PARAM_TORCH_DTYPE)] = 15;
	agent_metrics_observe(metrics, &call);
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	if (!strstr(text, "function=\"c10d::allreduce\"} 4020\n"))
		fprintf(stderr, "\n%s\n", text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_nccl_bytes_total{pid=\"999997\",rank=\"0\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "function=\"c10d::allreduce\"} 4020\n"));
	free(text);
	agent_metrics_free(metrics);
	metrics_registry_free(registry);
}

/* Occurrences of 'needle' in 'text'. */
static int occurrences(const char *text, const char *needle)
{
	int count = 0;

	for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
		count++;
	return count;
}

/*
 * A process that creates communicators without end (one a step, say) gets
 * per-communicator series for its first AGENT_METRICS_MAX_COMMS only; each
 * of its calls is still counted by function.
 */
UNIT_TEST(agent_metrics, communicators_with_series_are_bounded_per_process)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct agent_metrics *metrics;
	struct trace_record call;
	int comms = AGENT_METRICS_MAX_COMMS + 8;
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	rank_process(metrics, 999996, 0);
	for (int c = 0; c < comms; c++) {
		call = all_reduce_record(999996, 0, 2, 0x1000 + (uint64_t)c, 1, 64);
		agent_metrics_observe(metrics, &call);
		agent_metrics_step(metrics, 999996, 0x1000 + (uint64_t)c, 0.1, 0);
	}
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_EQUAL(occurrences(text, "\ntcheck_collective_sequence{pid=\"999996\""),
			AGENT_METRICS_MAX_COMMS);
	CU_ASSERT_EQUAL(occurrences(text, "\ntcheck_step_duration_seconds_count{pid=\"999996\""),
			AGENT_METRICS_MAX_COMMS);
	/* The first communicators keep theirs; the last has none. */
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "comm=\"0x0000000000001000\""));
	CU_ASSERT_PTR_NULL(strstr(text, "comm=\"0x0000000000001027\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_nccl_calls_total{pid=\"999996\",rank=\"0\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "function=\"ncclAllReduce\"} 40\n"));
	free(text);
	agent_metrics_free(metrics);
	metrics_registry_free(registry);
}

/* Calls of 'pid' counted under rank 'rank' in the exposition 'text'. */
static bool counted_under_rank(const char *text, uint32_t pid, const char *rank)
{
	char series[160];

	snprintf(series, sizeof(series),
		 "tcheck_nccl_calls_total{pid=\"%u\",rank=\"%s\",pod=\"\",namespace=\"\","
		 "container=\"\",function=\"ncclAllReduce\"}",
		 pid, rank);
	return strstr(text, series) != NULL;
}

/*
 * A torch.multiprocessing.spawn worker found mid-run has no RANK in its
 * environment: it is labelled with its rank on its widest communicator read
 * from its memory (a sub-group's rank gives way to the world's); a process
 * whose environment has RANK keeps it; one with neither stays "unknown".
 */
UNIT_TEST(agent_metrics, a_worker_without_rank_takes_its_widest_communicators)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct trace_record pair = { .kind = TRACE_RECORD_COMMUNICATOR };
	struct trace_record world = { .kind = TRACE_RECORD_COMMUNICATOR };
	struct agent_metrics *metrics;
	struct trace_record call;
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	rank_process(metrics, 999991, -1);
	pair.communicator = (struct trace_communicator){ .pid = 999991,
							 .origin = TRACE_COMM_RECOVERED,
							 .handle = 0x10,
							 .rank = 1,
							 .nranks = 2 };
	world.communicator = (struct trace_communicator){ .pid = 999991,
							  .origin = TRACE_COMM_RECOVERED,
							  .handle = 0x20,
							  .rank = 3,
							  .nranks = 4 };
	agent_metrics_observe(metrics, &world);
	agent_metrics_observe(metrics, &pair);
	call = all_reduce_record(999991, 1, 2, 0x10, 7, 64);
	agent_metrics_observe(metrics, &call);

	rank_process(metrics, 999992, 5);
	world.communicator.pid = 999992;
	agent_metrics_observe(metrics, &world);
	call = all_reduce_record(999992, 3, 4, 0x20, 7, 64);
	agent_metrics_observe(metrics, &call);

	rank_process(metrics, 999993, -1);
	call = all_reduce_record(999993, -1, -1, 0x30, 7, 64);
	agent_metrics_observe(metrics, &call);

	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT(counted_under_rank(text, 999991, "3"));
	CU_ASSERT(counted_under_rank(text, 999992, "5"));
	CU_ASSERT(counted_under_rank(text, 999993, "unknown"));
	free(text);
	agent_metrics_free(metrics);
	metrics_registry_free(registry);
}

/*
 * A process whose rank is learned after its first calls: the calls before
 * stay under rank "unknown", those after count under the rank; each of its
 * communicators keeps its own last sequence number, calls alternating.
 */
UNIT_TEST(agent_metrics, series_follow_a_rank_learned_later_and_each_communicator)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct trace_record world = { .kind = TRACE_RECORD_COMMUNICATOR };
	struct agent_metrics *metrics;
	struct trace_record call;
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	metrics = agent_metrics_new(registry, "/nonexistent", 300);
	CU_ASSERT_PTR_NOT_NULL_FATAL(metrics);
	rank_process(metrics, 999990, -1);
	call = all_reduce_record(999990, -1, -1, 0, 1, 64);
	agent_metrics_observe(metrics, &call);
	world.communicator = (struct trace_communicator){ .pid = 999990,
							  .origin = TRACE_COMM_RECOVERED,
							  .handle = 0x20,
							  .rank = 3,
							  .nranks = 4 };
	agent_metrics_observe(metrics, &world);
	for (int64_t seq = 2; seq <= 7; seq++) {
		call = all_reduce_record(999990, 3, 4, seq % 2 ? 0x20 : 0x30, seq, 64);
		agent_metrics_observe(metrics, &call);
	}
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_PTR_NOT_NULL(strstr(text,
				      "tcheck_nccl_calls_total{pid=\"999990\",rank=\"unknown\","
				      "pod=\"\",namespace=\"\",container=\"\","
				      "function=\"ncclAllReduce\"} 1\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_nccl_calls_total{pid=\"999990\",rank=\"3\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "function=\"ncclAllReduce\"} 6\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_collective_sequence{pid=\"999990\",rank=\"3\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0x0000000000000020\"} 7\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_collective_sequence{pid=\"999990\",rank=\"3\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "comm=\"0x0000000000000030\"} 6\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_probe_hits_total{pid=\"999990\",rank=\"3\","
					    "pod=\"\",namespace=\"\",container=\"\","
					    "kind=\"nccl_call\"} 6\n"));
	free(text);
	agent_metrics_free(metrics);
	metrics_registry_free(registry);
}
