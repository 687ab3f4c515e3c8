/* SPDX-License-Identifier: MIT */
/*
 * Scratch files for the unit tests: one directory per run, removed with
 * everything handed out in it when the test program exits.
 */
#ifndef TCHECK_TESTS_SCRATCH_FILES_H
#define TCHECK_TESTS_SCRATCH_FILES_H

/*
 * The path of 'name' in the run's scratch directory, created on first use.
 * The same name gives the same string, so a test may hold several at once.
 */
const char *scratch_path(const char *name);

#endif /* TCHECK_TESTS_SCRATCH_FILES_H */
