/* SPDX-License-Identifier: MIT */
/* The daemon's own readings of time and file identity, shared by its modules. */
#ifndef TCHECK_SYSTEM_CLOCK_H
#define TCHECK_SYSTEM_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds: the clock bpf_ktime_get_ns() reads. */
uint64_t monotonic_ns(void);

/*
 * A key naming a file whatever path reaches it (device and inode), so a
 * library seen through several /proc/PID/root paths is probed once.
 * Returns 0, or -errno when the file cannot be looked at.
 */
int file_identity(const char *path, uint64_t *key);

#endif /* TCHECK_SYSTEM_CLOCK_H */
