// SPDX-License-Identifier: MIT
/*
 * First execs of interpreter files held until their probes are on (see the
 * header). A thread answers every exec permission event: at once for an
 * untraced process, a file not named python*, or a file already asked
 * about; a traced process's first exec of a python* file waits for the
 * recorder's loop (exec_hold_serve) or the time limit.
 */
#include "record/exec_hold.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/log.h"
#include "base/system_clock.h"

#define HELD_MAX 64
#define FILES_ASKED_MAX 256

struct held_exec {
	int fd; /* the event's: answered and closed once, by whoever lets it through */
	dev_t device;
	ino_t inode;
	uint64_t deadline_ns;
	char path[256];
};

struct asked_file {
	dev_t device;
	ino_t inode;
};

struct exec_hold {
	struct probe_session *session;
	int fanotify_fd;
	int request_fd; /* eventfd: the thread held an exec */
	int stop_fd;	/* eventfd: the recorder is done */
	pthread_t thread;
	pthread_mutex_t lock; /* guards everything below */
	struct held_exec held[HELD_MAX];
	size_t held_count;
	struct asked_file asked[FILES_ASKED_MAX];
	size_t asked_count;
};

static void let_through(int fanotify_fd, int event_fd)
{
	struct fanotify_response response = { .fd = event_fd, .response = FAN_ALLOW };

	if (write(fanotify_fd, &response, sizeof(response)) != (ssize_t)sizeof(response))
		log_debug("cannot answer an exec permission event: %s", strerror(errno));
	close(event_fd);
}

static bool asked_before(const struct exec_hold *hold, dev_t device, ino_t inode)
{
	for (size_t i = 0; i < hold->asked_count; i++)
		if (hold->asked[i].device == device && hold->asked[i].inode == inode)
			return true;
	return false;
}

/* The file behind an event, when it is one a held exec waits for: a python* file. */
static bool python_file_of(int event_fd, struct held_exec *held)
{
	char link[64];
	struct stat file;
	const char *base;
	ssize_t length;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", event_fd);
	length = readlink(link, held->path, sizeof(held->path) - 1);
	if (length <= 0 || fstat(event_fd, &file))
		return false;
	held->path[length] = '\0';
	base = strrchr(held->path, '/');
	base = base ? base + 1 : held->path;
	held->device = file.st_dev;
	held->inode = file.st_ino;
	return strncmp(base, "python", 6) == 0;
}

/* One event: held (the recorder is told) or let through now. */
static void take_event(struct exec_hold *hold, const struct fanotify_event_metadata *event)
{
	struct held_exec held = { .fd = event->fd };
	bool keep;

	if (!(event->mask & FAN_OPEN_EXEC_PERM)) {
		close(event->fd);
		return;
	}
	keep = probe_session_is_traced(hold->session, (uint32_t)event->pid) &&
	       python_file_of(event->fd, &held);
	pthread_mutex_lock(&hold->lock);
	keep = keep && hold->held_count < HELD_MAX && !asked_before(hold, held.device, held.inode);
	if (keep) {
		held.deadline_ns = monotonic_ns() + EXEC_HOLD_MAX_MS * 1000000ULL;
		hold->held[hold->held_count++] = held;
	}
	pthread_mutex_unlock(&hold->lock);
	if (!keep) {
		let_through(hold->fanotify_fd, event->fd);
		return;
	}
	if (eventfd_write(hold->request_fd, 1))
		log_debug("cannot wake the recorder for a held exec: %s", strerror(errno));
}

/* Held execs past their time are let through; the time until the next one's, -1 none. */
static int expire(struct exec_hold *hold)
{
	uint64_t now = monotonic_ns(), next = 0;
	size_t kept = 0;

	pthread_mutex_lock(&hold->lock);
	for (size_t i = 0; i < hold->held_count; i++) {
		struct held_exec *held = &hold->held[i];

		if (held->deadline_ns <= now) {
			log_debug("an exec of %s was let through after %d ms: its Python was "
				  "not probed in time",
				  held->path, EXEC_HOLD_MAX_MS);
			let_through(hold->fanotify_fd, held->fd);
			continue;
		}
		if (!next || held->deadline_ns < next)
			next = held->deadline_ns;
		hold->held[kept++] = *held;
	}
	hold->held_count = kept;
	pthread_mutex_unlock(&hold->lock);
	return next ? (int)((next - now) / 1000000ULL) + 1 : -1;
}

static void *answer_events(void *context)
{
	struct exec_hold *hold = context;
	char buffer[4096] __attribute__((aligned(__alignof__(struct fanotify_event_metadata))));

	for (;;) {
		struct pollfd fds[2] = { { .fd = hold->fanotify_fd, .events = POLLIN },
					 { .fd = hold->stop_fd, .events = POLLIN } };
		const struct fanotify_event_metadata *event;
		ssize_t length;

		if (poll(fds, 2, expire(hold)) < 0 && errno != EINTR)
			break;
		if (fds[1].revents)
			break;
		if (!(fds[0].revents & POLLIN))
			continue;
		length = read(hold->fanotify_fd, buffer, sizeof(buffer));
		if (length <= 0)
			continue;
		event = (const struct fanotify_event_metadata *)buffer;
		for (; FAN_EVENT_OK(event, length); event = FAN_EVENT_NEXT(event, length))
			if (event->fd >= 0)
				take_event(hold, event);
	}
	return NULL;
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

struct exec_hold *exec_hold_start(struct probe_session *session, char *error, size_t error_size)
{
	struct exec_hold *hold = calloc(1, sizeof(*hold));
	int err;

	if (!hold) {
		error_fail(error, error_size, ENOMEM, "out of memory");
		return NULL;
	}
	hold->session = session;
	hold->request_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	hold->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	hold->fanotify_fd = fanotify_init(FAN_CLASS_CONTENT | FAN_CLOEXEC | FAN_NONBLOCK,
					  O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	if (hold->fanotify_fd < 0 || hold->request_fd < 0 || hold->stop_fd < 0) {
		error_fail(error, error_size, errno,
			   "cannot hold execs until their Python is probed (fanotify: %s)",
			   strerror(errno));
		goto fail;
	}
	if (!mark_file_systems(hold->fanotify_fd)) {
		error_fail(error, error_size, errno,
			   "cannot hold execs until their Python is probed (no file system "
			   "takes an exec permission mark: %s)",
			   strerror(errno));
		goto fail;
	}
	pthread_mutex_init(&hold->lock, NULL);
	err = pthread_create(&hold->thread, NULL, answer_events, hold);
	if (err) {
		error_fail(error, error_size, err, "cannot start the exec hold's thread: %s",
			   strerror(err));
		pthread_mutex_destroy(&hold->lock);
		goto fail;
	}
	return hold;
fail:
	if (hold->fanotify_fd >= 0)
		close(hold->fanotify_fd);
	if (hold->request_fd >= 0)
		close(hold->request_fd);
	if (hold->stop_fd >= 0)
		close(hold->stop_fd);
	free(hold);
	return NULL;
}

int exec_hold_request_fd(const struct exec_hold *hold)
{
	return hold ? hold->request_fd : -1;
}

/* Takes the first held exec whose file was not asked about yet; false when none. */
static bool next_file(struct exec_hold *hold, struct held_exec *file)
{
	bool found = false;

	pthread_mutex_lock(&hold->lock);
	for (size_t i = 0; i < hold->held_count && !found; i++) {
		if (asked_before(hold, hold->held[i].device, hold->held[i].inode))
			continue;
		*file = hold->held[i];
		found = true;
	}
	pthread_mutex_unlock(&hold->lock);
	return found;
}

/* The file was asked about: every exec of it held now goes through, and later ones are not held. */
static void file_asked(struct exec_hold *hold, const struct held_exec *file)
{
	size_t kept = 0;

	pthread_mutex_lock(&hold->lock);
	if (hold->asked_count < FILES_ASKED_MAX)
		hold->asked[hold->asked_count++] =
			(struct asked_file){ .device = file->device, .inode = file->inode };
	for (size_t i = 0; i < hold->held_count; i++) {
		struct held_exec *held = &hold->held[i];

		if (held->device == file->device && held->inode == file->inode)
			let_through(hold->fanotify_fd, held->fd);
		else
			hold->held[kept++] = *held;
	}
	hold->held_count = kept;
	pthread_mutex_unlock(&hold->lock);
}

void exec_hold_serve(struct exec_hold *hold, int (*follow)(void *context, const char *host_path),
		     void *context)
{
	struct held_exec file;
	eventfd_t requests;

	if (!hold)
		return;
	eventfd_read(hold->request_fd, &requests);
	while (next_file(hold, &file)) {
		uint64_t held_since = file.deadline_ns - EXEC_HOLD_MAX_MS * 1000000ULL;
		struct stat now;
		int followed = 0;

		/* The path names the held file still (not replaced since): follow it. */
		if (!stat(file.path, &now) && now.st_dev == file.device && now.st_ino == file.inode)
			followed = follow(context, file.path);
		file_asked(hold, &file);
		log_debug("an exec of %s was held %.1f ms while its Python was %s", file.path,
			  (double)(monotonic_ns() - held_since) / 1e6,
			  followed > 0 ? "probed" : "looked at");
	}
}

void exec_hold_stop(struct exec_hold *hold)
{
	if (!hold)
		return;
	if (eventfd_write(hold->stop_fd, 1))
		log_debug("cannot stop the exec hold's thread: %s", strerror(errno));
	pthread_join(hold->thread, NULL);
	for (size_t i = 0; i < hold->held_count; i++)
		let_through(hold->fanotify_fd, hold->held[i].fd);
	/* Closing the group lets through any exec still waiting on it. */
	close(hold->fanotify_fd);
	close(hold->request_fd);
	close(hold->stop_fd);
	pthread_mutex_destroy(&hold->lock);
	free(hold);
}
