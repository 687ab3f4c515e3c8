// SPDX-License-Identifier: MIT
/* The warning a trace's reader gives about events its recording lost. */
#include "trace/trace_losses.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"

/* Appends "N what" to a list of parts joined by ", " and a final " and ". */
static void add_part(char parts[][160], size_t *count, uint64_t number, const char *singular,
		     const char *plural, const char *detail)
{
	if (!number)
		return;
	snprintf(parts[(*count)++], 160, "%llu %s%s", (unsigned long long)number,
		 number == 1 ? singular : plural, detail);
}

int trace_losses_sentence(const struct trace_stats *counters, char *out, size_t size)
{
	uint64_t calls = counters->ringbuf_drops + counters->nesting_overflows;
	char parts[3][160], detail[120] = "";
	size_t count = 0, used = 0;

	if (size)
		out[0] = '\0';
	if (calls)
		snprintf(detail, sizeof(detail), " (ring buffer full: %llu, nested too deep: %llu)",
			 (unsigned long long)counters->ringbuf_drops,
			 (unsigned long long)counters->nesting_overflows);
	add_part(parts, &count, calls, "call", "calls", detail);
	add_part(parts, &count, counters->process_drops, "process notice", "process notices", "");
	add_part(parts, &count, counters->python_events_lost, "Python event", "Python events", "");
	if (!count)
		return 0;
	used += (size_t)snprintf(out, size, "its recording lost ");
	for (size_t i = 0; i < count && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%s",
					 i == 0		  ? ""
					 : i + 1 == count ? " and "
							  : ", ",
					 parts[i]);
	if (used < size)
		snprintf(out + used, size - used,
			 "; a lost call can show as a hang or a violation that did not happen, "
			 "so weigh findings against the job's own logs");
	return 1;
}

void trace_incomplete_warn(struct trace_reader *reader)
{
	if (trace_reader_damage(reader))
		log_warning("%s", trace_reader_damage(reader));
	if (trace_reader_truncated(reader))
		log_warning("%s", trace_reader_truncated(reader));
}

void trace_losses_warn(const char *path, const struct trace_reader *reader)
{
	char sentence[640];

	if (trace_losses_sentence(&trace_reader_stats(reader)->recorded_counters, sentence,
				  sizeof(sentence)))
		log_warning("%s: %s", path, sentence);
}
