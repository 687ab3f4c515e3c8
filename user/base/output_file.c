// SPDX-License-Identifier: MIT
/* Outputs written beside their target and renamed into place; devices written in place. */
#include "base/output_file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error_message.h"

bool output_file_is_standard(const char *path)
{
	return !path || strcmp(path, "-") == 0 || strcmp(path, "/dev/stdout") == 0 ||
	       strcmp(path, "/dev/fd/1") == 0 || strcmp(path, "/proc/self/fd/1") == 0;
}

static mode_t creation_mode(void)
{
	mode_t mask = umask(0);

	umask(mask);
	return 0666 & ~mask;
}

static int fail_open(struct output_file *file, int fd, char *error, size_t error_size, int code,
		     const char *what)
{
	if (fd >= 0)
		close(fd);
	error_format(error, error_size, "cannot write %s: %s%s", file->path, what,
		     code ? strerror(code) : "");
	free(file->path);
	free(file->target);
	free(file->temporary);
	memset(file, 0, sizeof(*file));
	return -(code ? code : EINVAL);
}

/* A temporary file beside 'target', with the mode the output will have. */
static int open_beside(struct output_file *file, mode_t mode)
{
	char *copy = strdup(file->target);
	const char *directory, *base;
	int fd;

	if (!copy)
		return -ENOMEM;
	directory = dirname(copy);
	base = strrchr(file->target, '/');
	base = base ? base + 1 : file->target;
	if (asprintf(&file->temporary, "%s/.%s.XXXXXX", directory, base) < 0) {
		file->temporary = NULL;
		free(copy);
		return -ENOMEM;
	}
	free(copy);
	fd = mkostemp(file->temporary, O_CLOEXEC);
	if (fd < 0) {
		free(file->temporary);
		file->temporary = NULL;
		return -errno;
	}
	if (fchmod(fd, mode)) {
		int err = -errno;

		close(fd);
		unlink(file->temporary);
		return err;
	}
	return fd;
}

int output_file_open(struct output_file *file, const char *path, unsigned flags, char *error,
		     size_t error_size)
{
	struct stat status;
	int fd = -1;

	memset(file, 0, sizeof(*file));
	if (output_file_is_standard(path)) {
		file->stream = stdout;
		file->standard = true;
		file->path = strdup("standard output");
		return file->path ? 0 : -ENOMEM;
	}
	file->path = strdup(path);
	if (!file->path)
		return -ENOMEM;
	/* Followed: a link's target is what is written; the link stays. */
	file->target = realpath(path, NULL);
	if (!file->target) {
		int err = errno;

		if (err != ENOENT)
			return fail_open(file, -1, error, error_size, err, "");
		if (!lstat(path, &status))
			return fail_open(file, -1, error, error_size, 0,
					 "it is a link to a file that does not exist");
		file->target = strdup(path);
		if (!file->target)
			return fail_open(file, -1, error, error_size, ENOMEM, "");
		if (flags & OUTPUT_FILE_GROW_IN_PLACE) {
			fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
			if (fd < 0)
				return fail_open(file, -1, error, error_size, errno, "");
			file->created = true;
			free(file->target);
			file->target = NULL;
		} else {
			fd = open_beside(file, creation_mode());
			if (fd < 0)
				return fail_open(file, -1, error, error_size, -fd, "");
		}
	} else if (stat(file->target, &status)) {
		return fail_open(file, -1, error, error_size, errno, "");
	} else if (S_ISDIR(status.st_mode)) {
		return fail_open(file, -1, error, error_size, 0, "it is a directory");
	} else if (!S_ISREG(status.st_mode)) {
		/* A device or FIFO: written as it is, never replaced nor truncated. */
		fd = open(file->target, O_WRONLY | O_NOCTTY | O_CLOEXEC);
		if (fd < 0)
			return fail_open(file, -1, error, error_size, errno, "");
		free(file->target);
		file->target = NULL;
	} else if (flags & OUTPUT_FILE_REFUSE_EXISTING) {
		return fail_open(file, -1, error, error_size, 0,
				 "the file exists (give --force to replace it)");
	} else {
		fd = open_beside(file, status.st_mode & 07777);
		if (fd < 0)
			return fail_open(file, -1, error, error_size, -fd, "");
	}
	file->stream = fdopen(fd, "w");
	if (!file->stream) {
		int err = errno;

		if (file->temporary)
			unlink(file->temporary);
		else if (file->created)
			unlink(file->path);
		return fail_open(file, fd, error, error_size, err, "");
	}
	return 0;
}

int output_file_close(struct output_file *file, bool complete, char *error, size_t error_size)
{
	int err = 0;

	if (!file->stream)
		return 0;
	errno = 0;
	if (fflush(file->stream) || ferror(file->stream))
		err = errno ? errno : EIO;
	if (!file->standard && fclose(file->stream) && !err)
		err = errno;
	file->stream = NULL;
	if (complete && !err && file->temporary && rename(file->temporary, file->target))
		err = errno;
	if (complete && err)
		error_format(error, error_size, "cannot write %s: %s", file->path, strerror(err));
	if ((!complete || err) && file->temporary)
		unlink(file->temporary);
	else if (!complete && file->created)
		unlink(file->path);
	free(file->path);
	free(file->target);
	free(file->temporary);
	memset(file, 0, sizeof(*file));
	return complete && err ? -err : 0;
}
