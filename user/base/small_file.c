// SPDX-License-Identifier: MIT
/* Small regular files read whole, with their size bounded before the read. */
#include "base/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error_message.h"

static int refuse_kind(const char *path, const char *what, mode_t mode, char *error,
		       size_t error_size)
{
	if (S_ISDIR(mode))
		return error_fail(error, error_size, EISDIR,
				  "%s %s is a directory: give the file inside it", what, path);
	return error_fail(error, error_size, EINVAL,
			  "%s %s is not a regular file (a %s): give a file", what, path,
			  S_ISFIFO(mode)		   ? "FIFO"
			  : S_ISCHR(mode) || S_ISBLK(mode) ? "device"
			  : S_ISSOCK(mode)		   ? "socket"
							   : "special file");
}

int small_file_read(const char *path, const char *what, size_t max_bytes, char **contents,
		    size_t *length, char *error, size_t error_size)
{
	/* O_NONBLOCK: opening a FIFO with no writer must not wait for one. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat status;
	size_t used = 0;
	char *buffer;
	int result;

	if (fd < 0)
		return error_fail(error, error_size, errno, "cannot read %s %s: %s", what, path,
				  strerror(errno));
	if (fstat(fd, &status)) {
		result = error_fail(error, error_size, errno, "cannot read %s %s: %s", what, path,
				    strerror(errno));
		goto out;
	}
	if (!S_ISREG(status.st_mode)) {
		result = refuse_kind(path, what, status.st_mode, error, error_size);
		goto out;
	}
	if ((unsigned long long)status.st_size > max_bytes) {
		result = error_fail(error, error_size, EFBIG,
				    "%s %s holds %lld bytes, more than the %zu it may: is it the "
				    "right file?",
				    what, path, (long long)status.st_size, max_bytes);
		goto out;
	}
	buffer = malloc(max_bytes + 1);
	if (!buffer) {
		result = error_fail(error, error_size, ENOMEM,
				    "out of memory reading %s %s (%zu bytes)", what, path,
				    max_bytes);
		goto out;
	}
	/* Up to one byte past the bound: a file that grew since fstat is refused too. */
	while (used <= max_bytes) {
		ssize_t got = read(fd, buffer + used, max_bytes + 1 - used);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			result = error_fail(error, error_size, errno, "cannot read %s %s: %s", what,
					    path, strerror(errno));
			free(buffer);
			goto out;
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	if (used > max_bytes) {
		result = error_fail(error, error_size, EFBIG,
				    "%s %s grew past the %zu bytes it may hold while it was read",
				    what, path, max_bytes);
		free(buffer);
		goto out;
	}
	buffer[used] = '\0';
	*contents = buffer;
	*length = used;
	result = 0;
out:
	close(fd);
	return result;
}
