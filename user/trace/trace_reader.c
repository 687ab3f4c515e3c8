// SPDX-License-Identifier: MIT
/*
 * Reads trace files chunk by chunk, checking every length, count, id and
 * checksum; a damaged chunk is skipped to the next whole one and said.
 */
#include "trace/trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "trace/trace_reader_state.h"
#include "trace/trace_record_kinds.h"

void trace_reader_update_note(struct trace_reader *reader)
{
	const struct trace_reader_stats *stats = &reader->stats;

	if (stats->version_minor <= TRACE_FORMAT_VERSION_MINOR && !stats->unknown_records) {
		reader->note[0] = '\0';
		return;
	}
	if (stats->version_minor <= TRACE_FORMAT_VERSION_MINOR)
		/* A format this version knows whole: a kind it lacks is damage, not news. */
		error_format(reader->note, sizeof(reader->note),
			     "%s (trace format %" PRIu32 ".%" PRIu32
			     ", which this tcheck-bpf reads) holds %" PRIu64
			     " record%s of a kind that format does not have: skipped; "
			     "the file may be damaged",
			     reader->path, stats->version_major, stats->version_minor,
			     stats->unknown_records, stats->unknown_records == 1 ? "" : "s");
	else
		error_format(reader->note, sizeof(reader->note),
			     "%s was written by a newer tcheck-bpf (trace format %" PRIu32
			     ".%" PRIu32 ", this one reads %d.%d): %" PRIu64
			     " records of kinds this version does not know were skipped; a "
			     "newer tcheck-bpf shows them",
			     reader->path, stats->version_major, stats->version_minor,
			     TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR,
			     stats->unknown_records);
}

static int open_failed(struct trace_reader *reader, int err, char *error, size_t error_size)
{
	error_format(error, error_size, "%s", reader->error);
	trace_reader_close(reader);
	errno = -err;
	return err;
}

struct trace_reader *trace_reader_open(const char *path, char *error, size_t error_size)
{
	struct trace_reader *reader = calloc(1, sizeof(*reader));
	struct stat status;
	int err;

	if (reader)
		reader->input.fd = -1;
	if (!reader || !(reader->path = strdup(path))) {
		free(reader);
		error_format(error, error_size, "out of memory opening the trace %s", path);
		errno = ENOMEM;
		return NULL;
	}
	/* Devices are no traces (/dev/zero would be read for ever). */
	if (!stat(path, &status) &&
	    (S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode) || S_ISSOCK(status.st_mode))) {
		err = trace_reader_fail(
			reader, -EINVAL,
			"%s is %s, not a trace file: give the file 'tcheck-bpf record' wrote", path,
			S_ISSOCK(status.st_mode) ? "a socket" : "a device");
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	/*
	 * A FIFO is read as a recorder writes into it: opened without waiting,
	 * and when no writer comes within a second the wait is said, not silent.
	 */
	reader->input.fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (reader->input.fd >= 0 && !fstat(reader->input.fd, &status) &&
	    S_ISFIFO(status.st_mode)) {
		struct pollfd writer = { .fd = reader->input.fd, .events = POLLIN };

		if (poll(&writer, 1, 1000) == 0) {
			fprintf(stderr,
				"tcheck-bpf: %s is a FIFO no one writes yet: waiting for a "
				"recorder "
				"to write a trace into it (Ctrl-C stops)\n",
				path);
			poll(&writer, 1, -1);
		}
	}
	if (reader->input.fd >= 0)
		fcntl(reader->input.fd, F_SETFL, fcntl(reader->input.fd, F_GETFL) & ~O_NONBLOCK);
	if (reader->input.fd < 0) {
		err = trace_reader_fail(reader, -errno, "could not open the trace %s: %s", path,
					strerror(errno));
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	if (fstat(reader->input.fd, &status)) {
		err = trace_reader_fail(reader, -errno, "could not read the trace %s: %s", path,
					strerror(errno));
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	if (S_ISDIR(status.st_mode)) {
		err = trace_reader_fail(reader, -EISDIR,
					"%s is a directory: give the trace file inside it", path);
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	reader->seekable = S_ISREG(status.st_mode);
	err = trace_reader_read_file_header(reader);
	if (err) {
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	trace_reader_update_note(reader);
	return reader;
}

int trace_paths_distinct(char *const *paths, int count, char *error, size_t error_size)
{
	struct stat first, second;

	for (int i = 0; i < count; i++) {
		if (stat(paths[i], &first))
			continue;
		for (int j = i + 1; j < count; j++)
			if (!stat(paths[j], &second) && first.st_dev == second.st_dev &&
			    first.st_ino == second.st_ino) {
				if (strcmp(paths[i], paths[j]) == 0)
					error_format(error, error_size,
						     "%s is given twice: give each trace once "
						     "(its ranks would count twice)",
						     paths[i]);
				else
					error_format(error, error_size,
						     "%s and %s are the same trace: give each "
						     "trace once (its ranks would count twice)",
						     paths[i], paths[j]);
				return -EINVAL;
			}
	}
	return 0;
}

const struct trace_header *trace_reader_header(const struct trace_reader *reader)
{
	return &reader->header;
}

/* Reads the payload of the chunk whose header was read; 1, 0 when cut short, or -errno. */
static int read_payload(struct trace_reader *reader, uint32_t payload_length)
{
	struct stat status;
	ssize_t got;

	/* Do not allocate for a payload the file is too short to hold. */
	if (reader->seekable && reader->input.returned_length == 0 &&
	    fstat(reader->input.fd, &status) == 0 &&
	    (uint64_t)status.st_size <
		    reader->offset + TRACE_FORMAT_CHUNK_HEADER_SIZE + payload_length) {
		trace_reader_end_truncated(reader,
					   (uint64_t)status.st_size > reader->offset
						   ? (uint64_t)status.st_size - reader->offset
						   : 0);
		return 0;
	}
	if (payload_length > reader->payload_capacity) {
		unsigned char *grown = realloc(reader->payload, payload_length);

		if (!grown)
			return trace_reader_fail(reader, -ENOMEM,
						 "out of memory reading chunk %" PRIu32
						 " of %s (%" PRIu32 " bytes)",
						 reader->chunk_index, reader->path, payload_length);
		reader->payload = grown;
		reader->payload_capacity = payload_length;
	}
	got = trace_input_read(&reader->input, reader->payload, payload_length);
	if (got < 0)
		return trace_reader_fail(reader, (int)got, "could not read the trace %s: %s",
					 reader->path, strerror((int)-got));
	reader->payload_read = (size_t)got;
	if ((size_t)got < payload_length) {
		trace_reader_end_truncated(reader, TRACE_FORMAT_CHUNK_HEADER_SIZE + (uint64_t)got);
		return 0;
	}
	return 1;
}

/* The closing chunk: the recorder closed the trace here. */
static int read_closing(struct trace_reader *reader, uint32_t payload_length)
{
	if (payload_length < TRACE_FORMAT_CLOSING_SIZE)
		return trace_reader_chunk_corrupt(reader,
						  "is a closing chunk too short for its fields");
	reader->closed = 1;
	reader->chunk_index++;
	return 0;
}

/* Points reader->records at the chunk's records, decompressing them when stored so. */
static int unpack_records(struct trace_reader *reader, uint32_t payload_length, uint32_t flags)
{
	char problem[200];
	size_t length;

	if (!(flags & TRACE_FORMAT_CHUNK_ZSTD)) {
		reader->records = reader->payload;
		reader->payload_length = payload_length;
		return 0;
	}
	if (!reader->codec && !(reader->codec = trace_chunk_codec_new()))
		return trace_reader_fail(reader, -ENOMEM, "out of memory reading %s", reader->path);
	length = trace_chunk_decompress(reader->codec, reader->payload, payload_length,
					TRACE_FORMAT_MAX_CHUNK_PAYLOAD, &reader->records, problem,
					sizeof(problem));
	if (!length)
		return trace_reader_chunk_corrupt(reader, problem);
	reader->payload_length = length;
	return 0;
}

/* Returns 1 when a chunk of records was loaded, 0 when there is none (yet), or a negative errno. */
static int load_chunk(struct trace_reader *reader)
{
	unsigned char *header = reader->chunk_header;
	uint32_t payload_length, record_count, flags;
	char problem[160];
	ssize_t got;
	int err;

	reader->chunk_offset = reader->offset;
	reader->chunk_header_whole = 0;
	reader->payload_whole = 0;
	reader->payload_read = 0;
	got = trace_input_read(&reader->input, header, TRACE_FORMAT_CHUNK_HEADER_SIZE);
	reader->chunk_header_read = got > 0 ? (size_t)got : 0;
	if (got < 0)
		return trace_reader_fail(reader, (int)got, "could not read the trace %s: %s",
					 reader->path, strerror((int)-got));
	if (got == 0)
		return trace_reader_end(reader);
	if ((size_t)got < TRACE_FORMAT_CHUNK_HEADER_SIZE)
		return trace_reader_end_truncated(reader, (uint64_t)got);

	trace_reader_chunk_header_problem(header, problem, sizeof(problem));
	if (problem[0])
		return trace_reader_chunk_corrupt(reader, problem);
	reader->chunk_header_whole = 1;
	flags = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_FLAGS_AT);
	if (flags & ~TRACE_FORMAT_CHUNK_KNOWN_FLAGS)
		return trace_reader_fail(
			reader, -EPROTONOSUPPORT,
			"%s: chunk %" PRIu32 " at byte offset %" PRIu64
			" uses features (chunk flags 0x%" PRIx32
			") this tcheck-bpf does not know: open the trace with a newer "
			"tcheck-bpf",
			reader->path, reader->chunk_index, reader->chunk_offset, flags);
	payload_length = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT);
	record_count = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT);
	err = read_payload(reader, payload_length);
	if (err <= 0)
		return err;
	if (!trace_checksum_matches(
		    crc32(0L, reader->payload, payload_length),
		    trace_format_get_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT)))
		return trace_reader_chunk_corrupt(
			reader, "has damaged records (their checksum does not match)");

	reader->payload_whole = 1;
	reader->offset = reader->input.offset;
	reader->stats.bytes = reader->offset;
	if (flags & TRACE_FORMAT_CHUNK_CLOSING)
		return read_closing(reader, payload_length);
	err = unpack_records(reader, payload_length, flags);
	if (err)
		return err;
	reader->closed = 0;
	if (reader->damage_span_open) {
		reader->damage_to_ns =
			trace_format_get_u64(header + TRACE_FORMAT_CHUNK_FIRST_NS_AT);
		reader->damage_span_open = 0;
	}
	reader->stats.chunks++;
	reader->position = 0;
	reader->chunk_record_count = record_count;
	reader->chunk_records_read = 0;
	reader->in_chunk = 1;
	return 1;
}

static int finish_chunk(struct trace_reader *reader)
{
	char problem[160];

	if (reader->chunk_records_read != reader->chunk_record_count) {
		snprintf(problem, sizeof(problem),
			 "holds %" PRIu32 " records but its header says %" PRIu32,
			 reader->chunk_records_read, reader->chunk_record_count);
		return trace_reader_chunk_corrupt(reader, problem);
	}
	reader->in_chunk = 0;
	trace_reader_count_chunk_times(reader);
	reader->chunk_index++;
	trace_reader_update_note(reader);
	return 0;
}

/* Says where the damaged record sits in its chunk; returns the failure. */
static int record_corrupt(struct trace_reader *reader, size_t record_at, const char *problem)
{
	char where[256];

	snprintf(where, sizeof(where), "record %" PRIu32 " of the chunk (payload offset %zu) %s",
		 reader->chunk_records_read - 1, record_at, problem);
	return trace_reader_chunk_corrupt(reader, where);
}

/* Room for one more string id; 0, or the failure. */
static int reserve_string(struct trace_reader *reader)
{
	if (growable_array_room_for_one((void **)&reader->strings, reader->string_count,
					&reader->string_capacity, sizeof(*reader->strings)))
		return trace_reader_fail(reader, -ENOMEM, "out of memory reading the strings of %s",
					 reader->path);
	return 0;
}

/*
 * After a skipped chunk, ids it defined come before the next definition:
 * they read as LOST_STRING. No more of them than the skipped bytes held.
 */
static int skip_lost_strings(struct trace_reader *reader, uint32_t id, size_t record_at)
{
	uint32_t expected = reader->pass_strings + 1;
	char problem[120];

	if (!reader->strings_lost || id < expected ||
	    id - expected > reader->stats.skipped_bytes / SMALLEST_STRING_DEFINITION + 1) {
		snprintf(problem, sizeof(problem),
			 "defines string id %" PRIu32 " where id %" PRIu32 " comes next", id,
			 expected);
		return record_corrupt(reader, record_at, problem);
	}
	while (reader->string_count < id - 1) {
		if (reserve_string(reader))
			return reader->failure;
		reader->strings[reader->string_count++] = NULL;
	}
	reader->pass_strings = id - 1;
	return 0;
}

static int define_string(struct trace_reader *reader, const unsigned char *body, uint32_t length,
			 size_t record_at)
{
	uint32_t id, text_length;
	char *copy;
	int err;

	if (length < TRACE_FORMAT_STRING_BYTES_AT)
		return record_corrupt(reader, record_at,
				      "is a string definition too short for its id");
	id = trace_format_get_u32(body + TRACE_FORMAT_STRING_ID_AT);
	if (id != reader->pass_strings + 1) {
		err = skip_lost_strings(reader, id, record_at);
		if (err)
			return err;
	}
	reader->pass_strings++;
	reader->stats.strings++;
	/* A second pass meets the same definitions again: they are already known. */
	if (id <= reader->string_count)
		return 0;

	text_length = length - TRACE_FORMAT_STRING_BYTES_AT;
	if (reader->string_bytes + text_length + 1 > TRACE_FORMAT_MAX_STRING_TABLE)
		return trace_reader_fail(
			reader, -EFBIG,
			"%s defines more than %llu bytes of distinct strings, more than "
			"this reader keeps in memory: the file is corrupt or not a trace "
			"tcheck-bpf wrote",
			reader->path, (unsigned long long)TRACE_FORMAT_MAX_STRING_TABLE);
	if (reserve_string(reader))
		return reader->failure;
	copy = malloc((size_t)text_length + 1);
	if (!copy)
		return trace_reader_fail(reader, -ENOMEM, "out of memory reading the strings of %s",
					 reader->path);
	memcpy(copy, body + TRACE_FORMAT_STRING_BYTES_AT, text_length);
	copy[text_length] = '\0';
	reader->strings[reader->string_count++] = copy;
	reader->string_bytes += (uint64_t)text_length + 1;
	return 0;
}

/* Decodes a record of a known kind against the strings defined so far; 0, or the failure. */
static int decode_record(struct trace_reader *reader, const struct trace_record_kind_format *format,
			 const unsigned char *body, uint32_t length, size_t record_at,
			 struct trace_record *out)
{
	struct trace_record_decoding decoding = {
		.strings = reader->strings,
		.defined_strings = reader->pass_strings,
		.strings_lost = reader->strings_lost != 0,
		.lost_text = LOST_STRING,
	};

	memset(out, 0, sizeof(*out));
	out->kind = format->kind;
	if (format->decode(&decoding, body, length, out))
		return record_corrupt(reader, record_at, decoding.problem);
	return 0;
}

/* The next record of the loaded chunk: 1 handed out, 0 for a string definition or an unknown kind.
 */
static int next_in_chunk(struct trace_reader *reader, struct trace_record *out)
{
	size_t record_at = reader->position, remaining = reader->payload_length - reader->position;
	const unsigned char *record = reader->records + reader->position, *body;
	const struct trace_record_kind_format *format;
	char problem[120];
	uint32_t length;
	unsigned kind;
	int err;

	reader->chunk_records_read++;
	if (remaining < TRACE_FORMAT_RECORD_HEADER_SIZE)
		return record_corrupt(reader, record_at, "is cut off by the end of the chunk");
	kind = trace_format_get_u16(record + TRACE_FORMAT_RECORD_KIND_AT);
	length = trace_format_get_u32(record + TRACE_FORMAT_RECORD_LENGTH_AT);
	if (length > remaining - TRACE_FORMAT_RECORD_HEADER_SIZE) {
		snprintf(problem, sizeof(problem),
			 "claims %" PRIu32 " bytes, more than the %zu left in the chunk", length,
			 remaining - TRACE_FORMAT_RECORD_HEADER_SIZE);
		return record_corrupt(reader, record_at, problem);
	}
	body = record + TRACE_FORMAT_RECORD_HEADER_SIZE;
	reader->position += TRACE_FORMAT_RECORD_HEADER_SIZE + (size_t)length;

	if (kind == TRACE_FORMAT_KIND_STRING)
		return define_string(reader, body, length, record_at);
	format = trace_record_kind_format(kind);
	if (!format) {
		/* A kind from a newer writer: its length lets us step over it. */
		reader->stats.unknown_records++;
		return 0;
	}
	if (length < format->minimum_body) {
		snprintf(problem, sizeof(problem),
			 "is a %s record of %" PRIu32 " bytes, shorter than the %" PRIu32
			 " it needs",
			 format->name, length, format->minimum_body);
		return record_corrupt(reader, record_at, problem);
	}
	err = decode_record(reader, format, body, length, record_at, out);
	if (err)
		return err;
	reader->stats.records++;
	reader->stats.records_by_kind[kind]++;
	if (kind == TRACE_RECORD_STATS)
		reader->stats.recorded_counters = out->stats;
	return 1;
}

int trace_reader_next(struct trace_reader *reader, struct trace_record *out)
{
	for (;;) {
		int err;

		if (reader->failure && reader->damage_pending) {
			err = trace_reader_resync(reader);
			if (err)
				return err;
			continue;
		}
		if (reader->failure)
			return reader->failure;
		if (reader->finished)
			return 0;
		if (!reader->in_chunk)
			err = load_chunk(reader);
		else if (reader->position == reader->payload_length)
			err = finish_chunk(reader);
		else if ((err = next_in_chunk(reader, out)) == 1)
			return 1;
		if (err < 0 && !reader->damage_pending)
			return err;
	}
}

int trace_reader_rewind(struct trace_reader *reader)
{
	uint32_t major = reader->stats.version_major, minor = reader->stats.version_minor;
	int err;

	if (reader->failure)
		return reader->failure;
	if (!reader->seekable)
		return -ESPIPE;
	err = trace_input_seek(&reader->input, reader->first_chunk_offset);
	if (err)
		return trace_reader_fail(reader, err,
					 "could not go back to the start of the trace %s: %s",
					 reader->path, strerror(-err));
	reader->offset = reader->first_chunk_offset;
	reader->in_chunk = 0;
	reader->chunk_index = 0;
	reader->pass_strings = 0;
	reader->finished = 0;
	reader->closed = 0;
	reader->strings_lost = 0;
	reader->first_record_ns = 0;
	reader->last_record_ns = 0;
	reader->truncation[0] = '\0';
	memset(&reader->stats, 0, sizeof(reader->stats));
	reader->stats.version_major = major;
	reader->stats.version_minor = minor;
	reader->stats.bytes = reader->offset;
	trace_reader_update_note(reader);
	return 0;
}

const char *trace_reader_error(const struct trace_reader *reader)
{
	return reader->error;
}

const char *trace_reader_note(const struct trace_reader *reader)
{
	return reader->note[0] ? reader->note : NULL;
}

const struct trace_reader_stats *trace_reader_stats(const struct trace_reader *reader)
{
	return &reader->stats;
}

void trace_reader_close(struct trace_reader *reader)
{
	if (!reader)
		return;
	if (reader->input.fd >= 0)
		close(reader->input.fd);
	trace_input_free(&reader->input);
	trace_chunk_codec_free(reader->codec);
	for (uint32_t i = 0; i < reader->string_count; i++)
		free(reader->strings[i]);
	free(reader->strings);
	free(reader->payload);
	free(reader->path);
	free(reader);
}
