// SPDX-License-Identifier: MIT
/* Scratch files for the unit tests, in one directory removed at exit. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "scratch_files.h"

#define MAX_SCRATCH_PATHS 256
static char scratch_directory[64];
static char *scratch_paths[MAX_SCRATCH_PATHS];

static void remove_scratch_directory(void)
{
	for (int i = 0; i < MAX_SCRATCH_PATHS && scratch_paths[i]; i++) {
		unlink(scratch_paths[i]);
		free(scratch_paths[i]);
	}
	if (scratch_directory[0])
		rmdir(scratch_directory);
}

const char *scratch_path(const char *name)
{
	char path[160];
	int i;

	if (!scratch_directory[0]) {
		strcpy(scratch_directory, "/tmp/tcheck-unit-test.XXXXXX");
		if (!mkdtemp(scratch_directory))
			abort();
		atexit(remove_scratch_directory);
	}
	snprintf(path, sizeof(path), "%s/%s", scratch_directory, name);
	for (i = 0; i < MAX_SCRATCH_PATHS && scratch_paths[i]; i++)
		if (strcmp(scratch_paths[i], path) == 0)
			return scratch_paths[i];
	if (i == MAX_SCRATCH_PATHS || !(scratch_paths[i] = strdup(path)))
		abort();
	return scratch_paths[i];
}
