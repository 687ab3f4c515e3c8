// SPDX-License-Identifier: MIT
/* Precondition deduction over examples, TrainCheck's algorithm on our events. */
#include <stdlib.h>
#include <string.h>

#include "precondition.h"

#define VARIABLES_MAX 32

static int clause_holds(struct string_pool *pool, const struct precondition_clause *clause,
			const struct infer_event *event)
{
	const char *value = infer_event_variable(pool, event, clause->variable);

	if (clause->type == CLAUSE_EXIST)
		return value != NULL;
	return value == clause->value;
}

static int group_holds(struct string_pool *pool, const struct precondition_group *group,
		       const struct infer_event *event)
{
	for (uint32_t i = 0; i < group->clause_count; i++)
		if (!clause_holds(pool, &group->clauses[i], event))
			return 0;
	return 1;
}

int precondition_holds(struct string_pool *pool, const struct precondition *precondition,
		       const struct infer_event *event)
{
	if (precondition->group_count == 0)
		return 1;
	for (uint32_t i = 0; i < precondition->group_count; i++)
		if (group_holds(pool, &precondition->groups[i], event))
			return 1;
	return 0;
}

/*
 * The clauses true on every passing example (those selected by 'select'
 * when given) and violated by at least one failing example. Returns 1 when
 * every failing example violates their conjunction.
 */
static int deduce_group(struct string_pool *pool, const struct infer_event *const *passing,
			size_t passing_count, const char *split, const char *split_value,
			const struct infer_event *const *failing, size_t failing_count,
			const char *excluded, struct precondition_group *group)
{
	const char *names[VARIABLES_MAX];
	const struct infer_event *first = NULL;
	size_t name_count;

	for (size_t i = 0; i < passing_count && !first; i++)
		if (!split || infer_event_variable(pool, passing[i], split) == split_value)
			first = passing[i];
	if (!first)
		return 0;
	memset(group, 0, sizeof(*group));
	name_count = infer_event_variables(first, names, VARIABLES_MAX);
	for (size_t v = 0; v < name_count && group->clause_count < PRECONDITION_CLAUSES_MAX; v++) {
		struct precondition_clause clause = { CLAUSE_CONSTANT,
						      string_pool_intern(pool, names[v]), NULL };
		int constant = 1, exists = 1, violated = 0;

		if (!clause.variable)
			return -1;
		if (excluded && strcmp(names[v], excluded) == 0)
			continue;
		clause.value = infer_event_variable(pool, first, names[v]);
		for (size_t i = 0; i < passing_count && (constant || exists); i++) {
			const char *value;

			if (split && infer_event_variable(pool, passing[i], split) != split_value)
				continue;
			value = infer_event_variable(pool, passing[i], names[v]);
			if (!value)
				constant = exists = 0;
			else if (value != clause.value)
				constant = 0;
		}
		if (!constant && !exists)
			continue;
		if (!constant) {
			clause.type = CLAUSE_EXIST;
			clause.value = NULL;
		}
		for (size_t i = 0; i < failing_count && !violated; i++)
			violated = !clause_holds(pool, &clause, failing[i]);
		if (violated)
			group->clauses[group->clause_count++] = clause;
	}
	for (size_t i = 0; i < failing_count; i++)
		if (group_holds(pool, group, failing[i]))
			return 0;
	return group->clause_count > 0;
}

/* Tries the disjunction split by one variable: a group per value it takes. */
static int deduce_split(struct string_pool *pool, const struct infer_event *const *passing,
			size_t passing_count, const struct infer_event *const *failing,
			size_t failing_count, const char *excluded, const char *split,
			struct precondition *out)
{
	const char *values[PRECONDITION_GROUPS_MAX];
	size_t value_count = 0;

	for (size_t i = 0; i < passing_count; i++) {
		const char *value = infer_event_variable(pool, passing[i], split);
		size_t known = 0;

		if (!value)
			return 0;
		while (known < value_count && values[known] != value)
			known++;
		if (known == value_count) {
			if (value_count == PRECONDITION_GROUPS_MAX)
				return 0;
			values[value_count++] = value;
		}
	}
	if (value_count < 2)
		return 0;
	memset(out, 0, sizeof(*out));
	for (size_t g = 0; g < value_count; g++) {
		int found = deduce_group(pool, passing, passing_count, split, values[g], failing,
					 failing_count, excluded, &out->groups[g]);

		if (found <= 0)
			return found;
	}
	out->group_count = (uint32_t)value_count;
	return 1;
}

int precondition_deduce(struct string_pool *pool, const struct infer_event *const *passing,
			size_t passing_count, const struct infer_event *const *failing,
			size_t failing_count, const char *excluded, struct precondition *out)
{
	const char *names[VARIABLES_MAX];
	size_t name_count;
	int found;

	memset(out, 0, sizeof(*out));
	if (passing_count == 0)
		return 0;
	if (failing_count == 0)
		return 1;
	found = deduce_group(pool, passing, passing_count, NULL, NULL, failing, failing_count,
			     excluded, &out->groups[0]);
	if (found != 0) {
		out->group_count = found > 0 ? 1 : 0;
		return found;
	}
	name_count = infer_event_variables(passing[0], names, VARIABLES_MAX);
	for (size_t v = 0; v < name_count; v++) {
		if (excluded && strcmp(names[v], excluded) == 0)
			continue;
		found = deduce_split(pool, passing, passing_count, failing, failing_count, excluded,
				     names[v], out);
		if (found != 0)
			return found;
	}
	memset(out, 0, sizeof(*out));
	return 0;
}
