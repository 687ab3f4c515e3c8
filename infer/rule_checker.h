/* SPDX-License-Identifier: MIT */
/*
 * Checks deployed rules against calls as they come, from a trace or live:
 * violations are handed to a callback with the invariant in words, the
 * step, the ranks and the offending events with their Python context.
 * Notices go to the same callback, marked: what the program did on
 * purpose by its own word (a layer frozen mid-run with requires_grad
 * False) that a rule would otherwise have judged; they are not violations.
 */
#ifndef TCHECK_RULE_CHECKER_H
#define TCHECK_RULE_CHECKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rules.h"

struct rule_violation {
	const struct rule *rule;
	size_t rule_index;		 /* its position in the rule set */
	const char *text;		 /* the invariant in words */
	const struct infer_event *event; /* the offending event */
	const struct infer_event *other; /* the event it disagrees with, or NULL */
	int32_t step;			 /* -1 unknown */
	bool notice;			 /* said, not counted as a violation */
};

typedef void (*rule_violation_fn)(const struct rule_violation *violation, void *context);

struct rule_checker;

/* The rule set must outlive the checker. NULL when out of memory. */
struct rule_checker *rule_checker_new(struct rule_set *rules, rule_violation_fn report,
				      void *context);
/* Checks one record (non-call records are ignored); 0 or -ENOMEM. */
int rule_checker_observe(struct rule_checker *checker, const struct trace_record *record);
/* Lets time pass (live checking); reserved for time-based relations. */
void rule_checker_tick(struct rule_checker *checker, uint64_t now_ns);
/* Closes the steps still open and reports what they violate. */
void rule_checker_finish(struct rule_checker *checker);
uint64_t rule_checker_violations(const struct rule_checker *checker);
uint64_t rule_checker_notices(const struct rule_checker *checker);
uint64_t rule_checker_events(const struct rule_checker *checker);
/*
 * The processes that made Python calls (up to max of their pids in pids)
 * and whether any of them ended a step (its step marker ran): where none
 * did, the rules about steps judged none of their calls.
 */
size_t rule_checker_python_processes(const struct rule_checker *checker, bool *stepped,
				     uint32_t *pids, size_t max);
void rule_checker_free(struct rule_checker *checker);

#endif /* TCHECK_RULE_CHECKER_H */
