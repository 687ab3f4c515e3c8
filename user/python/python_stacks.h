/* SPDX-License-Identifier: MIT */
/*
 * Every thread's Python stack in another process, read from the
 * interpreter's state as py-spy does: the runtime's interpreters, each
 * one's thread states, and each thread's chain of frames from its current
 * one, every member at the offsets of the version's layout (python_layout.h,
 * which also reads _Py_DebugOffsets where the runtime has it). The process
 * is neither stopped nor written to: a thread that moves while it is read
 * gives a stack of that moment, or a read error said as such.
 * Functions return 0 or a negative errno and fill error with a sentence.
 */
#ifndef TCHECK_PYTHON_STACKS_H
#define TCHECK_PYTHON_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/python_layout.h"

/* The deepest stack read; deeper frames are counted as cut. */
#define PYTHON_STACK_FRAMES_MAX 128

/* One frame, innermost first in a stack. */
struct python_stack_frame {
	char qualified_name[256];
	char filename[256];
	int first_line; /* the line of the function's def (co_firstlineno) */
};

struct python_thread_stack {
	uint64_t thread_id;	/* pthread_t */
	int64_t native_id;	/* kernel tid, -1 where the version does not keep it (3.10) */
	bool holds_interpreter; /* the thread state the runtime calls current (3.10, 3.11) */
	struct python_stack_frame *frames;
	size_t frame_count;
	bool cut;	/* more frames than PYTHON_STACK_FRAMES_MAX, or a frame unreadable */
	char note[256]; /* why the stack was cut, "" when it was not */
};

struct python_stacks {
	struct python_thread_stack *threads;
	size_t count;
};

/*
 * Reads every thread's stack of pid with a layout from python_layout_for.
 * Fails only when the runtime's list of interpreters cannot be read; a
 * thread whose frames cannot be read has a note.
 */
int python_stacks_read(pid_t pid, const struct python_layout *layout, struct python_stacks *stacks,
		       char *error, size_t error_size);
void python_stacks_free(struct python_stacks *stacks);

#endif /* TCHECK_PYTHON_STACKS_H */
