/* SPDX-License-Identifier: MIT */
/*
 * The trace file as one consumer of a recording (record -o): opened when
 * the probes load, every record written, flushed as it goes, renamed into
 * place at the end, or left out when the recording never began. A write
 * that fails stops the recording, never the traced job.
 *
 * With a size limit (--max-size) the recording is cut into pieces, each a
 * whole trace (trace/trace_pieces.h): FILE the newest, FILE.1 the one
 * before. Each new piece opens with the process, communicator and library
 * records seen so far, so a piece read alone still knows its processes.
 */
#ifndef TCHECK_TRACE_FILE_CONSUMER_H
#define TCHECK_TRACE_FILE_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/string_interner.h"
#include "model/record_consumer.h"

struct trace_writer;
struct trace_record;

/* The smallest and largest --max-size: room for a header and a few chunks; a terabyte. */
#define TRACE_FILE_MIN_PIECE_BYTES (16.0 * 1024)
#define TRACE_FILE_MAX_PIECE_BYTES (1024.0 * 1024 * 1024 * 1024)

/* What the pieces a recording dropped held, for its closing lines. */
struct trace_piece_summary {
	uint64_t records;
	uint64_t first_ns, last_ns; /* record times, 0 when none */
};

struct trace_file_consumer {
	const char *path;
	bool replace_existing; /* --force: the path may name a file that exists */
	uint64_t max_size;     /* --max-size: bytes after which a piece ends; 0: one file */
	unsigned max_files;    /* --max-files: pieces kept, FILE included; 0: every one */
	int argc;	       /* the tcheck-bpf command line, for the header */
	char *const *argv;
	struct trace_writer *writer; /* open between start and close */
	bool failed;		     /* a write failed: nothing more is written */
	/* Kept by the consumer while it rotates. */
	unsigned pieces;		    /* numbered pieces (FILE.1 ...) there now */
	unsigned pieces_closed;		    /* pieces ended by the size limit */
	struct trace_piece_summary current; /* the piece being written */
	struct trace_piece_summary *kept;   /* [n]: FILE.n, with --max-files */
	struct trace_piece_summary dropped; /* the pieces removed, together */
	unsigned pieces_dropped;
	int64_t wall_offset_ns; /* CLOCK_REALTIME less CLOCK_MONOTONIC, for the closing lines */
	struct trace_record *context; /* processes, communicators, libraries so far */
	size_t context_count, context_capacity;
	struct string_interner context_strings; /* the context records' strings */
};

/*
 * Whether the recording may write 'file' (its path, --force and limits set):
 * a file there is refused without --force, and with --max-size so is a
 * piece of an earlier recording. 0, or -1 after saying why. Asked before the
 * recording starts, so a refusal is a usage error (exit status 2); the
 * file is opened with the same refusal when the probes load.
 */
int trace_file_consumer_check(const struct trace_file_consumer *file);

/* The consumer that writes 'file' (its path, limits and command line set by the caller). */
struct record_consumer trace_file_consumer(struct trace_file_consumer *file);

#endif /* TCHECK_TRACE_FILE_CONSUMER_H */
