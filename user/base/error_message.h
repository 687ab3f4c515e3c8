/* SPDX-License-Identifier: MIT */
/*
 * The one way modules report a failure: a sentence the user can act on,
 * written into the caller's buffer, and a negative errno returned.
 */
#ifndef TCHECK_ERROR_MESSAGE_H
#define TCHECK_ERROR_MESSAGE_H

#include <stddef.h>

/* Writes the sentence (when error is given) and returns -code. */
__attribute__((format(printf, 4, 5))) int error_fail(char *error, size_t error_size, int code,
						     const char *format, ...);

/* Writes the sentence when error is given. */
__attribute__((format(printf, 3, 4))) void error_format(char *error, size_t error_size,
							const char *format, ...);

#endif /* TCHECK_ERROR_MESSAGE_H */
