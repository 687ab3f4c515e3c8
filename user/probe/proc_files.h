// SPDX-License-Identifier: MIT
/* Reads whole /proc files, and says in a sentence why one could not be read. */
#ifndef TCHECK_PROC_FILES_H
#define TCHECK_PROC_FILES_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Reads /proc/PID/ENTRY whole into a malloc'ed buffer ending in a NUL not
 * counted in *length; 0, or a negative errno.
 */
int proc_file_read(pid_t pid, const char *entry, char **contents, size_t *length);

/* Turns the errno of reading /proc/PID/ENTRY into a sentence in error; returns -errno. */
int proc_file_fail(char *error, size_t error_size, int err, pid_t pid, const char *entry);

#endif /* TCHECK_PROC_FILES_H */
