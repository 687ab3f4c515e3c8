/* SPDX-License-Identifier: MIT */
/*
 * What a candidate rule's evidence says about programs it was not learned
 * from. Each input trace is one reference program (a pipeline). A rule
 * every pipeline supports holds for any program; one some pipelines support
 * applies only where a process makes the calls it names; a value (a
 * constant argument, an exact count) that one program alone shows among
 * several is that program's choice, not a property of training, and is no
 * rule at all.
 */
#ifndef TCHECK_RULE_SUPPORT_H
#define TCHECK_RULE_SUPPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infer_event.h"
#include "rules.h"

/* What the inference of every relation shares. */
struct rule_evidence {
	uint32_t pipeline_count; /* the reference programs given, at least 1 */
	size_t min_passing;	 /* least passing examples of a rule */
};

/*
 * Fills rule->pipelines and rule->scope from the pipelines of the passing
 * examples. Returns whether the rule is kept; '*ok' is cleared when out of
 * memory.
 */
bool rule_support_judge(struct rule *rule, const struct infer_event *const *passing,
			size_t passing_count, const struct rule_evidence *evidence, bool *ok);

/*
 * Whether a rule states a constant of an NCCL call's layout (element count,
 * datatype, rank count or peer): no rule when several programs are given,
 * since it changes with the world size and the parallel layout; the ranks'
 * agreement on it (Consistent) is what carries over.
 */
bool rule_value_is_layout(const struct rule *rule);

/*
 * Moves the events named 'name' (interned) to the front of 'list', keeping
 * the others after them; returns how many there are: one rule's examples
 * among those of several.
 */
size_t rule_support_select_name(const struct infer_event **list, size_t count, const char *name);

/* Whether a rule states a value (a constant, an exact count, a per-rank difference). */
bool rule_states_value(const struct rule *rule);

#endif /* TCHECK_RULE_SUPPORT_H */
