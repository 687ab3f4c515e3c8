// SPDX-License-Identifier: MIT
/* The Python caller and meta variables of an NCCL call, named from the probe's pointers. */
#include "python_call_context.h"

void python_call_context_fill(struct python_tracer *tracer, const struct tcheck_call_record *raw,
			      struct trace_nccl_call *call)
{
	uint32_t pid = raw->header.pid, frames = raw->py_depth, depth = 0;
	const char *name;

	if (python_tracer_meta(tracer, pid, &call->step, &call->stage))
		return;
	if (frames > TCHECK_PY_STACK_MAX)
		frames = TCHECK_PY_STACK_MAX;
	if (frames && (raw->flags & TCHECK_CALL_PY_MAIN_THREAD))
		call->py_stack.frames[depth++] = PYTHON_MAIN_THREAD_MARKER;
	for (uint32_t i = 0; i < frames && depth < TRACE_PY_STACK_MAX; i++) {
		name = python_tracer_code_name(tracer, pid, raw->py_code[i], raw->py_name[i]);
		call->py_stack.frames[depth++] = name ? name : PYTHON_UNREADABLE_FRAME;
	}
	call->py_stack.depth = depth;
}
