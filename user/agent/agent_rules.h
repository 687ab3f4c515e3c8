/* SPDX-License-Identifier: MIT */
/*
 * Rules in the node agent: the calls of every attached process checked
 * live against a rules file. Each violation becomes a JSON Lines event
 * (kind "violation"), a line in the log, and a count in
 * tcheck_violations_total under the rule's position in the file.
 */
#ifndef TCHECK_AGENT_RULES_H
#define TCHECK_AGENT_RULES_H

#include <stdio.h>

#include "model/trace_records.h"

struct rule_set;

struct agent_metrics;
struct agent_rules;

/* 'events' may be NULL. NULL after saying why (the rules file cannot be read). */
struct agent_rules *agent_rules_start(const char *rules_path, struct agent_metrics *metrics,
				      FILE *events);

/* The rules being checked. */
const struct rule_set *agent_rules_set(const struct agent_rules *rules);

/* Checks one record of the recording. */
void agent_rules_observe(struct agent_rules *rules, const struct trace_record *record);

/* Closes the steps still open, says how many violations there were, frees. NULL is fine. */
void agent_rules_finish(struct agent_rules *rules);

#endif /* TCHECK_AGENT_RULES_H */
