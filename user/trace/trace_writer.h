/* SPDX-License-Identifier: MIT */
/*
 * Writes trace files (docs/trace-format.md) in self-contained chunks, so
 * a recorder that dies loses only the records it had not flushed yet.
 *
 * A writer is not thread-safe: one thread owns it. Functions that can
 * fail return 0 or a negative errno; trace_writer_error() then gives a
 * sentence for the user. After a failed write the writer stays failed:
 * every later call returns the same error and the file keeps the chunks
 * written before it.
 */
#ifndef TCHECK_TRACE_WRITER_H
#define TCHECK_TRACE_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

/* When neither limit is set, a chunk is written at 4096 records or 1 MiB. */
#define TRACE_WRITER_DEFAULT_CHUNK_RECORDS 4096U
#define TRACE_WRITER_DEFAULT_CHUNK_BYTES (1U * 1024 * 1024)
/* Kept well under the reader's payload limit, with room for one large string. */
#define TRACE_WRITER_MAX_CHUNK_BYTES (32U * 1024 * 1024)

struct trace_writer;

struct trace_writer_stats {
	uint64_t records; /* added, string definitions not counted */
	uint64_t chunks;  /* written to the file */
	uint64_t bytes;	  /* written to the file, header included */
	uint64_t strings; /* distinct strings defined */
};

/*
 * Creates 'path' and writes the file header. The header's format_version is
 * ignored: the writer writes its own. A new file grows in place; one that
 * exists is replaced only when the trace is closed whole (base/output_file.h,
 * whose flags 'output_flags' takes: OUTPUT_FILE_REFUSE_EXISTING refuses it).
 * Returns NULL with 'error' filled (errno set) when the file cannot be
 * created or written.
 */
struct trace_writer *trace_writer_open(const char *path, const struct trace_header *header,
				       unsigned output_flags, char *error, size_t error_size);
/* trace_writer_open with no flags. */
struct trace_writer *trace_writer_new(const char *path, const struct trace_header *header,
				      char *error, size_t error_size);

/*
 * A chunk is written once it holds 'max_records' records or 'max_bytes'
 * bytes, whichever comes first; 0 keeps the current limit. Bytes are
 * capped at TRACE_WRITER_MAX_CHUNK_BYTES. Returns 0 or -EINVAL.
 */
int trace_writer_set_chunk_limits(struct trace_writer *writer, uint32_t max_records,
				  uint32_t max_bytes);

/*
 * Whether chunks are written zstd-compressed (trace format 1.6), as they are
 * unless this says otherwise; a chunk that would not shrink is written as it
 * is. Returns 0 or -ENOMEM.
 */
int trace_writer_set_compression(struct trace_writer *writer, bool compress);

/*
 * Copies one record into the pending chunk (its strings are interned, so
 * they need not outlive the call) and writes the chunk when it is full.
 */
int trace_writer_add(struct trace_writer *writer, const struct trace_record *record);

/*
 * Writes the pending records as one chunk, if there are any. Call it
 * periodically (every 200 ms or so) so that a recorder killed without
 * warning loses at most that much.
 */
int trace_writer_flush(struct trace_writer *writer);

/*
 * Flushes, writes the closing chunk that says the trace is whole, fsyncs
 * and closes the file and frees the writer, also when it fails. Returns the first error the writer
 * met (its sentence is in 'error' when given), or 0.
 */
int trace_writer_close(struct trace_writer *writer, char *error, size_t error_size);

/*
 * Closes and frees the writer, removing the file when this writer created it
 * (or the temporary file when it was to replace one): a recording that never
 * started leaves nothing behind.
 */
void trace_writer_discard(struct trace_writer *writer);

/* The sentence describing the writer's error, or "" when there was none. */
const char *trace_writer_error(const struct trace_writer *writer);

void trace_writer_get_stats(const struct trace_writer *writer, struct trace_writer_stats *stats);

#endif /* TCHECK_TRACE_WRITER_H */
