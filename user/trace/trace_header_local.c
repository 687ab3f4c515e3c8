// SPDX-License-Identifier: MIT
/* Fills a trace header for this machine: host name, boot id, clock anchor, command line. */
#include "trace/trace_header_local.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "base/command_text.h"
#include "base/error_message.h"
#include "trace/trace_format.h"

#define CLOCK_ANCHOR_ATTEMPTS 5

static uint64_t timespec_ns(const struct timespec *time)
{
	return (uint64_t)time->tv_sec * 1000000000ULL + (uint64_t)time->tv_nsec;
}

/*
 * Reads the wall clock between two monotonic reads and keeps the attempt
 * with the narrowest window, so a preemption in one attempt costs nothing.
 */
static int read_clock_anchor(uint64_t *monotonic_ns, uint64_t *realtime_ns)
{
	uint64_t narrowest = UINT64_MAX;

	for (int attempt = 0; attempt < CLOCK_ANCHOR_ATTEMPTS; attempt++) {
		struct timespec before, wall, after;
		uint64_t window;

		if (clock_gettime(CLOCK_MONOTONIC, &before) ||
		    clock_gettime(CLOCK_REALTIME, &wall) || clock_gettime(CLOCK_MONOTONIC, &after))
			return -errno;
		window = timespec_ns(&after) - timespec_ns(&before);
		if (window < narrowest) {
			narrowest = window;
			*monotonic_ns = timespec_ns(&before) + window / 2;
			*realtime_ns = timespec_ns(&wall);
		}
	}
	return 0;
}

/* Reads a small file into 'buffer' (NUL-terminated); returns the length or -errno. */
static ssize_t read_small_file(const char *path, char *buffer, size_t size)
{
	size_t length = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (length + 1 < size) {
		ssize_t got = read(fd, buffer + length, size - 1 - length);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int saved = errno;

			close(fd);
			return -saved;
		}
		if (got == 0)
			break;
		length += (size_t)got;
	}
	close(fd);
	buffer[length] = '\0';
	return (ssize_t)length;
}

int trace_header_init_local(struct trace_header *header, int argc, char *const argv[], char *error,
			    size_t error_size)
{
	ssize_t length;
	int err;

	memset(header, 0, sizeof(*header));
	header->format_version = TRACE_FORMAT_VERSION_MAJOR;
	if (gethostname(header->hostname, sizeof(header->hostname) - 1)) {
		err = -errno;
		error_format(error, error_size, "could not read this machine's host name: %s",
			     strerror(-err));
		return err;
	}
	header->hostname[sizeof(header->hostname) - 1] = '\0';

	/* A missing boot id only weakens cross-trace checks: leave it empty. */
	length = read_small_file("/proc/sys/kernel/random/boot_id", header->boot_id,
				 sizeof(header->boot_id));
	while (length > 0 &&
	       (header->boot_id[length - 1] == '\n' || header->boot_id[length - 1] == ' '))
		header->boot_id[--length] = '\0';
	if (length < 0)
		header->boot_id[0] = '\0';

	err = read_clock_anchor(&header->anchor_monotonic_ns, &header->anchor_realtime_ns);
	if (err) {
		error_format(error, error_size,
			     "could not read the system clocks for the trace's time anchor: %s",
			     strerror(-err));
		return err;
	}

	if (argv) {
		command_text_join(header->command_line, sizeof(header->command_line), argc, argv);
		return 0;
	}
	length = read_small_file("/proc/self/cmdline", header->command_line,
				 sizeof(header->command_line));
	if (length < 0) {
		header->command_line[0] = '\0';
		return 0;
	}
	/* Arguments are NUL-separated there; the last NUL ends the list. */
	while (length > 0 && header->command_line[length - 1] == '\0')
		length--;
	for (ssize_t i = 0; i < length; i++)
		if (header->command_line[i] == '\0')
			header->command_line[i] = ' ';
	header->command_line[length] = '\0';
	return 0;
}
