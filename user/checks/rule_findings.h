/* SPDX-License-Identifier: MIT */
/*
 * Violations gathered into findings people can read: one per rule, shown
 * in full at its first violation, then summed up when checking ends (the
 * step it was first violated at, how many steps and which job ranks
 * violated it, how many violations). The JSON Lines stream keeps every
 * violation; the text output names each finding once.
 */
#ifndef TCHECK_RULE_FINDINGS_H
#define TCHECK_RULE_FINDINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/u64_map.h"

struct rule_set;

/* What the violations of one rule add up to. */
struct rule_finding {
	size_t rule_index;
	int32_t first_step;  /* the first known step, -1 while none is known */
	uint32_t steps;	     /* distinct known steps with a violation */
	uint64_t violations; /* all of them */
	size_t rank_count, rank_capacity;
	int *job_ranks; /* sorted, distinct; unknown ranks are not listed */
};

struct rule_findings {
	size_t count, capacity;
	struct rule_finding *findings; /* in the order their rules were first violated */
	struct u64_map seen;	       /* (rule, step) and (rule, job rank) already counted */
};

void rule_findings_init(struct rule_findings *findings);
void rule_findings_free(struct rule_findings *findings);

/*
 * Counts a violation of rule 'rule_index' at 'step' by job rank 'job_rank'
 * (-1 unknown). Returns 1 when it is the rule's first violation (the one to
 * show in full), 0 otherwise, -ENOMEM.
 */
int rule_findings_note(struct rule_findings *findings, size_t rule_index, int32_t step,
		       int job_rank);

/* Writes one line per finding ("finding: RULE TEXT: first at step S, ..."). */
void rule_findings_print(const struct rule_findings *findings, const struct rule_set *rules,
			 FILE *out);

#endif /* TCHECK_RULE_FINDINGS_H */
