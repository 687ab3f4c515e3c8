// SPDX-License-Identifier: MIT
/* Monotonic time, wall-clock text and file identity keys. */
#include "base/system_clock.h"

#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "base/fnv_hash.h"

uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

uint64_t own_cpu_ns(void)
{
	struct timespec now;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now))
		return 0;
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

void realtime_text(uint64_t realtime_ns, char *text, size_t size)
{
	time_t seconds = (time_t)(realtime_ns / 1000000000ULL);
	struct tm calendar;
	char day[32];

	if (!gmtime_r(&seconds, &calendar) ||
	    !strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &calendar)) {
		snprintf(text, size, "%llu ns after the epoch", (unsigned long long)realtime_ns);
		return;
	}
	snprintf(text, size, "%s.%03uZ", day, (unsigned)(realtime_ns / 1000000ULL % 1000));
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
