// SPDX-License-Identifier: MIT
/* Where a thread of this process waits in the kernel: its kernel stack, else its wait channel. */
#include "base/kernel_wait.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

static ssize_t read_own_task_file(pid_t tid, const char *name, char *buffer, size_t size)
{
	char path[64];
	ssize_t got;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	got = read(fd, buffer, size - 1);
	close(fd);
	buffer[got > 0 ? got : 0] = '\0';
	return got;
}

void kernel_wait_of_own_thread(pid_t tid, char *text, size_t size)
{
	char buffer[4096];

	if (size == 0)
		return;
	text[0] = '\0';
	if (read_own_task_file(tid, "stack", buffer, sizeof(buffer)) > 0)
		kernel_stack_summary(buffer, KERNEL_WAIT_FRAMES, text, size);
	/* The wait channel alone, where the stack is not shown ("0": running). */
	if (!text[0] && read_own_task_file(tid, "wchan", buffer, sizeof(buffer)) > 0 &&
	    strcmp(buffer, "0") != 0)
		snprintf(text, size, "%.*s", (int)strcspn(buffer, "\n"), buffer);
}
