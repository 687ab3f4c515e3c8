// SPDX-License-Identifier: MIT
/* The recorder's closing warnings about lost Python events: one per kind of loss, counted. */
#include <string.h>

#include "python/python_losses.h"
#include "unit.h"

UNIT_TEST(python_losses, nothing_lost_says_nothing)
{
	char sentences[PYTHON_LOSSES_SENTENCES][320];
	struct python_tracer_losses losses = { .unnamed_calls = 12 };

	/* Code objects freed before naming are mostly module bodies: no warning for them. */
	CU_ASSERT_EQUAL(python_losses_sentences(&losses, 0, sentences), 0);
	CU_ASSERT_EQUAL(python_losses_events(&losses, 0), 0);
}

UNIT_TEST(python_losses, kernel_drops_counted_with_the_remedy)
{
	char sentences[PYTHON_LOSSES_SENTENCES][320];
	struct python_tracer_losses losses = { 0 };

	CU_ASSERT_EQUAL(python_losses_sentences(&losses, 4321, sentences), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "4321 Python calls"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "--ring-buffer-mb"));
	CU_ASSERT_EQUAL(python_losses_events(&losses, 4321), 4321);
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

	CU_ASSERT_FATAL(python_losses_sentences(&losses, 2, sentences) == 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[0], "2 Python calls"));
	CU_ASSERT_STRING_EQUAL(sentences[1], "1 process runs a CPython that cannot be followed "
					     "(said above): its Python calls are not in the trace");
	CU_ASSERT_STRING_EQUAL(sentences[2],
			       "the frame evaluator of 3 processes could not be probed (said "
			       "above): their Python calls are not in the trace");
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[3], "17 Python calls"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[3], "(pid 41, 42)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentences[3], "not being followed"));
	CU_ASSERT_EQUAL(python_losses_events(&losses, 2), 19);
}
