/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The calling thread's CPython thread state, found in the interpreter's
 * thread list by its pthread_t (the thread pointer): works whether the
 * thread holds the GIL or not.
 */
#ifndef TCHECK_PYTHON_THREAD_STATE_BPF_H
#define TCHECK_PYTHON_THREAD_STATE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "tcheck/probe_abi.h"
#include "thread_stack.bpf.h"

/* Thread states looked at before giving up; a training process has a handful. */
#define PYTHON_CONTEXT_MAX_THREADS 64

/* The calling thread's state, or the main thread's (the oldest) when it has none. */
static __always_inline __u64 python_thread_state(const struct tcheck_python_stack_layout *layout,
						 bool *main_thread)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 self = BPF_CORE_READ(task, thread.fsbase);
	__u64 interpreter = user_u64(layout->interpreters_head);
	__u64 state, last = 0;

	*main_thread = false;
	if (!interpreter)
		return 0;
	state = user_u64(interpreter + layout->interpreter_threads_head);
	for (int i = 0; i < PYTHON_CONTEXT_MAX_THREADS && state; i++) {
		if (user_u64(state + layout->thread_id) == self)
			return state;
		last = state;
		state = user_u64(state + layout->thread_next);
	}
	*main_thread = last != 0;
	return last;
}

#endif /* TCHECK_PYTHON_THREAD_STATE_BPF_H */
