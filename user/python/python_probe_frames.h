/* SPDX-License-Identifier: MIT */
/*
 * The Python frames a probe read into a record (an NCCL call's caller, a
 * torch initialiser's), named into a trace's py_stack by a function the
 * caller gives: the Python tracer's code cache in the daemon, a table in
 * the unit tests.
 */
#ifndef TCHECK_PYTHON_PROBE_FRAMES_H
#define TCHECK_PYTHON_PROBE_FRAMES_H

#include <stdint.h>

#include "model/trace_records.h"

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

#endif /* TCHECK_PYTHON_PROBE_FRAMES_H */
