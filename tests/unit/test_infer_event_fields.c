// SPDX-License-Identifier: MIT
/*
 * Interned field lists of inference events: calls with equal fields share
 * one array, calls that differ in any value or in the number of fields do
 * not, and the fields read back are the call's own.
 */
#include <stdio.h>
#include <string.h>

#include "infer/infer_event.h"
#include "unit.h"

static struct trace_record sgd_call(const char *lr, int raised)
{
	struct trace_record record = { .kind = TRACE_RECORD_PYTHON_CALL };
	struct trace_python_call *call = &record.python_call;

	call->qualified_name = "torch.optim.sgd.sgd";
	call->file = "";
	call->rank = 0;
	call->step = 1;
	call->flags = raised ? TRACE_PYTHON_RAISED : 0;
	call->arg_count = 1;
	call->args[0].name = "lr";
	call->args[0].type = TRACE_VALUE_STR;
	call->args[0].text = lr;
	return record;
}

UNIT_TEST(infer_event_fields, equal_fields_share_one_array)
{
	struct string_pool *pool = string_pool_new();
	struct infer_event first, second, other_value, other_flag;
	struct trace_record a = sgd_call("0.1", 0), b = sgd_call("0.1", 0), c = sgd_call("0.2", 0),
			    d = sgd_call("0.1", 1);

	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &a, &first), 1);
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &b, &second), 1);
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &c, &other_value), 1);
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &d, &other_flag), 1);
	CU_ASSERT_EQUAL(first.field_count, 2);
	CU_ASSERT_PTR_EQUAL(first.fields, second.fields);
	CU_ASSERT_PTR_NOT_EQUAL(first.fields, other_value.fields);
	CU_ASSERT_PTR_NOT_EQUAL(first.fields, other_flag.fields);
	CU_ASSERT_STRING_EQUAL(infer_event_field(&first, "arg:lr"), "'0.1'");
	CU_ASSERT_STRING_EQUAL(infer_event_field(&other_value, "arg:lr"), "'0.2'");
	CU_ASSERT_STRING_EQUAL(infer_event_field(&first, "raised"), "False");
	CU_ASSERT_STRING_EQUAL(infer_event_field(&other_flag, "raised"), "True");
	string_pool_free(pool);
}

UNIT_TEST(infer_event_fields, many_distinct_lists_survive_the_table_growing)
{
	struct string_pool *pool = string_pool_new();
	static struct infer_event events[3000];
	char text[32];

	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	for (int i = 0; i < 3000; i++) {
		struct trace_record record;

		snprintf(text, sizeof(text), "%d", i);
		record = sgd_call(text, 0);
		CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &record, &events[i]), 1);
	}
	for (int i = 0; i < 3000; i++) {
		struct trace_record record;
		struct infer_event again;

		snprintf(text, sizeof(text), "%d", i);
		record = sgd_call(text, 0);
		CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &record, &again), 1);
		CU_ASSERT_PTR_EQUAL(again.fields, events[i].fields);
		snprintf(text, sizeof(text), "'%d'", i);
		CU_ASSERT_STRING_EQUAL(infer_event_field(&events[i], "arg:lr"), text);
	}
	string_pool_free(pool);
}

/* The class and path a module call carries are the model's, not the program's: no fields. */
UNIT_TEST(infer_event_fields, module_class_of_a_module_call_is_no_field)
{
	struct string_pool *pool = string_pool_new();
	struct trace_record module_call = sgd_call("0.1", 0), other = sgd_call("0.1", 0);
	struct infer_event module_event, other_event;

	CU_ASSERT_PTR_NOT_NULL_FATAL(pool);
	module_call.python_call.qualified_name = TRACE_MODULE_CALL_NAME;
	module_call.python_call.args[0].name = TRACE_MODULE_CLASS_ARG;
	module_call.python_call.args[0].text = "Linear";
	module_call.python_call.args[1] = (struct trace_python_arg){ .name = TRACE_MODULE_PATH_ARG,
								     .type = TRACE_VALUE_STR,
								     .text = "Net.layers.0" };
	module_call.python_call.arg_count = 2;
	/* Another function's parameter of that name is its own: kept. */
	other.python_call.args[0].name = TRACE_MODULE_CLASS_ARG;
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &module_call, &module_event), 1);
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &other, &other_event), 1);
	CU_ASSERT_PTR_NULL(infer_event_field(&module_event, "arg:module"));
	CU_ASSERT_PTR_NULL(infer_event_field(&module_event, "arg:module_path"));
	CU_ASSERT_STRING_EQUAL(infer_event_field(&module_event, "raised"), "False");
	CU_ASSERT_STRING_EQUAL(infer_event_field(&other_event, "arg:module"), "'0.1'");
	/* Reports still name the module, for people: its path, then its class. */
	CU_ASSERT_STRING_EQUAL(module_event.module, "Net.layers.0 (Linear)");
	CU_ASSERT_STRING_EQUAL(other_event.module, "");
	/* A top module, whose path is its class, and one whose path was not read: the class. */
	module_call.python_call.args[1].text = "Linear";
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &module_call, &module_event), 1);
	CU_ASSERT_STRING_EQUAL(module_event.module, "Linear");
	module_call.python_call.arg_count = 1;
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &module_call, &module_event), 1);
	CU_ASSERT_STRING_EQUAL(module_event.module, "Linear");
	string_pool_free(pool);
}
