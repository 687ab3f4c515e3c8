// SPDX-License-Identifier: MIT
/* Names, finds and rotates the pieces of a recording bounded by --max-size. */
#include "trace/trace_pieces.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error_message.h"

int trace_piece_name(const char *path, unsigned number, char *name, size_t size)
{
	int length = number ? snprintf(name, size, "%s.%u", path, number)
			    : snprintf(name, size, "%s", path);

	return length < 0 || (size_t)length >= size ? -ENAMETOOLONG : 0;
}

/* Whether 'entry' is 'base' followed by a dot and a piece number. */
static bool names_piece(const char *entry, const char *base)
{
	size_t length = strlen(base);
	const char *digits = entry + length + 1;

	if (strncmp(entry, base, length) != 0 || entry[length] != '.' || *digits < '1' ||
	    *digits > '9')
		return false;
	while (*digits >= '0' && *digits <= '9')
		digits++;
	return *digits == '\0';
}

int trace_pieces_find_any(const char *path, char *found, size_t found_size)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char directory[PATH_MAX];
	struct dirent *entry;
	int result = 0;
	DIR *listing;

	if (slash)
		snprintf(directory, sizeof(directory), "%.*s", (int)(slash - path + 1), path);
	else
		snprintf(directory, sizeof(directory), ".");
	listing = opendir(directory);
	if (!listing)
		return errno == ENOENT ? 0 : -errno;
	while (!result && (entry = readdir(listing)))
		if (names_piece(entry->d_name, base)) {
			snprintf(found, found_size, "%.*s%s", slash ? (int)(slash - path + 1) : 0,
				 path, entry->d_name);
			result = 1;
		}
	closedir(listing);
	return result;
}

/* Renames piece 'from' of 'path' to piece 'to'; 0 or -errno with 'error' filled. */
static int rename_piece(const char *path, unsigned from, unsigned to, char *error,
			size_t error_size)
{
	char old_name[PATH_MAX], new_name[PATH_MAX];

	if (trace_piece_name(path, from, old_name, sizeof(old_name)) ||
	    trace_piece_name(path, to, new_name, sizeof(new_name)))
		return error_fail(error, error_size, ENAMETOOLONG,
				  "cannot name the pieces of %s: the name is too long", path);
	if (rename(old_name, new_name))
		return error_fail(error, error_size, errno, "cannot rename %s to %s: %s", old_name,
				  new_name, strerror(errno));
	return 0;
}

int trace_pieces_rotate(const char *path, unsigned pieces, unsigned max_files, bool *dropped,
			char *error, size_t error_size)
{
	char oldest[PATH_MAX];
	int err;

	*dropped = false;
	if (max_files && pieces + 1 >= max_files) {
		/* FILE.1 to FILE.(max_files - 1) are all taken: the oldest goes. */
		pieces = max_files - 1;
		if (trace_piece_name(path, pieces, oldest, sizeof(oldest)))
			return error_fail(error, error_size, ENAMETOOLONG,
					  "cannot name the pieces of %s: the name is too long",
					  path);
		if (unlink(oldest) && errno != ENOENT)
			return error_fail(error, error_size, errno,
					  "cannot remove the oldest piece %s: %s", oldest,
					  strerror(errno));
		*dropped = true;
		pieces--;
	}
	for (unsigned number = pieces; number >= 1; number--) {
		err = rename_piece(path, number, number + 1, error, error_size);
		if (err)
			return err;
	}
	err = rename_piece(path, 0, 1, error, error_size);
	return err ? err : (int)pieces + 1;
}
