// SPDX-License-Identifier: MIT
/* Opening the libraries and executables the tracer reads, with their error sentences. */
#include "probe/library_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error_message.h"

int library_file_open(const char *path, char *error, size_t error_size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int err;

	if (fd >= 0)
		return fd;
	err = errno;
	if (err == EACCES || err == EPERM)
		return error_fail(error, error_size, err,
				  "cannot open %s: permission denied; run tcheck-bpf as root",
				  path);
	return error_fail(error, error_size, err, "cannot open %s: %s", path, strerror(err));
}

int library_file_read_at(const char *path, uint64_t offset, void *buffer, size_t size, char *error,
			 size_t error_size)
{
	int fd = library_file_open(path, error, error_size);
	ssize_t got;

	if (fd < 0)
		return fd;
	got = pread(fd, buffer, size, (off_t)offset);
	close(fd);
	if (got == (ssize_t)size)
		return 0;
	return error_fail(error, error_size, EIO, "cannot read %zu bytes at offset 0x%llx of %s",
			  size, (unsigned long long)offset, path);
}

int library_file_read_new(int fd, const char *path, uint64_t offset, size_t size, uint8_t **buffer,
			  char *error, size_t error_size)
{
	size_t done = 0;

	*buffer = malloc(size ? size : 1);
	if (!*buffer)
		return error_fail(error, error_size, ENOMEM, "out of memory for %zu bytes of %s",
				  size, path);
	while (done < size) {
		ssize_t got = pread(fd, *buffer + done, size - done, (off_t)(offset + done));

		if (got <= 0) {
			free(*buffer);
			*buffer = NULL;
			return error_fail(error, error_size, EIO,
					  "cannot read %zu bytes at offset 0x%llx of %s", size,
					  (unsigned long long)offset, path);
		}
		done += (size_t)got;
	}
	return 0;
}

int library_file_open_elf(const char *path, struct library_elf *file, char *error,
			  size_t error_size)
{
	file->elf = NULL;
	file->fd = library_file_open(path, error, error_size);
	if (file->fd < 0)
		return file->fd;
	elf_version(EV_CURRENT);
	file->elf = elf_begin(file->fd, ELF_C_READ_MMAP, NULL);
	if (!file->elf || elf_kind(file->elf) != ELF_K_ELF) {
		library_file_close_elf(file);
		return error_fail(error, error_size, ENOEXEC, "%s is not an ELF file", path);
	}
	return 0;
}

void library_file_close_elf(struct library_elf *file)
{
	if (file->elf)
		elf_end(file->elf);
	if (file->fd >= 0)
		close(file->fd);
	file->elf = NULL;
	file->fd = -1;
}
