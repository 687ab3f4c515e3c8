// SPDX-License-Identifier: MIT
/*
 * Fuzzes the TrainCheck JSON Lines reader (infer and check on TrainCheck's
 * traces): reads the input to its end, looking at every record handed out.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "trace/traincheck_trace.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Touches every string of a record, so that one that is not terminated shows. */
static int look_at_record(void *context, const struct trace_record *record)
{
	const struct trace_python_call *call = &record->python_call;
	size_t *characters = context;

	if (record->kind != TRACE_RECORD_PYTHON_CALL)
		return 0;
	if (call->qualified_name)
		*characters += strlen(call->qualified_name);
	for (uint32_t i = 0; i < call->arg_count && i < TRACE_PY_ARGS_MAX; i++) {
		if (call->args[i].name)
			*characters += strlen(call->args[i].name);
		if (call->args[i].text)
			*characters += strlen(call->args[i].text);
	}
	if (call->return_value.text)
		*characters += strlen(call->return_value.text);
	for (uint32_t i = 0; i < call->py_stack.depth && i < TRACE_PY_STACK_MAX; i++)
		if (call->py_stack.frames[i])
			*characters += strlen(call->py_stack.frames[i]);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct traincheck_stats stats = { 0 };
	size_t characters = 0;
	char error[512];
	FILE *in;

	/* Read from a file, as infer and check read a TrainCheck log. */
	in = fopen(fuzz_input_path(data, size), "re");
	if (!in)
		return 0;
	traincheck_trace_read(in, "fuzz.log", look_at_record, &characters, &stats, error,
			      sizeof(error));
	fclose(in);
	return 0;
}
