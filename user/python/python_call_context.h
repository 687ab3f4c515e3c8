/* SPDX-License-Identifier: MIT */
/*
 * The Python side of an NCCL call: the frames the probe read at its entry,
 * named through the Python tracer's code cache, and the process's meta
 * variables (step, stage) when the call was made; and the frames a torch
 * operator's probe read (an initialiser's caller).
 */
#ifndef TCHECK_PYTHON_CALL_CONTEXT_H
#define TCHECK_PYTHON_CALL_CONTEXT_H

#include <stdbool.h>

#include "model/trace_records.h"
#include "python/python_tracer.h"
#include "tcheck/probe_abi.h"

/*
 * Stands first in py_stack when the calling thread runs no Python (a C++
 * worker thread): the frames after it are the main thread's.
 */
#define PYTHON_MAIN_THREAD_MARKER "<main thread>"

/* Names one code object of a process (NULL when it cannot). */
typedef const char *(*python_code_name_fn)(void *context, uint32_t pid, uint64_t code,
					   uint64_t name_object);

/* The frames a probe read into a record: code and name objects, innermost first. */
struct python_probe_frames {
	uint32_t pid;
	uint32_t depth;
	uint32_t flags; /* TCHECK_CALL_PY_MAIN_THREAD */
	const uint64_t *codes;
	const uint64_t *names;
};

/* A py_stack of those frames named, the marker first when flagged. */
void python_frames_fill(const struct python_probe_frames *frames, python_code_name_fn name,
			void *context, struct trace_python_stack *stack);

/* The same through the tracer's code cache (a torch operator's caller). */
void python_tracer_frames_name(struct python_tracer *tracer, struct python_process *process,
			       const struct python_probe_frames *frames,
			       struct trace_python_stack *stack);

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
