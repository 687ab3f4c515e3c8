/* SPDX-License-Identifier: MIT */
/*
 * The files a command writes, kept apart from the files it reads and from
 * each other. An output is written aside and renamed into place
 * (output_file.h), so an output that is also an input would replace it:
 * `dump TRACE -o TRACE` would leave the trace's JSON where the trace was,
 * `check --rules R --jsonl R` an empty rules file. Each verb names its
 * outputs and inputs once its options are read, before it reads or writes
 * anything, and stops with a sentence when two of them are one file.
 */
#ifndef TCHECK_OUTPUT_TARGETS_H
#define TCHECK_OUTPUT_TARGETS_H

#include <stdbool.h>
#include <stddef.h>

/* An output file: the option that names it ("-o", "--events") and its path (NULL: none). */
struct output_target {
	const char *option;
	const char *path;
};

/* Input files of one kind: what they are ("trace", "--rules file") and their paths. */
struct input_files {
	const char *what;
	const char *const *paths; /* NULL entries are skipped */
	size_t count;
};

/*
 * Whether two paths name one file: the same file by any name or link where
 * they exist, the same name in the same directory where neither does yet.
 * Standard output ("-"), devices and FIFOs (written in place, never
 * replaced) are nobody's file.
 */
bool output_targets_same(const char *left, const char *right);

/*
 * 0 when no output is an input or another output; -EINVAL with a sentence
 * naming both otherwise.
 */
int output_targets_check(const struct output_target *outputs, size_t output_count,
			 const struct input_files *inputs, size_t input_kinds, char *error,
			 size_t error_size);

/* output_targets_check, its sentence logged as an error: the verb then exits EXIT_BAD_INPUT. */
int output_targets_refuse_overlap(const struct output_target *outputs, size_t output_count,
				  const struct input_files *inputs, size_t input_kinds);

#endif /* TCHECK_OUTPUT_TARGETS_H */
