// SPDX-License-Identifier: MIT
/* Live rule checking in the agent, reported as events, log lines and metrics; see agent_rules.h. */
#include "agent/agent_rules.h"

#include <jansson.h>
#include <stdlib.h>

#include "agent/agent_metrics.h"
#include "base/log.h"
#include "checks/rule_runner.h"
#include "checks/violation_stream.h"
#include "infer/rule_checker.h"

struct agent_rules {
	struct rule_set *set;
	struct rule_checker *checker;
	struct agent_metrics *metrics;
	struct violation_stream stream; /* --events */
};

static void report(const struct rule_violation *violation, void *context)
{
	struct agent_rules *rules = context;
	const struct infer_event *event = violation->event;
	size_t position = (size_t)(violation->rule - rules->set->rules);
	const char *relation = rule_relation_name(violation->rule->relation);
	char rule[24];

	snprintf(rule, sizeof(rule), "%zu", position);
	if (violation->notice) {
		log_notice("rule %zu at step %d, in process %u: a weight the program froze "
			   "(requires_grad False) no longer changes; a notice, not a violation: %s",
			   position, violation->step, event->pid, violation->text);
		violation_stream_write(&rules->stream, violation);
		return;
	}
	log_warning("rule %zu violated at step %d by %s in process %u (rank %d of its "
		    "communicator): %s",
		    position, violation->step, event->name, event->pid, event->rank,
		    violation->text);
	agent_metrics_violation(rules->metrics, event->pid, rule, relation, event->name);
	violation_stream_write(&rules->stream, violation);
}

const struct rule_set *agent_rules_set(const struct agent_rules *rules)
{
	return rules->set;
}

struct agent_rules *agent_rules_start(const char *rules_path, struct agent_metrics *metrics,
				      FILE *events)
{
	struct agent_rules *rules = calloc(1, sizeof(*rules));

	if (!rules) {
		log_error("out of memory");
		return NULL;
	}
	rules->metrics = metrics;
	violation_stream_init(&rules->stream, events);
	rules->set = rules_file_load(rules_path);
	if (!rules->set) {
		agent_rules_finish(rules);
		return NULL;
	}
	rules->checker = rule_checker_new(rules->set, report, rules);
	if (!rules->checker) {
		log_error("out of memory");
		agent_rules_finish(rules);
		return NULL;
	}
	log_notice("checking %zu rules from %s", rules->set->count, rules_path);
	return rules;
}

void agent_rules_observe(struct agent_rules *rules, const struct trace_record *record)
{
	violation_stream_note(&rules->stream, record);
	if (rule_checker_observe(rules->checker, record))
		log_warning("out of memory checking rules: a call was not checked");
}

void agent_rules_finish(struct agent_rules *rules)
{
	if (!rules)
		return;
	if (rules->checker)
		rule_check_finish(rules->checker, rules->set, "");
	rule_checker_free(rules->checker);
	rule_set_free(rules->set);
	violation_stream_free(&rules->stream);
	free(rules);
}
