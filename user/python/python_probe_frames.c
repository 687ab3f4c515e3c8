// SPDX-License-Identifier: MIT
/* The Python frames a probe read, named into a py_stack (python_probe_frames.h). */
#include "python/python_probe_frames.h"

#include "python/python_tracer.h"
#include "tcheck/probe_abi.h"

void python_frames_fill(const struct python_probe_frames *frames, python_code_name_fn name,
			void *context, struct trace_python_stack *stack)
{
	uint32_t count = frames->depth, depth = 0;
	const char *named;

	if (count > TCHECK_PY_STACK_MAX)
		count = TCHECK_PY_STACK_MAX;
	if (count && (frames->flags & TCHECK_CALL_PY_MAIN_THREAD))
		stack->frames[depth++] = PYTHON_MAIN_THREAD_MARKER;
	for (uint32_t i = 0; i < count && depth < TRACE_PY_STACK_MAX; i++) {
		named = name(context, frames->pid, frames->codes[i], frames->names[i]);
		stack->frames[depth++] = named ? named : PYTHON_UNREADABLE_FRAME;
	}
	stack->depth = depth;
}
