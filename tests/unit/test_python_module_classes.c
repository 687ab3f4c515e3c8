// SPDX-License-Identifier: MIT
/*
 * Module class names read from type objects, here laid out in this test's
 * own memory the way CPython lays out a PyTypeObject's head (tp_name at 24)
 * and read back through the same remote read as a traced process.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "python/python_module_classes.h"
#include "unit.h"

struct fake_type {
	uint64_t head[3]; /* ob_refcnt, ob_type, ob_size */
	const char *tp_name;
};

UNIT_TEST(python_module_classes, names_after_the_last_dot_and_kept_per_type)
{
	struct fake_type heap_type = { .tp_name = "Linear" },
			 extension_type = { .tp_name = "torch._C._nn.Fused" },
			 unnamed_type = { .tp_name = NULL };
	struct trace_python_call call = { 0 };
	struct u64_map classes;
	const char *first;

	u64_map_init(&classes);
	first = python_module_class_name(&classes, getpid(), (uint64_t)(uintptr_t)&heap_type);
	CU_ASSERT_PTR_NOT_NULL_FATAL(first);
	CU_ASSERT_STRING_EQUAL(first, "Linear");
	/* Kept: a second call of the same type reads nothing and gives the same text. */
	heap_type.tp_name = "Changed";
	CU_ASSERT_PTR_EQUAL(
		python_module_class_name(&classes, getpid(), (uint64_t)(uintptr_t)&heap_type),
		first);
	CU_ASSERT_EQUAL(python_module_class_add(&classes, getpid(),
						(uint64_t)(uintptr_t)&extension_type, &call),
			0);
	CU_ASSERT_EQUAL_FATAL(call.arg_count, 1);
	CU_ASSERT_STRING_EQUAL(call.args[0].name, TRACE_MODULE_CLASS_ARG);
	CU_ASSERT_EQUAL(call.args[0].type, TRACE_VALUE_STR);
	CU_ASSERT_STRING_EQUAL(call.args[0].text, "Fused");
	/* Unreadable: no argument, and the caller counts the loss. */
	CU_ASSERT_EQUAL(python_module_class_add(&classes, getpid(),
						(uint64_t)(uintptr_t)&unnamed_type, &call),
			-1);
	CU_ASSERT_EQUAL(python_module_class_add(&classes, getpid(), 0, &call), -1);
	CU_ASSERT_EQUAL(call.arg_count, 1);
	python_module_classes_free(&classes);
}
