// SPDX-License-Identifier: MIT
/* The recorder's closing warnings about lost Python events: one per kind of loss, counted. */
#include <string.h>

#include "python/python_losses.h"
#include "tcheck/probe_abi.h"
#include "unit.h"

UNIT_TEST(python_losses, nothing_lost_says_nothing)
{
	char sentences[PYTHON_LOSSES_SENTENCES][320];
	struct python_tracer_losses losses = { .unnamed_calls = 12 };

	/* Code objects freed before naming are mostly module bodies: no warning for them. */
	struct python_kernel_drops none = { 0, 0 };

	CU_ASSERT_EQUAL(python_losses_sentences(&losses, none, sentences), 0);
	CU_ASSERT_EQUAL(python_losses_events(&losses, none), 0);
}

UNIT_TEST(python_losses, kernel_drops_counted_with_the_remedy)
{
	char sentences[PYTHON_LOSSES_SENTENCES][320];
	struct python_tracer_losses losses = { 0 };
	struct python_kernel_drops full = { .ring_full = 4321 };

	CU_ASSERT_EQUAL(python_losses_sentences(&losses, full, sentences), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "4321 Python calls"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "--ring-buffer-mb"));
	CU_ASSERT_EQUAL(python_losses_events(&losses, full), 4321);
}

UNIT_TEST(python_losses, calls_nested_too_deep_are_not_a_ring_buffer_to_raise)
{
	char sentences[PYTHON_LOSSES_SENTENCES][320];
	struct python_tracer_losses losses = { 0 };
	struct python_kernel_drops both = { .ring_full = 5, .too_deep = 316161 };
	uint64_t counters[TCHECK_COUNTER_COUNT] = { 0 };

	CU_ASSERT_FATAL(python_losses_sentences(&losses, both, sentences) == 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "5 Python calls"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "--ring-buffer-mb"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[1], "316161 Python calls or torch scopes"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[1], "nested deeper"));
	CU_ASSERT_PTR_NULL(strstr(sentences[1], "--ring-buffer-mb"));
	/* The trace keeps one count of Python events lost: both causes. */
	CU_ASSERT_EQUAL(python_losses_events(&losses, both), 316166);
	counters[TCHECK_COUNTER_PYTHON_DROPS] = 5;
	counters[TCHECK_COUNTER_PYTHON_TOO_DEEP] = 316161;
	CU_ASSERT_EQUAL(python_kernel_drops_of(counters).ring_full, 5);
	CU_ASSERT_EQUAL(python_kernel_drops_of(counters).too_deep, 316161);
}

UNIT_TEST(python_losses, every_kind_said_once)
{
	char sentences[PYTHON_LOSSES_SENTENCES][320];
	struct python_tracer_losses losses = {
		.unfollowed_events = 17,
		.unfollowed_pids = { 41, 42 },
		.unfollowed_pid_count = 2,
		.refused_processes = 1,
		.unprobed_processes = 3,
	};

	struct python_kernel_drops two = { .ring_full = 2 };

	CU_ASSERT_FATAL(python_losses_sentences(&losses, two, sentences) == 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "2 Python calls"));
	CU_ASSERT_STRING_EQUAL(sentences[1], "1 process runs a CPython that cannot be followed "
					     "(said above): its Python calls are not in the trace");
	CU_ASSERT_STRING_EQUAL(sentences[2],
			       "the frame evaluator of 3 processes could not be probed (said "
			       "above): their Python calls are not in the trace");
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[3], "17 Python calls"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[3], "(pid 41, 42)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[3], "not being followed"));
	CU_ASSERT_EQUAL(python_losses_events(&losses, two), 19);
}
