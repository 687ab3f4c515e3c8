// SPDX-License-Identifier: MIT
/* A diff's differences and timing summary as sentences or as JSON Lines. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "diff/diff_report.h"
#include "export/export_jsonl.h"

static void where_text(const struct run_difference *difference, char *text, size_t size)
{
	int used = difference->job_rank >= 0 ? snprintf(text, size, "rank %d", difference->job_rank)
					     : snprintf(text, size, "job");

	if (difference->step >= 0 && used >= 0 && (size_t)used < size)
		used += snprintf(text + used, size - (size_t)used, ", step %d", difference->step);
	if (difference->communicator[0] && used >= 0 && (size_t)used < size)
		snprintf(text + used, size - (size_t)used, ", %s", difference->communicator);
}

/* "1.234 ms", "56.7 us". */
static void duration_text(double ns, char *text, size_t size)
{
	if (ns <= 0)
		snprintf(text, size, "-");
	else if (ns >= 1e6)
		snprintf(text, size, "%.3f ms", ns / 1e6);
	else
		snprintf(text, size, "%.1f us", ns / 1e3);
}

static void timing_text(FILE *out, const struct run_timing *timing)
{
	if (!timing->count)
		return;
	fprintf(out, "timing (mean, reference -> candidate):\n");
	for (size_t i = 0; i < timing->count; i++) {
		const struct run_timing_row *row = &timing->rows[i];
		char left[32], right[32], change[32] = "";

		duration_text(row->reference_ns, left, sizeof(left));
		duration_text(row->candidate_ns, right, sizeof(right));
		if (row->reference_ns > 0 && row->candidate_ns > 0)
			snprintf(change, sizeof(change), "%+.1f%%",
				 (row->candidate_ns / row->reference_ns - 1) * 100);
		fprintf(out, "  %-20s %12s -> %-12s %8s%s\n", row->name, left, right, change,
			row->flagged ? "  outside the tolerance" : "");
	}
}

int diff_report_text(FILE *out, const struct run_diff *diff, const struct run_timing *timing)
{
	for (size_t i = 0; i < diff->count; i++) {
		const struct run_difference *difference = &diff->differences[i];
		char where[128], left[192], right[192];

		where_text(difference, where, sizeof(where));
		run_value_describe(&difference->reference, left, sizeof(left));
		run_value_describe(&difference->candidate, right, sizeof(right));
		if (strcmp(difference->what, "missing_call") == 0)
			fprintf(out, "%s: missing call in the candidate: %s\n", where,
				difference->event);
		else if (strcmp(difference->what, "extra_call") == 0)
			fprintf(out, "%s: extra call in the candidate: %s\n", where,
				difference->event);
		else
			fprintf(out, "%s: %s differs: reference %s, candidate %s (at %s)\n", where,
				difference->what, left, right, difference->event);
	}
	timing_text(out, timing);
	return ferror(out) ? -EIO : 0;
}

static json_t *value_json(const struct run_value *value)
{
	if (value->kind == RUN_VALUE_NUMBER)
		return json_integer(value->number);
	if (value->kind == RUN_VALUE_TEXT)
		return export_json_text(value->text);
	return json_null();
}

static json_t *difference_json(const struct run_difference *difference)
{
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:s, s:o, s:o, s:o}", "kind", "difference",
			 "job_rank", export_json_known_or_null(difference->job_rank), "step",
			 export_json_known_or_null(difference->step), "communicator",
			 difference->communicator[0] ? export_json_text(difference->communicator)
						     : json_null(),
			 "comm_id",
			 difference->comm_id ? export_json_identity(difference->comm_id)
					     : json_null(),
			 "what", difference->what, "reference", value_json(&difference->reference),
			 "candidate", value_json(&difference->candidate), "event",
			 export_json_text(difference->event));
}

static json_t *timing_json(const struct run_timing_row *row)
{
	return json_pack("{s:s, s:s, s:f, s:f, s:b}", "kind", "timing", "name", row->name,
			 "reference_ns", row->reference_ns, "candidate_ns", row->candidate_ns,
			 "flagged", row->flagged);
}

static int write_json(FILE *out, json_t *object)
{
	int result;

	if (!object)
		return -ENOMEM;
	result = export_json_write(out, "", object, JSON_COMPACT, "\n");
	json_decref(object);
	return result;
}

int diff_report_json(FILE *out, const struct run_diff *diff, const struct run_timing *timing)
{
	int result = 0;

	for (size_t i = 0; i < diff->count && !result; i++)
		result = write_json(out, difference_json(&diff->differences[i]));
	for (size_t i = 0; i < timing->count && !result; i++)
		result = write_json(out, timing_json(&timing->rows[i]));
	return result;
}
