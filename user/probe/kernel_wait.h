/* SPDX-License-Identifier: MIT */
/*
 * Where a thread of this process waits in the kernel, in words: the innermost
 * functions of its kernel stack (/proc/self/task/TID/stack, root only), else
 * its wait channel. Said when a read of another process does not return, so
 * that the note names the lock, the fault or the mount it waits on.
 */
#ifndef TCHECK_PROBE_KERNEL_WAIT_H
#define TCHECK_PROBE_KERNEL_WAIT_H

#include <stddef.h>
#include <sys/types.h>

/* The innermost functions a kernel stack's text names ("a < b < c"), at most 'frames'. */
void kernel_stack_summary(const char *stack_text, int frames, char *text, size_t size);

/* Where thread tid of this process waits: "" when the kernel does not say. */
void kernel_wait_of_own_thread(pid_t tid, char *text, size_t size);

#endif /* TCHECK_PROBE_KERNEL_WAIT_H */
