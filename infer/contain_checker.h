/* SPDX-License-Identifier: MIT */
/*
 * Checks EventContain rules as events come: the operations of each
 * thread are remembered for a while, a scope's record (which comes after
 * those of what it contains) is checked against them, and a step of a
 * process is checked when the process starts its next step.
 */
#ifndef TCHECK_CONTAIN_CHECKER_H
#define TCHECK_CONTAIN_CHECKER_H

#include "gradient_clearing.h"
#include "rules.h"

/*
 * A field ("True") of a step reported for "every step contains zero_grad"
 * although it held one: it cleared gradients no update had used
 * (gradient_clearing_cleared_unused).
 */
#define CONTAIN_CLEARED_UNUSED_FIELD "cleared_unused_gradients"

/* A violated rule and the parent (a scope, or the step) that violates it. */
typedef void (*contain_violation_fn)(void *context, const struct rule *rule,
				     const struct infer_event *parent);

struct contain_checker;

/*
 * NULL when out of memory; a checker of a rule set without EventContain does
 * nothing. A rule of scope "used" is checked on a process's parent only once
 * a parent of that process has held the rule's child, and a step without
 * the child only while the process held it in every step since (two in a
 * row at least: call_rhythm.h). A step that cleared
 * its gradients without zero_grad ('clearing', fed by the caller before
 * each event) is not asked to contain zero_grad.
 */
struct contain_checker *contain_checker_new(struct rule_set *rules, contain_violation_fn report,
					    void *context,
					    const struct gradient_clearing *clearing);
/*
 * 'cached' is the caller's slot for the event's process (NULL: looked up
 * each time, u64_map_get_or_add_cached). 0 or -ENOMEM.
 */
int contain_checker_observe(struct contain_checker *checker, const struct infer_event *event,
			    void **cached);
/* Checks the steps still open. */
void contain_checker_finish(struct contain_checker *checker);
void contain_checker_free(struct contain_checker *checker);

#endif /* TCHECK_CONTAIN_CHECKER_H */
