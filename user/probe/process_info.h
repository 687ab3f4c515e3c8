// SPDX-License-Identifier: MIT
/* What identifies a process in a job, read from /proc: command, ranks, parent, children. */
#ifndef TCHECK_PROCESS_INFO_H
#define TCHECK_PROCESS_INFO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Facts about a process that identify it in a distributed job. */
struct process_info {
	pid_t pid;
	pid_t parent_pid;
	char *command;	  /* argv joined by spaces; "[name]" for a process without one */
	char *executable; /* /proc/PID/exe as the process sees it, "" when unreadable */
	int rank;	  /* RANK, -1 when absent or not an integer */
	int local_rank;	  /* LOCAL_RANK, likewise */
	int world_size;	  /* WORLD_SIZE, likewise */
	char note[256];	  /* why the environment values are unknown, "" when it was read */
};

/*
 * Fails only when the process is gone or cannot be inspected at all; an
 * unreadable environment leaves -1s and a note instead.
 */
int process_info_read(pid_t pid, struct process_info *info, char *error, size_t error_size);
void process_info_free(struct process_info *info);

/*
 * process_info's command alone (one read where process_info_read makes
 * five): malloc'ed, "" for a process gone, NULL when out of memory.
 */
char *process_command_line(pid_t pid);

/* 0 when the process exists and its /proc entries can be read. */
int process_check(pid_t pid, char *error, size_t error_size);

/*
 * A numeric field of /proc/PID/stat, numbered as proc(5) does (4: ppid, 9:
 * flags, 26: startcode), from 4 on; false when it cannot be read.
 */
bool process_stat_number(pid_t pid, int field, unsigned long long *value);
/* The parent pid, from /proc/PID/stat; -1 when it cannot be read. */
pid_t process_parent_pid(pid_t pid);
/* True when the process is gone or a zombie: its memory can no longer be read. */
bool process_has_ended(pid_t pid);
/* True for a kernel thread (PF_KTHREAD in /proc/PID/stat): it runs no program. */
bool process_is_kernel_thread(pid_t pid);

/*
 * The processes whose parent is pid, or with descendants set, the whole
 * tree below it (a launcher's workers may sit under an intermediate
 * shell). *pids is allocated, in ascending order; free() it.
 */
int process_children(pid_t pid, bool descendants, pid_t **pids, size_t *count, char *error,
		     size_t error_size);

/* The integer value of name in a NUL-separated environment block, or -1. */
int environment_integer(const char *block, size_t length, const char *name);

#endif /* TCHECK_PROCESS_INFO_H */
