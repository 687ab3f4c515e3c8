// SPDX-License-Identifier: MIT
/* Violations gathered per rule: first step, steps, job ranks, for the text report. */
#include "checks/rule_findings.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "infer/rules.h"

void rule_findings_init(struct rule_findings *findings)
{
	memset(findings, 0, sizeof(*findings));
	u64_map_init(&findings->seen);
}

void rule_findings_free(struct rule_findings *findings)
{
	for (size_t i = 0; i < findings->count; i++)
		free(findings->findings[i].job_ranks);
	free(findings->findings);
	u64_map_free(&findings->seen);
	memset(findings, 0, sizeof(*findings));
}

static struct rule_finding *finding_of(struct rule_findings *findings, size_t rule_index)
{
	for (size_t i = 0; i < findings->count; i++)
		if (findings->findings[i].rule_index == rule_index)
			return &findings->findings[i];
	return NULL;
}

/* Marks (rule, what, value) seen; 1 when it was new, 0 when seen before, -ENOMEM. */
static int first_time(struct rule_findings *findings, size_t rule_index, uint64_t what,
		      int64_t value)
{
	uint64_t key =
		fnv1a_add_u64(fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, rule_index), what),
			      (uint64_t)value);

	if (u64_map_get(&findings->seen, key))
		return 0;
	return u64_map_put(&findings->seen, key, findings) ? -ENOMEM : 1;
}

static int add_rank(struct rule_finding *finding, int job_rank)
{
	size_t at = 0;

	while (at < finding->rank_count && finding->job_ranks[at] < job_rank)
		at++;
	if (growable_array_room_for_one((void **)&finding->job_ranks, finding->rank_count,
					&finding->rank_capacity, sizeof(*finding->job_ranks)))
		return -ENOMEM;
	memmove(&finding->job_ranks[at + 1], &finding->job_ranks[at],
		(finding->rank_count - at) * sizeof(*finding->job_ranks));
	finding->job_ranks[at] = job_rank;
	finding->rank_count++;
	return 0;
}

int rule_findings_note(struct rule_findings *findings, size_t rule_index, int32_t step,
		       int job_rank)
{
	struct rule_finding *finding = finding_of(findings, rule_index);
	int first = !finding, fresh;

	if (!finding) {
		if (growable_array_room_for_one((void **)&findings->findings, findings->count,
						&findings->capacity, sizeof(*findings->findings)))
			return -ENOMEM;
		finding = &findings->findings[findings->count++];
		*finding = (struct rule_finding){ .rule_index = rule_index, .first_step = step };
	}
	finding->violations++;
	/* Unknown steps (-1) count as violations, not as a first step or a step. */
	if (step >= 0 && (finding->first_step < 0 || step < finding->first_step))
		finding->first_step = step;
	fresh = step >= 0 ? first_time(findings, rule_index, 1, step) : 0;
	if (fresh < 0)
		return fresh;
	finding->steps += (uint32_t)fresh;
	if (job_rank >= 0) {
		fresh = first_time(findings, rule_index, 2, job_rank);
		if (fresh < 0 || (fresh && add_rank(finding, job_rank)))
			return -ENOMEM;
	}
	return first;
}

void rule_findings_print(const struct rule_findings *findings, const struct rule_set *rules,
			 FILE *out)
{
	char text[RULE_TEXT_SIZE];

	for (size_t i = 0; i < findings->count; i++) {
		const struct rule_finding *finding = &findings->findings[i];

		rule_describe(&rules->rules[finding->rule_index], text, sizeof(text));
		if (finding->first_step >= 0)
			fprintf(out, "finding: %s: first at step %d, in %u step(s)", text,
				finding->first_step, finding->steps);
		else
			fprintf(out, "finding: %s: at an unknown step", text);
		fprintf(out, ", %" PRIu64 " violation(s)", finding->violations);
		for (size_t r = 0; r < finding->rank_count; r++)
			fprintf(out, "%s%d", r ? ", " : ", job rank(s) ", finding->job_ranks[r]);
		fputc('\n', out);
	}
}
