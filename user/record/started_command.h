/* SPDX-License-Identifier: MIT */
/*
 * The command `record -- COMMAND` runs: started held at a pipe so the
 * probes are in place before its first instruction, let through, reaped
 * without blocking, and its exit status turned into tcheck-bpf's.
 */
#ifndef TCHECK_STARTED_COMMAND_H
#define TCHECK_STARTED_COMMAND_H

#include <stdbool.h>
#include <sys/types.h>

struct started_command {
	pid_t pid; /* -1 before the start */
	int release_fd;
	int exec_status_fd; /* read end of the pipe a failed exec writes its errno to */
	bool released;	    /* let through to its exec */
	bool exited;
	int wait_status;
};

void started_command_init(struct started_command *command);
/* Forks the command held before its exec; 0, or -1 (said). */
int started_command_start(struct started_command *command, char *const *argv);
/*
 * Lets the held command go on to its exec and waits for the exec: 0 when it
 * runs; else the status a shell gives a command that could not be run (127
 * not found, 126 found but not runnable; 1 when it could not be let go),
 * after saying so in one sentence ("cannot run X: No such file or
 * directory"), the child reaped.
 */
/*
 * Something to serve while waiting for the exec (a held exec of the
 * command's own: its interpreter probed first): serve is called each time
 * fd is readable. fd -1: nothing.
 */
struct started_command_waiter {
	int fd;
	void (*serve)(void *context);
	void *context;
};
int started_command_release(struct started_command *command, const char *name,
			    const struct started_command_waiter *waiter);
/* Notes its exit, without waiting. */
void started_command_reap(struct started_command *command);
/* A command never released is killed and reaped: none is left waiting at its gate. */
void started_command_abandon(struct started_command *command);
/* Its exit status as a shell gives it (128 + signal); 0 while it runs. */
int started_command_exit_status(const struct started_command *command);

#endif /* TCHECK_STARTED_COMMAND_H */
