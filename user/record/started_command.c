// SPDX-License-Identifier: MIT
/* The command a recording starts: held until the probes are in, then let through and reaped. */
#include "record/started_command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"

void started_command_init(struct started_command *command)
{
	*command = (struct started_command){ .pid = -1, .release_fd = -1, .exec_status_fd = -1 };
}

/*
 * A second pipe, closed by a successful exec, carries exec's errno back
 * when it fails, so a command that never ran is told apart from one that
 * ran and failed (no crash report, no trace).
 */
int started_command_start(struct started_command *command, char *const *argv)
{
	int gate[2], exec_status[2];
	char go;

	if (pipe(gate)) {
		log_error("cannot create a pipe to start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	if (pipe2(exec_status, O_CLOEXEC)) {
		log_error("cannot create a pipe to start %s: %s", argv[0], strerror(errno));
		close(gate[0]);
		close(gate[1]);
		return -1;
	}
	command->pid = fork();
	if (command->pid < 0) {
		log_error("cannot start %s: %s", argv[0], strerror(errno));
		close(gate[0]);
		close(gate[1]);
		close(exec_status[0]);
		close(exec_status[1]);
		return -1;
	}
	if (command->pid == 0) {
		int exec_errno;

		close(gate[1]);
		close(exec_status[0]);
		if (read(gate[0], &go, 1) != 1)
			_exit(127);
		close(gate[0]);
		execvp(argv[0], argv);
		exec_errno = errno;
		if (write(exec_status[1], &exec_errno, sizeof(exec_errno)) < 0)
			_exit(127);
		_exit(127);
	}
	close(gate[0]);
	close(exec_status[1]);
	command->release_fd = gate[1];
	command->exec_status_fd = exec_status[0];
	return 0;
}

/* Waits until the exec status pipe is readable, serving the waiter meanwhile. */
static void wait_for_exec(const struct started_command *command,
			  const struct started_command_waiter *waiter)
{
	for (;;) {
		struct pollfd fds[2] = { { .fd = command->exec_status_fd, .events = POLLIN },
					 { .fd = waiter->fd, .events = POLLIN } };

		if (poll(fds, waiter->fd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR)
			return;
		if (fds[0].revents)
			return;
		if (fds[1].revents & POLLIN)
			waiter->serve(waiter->context);
	}
}

int started_command_release(struct started_command *command, const char *name,
			    const struct started_command_waiter *waiter)
{
	int exec_errno = 0;
	ssize_t got;

	if (command->release_fd < 0)
		return 0;
	command->released = true;
	if (write(command->release_fd, "g", 1) != 1) {
		log_error("cannot start %s: %s", name, strerror(errno));
		close(command->release_fd);
		command->release_fd = -1;
		return 1;
	}
	close(command->release_fd);
	command->release_fd = -1;
	if (waiter && waiter->fd >= 0)
		wait_for_exec(command, waiter);
	do
		got = read(command->exec_status_fd, &exec_errno, sizeof(exec_errno));
	while (got < 0 && errno == EINTR);
	close(command->exec_status_fd);
	command->exec_status_fd = -1;
	if (got != (ssize_t)sizeof(exec_errno))
		return 0;
	waitpid(command->pid, NULL, 0);
	command->pid = -1;
	log_error("cannot run %s: %s", name, strerror(exec_errno));
	return exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
}

void started_command_reap(struct started_command *command)
{
	int status;

	if (command->pid <= 0 || command->exited)
		return;
	if (waitpid(command->pid, &status, WNOHANG) == command->pid) {
		command->exited = true;
		command->wait_status = status;
	}
}

void started_command_abandon(struct started_command *command)
{
	if (command->pid > 0 && !command->released) {
		kill(command->pid, SIGKILL);
		waitpid(command->pid, NULL, 0);
	}
	if (command->release_fd >= 0)
		close(command->release_fd);
	command->release_fd = -1;
	if (command->exec_status_fd >= 0)
		close(command->exec_status_fd);
	command->exec_status_fd = -1;
}

int started_command_exit_status(const struct started_command *command)
{
	if (!command->exited)
		return 0;
	if (WIFEXITED(command->wait_status))
		return WEXITSTATUS(command->wait_status);
	return 128 + WTERMSIG(command->wait_status);
}
