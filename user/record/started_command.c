// SPDX-License-Identifier: MIT
/* The command a recording starts: held until the probes are in, then let through and reaped. */
#include "record/started_command.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"

void started_command_init(struct started_command *command)
{
	*command = (struct started_command){ .pid = -1, .release_fd = -1 };
}

int started_command_start(struct started_command *command, char *const *argv)
{
	int gate[2];
	char go;

	if (pipe(gate)) {
		log_error("cannot create a pipe to start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	command->pid = fork();
	if (command->pid < 0) {
		log_error("cannot start %s: %s", argv[0], strerror(errno));
		return -1;
	}
	if (command->pid == 0) {
		close(gate[1]);
		if (read(gate[0], &go, 1) != 1)
			_exit(127);
		close(gate[0]);
		execvp(argv[0], argv);
		fprintf(stderr, "tcheck-bpf: error: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(gate[0]);
	command->release_fd = gate[1];
	return 0;
}

void started_command_release(struct started_command *command, const char *name)
{
	if (command->release_fd < 0)
		return;
	command->released = true;
	if (write(command->release_fd, "g", 1) != 1)
		log_error("cannot start %s", name);
	close(command->release_fd);
	command->release_fd = -1;
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
}

int started_command_exit_status(const struct started_command *command)
{
	if (!command->exited)
		return 0;
	if (WIFEXITED(command->wait_status))
		return WEXITSTATUS(command->wait_status);
	return 128 + WTERMSIG(command->wait_status);
}
