/* SPDX-License-Identifier: MIT */
/*
 * Reads a small settings file whole: a regular file of at most a given size.
 * A FIFO, a device (/dev/zero), a directory or a file that is too big is
 * refused with a sentence, before anything is read, so a wrong path can
 * neither block the caller nor fill its memory.
 */
#ifndef TCHECK_SMALL_FILE_H
#define TCHECK_SMALL_FILE_H

#include <stddef.h>

/*
 * The contents of path, NUL-ended (length excludes the NUL), malloc'ed into
 * *contents. what names the file in the error ("the config file").
 * Returns 0, or a negative errno with error filled.
 */
int small_file_read(const char *path, const char *what, size_t max_bytes, char **contents,
		    size_t *length, char *error, size_t error_size);

#endif /* TCHECK_SMALL_FILE_H */
