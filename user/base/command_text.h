/* SPDX-License-Identifier: MIT */
/* A command line as one text: its arguments joined by spaces, as ps shows them. */
#ifndef TCHECK_COMMAND_TEXT_H
#define TCHECK_COMMAND_TEXT_H

#include <stddef.h>

/*
 * Joins argv[0..argc) (stopping early at a NULL entry) into out, cut to
 * size - 1 bytes at an argument's end; returns out.
 */
char *command_text_join(char *out, size_t size, int argc, char *const argv[]);

#endif /* TCHECK_COMMAND_TEXT_H */
