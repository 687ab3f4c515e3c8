// SPDX-License-Identifier: MIT
/*
 * What the relation engine's passes share (inference_engine.h): a rule found
 * emitted under a precondition, and the questions they ask of examples.
 */
#include <errno.h>
#include <stdbool.h>

#include "inference_engine.h"
#include "precondition.h"

bool inference_same_process_step(const struct infer_event *a, const struct infer_event *b)
{
	return a->pipeline == b->pipeline && a->pid == b->pid && a->step == b->step;
}

int inference_several_steps(const struct infer_event *const *examples, size_t count)
{
	for (size_t i = 1; i < count; i++)
		if (examples[i]->step != examples[0]->step)
			return 1;
	return 0;
}

int inference_emit_pairs(struct inference *inference, struct rule *rule,
			 const struct infer_event *const *passing,
			 const struct infer_event *const *passing_peers, size_t passing_count,
			 const struct infer_event *const *failing,
			 const struct infer_event *const *failing_peers, size_t failing_count,
			 const char *excluded)
{
	bool ok = true;
	int found;

	if (passing_count < MIN_PASSING)
		return 0;
	if (!rule_support_judge(rule, passing, passing_count, &inference->evidence, &ok))
		return ok ? 0 : -ENOMEM;
	found = precondition_deduce_pairs(inference->rules->pool, passing, passing_peers,
					  passing_count, failing, failing_peers, failing_count,
					  excluded, &rule->precondition);
	if (found < 0)
		return -ENOMEM;
	if (found == 0)
		return 0;
	rule->passing = passing_count;
	rule->failing = failing_count;
	return rule_set_add(inference->rules, rule);
}

int inference_emit(struct inference *inference, struct rule *rule,
		   const struct infer_event *const *passing, size_t passing_count,
		   const struct infer_event *const *failing, size_t failing_count,
		   const char *excluded)
{
	return inference_emit_pairs(inference, rule, passing, NULL, passing_count, failing, NULL,
				    failing_count, excluded);
}
