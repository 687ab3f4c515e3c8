// SPDX-License-Identifier: MIT
/* The warning a trace's readers give about what its recording lost. */
#include <string.h>

#include "trace/trace_losses.h"
#include "unit.h"

UNIT_TEST(trace_losses, a_recording_without_losses_says_nothing)
{
	/* Unmatched returns and filtered calls are not losses. */
	struct trace_stats counters = { .calls = 1000, .unmatched_returns = 3, .filtered = 40 };
	char sentence[640] = "unchanged";

	CU_ASSERT_EQUAL(trace_losses_sentence(&counters, sentence, sizeof(sentence)), 0);
	CU_ASSERT_STRING_EQUAL(sentence, "");
}

UNIT_TEST(trace_losses, every_kind_of_loss_is_counted_in_one_sentence)
{
	struct trace_stats counters = { .ringbuf_drops = 120,
					.nesting_overflows = 3,
					.process_drops = 2,
					.python_events_lost = 4567 };
	char sentence[640];

	CU_ASSERT_EQUAL(trace_losses_sentence(&counters, sentence, sizeof(sentence)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(sentence, "its recording lost 123 calls (ring buffer full: "
						"120, nested too deep: 3), 2 process notices and "
						"4567 Python events; "));
	CU_ASSERT_PTR_NOT_NULL(strstr(sentence, "hang or a violation"));
}

UNIT_TEST(trace_losses, one_kind_alone_in_the_singular)
{
	struct trace_stats python_only = { .python_events_lost = 1 };
	struct trace_stats notices_only = { .process_drops = 1 };
	char sentence[640];

	CU_ASSERT_EQUAL(trace_losses_sentence(&python_only, sentence, sizeof(sentence)), 1);
	CU_ASSERT_EQUAL(strncmp(sentence, "its recording lost 1 Python event; ", 35), 0);
	CU_ASSERT_EQUAL(trace_losses_sentence(&notices_only, sentence, sizeof(sentence)), 1);
	CU_ASSERT_EQUAL(strncmp(sentence, "its recording lost 1 process notice; ", 37), 0);
}

UNIT_TEST(trace_losses, a_short_buffer_is_cut_not_overrun)
{
	struct trace_stats counters = { .ringbuf_drops = 18446744073709551615ULL,
					.process_drops = 5,
					.python_events_lost = 6 };
	char buffer[48];

	memset(buffer, 'x', sizeof(buffer));
	CU_ASSERT_EQUAL(trace_losses_sentence(&counters, buffer, 24), 1);
	CU_ASSERT_EQUAL(strlen(buffer), 23);
	CU_ASSERT_EQUAL(buffer[24], 'x');
}
