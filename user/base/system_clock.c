// SPDX-License-Identifier: MIT
/* Monotonic time and file identity keys. */
#include "base/system_clock.h"

#include <errno.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fnv_hash.h"

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
	*key = fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, (uint64_t)status.st_dev),
			     (uint64_t)status.st_ino);
	return 0;
}
