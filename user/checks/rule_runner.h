/* SPDX-License-Identifier: MIT */
/* Checking records against a rules file: offline (check --rules), live (record,
 * attach) and in the agent. */
#ifndef TCHECK_RULE_RUNNER_H
#define TCHECK_RULE_RUNNER_H

#include <stdio.h>

/*
 * Checks every trace against the rules in 'rules_path', printing each
 * violation as text on standard output and, when 'jsonl_path' is given,
 * as JSON Lines there. Returns 0 when nothing was violated, 1 when
 * something was, 2 when the rules or a trace could not be read.
 */
int check_rules_offline(const char *rules_path, char **traces, int trace_count,
			const char *jsonl_path);

struct record_consumer;
struct live_rules;
struct rule_checker;
struct rule_set;

/*
 * Loads the rules file every checker reads (offline, live, the agent),
 * saying how many repeated rules were dropped; NULL after printing why not.
 */
struct rule_set *rules_file_load(const char *rules_path);

/*
 * Ends a check (offline, live or in the agent): judges the groups still
 * open and logs how many events were checked ('how': "", " live") and how
 * many violations were found.
 */
void rule_check_finish(struct rule_checker *checker, const struct rule_set *rules, const char *how);

/*
 * Live checking during record or attach: loads the rules and fills
 * 'consumer' so that every record is checked as it comes; violations go
 * to standard output as they are found and, when 'events' is not NULL,
 * there as JSON Lines (violation_stream.h). NULL after printing why not.
 */
struct live_rules *live_rules_start(const char *rules_path, struct record_consumer *consumer,
				    FILE *events);
/* The rules being checked. */
const struct rule_set *live_rules_set(const struct live_rules *live);
/* Closes the open steps, prints the summary, frees; returns 'status'. */
int live_rules_finish(struct live_rules *live, int status);

#endif /* TCHECK_RULE_RUNNER_H */
