/* SPDX-License-Identifier: MIT */
/*
 * The trace reader's state, shared by its parts and by nothing else:
 * trace_reader.c (chunks and records), trace_reader_header.c (the file
 * header) and trace_reader_damage.c (what is cut, unclosed or damaged).
 */
#ifndef TCHECK_TRACE_READER_STATE_H
#define TCHECK_TRACE_READER_STATE_H

#include <stdint.h>
#include <zlib.h>

#include "trace/trace_chunk_codec.h"
#include "trace/trace_input.h"
#include "trace/trace_reader.h"

#define MESSAGE_SIZE 640
/* What a string defined in a chunk that was lost to damage reads as. */
#define LOST_STRING "(lost)"
/* The fewest bytes a string definition takes: a record header, an id and one byte. */
#define SMALLEST_STRING_DEFINITION \
	(TRACE_FORMAT_RECORD_HEADER_SIZE + TRACE_FORMAT_STRING_BYTES_AT + 1)

struct trace_reader {
	struct trace_input input;
	char *path;
	int seekable; /* a regular file: its size is known and it can be re-read */
	uint64_t first_chunk_offset;
	uint64_t offset; /* of the next byte to read */
	struct trace_header header;

	/* The chunk as stored: its header and the payload bytes read of it. */
	unsigned char chunk_header[TRACE_FORMAT_CHUNK_HEADER_SIZE];
	size_t chunk_header_read;
	int chunk_header_whole; /* its checksum held: its counts and times can be believed */
	unsigned char *payload;
	size_t payload_capacity;
	size_t payload_read;
	struct trace_chunk_codec *codec;

	/* The records of the chunk being handed out (the payload, or what it decompressed to). */
	const unsigned char *records;
	size_t payload_length;
	size_t position;
	int in_chunk;
	uint32_t chunk_index; /* of the chunk being read, or of the next one */
	uint64_t chunk_offset;
	uint32_t chunk_record_count;
	uint32_t chunk_records_read;

	/* strings[id - 1]: each its own allocation, so pointers survive growth. */
	char **strings;
	uint32_t string_count;
	size_t string_capacity;
	uint64_t string_bytes;
	uint32_t pass_strings; /* definitions met since the start or the last rewind */

	/* Record times of the whole chunks read, from their headers; 0 when none. */
	uint64_t first_record_ns;
	uint64_t last_record_ns;
	int closed; /* the last chunk read is the closing chunk */

	/* Damage: the failure set by chunk_corrupt() can be read past (resync()). */
	int damage_pending;
	int strings_lost;   /* a skipped chunk may have defined strings later ones use */
	int damage_resumed; /* anything whole came after the first damaged stretch */
	/* When the records of the first damaged stretch were written, 0 where unknown. */
	uint64_t damage_from_ns;
	uint64_t damage_to_ns;
	int damage_span_open; /* its end is the first record time of the next whole chunk */
	int payload_whole;    /* the payload of the chunk read last passed its checksum */

	int finished;
	int failure;
	struct trace_reader_stats stats;
	char error[MESSAGE_SIZE];
	char truncation[MESSAGE_SIZE];
	char note[MESSAGE_SIZE];
	char first_damage[MESSAGE_SIZE];
	char damage[MESSAGE_SIZE + 200];
};

/*
 * Whether a checksum stored in the file matches the one computed. The fuzz
 * targets' build (tests/fuzz/) accepts any, so that mutated traces get past
 * the checksums to the lengths, counts and records behind them.
 */
static inline int trace_checksum_matches(uLong computed, uint32_t stored)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	(void)computed;
	(void)stored;
	return 1;
#else
	return (uint32_t)computed == stored;
#endif
}

/* Records the first error; later calls keep returning it. */
int trace_reader_fail(struct trace_reader *reader, int err, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/* Reads the file header and checks it; 0, or the failure with its sentence. */
int trace_reader_read_file_header(struct trace_reader *reader);

/* A note when the trace was written by a newer tcheck-bpf (trace_reader_note()). */
void trace_reader_update_note(struct trace_reader *reader);

/* The trace ends 'present' bytes into the chunk at chunk_offset; returns 0. */
int trace_reader_end_truncated(struct trace_reader *reader, uint64_t present);

/* The file ends at a chunk boundary: said when a trace that should be closed is not. */
int trace_reader_end(struct trace_reader *reader);

/* Damage in the chunk being read: a failure that trace_reader_resync() reads past. */
int trace_reader_chunk_corrupt(struct trace_reader *reader, const char *problem);

/* What is wrong with a chunk header before its payload is read, "" when nothing. */
void trace_reader_chunk_header_problem(const unsigned char *header, char *problem, size_t size);

/* Adds the chunk's record times to those of the trace. */
void trace_reader_count_chunk_times(struct trace_reader *reader);

/* Reads past the damaged chunk to the next whole one; 0, or a failure it cannot read past. */
int trace_reader_resync(struct trace_reader *reader);

#endif /* TCHECK_TRACE_READER_STATE_H */
