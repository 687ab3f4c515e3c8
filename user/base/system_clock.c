// SPDX-License-Identifier: MIT
/* Monotonic time and file identity keys. */
#include "base/system_clock.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>

uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

int file_identity(const char *path, uint64_t *key)
{
	struct stat status;

	if (stat(path, &status))
		return -errno;
	*key = (uint64_t)status.st_ino * 0x100000001b3ULL ^ (uint64_t)status.st_dev;
	return 0;
}
