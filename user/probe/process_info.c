// SPDX-License-Identifier: MIT
/* Reads what identifies a process in a job from /proc: command, ranks, parent, children. */
#include "probe/process_info.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "probe/proc_files.h"

int process_check(pid_t pid, char *error, size_t error_size)
{
	char path[64];

	if (pid <= 0)
		return error_fail(error, error_size, ESRCH, "no process with pid %d", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (access(path, R_OK) != 0)
		return proc_file_fail(error, error_size, errno, pid, "stat");
	return 0;
}

/* The kernel's PF_KTHREAD, in the flags field of /proc/PID/stat. */
#define KERNEL_THREAD_FLAG 0x00200000UL

bool process_stat_number(pid_t pid, int field, unsigned long long *value)
{
	char path[64], text[1024], *cursor, *end;
	ssize_t length;
	int fd;

	if (field < 4)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	length = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (length <= 0)
		return false;
	text[length] = '\0';
	/* The name (field 2) may hold spaces and parentheses: field 3 follows its last ')'. */
	cursor = strrchr(text, ')');
	if (!cursor)
		return false;
	cursor++;
	for (int at = 3; at < field; at++) {
		cursor += strspn(cursor, " ");
		cursor += strcspn(cursor, " ");
	}
	*value = strtoull(cursor, &end, 10);
	return end != cursor;
}

bool process_has_ended(pid_t pid)
{
	char path[64], text[512], *after_name;
	ssize_t length;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	length = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (length <= 0)
		return true;
	text[length] = '\0';
	after_name = strrchr(text, ')');
	/* A zombie (Z) or a dead task (X): its memory is gone, its parent not told yet. */
	return after_name && (after_name[2] == 'Z' || after_name[2] == 'X');
}

bool process_is_kernel_thread(pid_t pid)
{
	unsigned long long flags;

	return process_stat_number(pid, 9, &flags) && (flags & KERNEL_THREAD_FLAG) != 0;
}

int environment_integer(const char *block, size_t length, const char *name)
{
	size_t name_length = strlen(name);
	const char *entry = block, *end = block + length;

	while (entry < end) {
		size_t entry_length = strnlen(entry, (size_t)(end - entry));

		if (entry_length > name_length && memcmp(entry, name, name_length) == 0 &&
		    entry[name_length] == '=') {
			const char *digits = entry + name_length + 1;
			const char *entry_end = entry + entry_length;
			long value = 0;

			/* Plain decimal only: "3" counts, "3x", "", "-1" and overflows do not. */
			if (digits == entry_end)
				return -1;
			for (const char *c = digits; c < entry_end; c++) {
				if (*c < '0' || *c > '9')
					return -1;
				value = value * 10 + (*c - '0');
				if (value > INT_MAX)
					return -1;
			}
			return (int)value;
		}
		entry += entry_length + 1;
	}
	return -1;
}

pid_t process_parent_pid(pid_t pid)
{
	unsigned long long parent;

	return process_stat_number(pid, 4, &parent) ? (pid_t)parent : -1;
}

char *process_command_line(pid_t pid)
{
	size_t length;
	char *text, *command;

	if (proc_file_read(pid, "cmdline", &text, &length) == 0) {
		while (length && text[length - 1] == '\0')
			length--;
		for (size_t i = 0; i < length; i++)
			if (text[i] == '\0')
				text[i] = ' ';
		text[length] = '\0';
		if (length)
			return text;
		free(text);
	}
	/* Kernel threads and zombies have no argv: name them like ps does. */
	if (proc_file_read(pid, "comm", &text, &length) != 0)
		return strdup("");
	while (length && text[length - 1] == '\n')
		text[--length] = '\0';
	if (asprintf(&command, "[%s]", text) < 0)
		command = NULL;
	free(text);
	return command;
}

static char *read_executable(pid_t pid)
{
	char path[64], target[PATH_MAX];
	ssize_t length;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	length = readlink(path, target, sizeof(target) - 1);
	if (length < 0)
		return strdup("");
	target[length] = '\0';
	return strdup(target);
}

void process_info_free(struct process_info *info)
{
	if (!info)
		return;
	free(info->command);
	free(info->executable);
	info->command = NULL;
	info->executable = NULL;
}

int process_info_read(pid_t pid, struct process_info *info, char *error, size_t error_size)
{
	size_t length;
	char *environment;
	int err;

	memset(info, 0, sizeof(*info));
	info->pid = pid;
	info->rank = info->local_rank = info->world_size = -1;
	err = process_check(pid, error, error_size);
	if (err)
		return err;
	info->parent_pid = process_parent_pid(pid);
	info->command = process_command_line(pid);
	info->executable = read_executable(pid);
	if (!info->command || !info->executable) {
		process_info_free(info);
		return error_fail(error, error_size, ENOMEM, "out of memory reading process %d",
				  (int)pid);
	}
	err = proc_file_read(pid, "environ", &environment, &length);
	if (err) {
		snprintf(info->note, sizeof(info->note),
			 "cannot read /proc/%d/environ (%s): RANK, LOCAL_RANK and WORLD_SIZE are "
			 "unknown; run as root to read them",
			 (int)pid, strerror(-err));
		return 0;
	}
	info->rank = environment_integer(environment, length, "RANK");
	info->local_rank = environment_integer(environment, length, "LOCAL_RANK");
	info->world_size = environment_integer(environment, length, "WORLD_SIZE");
	free(environment);
	return 0;
}

static int compare_pids(const void *left, const void *right)
{
	pid_t a = *(const pid_t *)left, b = *(const pid_t *)right;

	return (a > b) - (a < b);
}

struct process_parent {
	pid_t pid;
	pid_t parent;
};

/* Every process with its parent, from /proc/[0-9]*\/stat. */
static int list_process_parents(struct process_parent **pairs, size_t *count)
{
	size_t capacity = 256;
	struct process_parent *list = malloc(capacity * sizeof(*list));
	struct dirent *entry;
	DIR *proc;
	int err;

	*count = 0;
	if (!list)
		return -ENOMEM;
	proc = opendir("/proc");
	if (!proc) {
		err = errno;
		free(list);
		return -err;
	}
	while ((entry = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		pid_t parent;

		if (*end || pid <= 0)
			continue;
		/* A process that exits while we look is simply not a child any more. */
		parent = process_parent_pid((pid_t)pid);
		if (parent < 0)
			continue;
		if (growable_array_room_for_one((void **)&list, *count, &capacity, sizeof(*list))) {
			closedir(proc);
			free(list);
			return -ENOMEM;
		}
		list[*count].pid = (pid_t)pid;
		list[*count].parent = parent;
		(*count)++;
	}
	closedir(proc);
	*pairs = list;
	return 0;
}

int process_children(pid_t pid, bool descendants, pid_t **pids, size_t *count, char *error,
		     size_t error_size)
{
	struct process_parent *pairs = NULL;
	size_t pair_count, found = 0, visited = 0;
	pid_t *result;
	int err;

	*pids = NULL;
	*count = 0;
	err = process_check(pid, error, error_size);
	if (err)
		return err;
	err = list_process_parents(&pairs, &pair_count);
	if (err)
		return error_fail(error, error_size, -err, "cannot list the processes in /proc: %s",
				  strerror(-err));
	/* A tree has fewer nodes than there are processes, so this never grows. */
	result = malloc((pair_count + 1) * sizeof(*result));
	if (!result) {
		free(pairs);
		return error_fail(error, error_size, ENOMEM,
				  "out of memory listing the children of %d", (int)pid);
	}
	/* Breadth first: result[visited..found) are parents still to expand. */
	for (pid_t parent = pid;;) {
		for (size_t i = 0; i < pair_count; i++)
			if (pairs[i].parent == parent && pairs[i].pid != pid)
				result[found++] = pairs[i].pid;
		if (!descendants || visited == found)
			break;
		parent = result[visited++];
	}
	free(pairs);
	qsort(result, found, sizeof(*result), compare_pids);
	*pids = result;
	*count = found;
	return 0;
}
