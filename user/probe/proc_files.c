// SPDX-License-Identifier: MIT
/* Reads whole /proc files, and says in a sentence why one could not be read. */
#include "probe/proc_files.h"

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

/* Larger /proc files than this are not a process's environment or command line. */
#define PROC_FILE_LIMIT (256u << 20)

/* Turns the errno of opening /proc/PID/<entry> into a sentence. */
int proc_file_fail(char *error, size_t error_size, int err, pid_t pid, const char *entry)
{
	if (err == ENOENT || err == ESRCH)
		return error_fail(error, error_size, ESRCH, "no process with pid %d", (int)pid);
	if (err == EACCES || err == EPERM)
		return error_fail(
			error, error_size, err,
			"cannot read /proc/%d/%s: permission denied; run tcheck-bpf as root "
			"(or with CAP_SYS_PTRACE and CAP_BPF)",
			(int)pid, entry);
	return error_fail(error, error_size, err, "cannot read /proc/%d/%s: %s", (int)pid, entry,
			  strerror(err));
}

/*
 * Reads a whole file whose size stat cannot tell (every /proc file says 0).
 * The buffer gets a terminating NUL not counted in *length.
 */
static int read_whole_file(const char *path, char **contents, size_t *length)
{
	size_t capacity = 4096, used = 0;
	char *buffer = malloc(capacity);
	int fd, err;

	if (!buffer)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		free(buffer);
		return -err;
	}
	for (;;) {
		ssize_t got;

		if (capacity - used < 2) {
			if (capacity >= PROC_FILE_LIMIT) {
				err = EFBIG;
				goto out_error;
			}
			/* A byte to read and the closing NUL. */
			if (growable_array_reserve((void **)&buffer, used, &capacity, 2, 1)) {
				err = ENOMEM;
				goto out_error;
			}
		}
		got = read(fd, buffer + used, capacity - used - 1);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			goto out_error;
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	buffer[used] = '\0';
	*contents = buffer;
	*length = used;
	return 0;

out_error:
	close(fd);
	free(buffer);
	return -err;
}

int proc_file_read(pid_t pid, const char *entry, char **contents, size_t *length)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, entry);
	return read_whole_file(path, contents, length);
}
