// SPDX-License-Identifier: MIT
/* The Python caller and meta variables of an NCCL call, named from the probe's pointers. */
#include "python/python_call_context.h"

void python_call_stack_fill(const struct tcheck_call_record *raw, python_code_name_fn name,
			    void *context, struct trace_python_stack *stack)
{
	struct python_probe_frames frames = { raw->header.pid, raw->py_depth, raw->flags,
					      raw->py_code, raw->py_name };

	python_frames_fill(&frames, name, context, stack);
}

/* The tracer and the call's process: each frame is named without a look-up of the pid. */
struct code_namer {
	struct python_tracer *tracer;
	struct python_process *process;
};

static const char *tracer_code_name(void *context, uint32_t pid, uint64_t code,
				    uint64_t name_object)
{
	const struct code_namer *namer = context;

	(void)pid;
	return python_tracer_code_name(namer->tracer, namer->process, code, name_object);
}

bool python_call_context_read(struct python_tracer *tracer, struct python_process *process,
			      const struct tcheck_call_record *raw,
			      struct trace_python_context *context)
{
	struct code_namer namer = { tracer, process };

	if (python_tracer_meta(process, raw->header.timestamp_ns, &context->step, &context->stage))
		return false;
	python_call_stack_fill(raw, tracer_code_name, &namer, &context->py_stack);
	return true;
}
