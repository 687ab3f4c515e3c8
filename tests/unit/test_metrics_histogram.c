// SPDX-License-Identifier: MIT
/*
 * Histograms of the metrics registry against exposition text written out by
 * hand from the Prometheus text format: cumulative buckets with an "le"
 * label after the series' own, +Inf, _sum and _count; and the declarations
 * the format forbids.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agent/metrics.h"
#include "unit.h"

UNIT_TEST(metrics_histogram, buckets_are_cumulative_with_sum_and_count)
{
	static const char *const labels[] = { "rank" };
	static const double bounds[] = { 0.1, 0.25, 1 };
	static const char expected[] =
		"# HELP tcheck_step_duration_seconds Step time.\n"
		"# TYPE tcheck_step_duration_seconds histogram\n"
		"tcheck_step_duration_seconds_bucket{rank=\"0\",le=\"0.1\"} 1\n"
		"tcheck_step_duration_seconds_bucket{rank=\"0\",le=\"0.25\"} 3\n"
		"tcheck_step_duration_seconds_bucket{rank=\"0\",le=\"1\"} 3\n"
		"tcheck_step_duration_seconds_bucket{rank=\"0\",le=\"+Inf\"} 4\n"
		"tcheck_step_duration_seconds_sum{rank=\"0\"} 5.5\n"
		"tcheck_step_duration_seconds_count{rank=\"0\"} 4\n"
		"# HELP tcheck_plain_seconds Unlabelled.\n"
		"# TYPE tcheck_plain_seconds histogram\n"
		"tcheck_plain_seconds_bucket{le=\"0.1\"} 0\n"
		"tcheck_plain_seconds_bucket{le=\"0.25\"} 0\n"
		"tcheck_plain_seconds_bucket{le=\"1\"} 1\n"
		"tcheck_plain_seconds_bucket{le=\"+Inf\"} 1\n"
		"tcheck_plain_seconds_sum 1\n"
		"tcheck_plain_seconds_count 1\n";
	struct metrics_registry *registry = metrics_registry_new();
	struct metrics_family *steps, *plain;
	const char *rank0[] = { "0" };
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	steps = metrics_declare_histogram(registry, "tcheck_step_duration_seconds", "Step time.",
					  labels, 1, bounds, 3);
	plain = metrics_declare_histogram(registry, "tcheck_plain_seconds", "Unlabelled.", NULL, 0,
					  bounds, 3);
	CU_ASSERT_FATAL(steps && plain);
	/* 0.1 is in the 0.1 bucket: a bound is inclusive. */
	CU_ASSERT_EQUAL(metrics_observe(steps, rank0, 0.1), 0);
	CU_ASSERT_EQUAL(metrics_observe(steps, rank0, 0.2), 0);
	CU_ASSERT_EQUAL(metrics_observe(steps, rank0, 0.2), 0);
	CU_ASSERT_EQUAL(metrics_observe(steps, rank0, 5), 0);
	CU_ASSERT_EQUAL(metrics_observe(plain, NULL, 1), 0);
	CU_ASSERT_EQUAL(metrics_observe(steps, rank0, NAN), -EINVAL);
	/* A histogram takes observations only; other metrics take none. */
	CU_ASSERT_EQUAL(metrics_set(steps, rank0, 1), -EINVAL);
	CU_ASSERT_EQUAL(metrics_add(steps, rank0, 1), -EINVAL);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(steps, rank0), 4, 0);
	text = metrics_render(registry, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text, expected);
	free(text);
	/* The series go with their label value, like any other. */
	CU_ASSERT_EQUAL(metrics_remove_series(registry, "rank", "0"), 1);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(steps, rank0), 0, 0);
	metrics_registry_free(registry);
}

UNIT_TEST(metrics_histogram, malformed_declarations_are_refused)
{
	static const char *const le[] = { "le" };
	static const double bounds[] = { 1, 2 }, unordered[] = { 2, 1 };
	static const double infinite[] = { 1, INFINITY };
	struct metrics_registry *registry = metrics_registry_new();
	struct metrics_family *counter;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	CU_ASSERT_PTR_NULL(
		metrics_declare_histogram(registry, "tcheck_a_total", "", NULL, 0, bounds, 2));
	CU_ASSERT_PTR_NULL(
		metrics_declare_histogram(registry, "tcheck_a_count", "", NULL, 0, bounds, 2));
	CU_ASSERT_PTR_NULL(
		metrics_declare_histogram(registry, "tcheck_a_seconds", "", le, 1, bounds, 2));
	CU_ASSERT_PTR_NULL(
		metrics_declare_histogram(registry, "tcheck_a_seconds", "", NULL, 0, unordered, 2));
	CU_ASSERT_PTR_NULL(
		metrics_declare_histogram(registry, "tcheck_a_seconds", "", NULL, 0, infinite, 2));
	CU_ASSERT_PTR_NULL(
		metrics_declare_histogram(registry, "tcheck_a_seconds", "", NULL, 0, bounds, 0));
	/* A histogram needs its buckets: not through metrics_declare. */
	CU_ASSERT_PTR_NULL(
		metrics_declare(registry, "tcheck_a_seconds", "", METRICS_HISTOGRAM, NULL, 0));
	CU_ASSERT_PTR_NOT_NULL(
		metrics_declare_histogram(registry, "tcheck_a_seconds", "", NULL, 0, bounds, 2));
	/* Declared again with other buckets: refused. */
	CU_ASSERT_PTR_NULL(
		metrics_declare_histogram(registry, "tcheck_a_seconds", "", NULL, 0, bounds, 1));
	counter = metrics_declare(registry, "tcheck_b_total", "", METRICS_COUNTER, NULL, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(counter);
	CU_ASSERT_EQUAL(metrics_observe(counter, NULL, 1), -EINVAL);
	metrics_registry_free(registry);
}
