/* SPDX-License-Identifier: MIT */
/*
 * Reads trace files (docs/trace-format.md) one chunk at a time, trusting
 * nothing in them: memory stays bounded by the largest chunk plus the
 * strings the trace defines, and damage is reported, never crashed on.
 */
#ifndef TCHECK_TRACE_READER_H
#define TCHECK_TRACE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"
#include "trace/trace_format.h"

struct trace_reader;

struct trace_reader_stats {
	/* Records handed out, indexed by enum trace_record_kind. */
	uint64_t records_by_kind[TRACE_FORMAT_LAST_KNOWN_KIND + 1];
	uint64_t records;	  /* all records handed out */
	uint64_t strings;	  /* string definitions read */
	uint64_t unknown_records; /* records of kinds this version skips */
	uint64_t chunks;	  /* complete chunks read */
	uint64_t bytes;		  /* bytes of the file consumed, header included */
	uint32_t version_major;
	uint32_t version_minor;
	int truncated; /* the last chunk was cut short */
	int unclosed;  /* format 1.6 on: the trace ends without its closing chunk */
	/* Damaged stretches read past: their bytes, and the records lost in them. */
	uint64_t damaged_chunks;
	uint64_t skipped_bytes;
	uint64_t skipped_records;
	int skipped_records_unknown; /* a damaged chunk header hid how many records it held */
	/* The last stats record read: the recorder's cumulative loss counters (zero when none). */
	struct trace_stats recorded_counters;
};

/*
 * Opens a trace and checks its header. Returns NULL with 'error' filled
 * (and errno set) when the file cannot be read or is not a usable trace.
 */
struct trace_reader *trace_reader_open(const char *path, char *error, size_t error_size);

/* 0, or -EINVAL with a sentence when two of the paths name the same file (a trace given twice). */
int trace_paths_distinct(char *const *paths, int count, char *error, size_t error_size);

/* The header as the file holds it; format_version is the file's major version. */
const struct trace_header *trace_reader_header(const struct trace_reader *reader);

/*
 * Reads the next record into 'out'. Returns 1 for a record, 0 at the end
 * of the trace (also when the last chunk was cut short: see
 * trace_reader_truncated()), or a negative errno when the trace is
 * unreadable, with trace_reader_error() explaining where. A damaged chunk
 * is skipped to the next whole one (trace_reader_damage() says what was
 * lost) and reading goes on.
 * After an error every later call returns the same error. Strings in the
 * record stay valid until trace_reader_close().
 */
int trace_reader_next(struct trace_reader *reader, struct trace_record *out);

/*
 * Goes back to the first record so a second pass can read the trace again
 * (strings already read stay valid). Returns 0, or -ESPIPE when the trace
 * is not a regular file, or another negative errno.
 */
int trace_reader_rewind(struct trace_reader *reader);

/* The sentence describing the last error, or "" when there was none. */
const char *trace_reader_error(const struct trace_reader *reader);

/*
 * A warning when the trace ended inside its last chunk (the recorder was
 * killed or the disk filled), or, from format 1.6 on, without the closing
 * chunk its recorder writes when it closes the trace: when its last record
 * was written, and that what came after may be lost. NULL when the trace
 * ended cleanly or has not ended yet.
 */
const char *trace_reader_truncated(const struct trace_reader *reader);

/*
 * A warning when damaged chunks were skipped: the first damage, where it
 * is, and the bytes and records lost in all. NULL when none was.
 */
const char *trace_reader_damage(struct trace_reader *reader);

/*
 * A note when the trace was written by a newer tcheck-bpf whose records
 * this version partly skips, or NULL. Complete only at the end.
 */
const char *trace_reader_note(const struct trace_reader *reader);

const struct trace_reader_stats *trace_reader_stats(const struct trace_reader *reader);

void trace_reader_close(struct trace_reader *reader);

#endif /* TCHECK_TRACE_READER_H */
