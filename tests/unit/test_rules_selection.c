// SPDX-License-Identifier: MIT
/* Selective instrumentation: the probes a rule set asks for, and how they widen the user's. */
#include <stdbool.h>
#include <string.h>

#include "checks/rules_selection.h"
#include "infer/rule_frames.h"
#include "python/python_tracer.h"
#include "unit.h"

static void add_rule(struct rule_set *set, uint32_t relation, uint32_t kind, const char *name,
		     uint32_t child_kind, const char *child)
{
	struct rule rule = { .relation = relation };

	rule.event.kind = kind;
	rule.event.name = string_pool_intern(set->pool, name);
	if (child) {
		rule.child.kind = child_kind;
		rule.child.name = string_pool_intern(set->pool, child);
	}
	CU_ASSERT_EQUAL_FATAL(rule_set_add(set, &rule), 0);
}

static bool listed(const char *const *list, const char *name)
{
	for (size_t i = 0; list && list[i]; i++)
		if (strcmp(list[i], name) == 0)
			return true;
	return false;
}

static size_t length(const char *const *list)
{
	size_t count = 0;

	while (list && list[count])
		count++;
	return count;
}

/* A rule set as inferred from a torch run: a function, a scope, operators, NCCL. */
static struct rule_set *torch_rules(void)
{
	struct rule_set *set = rule_set_new();

	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	add_rule(set, RELATION_API_ARG, INFER_EVENT_PYTHON, "torch.optim.sgd.SGD.__init__", 0,
		 NULL);
	add_rule(set, RELATION_EVENT_CONTAIN, INFER_EVENT_PYTHON, "Optimizer.step#SGD.step",
		 INFER_EVENT_PYTHON, "aten::add_.Tensor");
	add_rule(set, RELATION_EVENT_CONTAIN, INFER_EVENT_STEP, "step", INFER_EVENT_PYTHON,
		 "aten::mul_");
	/* The same operator twice is asked for once. */
	add_rule(set, RELATION_EVENT_CONTAIN, INFER_EVENT_STEP, "step", INFER_EVENT_PYTHON,
		 "aten::add_.Tensor");
	add_rule(set, RELATION_CONSISTENT, INFER_EVENT_NCCL, "ncclAllReduce", 0, NULL);
	return set;
}

UNIT_TEST(rules_selection, names_functions_and_operators_not_scopes)
{
	struct rule_set *set = torch_rules();
	struct rules_selection selection;

	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_TRUE(selection.python);
	CU_ASSERT_EQUAL(selection.function_count, 1);
	CU_ASSERT_EQUAL(length(selection.functions), 1);
	CU_ASSERT_TRUE(listed(selection.functions, "torch.optim.sgd.SGD.__init__"));
	CU_ASSERT_EQUAL(selection.torch_op_count, 2);
	CU_ASSERT_TRUE(listed(selection.torch_ops, "add_.Tensor"));
	CU_ASSERT_TRUE(listed(selection.torch_ops, "mul_"));
	rules_selection_free(&selection);
	rule_set_free(set);
}

UNIT_TEST(rules_selection, nccl_rules_leave_python_off)
{
	struct rule_set *set = rule_set_new();
	struct recorder_options options = { 0 };
	struct rules_selection selection;

	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	add_rule(set, RELATION_CONSISTENT, INFER_EVENT_NCCL, "ncclAllReduce", 0, NULL);
	add_rule(set, RELATION_EVENT_CONTAIN, INFER_EVENT_STEP, "step", INFER_EVENT_NCCL,
		 "ncclAllReduce");
	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_FALSE(selection.python);
	CU_ASSERT_EQUAL(rules_selection_apply(&selection, &options), 0);
	CU_ASSERT_FALSE(options.python);
	CU_ASSERT_PTR_NULL(options.python_prefixes);
	CU_ASSERT_EQUAL(options.torch_op_count, 0);
	rules_selection_free(&selection);
	rule_set_free(set);
}

UNIT_TEST(rules_selection, parameters_updated_watches_the_training_operators)
{
	struct rule_set *set = rule_set_new();
	struct recorder_options options = { 0 };
	struct rules_selection selection;

	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	add_rule(set, RELATION_PARAMETERS_UPDATED, INFER_EVENT_PYTHON, "Optimizer.step#*", 0, NULL);
	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_TRUE(selection.python);
	CU_ASSERT_TRUE(selection.training_ops);
	CU_ASSERT_EQUAL(rules_selection_apply(&selection, &options), 0);
	CU_ASSERT_TRUE(options.python);
	CU_ASSERT_TRUE(options.training_ops);
	/* A scope family is no Python function to follow. */
	CU_ASSERT_EQUAL(selection.function_count, 0);
	rules_selection_free(&selection);
	rule_set_free(set);
}

/*
 * InitialisedOnce alone: its zero_, and the training operators, which show
 * a storage set through .data to be a parameter's.
 */
UNIT_TEST(rules_selection, initialised_once_watches_zero_and_the_training_operators)
{
	struct rule_set *set = rule_set_new();
	struct rules_selection selection;

	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	add_rule(set, RELATION_INITIALISED_ONCE, INFER_EVENT_PYTHON, "aten::zero_", 0, NULL);
	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_TRUE(selection.python);
	CU_ASSERT_TRUE(selection.training_ops);
	CU_ASSERT_TRUE(listed(selection.torch_ops, "zero_"));
	rules_selection_free(&selection);
	rule_set_free(set);
}

UNIT_TEST(rules_selection, without_user_selection_only_what_rules_name)
{
	struct rule_set *set = torch_rules();
	struct recorder_options options = { 0 };
	struct rules_selection selection;

	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_EQUAL_FATAL(rules_selection_apply(&selection, &options), 0);
	CU_ASSERT_TRUE(options.python);
	CU_ASSERT_EQUAL(length(options.python_prefixes), 1);
	CU_ASSERT_TRUE(listed(options.python_prefixes, "torch.optim.sgd.SGD.__init__"));
	CU_ASSERT_FALSE(listed(options.python_prefixes, python_default_prefixes[0]));
	CU_ASSERT_EQUAL(options.torch_op_count, 2);
	rules_selection_free(&selection);
	rule_set_free(set);
}

UNIT_TEST(rules_selection, widens_the_defaults_and_the_users_own)
{
	static const char *const user_prefixes[] = { "mytrainer.", NULL };
	static const char *const user_ops[] = { "zero_", "mul_" };
	struct rule_set *set = torch_rules();
	struct recorder_options defaults = { .python = true }, own = { .python = true };
	struct rules_selection selection, own_selection;

	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_EQUAL_FATAL(rules_selection_apply(&selection, &defaults), 0);
	/* --python alone: the default training APIs and the rules' function. */
	CU_ASSERT_EQUAL(length(defaults.python_prefixes), length(python_default_prefixes) + 1);
	CU_ASSERT_TRUE(listed(defaults.python_prefixes, python_default_prefixes[0]));
	CU_ASSERT_TRUE(listed(defaults.python_prefixes, "torch.optim.sgd.SGD.__init__"));

	own.python_prefixes = user_prefixes;
	own.torch_ops = user_ops;
	own.torch_op_count = 2;
	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &own_selection), 0);
	CU_ASSERT_EQUAL_FATAL(rules_selection_apply(&own_selection, &own), 0);
	CU_ASSERT_EQUAL(length(own.python_prefixes), 2);
	CU_ASSERT_TRUE(listed(own.python_prefixes, "mytrainer."));
	CU_ASSERT_FALSE(listed(own.python_prefixes, python_default_prefixes[0]));
	/* zero_ and mul_ from the user, add_.Tensor from the rules; mul_ once. */
	CU_ASSERT_EQUAL(own.torch_op_count, 3);
	CU_ASSERT_EQUAL(length(own.torch_ops), 3);
	CU_ASSERT_TRUE(listed(own.torch_ops, "zero_"));
	CU_ASSERT_TRUE(listed(own.torch_ops, "add_.Tensor"));
	rules_selection_free(&own_selection);
	rules_selection_free(&selection);
	rule_set_free(set);
}

/* Scopes, operators and NCCL only: torch's probes, no frame evaluator. */
UNIT_TEST(rules_selection, torch_level_rules_leave_the_frame_evaluator_out)
{
	struct rule_set *set = rule_set_new();
	struct recorder_options options = { 0 }, with_python = { .python = true };
	struct rules_selection selection;

	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	add_rule(set, RELATION_EVENT_CONTAIN, INFER_EVENT_PYTHON, "Optimizer.step#*",
		 INFER_EVENT_PYTHON, "aten::add_.Tensor");
	add_rule(set, RELATION_PARAMETERS_UPDATED, INFER_EVENT_PYTHON, "Optimizer.step#*", 0, NULL);
	add_rule(set, RELATION_CONSISTENT, INFER_EVENT_NCCL, "ncclAllReduce", 0, NULL);
	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_TRUE(selection.python);
	CU_ASSERT_FALSE(selection.python_frames);
	CU_ASSERT_EQUAL(selection.python_frames_rules, 0);
	CU_ASSERT_EQUAL(rules_selection_apply(&selection, &options), 0);
	CU_ASSERT_TRUE(options.python);
	CU_ASSERT_TRUE(options.torch_events_only);
	/* The user's own --python keeps the evaluator: the trace has their functions. */
	CU_ASSERT_EQUAL(rules_selection_apply(&selection, &with_python), 0);
	CU_ASSERT_FALSE(with_python.torch_events_only);
	/* A step marker that may be a Python function keeps it too; a scope's does not. */
	struct recorder_options python_marker = { .step_marker = "trainer.Trainer.step" };
	struct recorder_options scope_marker = { .step_marker = "Optimizer.step#" };

	CU_ASSERT_EQUAL(rules_selection_apply(&selection, &python_marker), 0);
	CU_ASSERT_FALSE(python_marker.torch_events_only);
	CU_ASSERT_EQUAL(rules_selection_apply(&selection, &scope_marker), 0);
	CU_ASSERT_TRUE(scope_marker.torch_events_only);
	rules_selection_free(&selection);
	rule_set_free(set);
}

UNIT_TEST(rules_selection, a_python_function_or_the_stage_needs_the_frame_evaluator)
{
	struct rule_set *set = torch_rules();
	struct recorder_options options = { 0 };
	struct rules_selection selection;
	struct rule stage_rule = { .relation = RELATION_API_ARG };

	CU_ASSERT_EQUAL_FATAL(rules_selection_build(set, &selection), 0);
	CU_ASSERT_TRUE(selection.python_frames);
	CU_ASSERT_EQUAL(selection.python_frames_rules, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(selection.python_frames_reason, "SGD.__init__"));
	CU_ASSERT_EQUAL(rules_selection_apply(&selection, &options), 0);
	CU_ASSERT_FALSE(options.torch_events_only);
	rules_selection_free(&selection);

	/* "stage of a scope is always train": Python sets the stage. */
	stage_rule.event.kind = INFER_EVENT_PYTHON;
	stage_rule.event.name = string_pool_intern(set->pool, "Optimizer.step#*");
	stage_rule.field = string_pool_intern(set->pool, "stage");
	stage_rule.value = string_pool_intern(set->pool, "train");
	CU_ASSERT_TRUE(rule_needs_python_frames(&stage_rule, NULL, 0));
	stage_rule.field = string_pool_intern(set->pool, "raised");
	CU_ASSERT_FALSE(rule_needs_python_frames(&stage_rule, NULL, 0));
	stage_rule.precondition.group_count = 1;
	stage_rule.precondition.groups[0].clause_count = 1;
	stage_rule.precondition.groups[0].clauses[0].type = CLAUSE_CONSTANT;
	stage_rule.precondition.groups[0].clauses[0].variable =
		string_pool_intern(set->pool, "stage");
	CU_ASSERT_TRUE(rule_needs_python_frames(&stage_rule, NULL, 0));
	rule_set_free(set);
}

/* infer --torch-level: the rules about Python functions go, the others stay in order. */
UNIT_TEST(rules_selection, keep_torch_level_drops_python_function_rules)
{
	struct rule_set *set = torch_rules();

	CU_ASSERT_EQUAL(rule_set_keep_torch_level(set), 1);
	CU_ASSERT_EQUAL_FATAL(set->count, 4);
	CU_ASSERT_STRING_EQUAL(set->rules[0].event.name, "Optimizer.step#SGD.step");
	CU_ASSERT_STRING_EQUAL(set->rules[3].event.name, "ncclAllReduce");
	CU_ASSERT_EQUAL(rule_set_keep_torch_level(set), 0);
	rule_set_free(set);
}
