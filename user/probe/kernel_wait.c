// SPDX-License-Identifier: MIT
/* Where a thread of this process waits in the kernel: its kernel stack, else its wait channel. */
#include "probe/kernel_wait.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/remote_memory.h"
#include "probe/proc_files.h"

/* The frames a note names: the innermost say what is awaited, the rest how it was reached. */
#define KERNEL_WAIT_FRAMES 5

void kernel_stack_summary(const char *stack_text, int frames, char *text, size_t size)
{
	const char *line = stack_text;
	size_t used = 0;
	int named = 0;

	if (size == 0)
		return;
	text[0] = '\0';
	while (line && *line && named < frames) {
		const char *name = strstr(line, "] ");
		const char *end_of_line = strchr(line, '\n');
		size_t length;

		name = name && (!end_of_line || name < end_of_line) ? name + 2 : line;
		length = strcspn(name, "+\n ");
		if (length > 0 && used + length + 4 < size) {
			used += (size_t)snprintf(text + used, size - used, "%s%.*s",
						 named ? " < " : "", (int)length, name);
			named++;
		}
		line = end_of_line ? end_of_line + 1 : NULL;
	}
}

/* The text of /proc/self/task/TID/ENTRY, malloc'ed, or NULL where it cannot be read. */
static char *own_task_file(pid_t tid, const char *entry)
{
	char path[64];
	char *contents = NULL;
	size_t length;

	snprintf(path, sizeof(path), "task/%d/%s", (int)tid, entry);
	return proc_file_read(getpid(), path, &contents, &length) == 0 ? contents : NULL;
}

void kernel_wait_of_own_thread(pid_t tid, char *text, size_t size)
{
	char *stack, *channel;

	if (size == 0)
		return;
	text[0] = '\0';
	stack = own_task_file(tid, "stack");
	if (stack)
		kernel_stack_summary(stack, KERNEL_WAIT_FRAMES, text, size);
	free(stack);
	/* The wait channel alone, where the stack is not shown ("0": running). */
	channel = text[0] ? NULL : own_task_file(tid, "wchan");
	if (channel && channel[0] && strcmp(channel, "0") != 0)
		snprintf(text, size, "%.*s", (int)strcspn(channel, "\n"), channel);
	free(channel);
}

bool kernel_syscall_remote_read(const char *syscall_text, pid_t *pid, uint64_t *remote_pieces,
				uint64_t *piece_count)
{
	unsigned long long arguments[6];
	long number;

	/* "NR ARG1 ... ARG6 SP PC" while in a call; "running" or "-1 SP PC" otherwise. */
	if (!syscall_text ||
	    sscanf(syscall_text, "%ld %llx %llx %llx %llx %llx %llx", &number, &arguments[0],
		   &arguments[1], &arguments[2], &arguments[3], &arguments[4],
		   &arguments[5]) != 7 ||
	    number != SYS_process_vm_readv)
		return false;
	*pid = (pid_t)arguments[0];
	*remote_pieces = arguments[3];
	*piece_count = arguments[4];
	return true;
}

bool kernel_remote_read_of_own_thread(pid_t tid, struct remote_read_in_progress *read)
{
	char *text = own_task_file(tid, "syscall");
	uint64_t pieces_at = 0, pieces = 0;
	struct iovec first;
	pid_t pid = 0;
	bool found = kernel_syscall_remote_read(text, &pid, &pieces_at, &pieces);

	free(text);
	/* The list lies on the waiting thread's stack: read through the kernel, not by pointer. */
	if (!found || pieces == 0 ||
	    remote_memory_read(getpid(), pieces_at, &first, sizeof(first), NULL, 0) != 0)
		return false;
	*read = (struct remote_read_in_progress){ pid, (uint64_t)(uintptr_t)first.iov_base,
						  first.iov_len, pieces };
	return true;
}

const char *kernel_state_of_own_thread(pid_t tid)
{
	char *stat = own_task_file(tid, "stat");
	/* The command in parentheses may hold anything: the state follows its last ')'. */
	const char *after = stat ? strrchr(stat, ')') : NULL;
	char state = after && after[1] == ' ' ? after[2] : '\0';

	free(stat);
	switch (state) {
	case 'R':
		return "running";
	case 'S':
		return "asleep";
	case 'D':
		return "in uninterruptible sleep";
	default:
		return "";
	}
}
