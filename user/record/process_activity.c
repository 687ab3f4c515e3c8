// SPDX-License-Identifier: MIT
/* A process's CPU time, I/O counters and thread states from /proc; see process_activity.h. */
#include "record/process_activity.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Reads a small /proc file into 'text'; its length, or a negative errno. */
static ssize_t read_small_file(const char *path, char *text, size_t size)
{
	ssize_t length;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	length = read(fd, text, size - 1);
	if (length < 0)
		length = -errno;
	close(fd);
	if (length >= 0)
		text[length] = '\0';
	return length;
}

/* The state letter and user plus system ticks of a stat file; 0 or a negative errno. */
static int read_stat(const char *path, char *state, unsigned long long *ticks)
{
	char text[1024] = "", *after_name;
	unsigned long long user_ticks, system_ticks;

	if (read_small_file(path, text, sizeof(text)) <= 0)
		return -ENOENT;
	/* The name may hold spaces and parentheses: the fields follow its last ')'. */
	after_name = strrchr(text, ')');
	if (!after_name ||
	    sscanf(after_name + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", state,
		   &user_ticks, &system_ticks) != 3)
		return -EINVAL;
	*ticks = user_ticks + system_ticks;
	return 0;
}

static void read_io(uint32_t pid, struct trace_activity_sample *sample)
{
	char path[64], text[1024] = "";
	unsigned long long value;
	const char *line;

	snprintf(path, sizeof(path), "/proc/%u/io", pid);
	if (read_small_file(path, text, sizeof(text)) <= 0)
		return;
	for (line = text; line && *line;
	     line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (sscanf(line, "rchar: %llu", &value) == 1)
			sample->read_chars = value;
		else if (sscanf(line, "wchar: %llu", &value) == 1)
			sample->write_chars = value;
		else if (sscanf(line, "read_bytes: %llu", &value) == 1)
			sample->read_bytes = value;
		else if (sscanf(line, "write_bytes: %llu", &value) == 1)
			sample->write_bytes = value;
	}
}

/* Counts the process's threads and those running or in I/O wait. */
static void read_thread_states(uint32_t pid, struct trace_activity_sample *sample)
{
	char path[96];
	struct dirent *entry;
	DIR *tasks;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	tasks = opendir(path);
	if (!tasks)
		return;
	while ((entry = readdir(tasks))) {
		unsigned long long ticks;
		char state = '?';

		if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%.16s/stat", pid, entry->d_name);
		if (read_stat(path, &state, &ticks))
			continue;
		sample->threads++;
		sample->threads_running += state == 'R';
		sample->threads_io_wait += state == 'D';
	}
	closedir(tasks);
}

int process_activity_read(uint32_t pid, uint64_t now_ns, struct trace_activity_sample *sample)
{
	long ticks_per_second = sysconf(_SC_CLK_TCK);
	unsigned long long ticks;
	char path[64], state;
	int err;

	memset(sample, 0, sizeof(*sample));
	sample->timestamp_ns = now_ns;
	sample->pid = pid;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	err = read_stat(path, &state, &ticks);
	if (err)
		return err;
	if (ticks_per_second <= 0)
		ticks_per_second = 100;
	sample->cpu_ns = ticks * (1000000000ULL / (unsigned long long)ticks_per_second);
	read_io(pid, sample);
	read_thread_states(pid, sample);
	return 0;
}
