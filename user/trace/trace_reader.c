// SPDX-License-Identifier: MIT
/* Reads trace files chunk by chunk, checking every length, count, id and checksum. */
#include "trace/trace_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "trace/trace_record_decode.h"

#define MESSAGE_SIZE 640
#define FIRST_STRING_CAPACITY 256

struct trace_reader {
	int fd;
	char *path;
	int seekable; /* a regular file: its size is known and it can be re-read */
	uint64_t first_chunk_offset;
	uint64_t offset; /* of the next byte to read */
	struct trace_header header;

	/* The chunk whose records are being handed out. */
	unsigned char *payload;
	size_t payload_capacity;
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

	int finished;
	int failure;
	struct trace_reader_stats stats;
	char error[MESSAGE_SIZE];
	char truncation[MESSAGE_SIZE];
	char note[MESSAGE_SIZE];
};

static void format_message(char *buffer, size_t size, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

static void format_message(char *buffer, size_t size, const char *format, ...)
{
	va_list arguments;

	if (!buffer || !size)
		return;
	va_start(arguments, format);
	vsnprintf(buffer, size, format, arguments);
	va_end(arguments);
}

/* Records the first error; later calls keep returning it. */
static int reader_fail(struct trace_reader *reader, int err, const char *format, ...)
	__attribute__((format(printf, 3, 4)));

static int reader_fail(struct trace_reader *reader, int err, const char *format, ...)
{
	va_list arguments;

	va_start(arguments, format);
	vsnprintf(reader->error, sizeof(reader->error), format, arguments);
	va_end(arguments);
	reader->failure = err;
	return err;
}

/* Reads up to 'length' bytes; fewer only at the end of the file. */
static ssize_t read_full(int fd, unsigned char *buffer, size_t length)
{
	size_t done = 0;

	while (done < length) {
		ssize_t got = read(fd, buffer + done, length - done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		done += (size_t)got;
	}
	return (ssize_t)done;
}

/* Copies a length-prefixed header string; returns the bytes it took, or 0 if it overruns. */
static size_t parse_header_string(const unsigned char *at, size_t available, char *out,
				  size_t out_size)
{
	uint32_t length;
	size_t kept;

	if (available < 4)
		return 0;
	length = trace_format_get_u32(at);
	if (length > available - 4)
		return 0;
	/* A newer writer may allow longer strings than this struct holds: keep the start. */
	kept = length < out_size - 1 ? length : out_size - 1;
	memcpy(out, at + 4, kept);
	out[kept] = '\0';
	return 4 + (size_t)length;
}

static int parse_header_body(struct trace_reader *reader, const unsigned char *body, size_t length)
{
	struct trace_header *header = &reader->header;
	char *const fields[] = { header->hostname, header->boot_id, header->command_line };
	const size_t sizes[] = { sizeof(header->hostname), sizeof(header->boot_id),
				 sizeof(header->command_line) };
	size_t position = TRACE_FORMAT_HEADER_STRINGS_AT;

	header->anchor_monotonic_ns = trace_format_get_u64(body + TRACE_FORMAT_HEADER_MONOTONIC_AT);
	header->anchor_realtime_ns = trace_format_get_u64(body + TRACE_FORMAT_HEADER_REALTIME_AT);
	for (int i = 0; i < 3; i++) {
		size_t used = parse_header_string(body + position, length - position, fields[i],
						  sizes[i]);

		if (!used)
			return -EBADMSG;
		position += used;
	}
	return 0;
}

static void update_note(struct trace_reader *reader)
{
	const struct trace_reader_stats *stats = &reader->stats;

	if (stats->version_minor <= TRACE_FORMAT_VERSION_MINOR && !stats->unknown_records) {
		reader->note[0] = '\0';
		return;
	}
	if (stats->version_minor <= TRACE_FORMAT_VERSION_MINOR)
		/* A format this version knows whole: a kind it lacks is damage, not news. */
		format_message(reader->note, sizeof(reader->note),
			       "%s (trace format %" PRIu32 ".%" PRIu32
			       ", which this tcheck-bpf reads) holds %" PRIu64
			       " record%s of a kind that format does not have: skipped; "
			       "the file may be damaged",
			       reader->path, stats->version_major, stats->version_minor,
			       stats->unknown_records, stats->unknown_records == 1 ? "" : "s");
	else
		format_message(reader->note, sizeof(reader->note),
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
	format_message(error, error_size, "%s", reader->error);
	trace_reader_close(reader);
	errno = -err;
	return err;
}

/* The file ends inside its header: the recorder wrote no record. */
static int header_cut_short(struct trace_reader *reader)
{
	return reader_fail(reader, -EBADMSG,
			   "%s ends inside its file header: the recorder stopped before it wrote "
			   "any record, so there is nothing to read; record again",
			   reader->path);
}

/* The fixed part of the file header, which must start with the trace signature. */
static int fixed_header_read(struct trace_reader *reader,
			     unsigned char fixed[TRACE_FORMAT_FILE_FIXED_SIZE])
{
	const char *path = reader->path;
	ssize_t got;

	got = read_full(reader->fd, fixed, TRACE_FORMAT_FILE_FIXED_SIZE);
	if (got < 0)
		return reader_fail(reader, (int)got, "could not read the trace %s: %s", path,
				   strerror((int)-got));
	if (got == 0)
		return reader_fail(reader, -EBADMSG,
				   "%s is empty: the recorder wrote nothing to it, so there is no "
				   "trace to read",
				   path);
	if (memcmp(fixed, TRACE_FORMAT_FILE_MAGIC,
		   (size_t)got < TRACE_FORMAT_FILE_MAGIC_SIZE ? (size_t)got
							      : TRACE_FORMAT_FILE_MAGIC_SIZE) != 0)
		return reader_fail(reader, -EBADMSG,
				   "%s is not a tcheck-bpf trace (it does not start with the trace "
				   "signature); give the file that 'tcheck-bpf record' wrote",
				   path);
	if ((size_t)got < TRACE_FORMAT_FILE_FIXED_SIZE)
		return header_cut_short(reader);
	return 0;
}

/* The format version: a newer major may change everything after it, so it is checked first. */
static int version_check(struct trace_reader *reader,
			 const unsigned char fixed[TRACE_FORMAT_FILE_FIXED_SIZE])
{
	uint32_t major = trace_format_get_u32(fixed + TRACE_FORMAT_FILE_MAJOR_AT);

	reader->stats.version_major = major;
	reader->stats.version_minor = trace_format_get_u32(fixed + TRACE_FORMAT_FILE_MINOR_AT);
	reader->header.format_version = major;
	if (major > TRACE_FORMAT_VERSION_MAJOR)
		return reader_fail(reader, -EPROTONOSUPPORT,
				   "%s uses trace format version %" PRIu32 ".%" PRIu32
				   ", newer than version %d that this tcheck-bpf reads: open it "
				   "with a newer tcheck-bpf",
				   reader->path, major, reader->stats.version_minor,
				   TRACE_FORMAT_VERSION_MAJOR);
	if (major == 0)
		return reader_fail(reader, -EBADMSG,
				   "%s claims trace format version 0, which never existed: the "
				   "file is corrupt",
				   reader->path);
	return 0;
}

/*
 * Whether a checksum stored in the file matches the one computed. The fuzz
 * targets' build (tests/fuzz/) accepts any, so that mutated traces get past
 * the checksums to the lengths, counts and records behind them.
 */
static int checksum_matches(uLong computed, uint32_t stored)
{
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
	(void)computed;
	(void)stored;
	return 1;
#else
	return (uint32_t)computed == stored;
#endif
}

/* The header body read: its checksum, which covers the fixed part too, then its fields. */
static int header_body_parse(struct trace_reader *reader,
			     const unsigned char fixed[TRACE_FORMAT_FILE_FIXED_SIZE],
			     const unsigned char *body, uint32_t body_length)
{
	uLong crc;
	int err;

	crc = crc32(0L, fixed, TRACE_FORMAT_FILE_CRC_AT);
	crc = crc32(crc, body, body_length);
	if (!checksum_matches(crc, trace_format_get_u32(fixed + TRACE_FORMAT_FILE_CRC_AT)))
		return reader_fail(
			reader, -EBADMSG,
			"%s has a damaged file header (its checksum does not match): the "
			"file is corrupt",
			reader->path);
	err = parse_header_body(reader, body, body_length);
	if (err)
		return reader_fail(reader, err,
				   "%s has a file header whose strings overrun it: the file is "
				   "corrupt",
				   reader->path);
	return 0;
}

/* The variable part of the file header, of the length the fixed part gives. */
static int header_body_read(struct trace_reader *reader,
			    const unsigned char fixed[TRACE_FORMAT_FILE_FIXED_SIZE],
			    uint32_t body_length)
{
	const char *path = reader->path;
	unsigned char *body;
	ssize_t got;
	int err;

	if (body_length < TRACE_FORMAT_HEADER_MIN_BODY ||
	    body_length > TRACE_FORMAT_MAX_HEADER_BODY)
		return reader_fail(reader, -EBADMSG,
				   "%s has a file header of %" PRIu32
				   " bytes, outside the %d to %u a trace header has: the file is "
				   "corrupt",
				   path, body_length, TRACE_FORMAT_HEADER_MIN_BODY,
				   TRACE_FORMAT_MAX_HEADER_BODY);
	body = malloc(body_length);
	if (!body)
		return reader_fail(reader, -ENOMEM, "out of memory reading the header of %s", path);
	got = read_full(reader->fd, body, body_length);
	if (got < 0)
		err = reader_fail(reader, (int)got, "could not read the trace %s: %s", path,
				  strerror((int)-got));
	else if ((size_t)got < body_length)
		err = header_cut_short(reader);
	else
		err = header_body_parse(reader, fixed, body, body_length);
	free(body);
	return err;
}

static int read_file_header(struct trace_reader *reader)
{
	unsigned char fixed[TRACE_FORMAT_FILE_FIXED_SIZE];
	uint32_t body_length;
	int err;

	err = fixed_header_read(reader, fixed);
	if (!err)
		err = version_check(reader, fixed);
	if (err)
		return err;
	body_length = trace_format_get_u32(fixed + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	err = header_body_read(reader, fixed, body_length);
	if (err)
		return err;
	reader->first_chunk_offset = TRACE_FORMAT_FILE_FIXED_SIZE + (uint64_t)body_length;
	reader->offset = reader->first_chunk_offset;
	reader->stats.bytes = reader->offset;
	return 0;
}

struct trace_reader *trace_reader_open(const char *path, char *error, size_t error_size)
{
	struct trace_reader *reader = calloc(1, sizeof(*reader));
	struct stat status;
	int err;

	if (!reader || !(reader->path = strdup(path))) {
		free(reader);
		format_message(error, error_size, "out of memory opening the trace %s", path);
		errno = ENOMEM;
		return NULL;
	}
	/* Devices are no traces (/dev/zero would be read for ever). */
	if (!stat(path, &status) &&
	    (S_ISCHR(status.st_mode) || S_ISBLK(status.st_mode) || S_ISSOCK(status.st_mode))) {
		err = reader_fail(
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
	reader->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (reader->fd >= 0 && !fstat(reader->fd, &status) && S_ISFIFO(status.st_mode)) {
		struct pollfd writer = { .fd = reader->fd, .events = POLLIN };

		if (poll(&writer, 1, 1000) == 0) {
			fprintf(stderr,
				"tcheck-bpf: %s is a FIFO no one writes yet: waiting for a "
				"recorder "
				"to write a trace into it (Ctrl-C stops)\n",
				path);
			poll(&writer, 1, -1);
		}
	}
	if (reader->fd >= 0)
		fcntl(reader->fd, F_SETFL, fcntl(reader->fd, F_GETFL) & ~O_NONBLOCK);
	if (reader->fd < 0) {
		err = reader_fail(reader, -errno, "could not open the trace %s: %s", path,
				  strerror(errno));
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	if (fstat(reader->fd, &status)) {
		err = reader_fail(reader, -errno, "could not read the trace %s: %s", path,
				  strerror(errno));
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	if (S_ISDIR(status.st_mode)) {
		err = reader_fail(reader, -EISDIR,
				  "%s is a directory: give the trace file inside it", path);
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	reader->seekable = S_ISREG(status.st_mode);
	err = read_file_header(reader);
	if (err) {
		open_failed(reader, err, error, error_size);
		return NULL;
	}
	update_note(reader);
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
					format_message(error, error_size,
						       "%s is given twice: give each trace once "
						       "(its ranks would count twice)",
						       paths[i]);
				else
					format_message(error, error_size,
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

/* The trace ends inside the chunk at reader->chunk_offset: what a killed recorder leaves. */
static int end_truncated(struct trace_reader *reader, uint64_t present)
{
	format_message(reader->truncation, sizeof(reader->truncation),
		       "%s ends %" PRIu64 " bytes into chunk %" PRIu32 " (byte offset %" PRIu64
		       "), before that chunk is complete: the recorder stopped without closing "
		       "the trace (killed, or out of disk space); the %" PRIu64
		       " records of the %" PRIu64 " complete chunks before it were all read",
		       reader->path, present, reader->chunk_index, reader->chunk_offset,
		       reader->stats.records, reader->stats.chunks);
	reader->stats.truncated = 1;
	reader->stats.bytes += present;
	reader->finished = 1;
	return 0;
}

static int chunk_corrupt(struct trace_reader *reader, const char *problem)
{
	return reader_fail(reader, -EBADMSG,
			   "%s: chunk %" PRIu32 " at byte offset %" PRIu64
			   " %s: the file is corrupt from there on (the records before it were "
			   "read)",
			   reader->path, reader->chunk_index, reader->chunk_offset, problem);
}

/* Returns 1 when a chunk was loaded, 0 at the end of the trace, or a negative errno. */
static int load_chunk(struct trace_reader *reader)
{
	unsigned char header[TRACE_FORMAT_CHUNK_HEADER_SIZE];
	uint32_t payload_length, record_count, flags;
	char problem[160];
	struct stat status;
	ssize_t got;

	reader->chunk_offset = reader->offset;
	got = read_full(reader->fd, header, sizeof(header));
	if (got < 0)
		return reader_fail(reader, (int)got, "could not read the trace %s: %s",
				   reader->path, strerror((int)-got));
	if (got == 0) {
		reader->finished = 1;
		return 0;
	}
	if ((size_t)got < sizeof(header))
		return end_truncated(reader, (uint64_t)got);

	if (memcmp(header + TRACE_FORMAT_CHUNK_MAGIC_AT, TRACE_FORMAT_CHUNK_MAGIC,
		   TRACE_FORMAT_CHUNK_MAGIC_SIZE) != 0)
		return chunk_corrupt(reader, "does not start with the chunk signature");
	if (!checksum_matches(crc32(0L, header, TRACE_FORMAT_CHUNK_HEADER_CRC_AT),
			      trace_format_get_u32(header + TRACE_FORMAT_CHUNK_HEADER_CRC_AT)))
		return chunk_corrupt(reader, "has a damaged header (its checksum does not match)");
	flags = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_FLAGS_AT);
	if (flags & ~TRACE_FORMAT_CHUNK_KNOWN_FLAGS)
		return reader_fail(reader, -EPROTONOSUPPORT,
				   "%s: chunk %" PRIu32 " at byte offset %" PRIu64
				   " uses features (chunk flags 0x%" PRIx32
				   ") this tcheck-bpf does not know: open the trace with a newer "
				   "tcheck-bpf",
				   reader->path, reader->chunk_index, reader->chunk_offset, flags);
	payload_length = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT);
	record_count = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT);
	if (payload_length > TRACE_FORMAT_MAX_CHUNK_PAYLOAD) {
		snprintf(problem, sizeof(problem),
			 "claims a payload of %" PRIu32
			 " bytes, more than the %u this reader accepts",
			 payload_length, TRACE_FORMAT_MAX_CHUNK_PAYLOAD);
		return chunk_corrupt(reader, problem);
	}
	if (record_count > payload_length / TRACE_FORMAT_RECORD_HEADER_SIZE) {
		snprintf(problem, sizeof(problem),
			 "claims %" PRIu32 " records, more than its %" PRIu32 " bytes can hold",
			 record_count, payload_length);
		return chunk_corrupt(reader, problem);
	}

	/* Do not allocate for a payload the file is too short to hold. */
	if (reader->seekable && fstat(reader->fd, &status) == 0 &&
	    (uint64_t)status.st_size < reader->offset + sizeof(header) + payload_length)
		return end_truncated(reader, (uint64_t)status.st_size > reader->offset
						     ? (uint64_t)status.st_size - reader->offset
						     : 0);
	if (payload_length > reader->payload_capacity) {
		unsigned char *grown = realloc(reader->payload, payload_length);

		if (!grown)
			return reader_fail(reader, -ENOMEM,
					   "out of memory reading chunk %" PRIu32 " of %s (%" PRIu32
					   " bytes)",
					   reader->chunk_index, reader->path, payload_length);
		reader->payload = grown;
		reader->payload_capacity = payload_length;
	}
	got = read_full(reader->fd, reader->payload, payload_length);
	if (got < 0)
		return reader_fail(reader, (int)got, "could not read the trace %s: %s",
				   reader->path, strerror((int)-got));
	if ((size_t)got < payload_length)
		return end_truncated(reader, sizeof(header) + (uint64_t)got);
	if (!checksum_matches(crc32(0L, reader->payload, payload_length),
			      trace_format_get_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT)))
		return chunk_corrupt(reader, "has damaged records (their checksum does not match)");

	reader->offset += sizeof(header) + payload_length;
	reader->stats.bytes = reader->offset;
	reader->stats.chunks++;
	reader->payload_length = payload_length;
	reader->position = 0;
	reader->chunk_record_count = record_count;
	reader->chunk_records_read = 0;
	reader->in_chunk = 1;
	return 1;
}

static int finish_chunk(struct trace_reader *reader)
{
	char problem[160];

	reader->in_chunk = 0;
	if (reader->chunk_records_read != reader->chunk_record_count) {
		snprintf(problem, sizeof(problem),
			 "holds %" PRIu32 " records but its header says %" PRIu32,
			 reader->chunk_records_read, reader->chunk_record_count);
		return chunk_corrupt(reader, problem);
	}
	reader->chunk_index++;
	update_note(reader);
	return 0;
}

int trace_reader_record_corrupt(struct trace_reader *reader, size_t record_at, const char *problem)
{
	char where[200];

	snprintf(where, sizeof(where), "record %" PRIu32 " of the chunk (payload offset %zu) %s",
		 reader->chunk_records_read - 1, record_at, problem);
	return chunk_corrupt(reader, where);
}

static int define_string(struct trace_reader *reader, const unsigned char *body, uint32_t length,
			 size_t record_at)
{
	uint32_t expected = reader->pass_strings + 1, id, text_length;
	char problem[120];
	char *copy;

	if (length < TRACE_FORMAT_STRING_BYTES_AT)
		return trace_reader_record_corrupt(reader, record_at,
						   "is a string definition too short for its id");
	id = trace_format_get_u32(body + TRACE_FORMAT_STRING_ID_AT);
	if (id != expected) {
		snprintf(problem, sizeof(problem),
			 "defines string id %" PRIu32 " where id %" PRIu32 " comes next", id,
			 expected);
		return trace_reader_record_corrupt(reader, record_at, problem);
	}
	reader->pass_strings++;
	reader->stats.strings++;
	/* A second pass meets the same definitions again: they are already known. */
	if (id <= reader->string_count)
		return 0;

	text_length = length - TRACE_FORMAT_STRING_BYTES_AT;
	if (reader->string_bytes + text_length + 1 > TRACE_FORMAT_MAX_STRING_TABLE)
		return reader_fail(
			reader, -EFBIG,
			"%s defines more than %llu bytes of distinct strings, more than "
			"this reader keeps in memory: the file is corrupt or not a trace "
			"tcheck-bpf wrote",
			reader->path, (unsigned long long)TRACE_FORMAT_MAX_STRING_TABLE);
	if (reader->string_count == reader->string_capacity) {
		size_t capacity = reader->string_capacity ? reader->string_capacity * 2
							  : FIRST_STRING_CAPACITY;
		char **grown = realloc(reader->strings, capacity * sizeof(*grown));

		if (!grown)
			return reader_fail(reader, -ENOMEM,
					   "out of memory reading the strings of %s", reader->path);
		reader->strings = grown;
		reader->string_capacity = capacity;
	}
	copy = malloc((size_t)text_length + 1);
	if (!copy)
		return reader_fail(reader, -ENOMEM, "out of memory reading the strings of %s",
				   reader->path);
	memcpy(copy, body + TRACE_FORMAT_STRING_BYTES_AT, text_length);
	copy[text_length] = '\0';
	reader->strings[reader->string_count++] = copy;
	reader->string_bytes += (uint64_t)text_length + 1;
	return 0;
}

const char *trace_reader_string_lookup(struct trace_reader *reader, const unsigned char *at,
				       size_t record_at)
{
	uint32_t id = trace_format_get_u32(at);
	char problem[120];

	if (id == TRACE_FORMAT_EMPTY_STRING_ID)
		return "";
	if (id <= reader->pass_strings)
		return reader->strings[id - 1];
	snprintf(problem, sizeof(problem),
		 "refers to string id %" PRIu32 ", which no earlier record defines", id);
	trace_reader_record_corrupt(reader, record_at, problem);
	return NULL;
}

int trace_reader_next(struct trace_reader *reader, struct trace_record *out)
{
	for (;;) {
		size_t record_at = reader->position, remaining;
		const unsigned char *record, *body;
		uint32_t length;
		unsigned kind;
		char problem[120];
		int err;

		if (reader->failure)
			return reader->failure;
		if (reader->finished)
			return 0;
		if (!reader->in_chunk) {
			err = load_chunk(reader);
			if (err <= 0)
				return err;
			continue;
		}
		if (reader->position == reader->payload_length) {
			err = finish_chunk(reader);
			if (err)
				return err;
			continue;
		}

		remaining = reader->payload_length - reader->position;
		record = reader->payload + reader->position;
		reader->chunk_records_read++;
		if (remaining < TRACE_FORMAT_RECORD_HEADER_SIZE)
			return trace_reader_record_corrupt(reader, record_at,
							   "is cut off by the end of the chunk");
		kind = trace_format_get_u16(record + TRACE_FORMAT_RECORD_KIND_AT);
		length = trace_format_get_u32(record + TRACE_FORMAT_RECORD_LENGTH_AT);
		if (length > remaining - TRACE_FORMAT_RECORD_HEADER_SIZE) {
			snprintf(problem, sizeof(problem),
				 "claims %" PRIu32 " bytes, more than the %zu left in the chunk",
				 length, remaining - TRACE_FORMAT_RECORD_HEADER_SIZE);
			return trace_reader_record_corrupt(reader, record_at, problem);
		}
		body = record + TRACE_FORMAT_RECORD_HEADER_SIZE;
		reader->position += TRACE_FORMAT_RECORD_HEADER_SIZE + (size_t)length;

		if (kind == TRACE_FORMAT_KIND_STRING) {
			err = define_string(reader, body, length, record_at);
			if (err)
				return err;
			continue;
		}
		if (!trace_record_minimum_body(kind)) {
			/* A kind from a newer writer: its length lets us step over it. */
			reader->stats.unknown_records++;
			continue;
		}
		if (length < trace_record_minimum_body(kind)) {
			snprintf(problem, sizeof(problem),
				 "is a %s record of %" PRIu32 " bytes, shorter than the %" PRIu32
				 " it needs",
				 trace_record_kind_name(kind), length,
				 trace_record_minimum_body(kind));
			return trace_reader_record_corrupt(reader, record_at, problem);
		}
		err = trace_record_decode(reader, kind, body, length, record_at, out);
		if (err)
			return err;
		reader->stats.records++;
		reader->stats.records_by_kind[kind]++;
		if (kind == TRACE_RECORD_STATS)
			reader->stats.recorded_counters = out->stats;
		return 1;
	}
}

int trace_reader_rewind(struct trace_reader *reader)
{
	uint32_t major = reader->stats.version_major, minor = reader->stats.version_minor;

	if (reader->failure)
		return reader->failure;
	if (!reader->seekable)
		return -ESPIPE;
	if (lseek(reader->fd, (off_t)reader->first_chunk_offset, SEEK_SET) < 0)
		return reader_fail(reader, -errno,
				   "could not go back to the start of the trace %s: %s",
				   reader->path, strerror(errno));
	reader->offset = reader->first_chunk_offset;
	reader->in_chunk = 0;
	reader->chunk_index = 0;
	reader->pass_strings = 0;
	reader->finished = 0;
	reader->truncation[0] = '\0';
	memset(&reader->stats, 0, sizeof(reader->stats));
	reader->stats.version_major = major;
	reader->stats.version_minor = minor;
	reader->stats.bytes = reader->offset;
	update_note(reader);
	return 0;
}

int trace_reader_failure(const struct trace_reader *reader)
{
	return reader->failure;
}

const char *trace_reader_error(const struct trace_reader *reader)
{
	return reader->error;
}

const char *trace_reader_truncated(const struct trace_reader *reader)
{
	return reader->stats.truncated ? reader->truncation : NULL;
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
	if (reader->fd >= 0)
		close(reader->fd);
	for (uint32_t i = 0; i < reader->string_count; i++)
		free(reader->strings[i]);
	free(reader->strings);
	free(reader->payload);
	free(reader->path);
	free(reader);
}
