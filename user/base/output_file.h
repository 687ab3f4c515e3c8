/* SPDX-License-Identifier: MIT */
/*
 * The one way the tool writes a file the user named: a regular file is
 * written beside itself under a temporary name and renamed into place only
 * when the whole output was written, so a failed or cut write never leaves
 * half a file nor destroys the one that was there. "-" (and /dev/stdout) is
 * standard output; devices, FIFOs and other files that are not regular files
 * are written in place and never replaced, truncated or removed. A symbolic
 * link is followed: its target is replaced, the link stays.
 */
#ifndef TCHECK_OUTPUT_FILE_H
#define TCHECK_OUTPUT_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum output_file_flags {
	/* A file that exists is refused (the caller's --force clears this). */
	OUTPUT_FILE_REFUSE_EXISTING = 1u << 0,
	/*
	 * A new file is created under its own name and written there as it
	 * grows (a recording a killed recorder leaves behind is still found);
	 * one that exists is still written aside and renamed.
	 */
	OUTPUT_FILE_GROW_IN_PLACE = 1u << 1,
};

struct output_file {
	FILE *stream;
	char *path;	 /* the name the user gave, for messages */
	char *target;	 /* the regular file renamed onto at the end; NULL in place */
	char *temporary; /* where the output is written until then; NULL in place */
	bool created;	 /* created in place by us: ours to remove if it fails */
	bool standard;	 /* standard output, not closed */
};

/* Opens 'path' (NULL or "-": standard output) for writing; 0 or -errno with a sentence. */
int output_file_open(struct output_file *file, const char *path, unsigned flags, char *error,
		     size_t error_size);

/*
 * Ends the output. complete: every write succeeded; the output is flushed,
 * checked and renamed into place, and an error there is returned as a
 * sentence and -errno. Not complete: the temporary file (or a file this
 * output created) is removed and whatever was there before stays.
 */
int output_file_close(struct output_file *file, bool complete, char *error, size_t error_size);

/* True when 'path' names standard output. */
bool output_file_is_standard(const char *path);

#endif /* TCHECK_OUTPUT_FILE_H */
