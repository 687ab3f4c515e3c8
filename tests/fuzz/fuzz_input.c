// SPDX-License-Identifier: MIT
/* The fuzz input as a file: one memfd per process, rewritten for each input. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_input.h"

static int input_fd = -1;
static char input_path[64];

const char *fuzz_input_path(const uint8_t *data, size_t size)
{
	size_t written = 0;

	if (input_fd < 0) {
		input_fd = memfd_create("tcheck-fuzz-input", MFD_CLOEXEC);
		if (input_fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(input_path, sizeof(input_path), "/proc/self/fd/%d", input_fd);
	}
	if (ftruncate(input_fd, 0)) {
		perror("ftruncate");
		abort();
	}
	while (written < size) {
		ssize_t done = pwrite(input_fd, data + written, size - written, (off_t)written);

		if (done <= 0) {
			perror("pwrite");
			abort();
		}
		written += (size_t)done;
	}
	return input_path;
}

void fuzz_input_silence_stdout(void)
{
	int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);

	if (null_fd < 0 || dup2(null_fd, STDOUT_FILENO) < 0) {
		perror("/dev/null");
		abort();
	}
	close(null_fd);
}
