// SPDX-License-Identifier: MIT
/* Which rules need CPython's frame evaluator probed, and a rule set without them. */
#include "infer/rule_frames.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/infer_event.h"
#include "infer/precondition.h"

/* How operators and scopes are named in a trace: "aten::add_.Tensor", "Optimizer.step#SGD.step". */
static const char operator_prefix[] = "aten::";

bool rule_descriptor_is_torch_level(const struct rule_descriptor *descriptor)
{
	const char *name = descriptor->name;

	if (descriptor->kind != INFER_EVENT_PYTHON || !name)
		return true;
	return strncmp(name, operator_prefix, strlen(operator_prefix)) == 0 || strchr(name, '#');
}

bool rule_needs_python_frames(const struct rule *rule, char *reason, size_t reason_size)
{
	const struct rule_descriptor *descriptors[] = { &rule->event, &rule->first, &rule->child };
	const char *why = NULL, *name = NULL;

	for (size_t i = 0; i < sizeof(descriptors) / sizeof(descriptors[0]) && !why; i++)
		if (!rule_descriptor_is_torch_level(descriptors[i])) {
			why = "it names the Python function";
			name = descriptors[i]->name;
		}
	if (!why && rule->relation == RELATION_EVAL_MODE_RESPECTED)
		why = "EvalModeRespected follows module calls and train()/eval()";
	else if (!why && rule->relation == RELATION_SCALARS_STEADY)
		why = "ScalarsSteady follows the learning-rate schedulers' Python code";
	else if (!why && ((rule->field && strcmp(rule->field, INFER_STAGE_FIELD) == 0) ||
			  precondition_reads(&rule->precondition, INFER_STAGE_FIELD)))
		why = "it reads the stage, which Python sets (Module.training)";
	if (why && reason && reason_size)
		snprintf(reason, reason_size, "%s: %s%s%s", rule_relation_name(rule->relation), why,
			 name ? " " : "", name ? name : "");
	return why != NULL;
}

size_t rule_set_keep_torch_level(struct rule_set *set)
{
	size_t kept = 0, dropped;

	for (size_t i = 0; i < set->count; i++)
		if (!rule_needs_python_frames(&set->rules[i], NULL, 0))
			set->rules[kept++] = set->rules[i];
	dropped = set->count - kept;
	set->count = kept;
	return dropped;
}

/* The field of the APIArg that names what a scope family ran: "Optimizer.step#SGD.step". */
static const char implementation_field[] = "implementation";

/* Whether the Python function 'name' is 'implementation' ("torch.optim.sgd.SGD.step", "SGD.step").
 */
static bool names_implementation(const char *name, const char *implementation)
{
	size_t length = strlen(name), tail = strlen(implementation);

	return length > tail && name[length - tail - 1] == '.' &&
	       strcmp(name + length - tail, implementation) == 0;
}

static bool set_holds(const struct rule_set *set, const struct rule *rule)
{
	for (size_t i = 0; i < set->count; i++)
		if (rules_state_the_same(&set->rules[i], rule))
			return true;
	return false;
}

/* Whether 'rule', its Python function 'implementation' replaced by 'scope', is in the set. */
static bool scope_form_holds(const struct rule_set *set, const struct rule *rule,
			     const struct rule_descriptor *scope, const char *implementation)
{
	struct rule twin = *rule;
	struct rule_descriptor *descriptors[] = { &twin.event, &twin.first, &twin.child };
	bool replaced = false;

	for (size_t i = 0; i < sizeof(descriptors) / sizeof(descriptors[0]); i++)
		if (!rule_descriptor_is_torch_level(descriptors[i])) {
			if (!names_implementation(descriptors[i]->name, implementation))
				return false;
			*descriptors[i] = *scope;
			replaced = true;
		}
	return replaced && set_holds(set, &twin);
}

long rule_set_prefer_torch_level(struct rule_set *set)
{
	bool *dropped = calloc(set->count ? set->count : 1, sizeof(*dropped));
	size_t kept = 0, count = set->count;

	if (!dropped)
		return -ENOMEM;
	for (size_t w = 0; w < count; w++) {
		const struct rule *wraps = &set->rules[w];

		if (wraps->relation != RELATION_API_ARG || !wraps->field || !wraps->value ||
		    strcmp(wraps->field, implementation_field) != 0 || !wraps->event.name ||
		    !strchr(wraps->event.name, '#'))
			continue;
		for (size_t i = 0; i < count; i++)
			if (!dropped[i] &&
			    scope_form_holds(set, &set->rules[i], &wraps->event, wraps->value))
				dropped[i] = true;
	}
	for (size_t i = 0; i < count; i++)
		if (!dropped[i])
			set->rules[kept++] = set->rules[i];
	set->count = kept;
	free(dropped);
	return (long)(count - kept);
}
