// SPDX-License-Identifier: MIT
/*
 * The pieces of a recording cut by --max-size: rotation renames them as
 * logrotate does (FILE newest, FILE.1 before it), removes the oldest past
 * --max-files, and an earlier recording's piece is found before anything
 * would be renamed onto it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trace/trace_pieces.h"
#include "scratch_files.h"
#include "unit.h"

static void write_text(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	fputs(text, file);
	fclose(file);
}

/* The text of piece 'number' of 'path', "" when it does not exist. */
static const char *piece_text(const char *path, unsigned number)
{
	static char text[64];
	char name[PATH_MAX];
	FILE *file;

	text[0] = '\0';
	CU_ASSERT_EQUAL(trace_piece_name(path, number, name, sizeof(name)), 0);
	file = fopen(name, "r");
	if (file) {
		if (!fgets(text, sizeof(text), file))
			text[0] = '\0';
		fclose(file);
	}
	return text;
}

UNIT_TEST(trace_pieces, rotation_keeps_the_newest_and_drops_the_oldest)
{
	const char *path = scratch_path("rotated.trace");
	char error[256], label[32];
	bool dropped = true;
	int pieces = 0;

	/* Four pieces written, three kept: FILE, FILE.1, FILE.2. */
	for (int written = 1; written <= 4; written++) {
		snprintf(label, sizeof(label), "piece %d", written);
		write_text(path, label);
		if (written == 4)
			break;
		pieces = trace_pieces_rotate(path, (unsigned)pieces, 3, &dropped, error,
					     sizeof(error));
		CU_ASSERT_EQUAL(pieces, written < 3 ? written : 2);
		CU_ASSERT_EQUAL(dropped, written == 3);
	}
	CU_ASSERT_STRING_EQUAL(piece_text(path, 0), "piece 4");
	CU_ASSERT_STRING_EQUAL(piece_text(path, 1), "piece 3");
	CU_ASSERT_STRING_EQUAL(piece_text(path, 2), "piece 2");
	CU_ASSERT_STRING_EQUAL(piece_text(path, 3), "");

	/* Without a limit every piece stays. */
	pieces = trace_pieces_rotate(path, 2, 0, &dropped, error, sizeof(error));
	CU_ASSERT_EQUAL(pieces, 3);
	CU_ASSERT_FALSE(dropped);
	CU_ASSERT_STRING_EQUAL(piece_text(path, 1), "piece 4");
	CU_ASSERT_STRING_EQUAL(piece_text(path, 3), "piece 2");
	CU_ASSERT_STRING_EQUAL(piece_text(path, 0), "");
}

UNIT_TEST(trace_pieces, an_earlier_recordings_piece_is_found)
{
	const char *path = scratch_path("earlier.trace");
	const char *other = scratch_path("earlier.trace.old");
	char found[PATH_MAX], piece[PATH_MAX];

	write_text(path, "a trace");
	write_text(other, "not a piece: no number");
	CU_ASSERT_EQUAL(trace_pieces_find_any(path, found, sizeof(found)), 0);
	CU_ASSERT_EQUAL(trace_piece_name(path, 12, piece, sizeof(piece)), 0);
	write_text(piece, "piece 12");
	CU_ASSERT_EQUAL(trace_pieces_find_any(path, found, sizeof(found)), 1);
	CU_ASSERT_STRING_EQUAL(found, piece);
	CU_ASSERT_EQUAL(trace_piece_name(path, 1, piece, 8), -ENAMETOOLONG);
	unlink(found);
}
