/* SPDX-License-Identifier: MIT */
/* Checking traces against a rules file: what 'tcheck-bpf check --rules' runs. */
#ifndef TCHECK_COMMAND_CHECK_RULES_H
#define TCHECK_COMMAND_CHECK_RULES_H

/*
 * Checks every trace against the rules in 'rules_path', printing each
 * violation as text on standard output and, when 'jsonl_path' is given,
 * as JSON Lines there. Returns 0 when nothing was violated, 1 when
 * something was, 2 when the rules or a trace could not be read.
 */
int check_rules_offline(const char *rules_path, char **traces, int trace_count,
			const char *jsonl_path);

#endif /* TCHECK_COMMAND_CHECK_RULES_H */
