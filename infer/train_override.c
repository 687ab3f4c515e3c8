// SPDX-License-Identifier: MIT
/* TrainOverrideRan: a module trains after its class's train() override ran (train_override.h). */
#include "train_override.h"

#include <errno.h>
#include <stdlib.h>

#include "model/trace_records.h"
#include "model_calls.h"

bool train_override_wants(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && event->stage == TRACE_STAGE_TRAIN &&
	       model_calls_is_module_call(event->name);
}

bool train_override_holds(const struct infer_event *event)
{
	return !(event->flags & INFER_EVENT_TRAIN_NOT_RUN);
}

int infer_train_override(struct rule_set *rules, const struct infer_event *events, size_t count,
			 const struct rule_evidence *evidence)
{
	const struct infer_event **passing = malloc((count ? count : 1) * sizeof(*passing));
	struct rule rule = { .relation = RELATION_TRAIN_OVERRIDE_RAN };
	size_t passing_count = 0;
	bool broken = false, ok = true;
	int failed = 0;

	if (!passing)
		return -ENOMEM;
	for (size_t i = 0; i < count && !broken; i++) {
		if (!train_override_wants(&events[i]))
			continue;
		broken = !train_override_holds(&events[i]);
		passing[passing_count++] = &events[i];
	}
	/* A reference that trains a module its override never reached: no rule. */
	if (!broken && passing_count > 0 && passing_count >= evidence->min_passing) {
		rule.event = (struct rule_descriptor){ INFER_EVENT_PYTHON, passing[0]->name };
		rule.passing = passing_count;
		if (rule_support_judge(&rule, passing, passing_count, evidence, &ok))
			failed = rule_set_add(rules, &rule);
		else if (!ok)
			failed = -ENOMEM;
	}
	free((void *)passing);
	return failed;
}
