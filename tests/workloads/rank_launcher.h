/* SPDX-License-Identifier: MIT */
/* Helpers the test workloads share: a torchrun-like launcher of rank processes, files, numbers. */
#ifndef TCHECK_RANK_LAUNCHER_H
#define TCHECK_RANK_LAUNCHER_H

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "program_options.h"

#define POLL_INTERVAL_NS 10000000L

/* A non-negative integer from the environment, or -1. */
static inline int env_int(const char *name)
{
	const char *text = getenv(name);
	long value;

	return text && parse_int(text, 0, INT_MAX, &value) ? (int)value : -1;
}

static inline void sleep_ns(long nanoseconds)
{
	struct timespec pause_for = { .tv_sec = nanoseconds / 1000000000L,
				      .tv_nsec = nanoseconds % 1000000000L };

	while (nanosleep(&pause_for, &pause_for) < 0 && errno == EINTR)
		;
}

/* The path of this program, from /proc/self/exe. */
static inline int own_executable(char *path, size_t size)
{
	ssize_t length = readlink("/proc/self/exe", path, size - 1);

	if (length < 0)
		return -1;
	path[length] = '\0';
	return 0;
}

/* Other processes see the whole file or none of it; errno is ENAMETOOLONG for a long path. */
static inline int write_file_atomically(const char *path, const void *bytes, size_t length)
{
	char temporary[PATH_MAX];
	int path_length;
	FILE *file;

	path_length = snprintf(temporary, sizeof(temporary), "%s.tmp.%d", path, (int)getpid());
	if (path_length < 0 || (size_t)path_length >= sizeof(temporary)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	file = fopen(temporary, "w");
	if (!file || fwrite(bytes, 1, length, file) != length || fclose(file) != 0 ||
	    rename(temporary, path) != 0)
		return -1;
	return 0;
}

/* Polls until 'path' holds at least 'length' bytes, and reads them: how ranks pass ids on. */
static inline void read_published_file(const char *path, void *bytes, size_t length)
{
	for (;;) {
		FILE *file = fopen(path, "r");
		size_t got = 0;

		if (file) {
			got = fread(bytes, 1, length, file);
			fclose(file);
		}
		if (got == length)
			return;
		sleep_ns(POLL_INTERVAL_NS);
	}
}

/* mkdir -p, and a message on failure. */
static inline int make_log_directory(const char *program, const char *path)
{
	char partial[PATH_MAX];

	snprintf(partial, sizeof(partial), "%s", path);
	for (char *slash = strchr(partial + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(partial, 0755) < 0 && errno != EEXIST)
			goto fail;
		*slash = '/';
	}
	if (mkdir(partial, 0755) < 0 && errno != EEXIST)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "%s: cannot create %s: %s\n", program, path, strerror(errno));
	return -1;
}

struct rank_launcher {
	const char *program;
	int ranks;
	/* How long the other ranks get once one has failed. */
	unsigned int grace_seconds;
	/* Also set MASTER_ADDR and MASTER_PORT in each rank. */
	bool master_env;
	/* Once the grace is over, SIGTERM the ranks left, and SIGKILL them a grace later. */
	bool escalate;
	/*
	 * Give each rank its rank as torch.multiprocessing.spawn does, in no
	 * variable a tool reads (SPAWNED_RANK and SPAWNED_WORLD_SIZE), not in
	 * RANK, LOCAL_RANK and WORLD_SIZE.
	 */
	bool spawned;
};

static inline void set_env_int(const char *name, int value)
{
	char text[16];

	snprintf(text, sizeof(text), "%d", value);
	setenv(name, text, 1);
}

static inline pid_t start_rank(const struct rank_launcher *launcher, int rank,
			       const char *executable, char **rank_argv,
			       const sigset_t *original_mask)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	if (launcher->spawned) {
		set_env_int("SPAWNED_RANK", rank);
		set_env_int("SPAWNED_WORLD_SIZE", launcher->ranks);
	} else {
		set_env_int("RANK", rank);
		set_env_int("LOCAL_RANK", rank);
		set_env_int("WORLD_SIZE", launcher->ranks);
		set_env_int("LOCAL_WORLD_SIZE", launcher->ranks);
	}
	if (launcher->master_env) {
		setenv("MASTER_ADDR", "127.0.0.1", 1);
		setenv("MASTER_PORT", "29500", 1);
	}
	/* A rank must not outlive its launcher. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	sigprocmask(SIG_SETMASK, original_mask, NULL);
	execv(executable, rank_argv);
	fprintf(stderr, "%s: cannot run %s: %s\n", launcher->program, executable, strerror(errno));
	_exit(127);
}

static inline void signal_ranks(const pid_t *pids, int count, int signal_number)
{
	for (int rank = 0; rank < count; rank++)
		if (pids[rank] > 0)
			kill(pids[rank], signal_number);
}

/* Reaps the ranks that ended; returns how many, and notes any that failed. */
static inline int reap_ranks(const struct rank_launcher *launcher, pid_t *pids, bool *failed)
{
	int reaped = 0;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		for (int rank = 0; rank < launcher->ranks; rank++) {
			if (pids[rank] != pid)
				continue;
			pids[rank] = 0;
			reaped++;
			if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
				break;
			if (WIFEXITED(status))
				fprintf(stderr, "%s: rank %d failed with exit status %d\n",
					launcher->program, rank, WEXITSTATUS(status));
			else
				fprintf(stderr, "%s: rank %d was killed by signal %d\n",
					launcher->program, rank, WTERMSIG(status));
			if (!*failed)
				alarm(launcher->grace_seconds);
			*failed = true;
		}
	}
	return reaped;
}

/*
 * Runs this program again once per rank, with "--worker" added to its arguments and the
 * environment torchrun gives, and waits for them all. Returns 0 when every rank exited 0, 1 when
 * one failed or the launcher was told to stop, 2 when it could not start.
 */
static inline int launch_ranks(const struct rank_launcher *launcher, int argc, char **argv)
{
	char executable[PATH_MAX];
	sigset_t handled, original;
	char **rank_argv;
	pid_t *pids;
	bool failed = false;
	int escalation = 0;
	int running = 0;

	if (own_executable(executable, sizeof(executable)) < 0) {
		fprintf(stderr, "%s: cannot find my own executable: %s\n", launcher->program,
			strerror(errno));
		return 2;
	}
	rank_argv = calloc((size_t)argc + 2, sizeof(*rank_argv));
	pids = calloc((size_t)launcher->ranks, sizeof(*pids));
	if (!rank_argv || !pids) {
		free(rank_argv);
		free(pids);
		return 2;
	}
	memcpy(rank_argv, argv, (size_t)argc * sizeof(*argv));
	rank_argv[argc] = "--worker";

	/* Signals are taken synchronously, so none is lost between checks. */
	sigemptyset(&handled);
	sigaddset(&handled, SIGCHLD);
	sigaddset(&handled, SIGTERM);
	sigaddset(&handled, SIGINT);
	sigaddset(&handled, SIGALRM);
	sigprocmask(SIG_BLOCK, &handled, &original);

	for (int rank = 0; rank < launcher->ranks; rank++) {
		pids[rank] = start_rank(launcher, rank, executable, rank_argv, &original);
		if (pids[rank] < 0) {
			fprintf(stderr, "%s: cannot start rank %d: %s\n", launcher->program, rank,
				strerror(errno));
			pids[rank] = 0;
			failed = true;
			signal_ranks(pids, launcher->ranks, SIGTERM);
			break;
		}
		running++;
	}
	while (running > 0) {
		int signal_number = sigwaitinfo(&handled, NULL);

		if (signal_number == SIGCHLD) {
			running -= reap_ranks(launcher, pids, &failed);
		} else if (signal_number == SIGTERM || signal_number == SIGINT) {
			signal_ranks(pids, launcher->ranks, SIGTERM);
			failed = true;
		} else if (signal_number == SIGALRM && launcher->escalate) {
			fprintf(stderr, "%s: stopping the ranks still running after a failure\n",
				launcher->program);
			signal_ranks(pids, launcher->ranks, escalation++ ? SIGKILL : SIGTERM);
			alarm(launcher->grace_seconds);
		} else if (signal_number == SIGALRM) {
			fprintf(stderr, "%s: killing the ranks still running after a failure\n",
				launcher->program);
			signal_ranks(pids, launcher->ranks, SIGKILL);
		}
	}
	alarm(0);
	free(pids);
	free(rank_argv);
	return failed ? 1 : 0;
}

#endif /* TCHECK_RANK_LAUNCHER_H */
