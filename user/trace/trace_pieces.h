/* SPDX-License-Identifier: MIT */
/*
 * The pieces of a bounded recording (record --max-size): the trace file
 * FILE holds the newest records, FILE.1 the piece before it, FILE.2 the one
 * before that, and so on, as logrotate names them. Each piece is a whole
 * trace of its own: a header, its chunks, a closing chunk. With a limit on
 * the number of pieces the oldest is removed when a new one starts.
 */
#ifndef TCHECK_TRACE_PIECES_H
#define TCHECK_TRACE_PIECES_H

#include <stdbool.h>
#include <stddef.h>

/* The name of piece 'number' of 'path' (0: 'path' itself) in 'name'; -ENAMETOOLONG if it does not
 * fit. */
int trace_piece_name(const char *path, unsigned number, char *name, size_t size);

/*
 * Whether a piece of an earlier recording (FILE.1, FILE.2, ...) lies beside
 * 'path': 1 with its name in 'found', 0 when none, or a negative errno.
 */
int trace_pieces_find_any(const char *path, char *found, size_t found_size);

/*
 * Makes room for a new FILE once FILE was closed: FILE.k becomes FILE.k+1
 * for each of the 'pieces' numbered pieces, and FILE becomes FILE.1. When
 * 'max_files' (0: no limit, else at least 2) pieces would then be exceeded,
 * the oldest is removed first and *dropped says so. Returns the number of
 * numbered pieces now, or a negative errno with 'error' filled.
 */
int trace_pieces_rotate(const char *path, unsigned pieces, unsigned max_files, bool *dropped,
			char *error, size_t error_size);

#endif /* TCHECK_TRACE_PIECES_H */
