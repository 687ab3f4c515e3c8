// SPDX-License-Identifier: MIT
/* Every thread's Python stack in another process, from the interpreter's own state. */
#include "python/python_stacks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "base/remote_memory.h"

/* Bounds on lists that a torn read could make circular. */
#define INTERPRETERS_MAX 64
#define THREADS_MAX 4096

static int pointer_at(pid_t pid, uint64_t base, int offset, uint64_t *value)
{
	if (offset == PYTHON_FIELD_ABSENT || !base)
		return -ENOENT;
	return remote_memory_read_u64(pid, base + (uint64_t)offset, value);
}

/* The innermost frame of a thread state: directly (3.10, 3.13) or through its _PyCFrame. */
static int current_frame_of(pid_t pid, const struct python_layout *layout, uint64_t thread,
			    uint64_t *frame)
{
	uint64_t cframe;

	if (layout->thread_frame != PYTHON_FIELD_ABSENT)
		return pointer_at(pid, thread, layout->thread_frame, frame);
	if (pointer_at(pid, thread, layout->thread_cframe, &cframe) != 0)
		return -EFAULT;
	if (!cframe) {
		*frame = 0;
		return 0;
	}
	return pointer_at(pid, cframe, layout->cframe_current_frame, frame);
}

/* Whether a frame is a shim the interpreter pushes per entry from C (3.12+): not the user's. */
static bool frame_is_shim(pid_t pid, const struct python_layout *layout, uint64_t frame)
{
	uint8_t owner;

	if (layout->frame_owner == PYTHON_FIELD_ABSENT ||
	    layout->frame_owner_c_stack == PYTHON_FIELD_ABSENT)
		return false;
	return remote_memory_read(pid, frame + (uint64_t)layout->frame_owner, &owner, sizeof(owner),
				  NULL, 0) == 0 &&
	       owner == (uint8_t)layout->frame_owner_c_stack;
}

static void frames_read(pid_t pid, const struct python_layout *layout, uint64_t frame,
			struct python_thread_stack *stack, struct python_code *code)
{
	char error[256];

	stack->frames = calloc(PYTHON_STACK_FRAMES_MAX, sizeof(*stack->frames));
	if (!stack->frames) {
		snprintf(stack->note, sizeof(stack->note), "out of memory");
		stack->cut = true;
		return;
	}
	for (size_t depth = 0; frame; depth++) {
		struct python_stack_frame *out;
		uint64_t code_address;

		if (stack->frame_count == PYTHON_STACK_FRAMES_MAX) {
			stack->cut = true;
			snprintf(stack->note, sizeof(stack->note),
				 "deeper than %d frames: the outermost are left out",
				 PYTHON_STACK_FRAMES_MAX);
			return;
		}
		if (!frame_is_shim(pid, layout, frame)) {
			if (pointer_at(pid, frame, layout->frame_code, &code_address) != 0 ||
			    python_code_read(pid, layout, code_address, code, error,
					     sizeof(error)) != 0) {
				/* 3.13 frames of C code hold no code object: not a Python frame. */
				if (layout->minor < 13 || depth == 0) {
					stack->cut = true;
					snprintf(stack->note, sizeof(stack->note),
						 "frame %zu unreadable (the thread moved on while "
						 "it "
						 "was read)",
						 depth);
				}
			} else {
				out = &stack->frames[stack->frame_count++];
				snprintf(out->qualified_name, sizeof(out->qualified_name), "%.*s",
					 (int)sizeof(out->qualified_name) - 1,
					 code->qualified_name);
				snprintf(out->filename, sizeof(out->filename), "%.*s",
					 (int)sizeof(out->filename) - 1, code->filename);
				out->first_line = code->first_line;
			}
		}
		if (pointer_at(pid, frame, layout->frame_previous, &frame) != 0) {
			stack->cut = true;
			snprintf(stack->note, sizeof(stack->note),
				 "the frame chain breaks after %zu frames", stack->frame_count);
			return;
		}
	}
}

static int thread_read(pid_t pid, const struct python_layout *layout, uint64_t thread,
		       uint64_t current_thread, struct python_stacks *stacks, size_t *capacity,
		       struct python_code *code)
{
	struct python_thread_stack *stack;
	uint64_t native_id = 0, frame = 0;

	if (growable_array_room_for_one((void **)&stacks->threads, stacks->count, capacity,
					sizeof(*stacks->threads)))
		return -ENOMEM;
	stack = &stacks->threads[stacks->count++];
	memset(stack, 0, sizeof(*stack));
	pointer_at(pid, thread, layout->thread_id, &stack->thread_id);
	stack->native_id = pointer_at(pid, thread, layout->thread_native_id, &native_id) == 0
				   ? (int64_t)(uint32_t)native_id
				   : -1;
	stack->holds_interpreter = current_thread && current_thread == thread;
	if (current_frame_of(pid, layout, thread, &frame) != 0) {
		stack->cut = true;
		snprintf(stack->note, sizeof(stack->note), "its current frame is unreadable");
		return 0;
	}
	frames_read(pid, layout, frame, stack, code);
	return 0;
}

int python_stacks_read(pid_t pid, const struct python_layout *layout, struct python_stacks *stacks,
		       char *error, size_t error_size)
{
	uint64_t interpreter = 0, current_thread = 0;
	struct python_code *code;
	size_t capacity = 0;
	int err = 0;

	memset(stacks, 0, sizeof(*stacks));
	if (pointer_at(pid, layout->addresses.runtime_state, layout->runtime_interpreters_head,
		       &interpreter) != 0 ||
	    !interpreter)
		return error_fail(error, error_size, EFAULT,
				  "cannot read the interpreters of pid %d from its _PyRuntime at "
				  "0x%llx: the process is gone, not yet started, or its layout "
				  "differs",
				  (int)pid, (unsigned long long)layout->addresses.runtime_state);
	if (layout->thread_state_current_address)
		remote_memory_read_u64(pid, layout->thread_state_current_address, &current_thread);
	code = malloc(sizeof(*code));
	if (!code)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	for (int i = 0; interpreter && i < INTERPRETERS_MAX && !err; i++) {
		uint64_t thread = 0;

		pointer_at(pid, interpreter, layout->interpreter_threads_head, &thread);
		for (int j = 0; thread && j < THREADS_MAX && !err; j++) {
			err = thread_read(pid, layout, thread, current_thread, stacks, &capacity,
					  code);
			if (pointer_at(pid, thread, layout->thread_next, &thread) != 0)
				thread = 0;
		}
		if (pointer_at(pid, interpreter, layout->interpreter_next, &interpreter) != 0)
			interpreter = 0;
	}
	free(code);
	if (err) {
		python_stacks_free(stacks);
		return error_fail(error, error_size, ENOMEM, "out of memory reading stacks");
	}
	return 0;
}

void python_stacks_free(struct python_stacks *stacks)
{
	for (size_t i = 0; i < stacks->count; i++)
		free(stacks->threads[i].frames);
	free(stacks->threads);
	memset(stacks, 0, sizeof(*stacks));
}
