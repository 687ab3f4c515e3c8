/* SPDX-License-Identifier: MIT */
/* The daemon's own readings of time and file identity, shared by its modules. */
#ifndef TCHECK_SYSTEM_CLOCK_H
#define TCHECK_SYSTEM_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds: the clock bpf_ktime_get_ns() reads. */
uint64_t monotonic_ns(void);

/* The CPU time this process has used, all its threads, in nanoseconds. */
uint64_t own_cpu_ns(void);

/*
 * CLOCK_REALTIME nanoseconds as RFC 3339 in UTC to the millisecond,
 * "2026-11-28T12:01:02.345Z", in 'text' (32 bytes hold it).
 */
void realtime_text(uint64_t realtime_ns, char *text, size_t size);

/*
 * A key naming a file whatever path reaches it (device and inode), so a
 * library seen through several /proc/PID/root paths is probed once.
 * Returns 0, or -errno when the file cannot be looked at.
 */
int file_identity(const char *path, uint64_t *key);

#endif /* TCHECK_SYSTEM_CLOCK_H */
