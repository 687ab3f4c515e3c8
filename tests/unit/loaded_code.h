/* SPDX-License-Identifier: MIT */
/*
 * Comparing code the loader mapped with the library file's bytes, for the
 * tests that check probe addresses against the real libraries.
 */
#ifndef TCHECK_TESTS_LOADED_CODE_H
#define TCHECK_TESTS_LOADED_CODE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * True when 'loaded' holds the file's bytes. A byte that reads as int3
 * (0xcc) in memory counts as equal: a uprobe another tracer on this
 * machine placed there replaces the instruction's first byte in every
 * process that maps the library, this test's included.
 */
bool loaded_code_matches(const void *loaded, const void *from_file, size_t length);

#endif /* TCHECK_TESTS_LOADED_CODE_H */
