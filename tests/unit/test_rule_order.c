// SPDX-License-Identifier: MIT
/* Rules files do not depend on the order rules were found in: rule_set_sort. */
#include <string.h>

#include "infer/rules.h"
#include "unit.h"

static void add(struct rule_set *set, uint32_t relation, const char *name, const char *field)
{
	struct rule rule = { .relation = relation };

	rule.event.kind = INFER_EVENT_PYTHON;
	rule.event.name = string_pool_intern(set->pool, name);
	rule.field = string_pool_intern(set->pool, field);
	rule.value = string_pool_intern(set->pool, "0");
	CU_ASSERT_EQUAL_FATAL(rule_set_add(set, &rule), 0);
}

UNIT_TEST(rule_order, same_rules_same_order_whatever_came_first)
{
	struct rule_set *forward = rule_set_new(), *backward = rule_set_new();
	static const char *const names[] = { "b.step", "a.zero_grad", "c.backward", "a.step" };
	const size_t count = sizeof(names) / sizeof(names[0]);

	CU_ASSERT_PTR_NOT_NULL_FATAL(forward);
	CU_ASSERT_PTR_NOT_NULL_FATAL(backward);
	for (size_t i = 0; i < count; i++) {
		add(forward, RELATION_API_OUTPUT, names[i], "raised");
		add(forward, RELATION_API_ARG, names[i], "arg:lr");
	}
	for (size_t i = count; i-- > 0;) {
		add(backward, RELATION_API_ARG, names[i], "arg:lr");
		add(backward, RELATION_API_OUTPUT, names[i], "raised");
	}
	CU_ASSERT_EQUAL_FATAL(rule_set_sort(forward), 0);
	CU_ASSERT_EQUAL_FATAL(rule_set_sort(backward), 0);
	CU_ASSERT_EQUAL_FATAL(forward->count, backward->count);
	for (size_t i = 0; i < forward->count; i++) {
		CU_ASSERT_EQUAL(forward->rules[i].relation, backward->rules[i].relation);
		CU_ASSERT_STRING_EQUAL(forward->rules[i].event.name, backward->rules[i].event.name);
		CU_ASSERT_STRING_EQUAL(forward->rules[i].field, backward->rules[i].field);
	}
	/* By relation first (APIArg before APIOutput), then by the rule in words. */
	CU_ASSERT_EQUAL(forward->rules[0].relation, RELATION_API_ARG);
	CU_ASSERT_EQUAL(forward->rules[count].relation, RELATION_API_OUTPUT);
	for (size_t i = 1; i < forward->count; i++)
		if (forward->rules[i].relation == forward->rules[i - 1].relation)
			CU_ASSERT(strcmp(forward->rules[i - 1].event.name,
					 forward->rules[i].event.name) < 0);
	rule_set_free(forward);
	rule_set_free(backward);
}
