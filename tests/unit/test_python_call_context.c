// SPDX-License-Identifier: MIT
/* The py_stack of an NCCL call built from a probe record's code pointers. */
#include <stdio.h>
#include <string.h>

#include "python/python_call_context.h"
#include "unit.h"

/* Names code 0x1000 + i "function_i"; code 0xdead cannot be read. */
static const char *fake_name(void *context, uint32_t pid, uint64_t code, uint64_t name_object)
{
	static char names[16][32];
	unsigned index = (unsigned)(code - 0x1000);

	(void)context;
	if (pid != 42 || name_object != code + 0x100 || code == 0xdead || index >= 16)
		return NULL;
	snprintf(names[index], sizeof(names[index]), "function_%u", index);
	return names[index];
}

static void set_frames(struct tcheck_call_record *raw, uint32_t count)
{
	memset(raw, 0, sizeof(*raw));
	raw->header.pid = 42;
	raw->py_depth = count;
	for (uint32_t i = 0; i < count && i < TCHECK_PY_STACK_MAX; i++) {
		raw->py_code[i] = 0x1000 + i;
		raw->py_name[i] = 0x1100 + i;
	}
}

UNIT_TEST(python_call_context, frames_are_named_innermost_first)
{
	struct trace_python_stack stack = { 0 };
	struct tcheck_call_record raw;

	set_frames(&raw, 3);
	python_call_stack_fill(&raw, fake_name, NULL, &stack);
	CU_ASSERT_EQUAL(stack.depth, 3);
	CU_ASSERT_STRING_EQUAL(stack.frames[0], "function_0");
	CU_ASSERT_STRING_EQUAL(stack.frames[2], "function_2");
}

UNIT_TEST(python_call_context, a_thread_without_python_is_marked_and_kept_to_the_bound)
{
	struct trace_python_stack stack = { 0 };
	struct tcheck_call_record raw;

	set_frames(&raw, TCHECK_PY_STACK_MAX);
	raw.flags = TCHECK_CALL_PY_MAIN_THREAD;
	python_call_stack_fill(&raw, fake_name, NULL, &stack);
	CU_ASSERT_EQUAL(stack.depth, TRACE_PY_STACK_MAX);
	CU_ASSERT_STRING_EQUAL(stack.frames[0], PYTHON_MAIN_THREAD_MARKER);
	CU_ASSERT_STRING_EQUAL(stack.frames[1], "function_0");
	CU_ASSERT_STRING_EQUAL(stack.frames[TRACE_PY_STACK_MAX - 1], "function_6");
}

UNIT_TEST(python_call_context, unreadable_frames_and_bad_depths_are_said_so)
{
	struct trace_python_stack stack = { 0 };
	struct tcheck_call_record raw;

	set_frames(&raw, 2);
	raw.py_code[1] = 0xdead;
	python_call_stack_fill(&raw, fake_name, NULL, &stack);
	CU_ASSERT_EQUAL(stack.depth, 2);
	CU_ASSERT_STRING_EQUAL(stack.frames[1], PYTHON_UNREADABLE_FRAME);
	/* A depth past the record's arrays is cut to them, never read beyond. */
	set_frames(&raw, 1000);
	python_call_stack_fill(&raw, fake_name, NULL, &stack);
	CU_ASSERT_EQUAL(stack.depth, TCHECK_PY_STACK_MAX);
	/* No frames: no marker either, even when flagged. */
	set_frames(&raw, 0);
	raw.flags = TCHECK_CALL_PY_MAIN_THREAD;
	python_call_stack_fill(&raw, fake_name, NULL, &stack);
	CU_ASSERT_EQUAL(stack.depth, 0);
}
