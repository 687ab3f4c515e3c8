// SPDX-License-Identifier: MIT
/*
 * First execs of interpreter files held until their probes are on (see the
 * header). Every exec on a marked file system waits for an answer, so the
 * answers come from a small process of their own, in a session of its own:
 * a recorder stopped with Ctrl-Z (SIGTSTP goes to the terminal's foreground
 * group, not to it) or busy does not stop execs elsewhere on the machine.
 * It answers at once for an untraced process, a file not named python* or
 * a file already asked about, and asks the recorder about a traced
 * process's first exec of a python* file (a request on a pipe), letting it
 * through when the recorder answers or at EXEC_HOLD_MAX_MS. It dies with
 * the recorder (PR_SET_PDEATHSIG), and the kernel then lets every exec it
 * held through.
 */
#include "record/exec_hold.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/log.h"
#include "base/system_clock.h"

#define HELD_MAX 64
#define FILES_ASKED_MAX 256

/* A file, as the answering process and the recorder tell each other about it. */
struct held_file {
	dev_t device;
	ino_t inode;
	char path[256];
};

struct held_exec {
	int fd; /* the event's: answered and closed once */
	uint64_t deadline_ns;
	struct held_file file;
};

/* The answering process's state: its own, never shared with the recorder's memory. */
struct answerer {
	int fanotify_fd;
	int request_fd; /* write end: a held exec's file, for the recorder */
	int answer_fd;	/* read end: files the recorder has looked at */
	struct probe_session *session;
	struct held_exec held[HELD_MAX];
	size_t held_count;
	struct held_file asked[FILES_ASKED_MAX];
	size_t asked_count;
};

/* The recorder's side. */
struct exec_hold {
	pid_t answerer;
	int request_fd; /* read end */
	int answer_fd;	/* write end */
	struct held_file asked[FILES_ASKED_MAX];
	size_t asked_count;
};

static bool same_file(const struct held_file *a, const struct held_file *b)
{
	return a->device == b->device && a->inode == b->inode;
}

static bool file_among(const struct held_file *files, size_t count, const struct held_file *file)
{
	for (size_t i = 0; i < count; i++)
		if (same_file(&files[i], file))
			return true;
	return false;
}

static void let_through(int fanotify_fd, int event_fd)
{
	struct fanotify_response response = { .fd = event_fd, .response = FAN_ALLOW };

	/* Nothing to do when this fails: the exec goes through as the group closes. */
	if (write(fanotify_fd, &response, sizeof(response)) != (ssize_t)sizeof(response))
		response.fd = -1;
	close(event_fd);
}

/* The file behind an event, when it is one a held exec waits for: a python* file. */
static bool python_file_of(int event_fd, struct held_file *file)
{
	char link[64];
	struct stat status;
	const char *base;
	ssize_t length;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", event_fd);
	length = readlink(link, file->path, sizeof(file->path) - 1);
	if (length <= 0 || fstat(event_fd, &status))
		return false;
	file->path[length] = '\0';
	base = strrchr(file->path, '/');
	base = base ? base + 1 : file->path;
	file->device = status.st_dev;
	file->inode = status.st_ino;
	return strncmp(base, "python", 6) == 0;
}

/* One event: held (the recorder is asked) or let through now. */
static void take_event(struct answerer *answerer, const struct fanotify_event_metadata *event)
{
	struct held_exec held = { .fd = event->fd };

	if (!(event->mask & FAN_OPEN_EXEC_PERM) || answerer->held_count == HELD_MAX ||
	    !probe_session_is_traced(answerer->session, (uint32_t)event->pid) ||
	    !python_file_of(event->fd, &held.file) ||
	    file_among(answerer->asked, answerer->asked_count, &held.file) ||
	    write(answerer->request_fd, &held.file, sizeof(held.file)) !=
		    (ssize_t)sizeof(held.file)) {
		let_through(answerer->fanotify_fd, event->fd);
		return;
	}
	held.deadline_ns = monotonic_ns() + EXEC_HOLD_MAX_MS * 1000000ULL;
	answerer->held[answerer->held_count++] = held;
}

/*
 * Lets through the held execs of file (NULL: none), all of them with all,
 * and those past their time; returns the milliseconds until the next one's
 * time, -1 none.
 */
static int let_through_held(struct answerer *answerer, const struct held_file *file, bool all)
{
	uint64_t now = monotonic_ns(), next = 0;
	size_t kept = 0;

	for (size_t i = 0; i < answerer->held_count; i++) {
		struct held_exec *held = &answerer->held[i];

		if (all || (file && same_file(&held->file, file)) || held->deadline_ns <= now) {
			let_through(answerer->fanotify_fd, held->fd);
			continue;
		}
		if (!next || held->deadline_ns < next)
			next = held->deadline_ns;
		answerer->held[kept++] = *held;
	}
	answerer->held_count = kept;
	return next ? (int)((next - now) / 1000000ULL) + 1 : -1;
}

/* The recorder looked at a file: its held execs go through, later ones are not held. */
static bool take_answer(struct answerer *answerer)
{
	struct held_file file;

	if (read(answerer->answer_fd, &file, sizeof(file)) != (ssize_t)sizeof(file))
		return false; /* the recorder is gone or done */
	if (answerer->asked_count < FILES_ASKED_MAX)
		answerer->asked[answerer->asked_count++] = file;
	let_through_held(answerer, &file, false);
	return true;
}

static void answer_events(struct answerer *answerer)
{
	char buffer[4096] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));
	int timeout_ms = -1;

	for (;;) {
		struct pollfd fds[2] = { { .fd = answerer->fanotify_fd, .events = POLLIN },
					 { .fd = answerer->answer_fd, .events = POLLIN } };
		const struct fanotify_event_metadata *event;
		ssize_t length;

		if (poll(fds, 2, timeout_ms) < 0 && errno != EINTR)
			break;
		if (fds[1].revents && !take_answer(answerer))
			break;
		if (fds[0].revents & POLLIN) {
			length = read(answerer->fanotify_fd, buffer, sizeof(buffer));
			event = (const struct fanotify_event_metadata *)buffer;
			for (; length > 0 && FAN_EVENT_OK(event, length);
			     event = FAN_EVENT_NEXT(event, length))
				if (event->fd >= 0)
					take_event(answerer, event);
		}
		timeout_ms = let_through_held(answerer, NULL, false);
	}
	let_through_held(answerer, NULL, true);
}

/* "\040" in a mountinfo path is a space. */
static void unescape(char *path)
{
	char *out = path;

	for (const char *in = path; *in; out++) {
		if (in[0] == '\\' && in[1] >= '0' && in[1] <= '3' && in[2] && in[3]) {
			*out = (char)((in[1] - '0') * 64 + (in[2] - '0') * 8 + (in[3] - '0'));
			in += 4;
		} else {
			*out = *in++;
		}
	}
	*out = '\0';
}

/* Every file system mounted here: an interpreter may be on any (a chroot's root, a container's). */
static size_t mark_file_systems(int fanotify_fd)
{
	FILE *mounts = fopen("/proc/self/mountinfo", "r");
	char line[4096], point[4096];
	size_t marked = 0;

	if (!mounts)
		return 0;
	while (fgets(line, sizeof(line), mounts)) {
		if (sscanf(line, "%*s %*s %*s %*s %4095s", point) != 1)
			continue;
		unescape(point);
		if (!fanotify_mark(fanotify_fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM,
				   FAN_OPEN_EXEC_PERM, AT_FDCWD, point) ||
		    !fanotify_mark(fanotify_fd, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN_EXEC_PERM,
				   AT_FDCWD, point))
			marked++;
	}
	fclose(mounts);
	return marked;
}

/* The answering process, from its fork on: it never returns. */
static void run_answerer(struct answerer *answerer, pid_t recorder)
{
	/* Out of the terminal's job control, and gone with the recorder. */
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTSTP, SIG_IGN);
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != recorder)
		_exit(0);
	prctl(PR_SET_NAME, "tcheck-exec-hold");
	answer_events(answerer);
	_exit(0);
}

static void close_pair(int pair[2])
{
	if (pair[0] >= 0)
		close(pair[0]);
	if (pair[1] >= 0)
		close(pair[1]);
}

struct exec_hold *exec_hold_start(struct probe_session *session, char *error, size_t error_size)
{
	struct answerer answerer = { .session = session };
	int requests[2] = { -1, -1 }, answers[2] = { -1, -1 };
	struct exec_hold *hold;
	pid_t recorder = getpid();

	answerer.fanotify_fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK,
					     O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	if (answerer.fanotify_fd < 0) {
		error_fail(error, error_size, errno,
			   "cannot hold execs until their Python is probed (fanotify: %s)",
			   strerror(errno));
		return NULL;
	}
	if (!mark_file_systems(answerer.fanotify_fd)) {
		error_fail(error, error_size, errno,
			   "cannot hold execs until their Python is probed (no file system "
			   "takes an exec permission mark: %s)",
			   strerror(errno));
		close(answerer.fanotify_fd);
		return NULL;
	}
	hold = calloc(1, sizeof(*hold));
	if (!hold || pipe2(requests, O_CLOEXEC | O_NONBLOCK) || pipe2(answers, O_CLOEXEC)) {
		error_fail(error, error_size, hold ? errno : ENOMEM,
			   "cannot hold execs until their Python is probed: %s", strerror(errno));
		goto fail;
	}
	answerer.request_fd = requests[1];
	answerer.answer_fd = answers[0];
	hold->answerer = fork();
	if (hold->answerer < 0) {
		error_fail(error, error_size, errno, "cannot start the exec hold's process: %s",
			   strerror(errno));
		goto fail;
	}
	if (hold->answerer == 0) {
		close(requests[0]);
		close(answers[1]);
		run_answerer(&answerer, recorder);
	}
	/* The group is the answerer's alone: when it ends, the kernel lets held execs go. */
	close(answerer.fanotify_fd);
	close(requests[1]);
	close(answers[0]);
	hold->request_fd = requests[0];
	hold->answer_fd = answers[1];
	/* An answerer that cannot take answers never blocks the recorder: its execs time out. */
	fcntl(hold->answer_fd, F_SETFL, fcntl(hold->answer_fd, F_GETFL) | O_NONBLOCK);
	return hold;
fail:
	close(answerer.fanotify_fd);
	close_pair(requests);
	close_pair(answers);
	free(hold);
	return NULL;
}

int exec_hold_request_fd(const struct exec_hold *hold)
{
	return hold ? hold->request_fd : -1;
}

void exec_hold_serve(struct exec_hold *hold, int (*follow)(void *context, const char *host_path),
		     void *context)
{
	struct held_file file;

	if (!hold)
		return;
	while (read(hold->request_fd, &file, sizeof(file)) == (ssize_t)sizeof(file)) {
		uint64_t started = monotonic_ns();
		struct stat now;
		int followed = 0;

		file.path[sizeof(file.path) - 1] = '\0';
		if (!file_among(hold->asked, hold->asked_count, &file)) {
			/* The path names the held file still (not replaced since): follow it. */
			if (!stat(file.path, &now) && now.st_dev == file.device &&
			    now.st_ino == file.inode)
				followed = follow(context, file.path);
			if (hold->asked_count < FILES_ASKED_MAX)
				hold->asked[hold->asked_count++] = file;
			log_debug("an exec of %s was held while its Python was %s (%.1f ms here)",
				  file.path, followed > 0 ? "probed" : "looked at",
				  (double)(monotonic_ns() - started) / 1e6);
		}
		if (write(hold->answer_fd, &file, sizeof(file)) != (ssize_t)sizeof(file))
			log_debug("cannot let a held exec of %s through: %s (it goes through "
				  "within %d ms)",
				  file.path, strerror(errno), EXEC_HOLD_MAX_MS);
	}
}

void exec_hold_stop(struct exec_hold *hold)
{
	if (!hold)
		return;
	/* Its end releases the fanotify group: every exec it still held goes through. */
	kill(hold->answerer, SIGKILL);
	waitpid(hold->answerer, NULL, 0);
	close(hold->request_fd);
	close(hold->answer_fd);
	free(hold);
}
