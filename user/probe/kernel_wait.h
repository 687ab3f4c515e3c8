/* SPDX-License-Identifier: MIT */
/*
 * Where a thread of this process waits in the kernel, in words: the innermost
 * functions of its kernel stack (/proc/self/task/TID/stack, root only), else
 * its wait channel. Said when a read of another process does not return, so
 * that the note names the lock, the fault or the mount it waits on.
 */
#ifndef TCHECK_PROBE_KERNEL_WAIT_H
#define TCHECK_PROBE_KERNEL_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The innermost functions a kernel stack's text names ("a < b < c"), at most 'frames'. */
void kernel_stack_summary(const char *stack_text, int frames, char *text, size_t size);

/* Where thread tid of this process waits: "" when the kernel does not say. */
void kernel_wait_of_own_thread(pid_t tid, char *text, size_t size);

/* A read of another process's memory that a thread is in: its first piece. */
struct remote_read_in_progress {
	pid_t pid;	  /* whose memory */
	uint64_t address; /* where the first piece begins */
	uint64_t size;	  /* its bytes */
	uint64_t pieces;  /* how many pieces the call reads */
};

/*
 * From the text of /proc/.../syscall ("310 0x1f2 0x7ffd... ..."): true when
 * the thread is in process_vm_readv, with the pid it reads and where its
 * list of remote pieces (struct iovec) lies in the caller's memory.
 */
bool kernel_syscall_remote_read(const char *syscall_text, pid_t *pid, uint64_t *remote_pieces,
				uint64_t *piece_count);

/* The read thread tid of this process waits in, false when it is in none. */
bool kernel_remote_read_of_own_thread(pid_t tid, struct remote_read_in_progress *read);

/*
 * Thread tid's scheduler state in words, from its stat: "running" (R: on a
 * CPU or waiting for one, so a wait that long is a loop in the kernel),
 * "asleep" (S), "in uninterruptible sleep" (D); "" when unknown.
 */
const char *kernel_state_of_own_thread(pid_t tid);

#endif /* TCHECK_PROBE_KERNEL_WAIT_H */
