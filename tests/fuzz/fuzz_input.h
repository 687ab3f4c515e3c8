/* SPDX-License-Identifier: MIT */
/*
 * What every fuzz target shares: the input handed to the parsers as a file
 * (an in-memory one), since each parser reads a path the user names.
 */
#ifndef TCHECK_FUZZ_INPUT_H
#define TCHECK_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Replaces the content of the target's one in-memory file with 'data' and
 * returns a path that opens it. Aborts when the file cannot be made: the
 * fuzzer cannot go on without it.
 */
const char *fuzz_input_path(const uint8_t *data, size_t size);

/* Sends standard output to /dev/null: the parsers' results are not looked at. */
void fuzz_input_silence_stdout(void);

#endif /* TCHECK_FUZZ_INPUT_H */
