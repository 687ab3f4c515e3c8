// SPDX-License-Identifier: MIT
/* Precondition deduction over examples, TrainCheck's algorithm on our events. */
#include <stdlib.h>
#include <string.h>

#include "precondition.h"

#define VARIABLES_MAX 32

static const char *const clause_names[] = { NULL, "constant", "exist", "consistent", "unequal" };

const char *precondition_clause_name(uint32_t type)
{
	return type >= CLAUSE_CONSTANT && type <= CLAUSE_UNEQUAL ? clause_names[type] : "unknown";
}

uint32_t precondition_clause_type(const char *name)
{
	for (uint32_t type = CLAUSE_CONSTANT; type <= CLAUSE_UNEQUAL; type++)
		if (strcmp(clause_names[type], name) == 0)
			return type;
	return 0;
}

/* An example: an event and, for cross-rank relations, a peer of its group. */
struct examples {
	const struct infer_event *const *events;
	const struct infer_event *const *peers; /* NULL: no example has a peer */
	size_t count;
};

static const struct infer_event *peer_of(const struct examples *examples, size_t i)
{
	return examples->peers ? examples->peers[i] : NULL;
}

static int clause_holds(struct string_pool *pool, const struct precondition_clause *clause,
			const struct infer_event *event, const struct infer_event *peer)
{
	const char *value = infer_event_variable(pool, event, clause->variable);
	const char *other;

	switch (clause->type) {
	case CLAUSE_EXIST:
		return value != NULL;
	case CLAUSE_CONSTANT:
		return value == clause->value;
	case CLAUSE_CONSISTENT:
	case CLAUSE_UNEQUAL:
		if (!value || !peer)
			return 0;
		other = infer_event_variable(pool, peer, clause->variable);
		if (!other)
			return 0;
		return clause->type == CLAUSE_CONSISTENT ? other == value : other != value;
	default:
		return 0;
	}
}

static int group_holds(struct string_pool *pool, const struct precondition_group *group,
		       const struct infer_event *event, const struct infer_event *peer)
{
	for (uint32_t i = 0; i < group->clause_count; i++)
		if (!clause_holds(pool, &group->clauses[i], event, peer))
			return 0;
	return 1;
}

int precondition_holds_pair(struct string_pool *pool, const struct precondition *precondition,
			    const struct infer_event *event, const struct infer_event *peer)
{
	if (precondition->group_count == 0)
		return 1;
	for (uint32_t i = 0; i < precondition->group_count; i++)
		if (group_holds(pool, &precondition->groups[i], event, peer))
			return 1;
	return 0;
}

int precondition_holds(struct string_pool *pool, const struct precondition *precondition,
		       const struct infer_event *event)
{
	return precondition_holds_pair(pool, precondition, event, NULL);
}

static int selected(struct string_pool *pool, const struct infer_event *event, const char *split,
		    const char *split_value)
{
	return !split || infer_event_variable(pool, event, split) == split_value;
}

/* Which of the four clause types hold for 'variable' on every selected passing example. */
struct clause_candidates {
	const char *constant; /* the one value, or NULL */
	int exists, consistent, unequal;
};

static void candidates_of(struct string_pool *pool, const struct examples *passing,
			  const char *split, const char *split_value, const char *variable,
			  struct clause_candidates *out)
{
	int first = 1, constant = 1;

	memset(out, 0, sizeof(*out));
	out->exists = out->consistent = out->unequal = 1;
	for (size_t i = 0; i < passing->count; i++) {
		const struct infer_event *event = passing->events[i], *peer = peer_of(passing, i);
		const char *value, *other;

		if (!selected(pool, event, split, split_value))
			continue;
		value = infer_event_variable(pool, event, variable);
		if (!value) {
			memset(out, 0, sizeof(*out));
			return;
		}
		if (first)
			out->constant = value;
		else if (value != out->constant)
			constant = 0;
		first = 0;
		other = peer ? infer_event_variable(pool, peer, variable) : NULL;
		if (!other)
			out->consistent = out->unequal = 0;
		else if (other == value)
			out->unequal = 0;
		else
			out->consistent = 0;
	}
	if (!constant || first)
		out->constant = NULL;
}

static int violated_by_some(struct string_pool *pool, const struct precondition_clause *clause,
			    const struct examples *failing)
{
	for (size_t i = 0; i < failing->count; i++)
		if (!clause_holds(pool, clause, failing->events[i], peer_of(failing, i)))
			return 1;
	return 0;
}

/*
 * The clauses true on every passing example (those selected by 'split'
 * when given) and violated by at least one failing example, the strongest
 * per variable. Returns 1 when every failing example violates their
 * conjunction.
 */
static int deduce_group(struct string_pool *pool, const struct examples *passing, const char *split,
			const char *split_value, const struct examples *failing,
			const char *excluded, struct precondition_group *group)
{
	const char *names[VARIABLES_MAX];
	const struct infer_event *first = NULL;
	size_t name_count;

	for (size_t i = 0; i < passing->count && !first; i++)
		if (selected(pool, passing->events[i], split, split_value))
			first = passing->events[i];
	if (!first)
		return 0;
	memset(group, 0, sizeof(*group));
	name_count = infer_event_variables(first, names, VARIABLES_MAX);
	for (size_t v = 0; v < name_count && group->clause_count < PRECONDITION_CLAUSES_MAX; v++) {
		const char *variable = string_pool_intern(pool, names[v]);
		struct clause_candidates holds;
		/* Strongest first: one value, the peer's value, another value, any value. */
		struct precondition_clause tries[4];
		size_t try_count = 0;

		if (!variable)
			return -1;
		if (excluded && strcmp(names[v], excluded) == 0)
			continue;
		candidates_of(pool, passing, split, split_value, variable, &holds);
		if (holds.constant)
			tries[try_count++] =
				(struct precondition_clause){ CLAUSE_CONSTANT, variable,
							      holds.constant };
		if (holds.consistent)
			tries[try_count++] =
				(struct precondition_clause){ CLAUSE_CONSISTENT, variable, NULL };
		if (holds.unequal)
			tries[try_count++] =
				(struct precondition_clause){ CLAUSE_UNEQUAL, variable, NULL };
		if (holds.exists)
			tries[try_count++] =
				(struct precondition_clause){ CLAUSE_EXIST, variable, NULL };
		for (size_t t = 0; t < try_count; t++) {
			if (violated_by_some(pool, &tries[t], failing)) {
				group->clauses[group->clause_count++] = tries[t];
				break;
			}
		}
	}
	for (size_t i = 0; i < failing->count; i++)
		if (group_holds(pool, group, failing->events[i], peer_of(failing, i)))
			return 0;
	return group->clause_count > 0;
}

/* Tries the disjunction split by one variable: a group per value it takes. */
static int deduce_split(struct string_pool *pool, const struct examples *passing,
			const struct examples *failing, const char *excluded, const char *split,
			struct precondition *out)
{
	const char *values[PRECONDITION_GROUPS_MAX];
	size_t value_count = 0;

	for (size_t i = 0; i < passing->count; i++) {
		const char *value = infer_event_variable(pool, passing->events[i], split);
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
		int found = deduce_group(pool, passing, split, values[g], failing, excluded,
					 &out->groups[g]);

		if (found <= 0)
			return found;
	}
	out->group_count = (uint32_t)value_count;
	return 1;
}

int precondition_deduce_pairs(struct string_pool *pool, const struct infer_event *const *passing,
			      const struct infer_event *const *passing_peers, size_t passing_count,
			      const struct infer_event *const *failing,
			      const struct infer_event *const *failing_peers, size_t failing_count,
			      const char *excluded, struct precondition *out)
{
	const struct examples passed = { passing, passing_peers, passing_count };
	const struct examples failed = { failing, failing_peers, failing_count };
	const char *names[VARIABLES_MAX];
	size_t name_count;
	int found;

	memset(out, 0, sizeof(*out));
	if (passing_count == 0)
		return 0;
	if (failing_count == 0)
		return 1;
	found = deduce_group(pool, &passed, NULL, NULL, &failed, excluded, &out->groups[0]);
	if (found != 0) {
		out->group_count = found > 0 ? 1 : 0;
		return found;
	}
	name_count = infer_event_variables(passing[0], names, VARIABLES_MAX);
	for (size_t v = 0; v < name_count; v++) {
		const char *split = string_pool_intern(pool, names[v]);

		if (!split)
			return -1;
		if (excluded && strcmp(names[v], excluded) == 0)
			continue;
		found = deduce_split(pool, &passed, &failed, excluded, split, out);
		if (found != 0)
			return found;
	}
	memset(out, 0, sizeof(*out));
	return 0;
}

int precondition_deduce(struct string_pool *pool, const struct infer_event *const *passing,
			size_t passing_count, const struct infer_event *const *failing,
			size_t failing_count, const char *excluded, struct precondition *out)
{
	return precondition_deduce_pairs(pool, passing, NULL, passing_count, failing, NULL,
					 failing_count, excluded, out);
}

bool precondition_reads(const struct precondition *precondition, const char *variable)
{
	for (uint32_t i = 0; i < precondition->group_count; i++)
		for (uint32_t j = 0; j < precondition->groups[i].clause_count; j++) {
			const char *read = precondition->groups[i].clauses[j].variable;

			if (read && strcmp(read, variable) == 0)
				return true;
		}
	return false;
}
