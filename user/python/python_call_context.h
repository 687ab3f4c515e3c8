/* SPDX-License-Identifier: MIT */
/*
 * The Python side of an NCCL call: the frames the probe read at its entry,
 * named through the Python tracer's code cache, and the process's meta
 * variables (step, stage) when the call was made.
 */
#ifndef TCHECK_PYTHON_CALL_CONTEXT_H
#define TCHECK_PYTHON_CALL_CONTEXT_H

#include <stdbool.h>

#include "model/trace_records.h"
#include "python/python_probe_frames.h"
#include "python/python_tracer.h"
#include "tcheck/probe_abi.h"

/* The py_stack of a raw call record: its frames named, the marker first when flagged. */
void python_call_stack_fill(const struct tcheck_call_record *raw, python_code_name_fn name,
			    void *context, struct trace_python_stack *stack);

/*
 * The step, stage and named Python stack of a raw call's process (the
 * tracer's state for it, NULL for none) when it made the call. Returns false
 * (context untouched) where its Python is not followed.
 */
bool python_call_context_read(struct python_tracer *tracer, struct python_process *process,
			      const struct tcheck_call_record *raw,
			      struct trace_python_context *context);

#endif /* TCHECK_PYTHON_CALL_CONTEXT_H */
