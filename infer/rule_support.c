// SPDX-License-Identifier: MIT
/* A rule's support across reference programs, and the scope it gets from it. */
#include "rule_support.h"

#include <stdlib.h>
#include <string.h>

/*
 * Fields of an NCCL call that the job's layout sets: what the collective
 * moves (its element counts and type: a layer's tensor, a shard of the
 * parameters split over the ranks) and rank numbers and counts. Another
 * program, or the same one at another world size, moves other tensors in
 * other groups.
 */
static const char *const layout_fields[] = { "count",	 "sendcount", "recvcount",
					     "datatype", "nranks",    "peer" };

bool rule_value_is_layout(const struct rule *rule)
{
	if (rule->relation != RELATION_API_ARG || rule->distinct ||
	    rule->event.kind != INFER_EVENT_NCCL || !rule->field)
		return false;
	for (size_t i = 0; i < sizeof(layout_fields) / sizeof(layout_fields[0]); i++)
		if (strcmp(rule->field, layout_fields[i]) == 0)
			return true;
	return false;
}

bool rule_states_value(const struct rule *rule)
{
	switch (rule->relation) {
	case RELATION_API_ARG:
	case RELATION_API_OUTPUT:
		return true;
	case RELATION_EVENT_CONTAIN:
		return rule->value != NULL;
	default:
		return false;
	}
}

bool rule_support_judge(struct rule *rule, const struct infer_event *const *passing,
			size_t passing_count, const struct rule_evidence *evidence, bool *ok)
{
	uint32_t pipeline_count = evidence->pipeline_count;
	bool *supports;
	uint32_t support = 0;

	if (pipeline_count < 1)
		pipeline_count = 1;
	supports = calloc(pipeline_count, sizeof(*supports));
	if (!supports) {
		*ok = false;
		return false;
	}
	for (size_t i = 0; i < passing_count; i++) {
		uint32_t pipeline = passing[i]->pipeline;

		if (pipeline < pipeline_count && !supports[pipeline]) {
			supports[pipeline] = true;
			support++;
		}
	}
	free(supports);
	rule->pipelines = support;
	/* One program cannot tell what every program does: its rules apply where used. */
	rule->scope =
		pipeline_count >= 2 && support == pipeline_count ? RULE_SCOPE_ALL : RULE_SCOPE_USED;
	/* A value of the layout is each job's own, however many programs share it. */
	if (pipeline_count >= 2 && rule_value_is_layout(rule))
		return false;
	/* A value some programs chose (a learning rate two of them share) is no rule. */
	return !rule_states_value(rule) || rule->scope == RULE_SCOPE_ALL || pipeline_count < 2;
}

size_t rule_support_select_name(const struct infer_event **list, size_t count, const char *name)
{
	size_t kept = 0;

	for (size_t i = 0; i < count; i++)
		if (list[i]->name == name) {
			const struct infer_event *swap = list[kept];

			list[kept++] = list[i];
			list[i] = swap;
		}
	return kept;
}
