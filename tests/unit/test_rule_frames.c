// SPDX-License-Identifier: MIT
/* The torch-level form of a rule preferred to the Python function's the scope wraps. */
#include <string.h>

#include "infer/infer_event.h"
#include "infer/rule_frames.h"
#include "unit.h"

static struct rule python_rule(struct rule_set *set, uint32_t relation, const char *event,
			       const char *field, const char *value)
{
	struct rule rule = { .relation = relation };

	rule.event.kind = INFER_EVENT_PYTHON;
	rule.event.name = string_pool_intern(set->pool, event);
	rule.field = field ? string_pool_intern(set->pool, field) : NULL;
	rule.value = value ? string_pool_intern(set->pool, value) : NULL;
	return rule;
}

static void add(struct rule_set *set, struct rule rule)
{
	CU_ASSERT_EQUAL_FATAL(rule_set_add(set, &rule), 0);
}

UNIT_TEST(rule_frames, prefers_the_scope_over_the_function_it_wraps)
{
	struct rule_set *set = rule_set_new();

	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	add(set,
	    python_rule(set, RELATION_API_ARG, "Optimizer.step#*", "implementation", "SGD.step"));
	add(set, python_rule(set, RELATION_API_OUTPUT, "Optimizer.step#*", "raised", "False"));
	/* Both hold: the Python function's form goes. */
	add(set,
	    python_rule(set, RELATION_API_OUTPUT, "torch.optim.sgd.SGD.step", "raised", "False"));
	/* Only the Python form holds (the scope has no closure argument): it stays. */
	add(set,
	    python_rule(set, RELATION_API_ARG, "torch.optim.sgd.SGD.step", "arg:closure", "None"));
	/* Another function whose name merely contains the implementation: it stays. */
	add(set, python_rule(set, RELATION_API_OUTPUT, "mytrainer.NotSGD.step", "raised", "False"));
	add(set,
	    python_rule(set, RELATION_API_OUTPUT, "torch.optim.adam.Adam.step", "raised", "False"));
	CU_ASSERT_EQUAL(rule_set_prefer_torch_level(set), 1);
	CU_ASSERT_EQUAL_FATAL(set->count, 5);
	for (size_t i = 0; i < set->count; i++)
		CU_ASSERT_FALSE(strcmp(set->rules[i].event.name, "torch.optim.sgd.SGD.step") == 0 &&
				strcmp(set->rules[i].field, "raised") == 0);
	CU_ASSERT_STRING_EQUAL(set->rules[2].field, "arg:closure");
	CU_ASSERT_EQUAL(rule_set_prefer_torch_level(set), 0);
	rule_set_free(set);
}
