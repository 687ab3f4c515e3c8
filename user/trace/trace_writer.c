// SPDX-License-Identifier: MIT
/* Writes trace files: the header, then checksummed chunks of records and interned strings. */
#include "trace/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "base/output_file.h"
#include "base/string_interner.h"
#include "base/system_clock.h"
#include "trace/trace_chunk_codec.h"
#include "trace/trace_format.h"
#include "trace/trace_record_kinds.h"

#define ERROR_MESSAGE_SIZE 512

struct trace_writer {
	struct output_file output;
	int fd; /* the output's */
	char *path;
	/* The chunk being filled: room for its header, then the payload. */
	unsigned char *chunk;
	size_t chunk_length;
	size_t chunk_capacity;
	uint32_t chunk_records;	     /* string definitions included, as the header counts them */
	uint32_t chunk_data_records; /* what the record limit applies to */
	uint64_t chunk_first_ns;
	uint64_t chunk_last_ns;
	uint32_t max_records;
	uint32_t max_bytes;
	/* Payloads are written zstd-compressed (TRACE_FORMAT_CHUNK_ZSTD) when this is set. */
	struct trace_chunk_codec *codec;
	/* Record times of the whole trace, for its closing chunk. */
	uint64_t trace_first_ns;
	uint64_t trace_last_ns;
	uint64_t chunk_records_written; /* string definitions included */
	/* Each text's id is TRACE_FORMAT_EMPTY_STRING_ID + 1 + its interner number. */
	struct string_interner strings;
	struct trace_writer_stats stats;
	int failure; /* sticky negative errno of a failed write */
	char error[ERROR_MESSAGE_SIZE];
};

/* Writes all of 'buffer', retrying after signals and short writes. */
static int write_all(int fd, const unsigned char *buffer, size_t length)
{
	while (length) {
		ssize_t written = write(fd, buffer, length);

		if (written < 0 && errno == EINTR)
			continue;
		if (written < 0)
			return -errno;
		if (written == 0)
			return -EIO;
		buffer += written;
		length -= (size_t)written;
	}
	return 0;
}

static void writer_fail(struct trace_writer *writer, int err, const char *what)
{
	writer->failure = err;
	error_format(writer->error, sizeof(writer->error),
		     "%s %s failed: %s; the file keeps only what was written before, so free the "
		     "space or fix the problem and record again",
		     what, writer->path, strerror(-err));
}

static size_t put_header_string(unsigned char *at, const char *text, size_t capacity)
{
	size_t length = strnlen(text, capacity);

	trace_format_put_u32(at, (uint32_t)length);
	memcpy(at + 4, text, length);
	return 4 + length;
}

static int write_file_header(struct trace_writer *writer, const struct trace_header *header)
{
	unsigned char buffer[TRACE_FORMAT_FILE_FIXED_SIZE + TRACE_FORMAT_HEADER_MIN_BODY +
			     sizeof(header->hostname) + sizeof(header->boot_id) +
			     sizeof(header->command_line)];
	unsigned char *body = buffer + TRACE_FORMAT_FILE_FIXED_SIZE;
	size_t body_length = TRACE_FORMAT_HEADER_STRINGS_AT;
	uLong crc;
	int err;

	memcpy(buffer + TRACE_FORMAT_FILE_MAGIC_AT, TRACE_FORMAT_FILE_MAGIC,
	       TRACE_FORMAT_FILE_MAGIC_SIZE);
	trace_format_put_u32(buffer + TRACE_FORMAT_FILE_MAJOR_AT, TRACE_FORMAT_VERSION_MAJOR);
	trace_format_put_u32(buffer + TRACE_FORMAT_FILE_MINOR_AT, TRACE_FORMAT_VERSION_MINOR);
	trace_format_put_u64(body + TRACE_FORMAT_HEADER_MONOTONIC_AT, header->anchor_monotonic_ns);
	trace_format_put_u64(body + TRACE_FORMAT_HEADER_REALTIME_AT, header->anchor_realtime_ns);
	body_length +=
		put_header_string(body + body_length, header->hostname, sizeof(header->hostname));
	body_length +=
		put_header_string(body + body_length, header->boot_id, sizeof(header->boot_id));
	body_length += put_header_string(body + body_length, header->command_line,
					 sizeof(header->command_line));
	trace_format_put_u32(buffer + TRACE_FORMAT_FILE_BODY_LENGTH_AT, (uint32_t)body_length);
	crc = crc32(0L, buffer, TRACE_FORMAT_FILE_CRC_AT);
	crc = crc32(crc, body, (uInt)body_length);
	trace_format_put_u32(buffer + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);

	err = write_all(writer->fd, buffer, TRACE_FORMAT_FILE_FIXED_SIZE + body_length);
	if (err)
		return err;
	writer->stats.bytes += TRACE_FORMAT_FILE_FIXED_SIZE + body_length;
	return 0;
}

static void reset_chunk(struct trace_writer *writer)
{
	writer->chunk_length = TRACE_FORMAT_CHUNK_HEADER_SIZE;
	writer->chunk_records = 0;
	writer->chunk_data_records = 0;
	writer->chunk_first_ns = 0;
	writer->chunk_last_ns = 0;
}

struct trace_writer *trace_writer_new(const char *path, const struct trace_header *header,
				      char *error, size_t error_size)
{
	return trace_writer_open(path, header, 0, error, error_size);
}

struct trace_writer *trace_writer_open(const char *path, const struct trace_header *header,
				       unsigned output_flags, char *error, size_t error_size)
{
	struct trace_writer *writer = calloc(1, sizeof(*writer));
	int err;

	if (!writer || !(writer->path = strdup(path))) {
		free(writer);
		error_format(error, error_size, "out of memory creating the trace writer for %s",
			     path);
		errno = ENOMEM;
		return NULL;
	}
	writer->max_records = TRACE_WRITER_DEFAULT_CHUNK_RECORDS;
	writer->max_bytes = TRACE_WRITER_DEFAULT_CHUNK_BYTES;
	writer->chunk_capacity = TRACE_FORMAT_CHUNK_HEADER_SIZE + 64 * 1024;
	writer->chunk = malloc(writer->chunk_capacity);
	string_interner_init(&writer->strings);
	/* Compressed unless trace_writer_set_compression() says otherwise. */
	writer->codec = trace_chunk_codec_new();
	if (!writer->chunk || !writer->codec) {
		trace_chunk_codec_free(writer->codec);
		free(writer->chunk);
		free(writer->path);
		free(writer);
		error_format(error, error_size, "out of memory creating the trace writer for %s",
			     path);
		errno = ENOMEM;
		return NULL;
	}
	reset_chunk(writer);

	/* Grown in place when new, so that a recorder killed outright leaves its trace. */
	err = output_file_open(&writer->output, path, output_flags | OUTPUT_FILE_GROW_IN_PLACE,
			       writer->error, sizeof(writer->error));
	if (err) {
		error_format(error, error_size, "%s", writer->error);
		goto fail;
	}
	writer->fd = fileno(writer->output.stream);
	err = write_file_header(writer, header);
	if (err) {
		error_format(error, error_size,
			     "could not write the header of the trace file %s: %s", path,
			     strerror(-err));
		output_file_close(&writer->output, false, NULL, 0);
		goto fail;
	}
	return writer;

fail:
	trace_chunk_codec_free(writer->codec);
	free(writer->chunk);
	free(writer->path);
	free(writer);
	errno = -err;
	return NULL;
}

int trace_writer_set_chunk_limits(struct trace_writer *writer, uint32_t max_records,
				  uint32_t max_bytes)
{
	if (max_bytes > TRACE_WRITER_MAX_CHUNK_BYTES) {
		error_format(writer->error, sizeof(writer->error),
			     "a chunk of %u bytes is larger than the %u a trace chunk may hold",
			     max_bytes, TRACE_WRITER_MAX_CHUNK_BYTES);
		return -EINVAL;
	}
	if (max_records)
		writer->max_records = max_records;
	if (max_bytes)
		writer->max_bytes = max_bytes;
	return 0;
}

static int reserve_chunk(struct trace_writer *writer, size_t more)
{
	return growable_array_reserve((void **)&writer->chunk, writer->chunk_length,
				      &writer->chunk_capacity, more, 1);
}

/* Starts a record in the chunk (room must be reserved) and returns its body. */
static unsigned char *append_record(struct trace_writer *writer, unsigned kind, size_t body_length)
{
	unsigned char *at = writer->chunk + writer->chunk_length;

	trace_format_put_u16(at + TRACE_FORMAT_RECORD_KIND_AT, (uint16_t)kind);
	trace_format_put_u16(at + TRACE_FORMAT_RECORD_RESERVED_AT, 0);
	trace_format_put_u32(at + TRACE_FORMAT_RECORD_LENGTH_AT, (uint32_t)body_length);
	memset(at + TRACE_FORMAT_RECORD_HEADER_SIZE, 0, body_length);
	writer->chunk_length += TRACE_FORMAT_RECORD_HEADER_SIZE + body_length;
	writer->chunk_records++;
	return at + TRACE_FORMAT_RECORD_HEADER_SIZE;
}

/*
 * Returns the id of 'text', defining it in the pending chunk the first
 * time, so every id is defined no later than the chunk that uses it.
 */
static int intern_string(struct trace_writer *writer, const char *text, uint32_t *id)
{
	size_t length = text ? strnlen(text, TRACE_FORMAT_MAX_STRING) : 0;
	const struct interned_text *kept;
	unsigned char *body;
	bool added;

	if (length == 0) {
		*id = TRACE_FORMAT_EMPTY_STRING_ID;
		return 0;
	}
	if (writer->strings.count >= UINT32_MAX - TRACE_FORMAT_EMPTY_STRING_ID - 1)
		return -EOVERFLOW;
	/* Room first: a text is only kept once its definition has a place in the chunk. */
	if (reserve_chunk(writer,
			  TRACE_FORMAT_RECORD_HEADER_SIZE + TRACE_FORMAT_STRING_BYTES_AT + length))
		return -ENOMEM;
	kept = string_interner_intern_bytes(&writer->strings, text, length, &added);
	if (!kept)
		return -ENOMEM;
	*id = TRACE_FORMAT_EMPTY_STRING_ID + 1 + kept->number;
	if (!added)
		return 0;
	writer->stats.strings++;
	body = append_record(writer, TRACE_FORMAT_KIND_STRING,
			     TRACE_FORMAT_STRING_BYTES_AT + length);
	trace_format_put_u32(body + TRACE_FORMAT_STRING_ID_AT, *id);
	memcpy(body + TRACE_FORMAT_STRING_BYTES_AT, kept->bytes, length);
	return 0;
}

static int intern_strings(struct trace_writer *writer, const char *const texts[], uint32_t ids[],
			  int count)
{
	for (int i = 0; i < count; i++) {
		int err = intern_string(writer, texts[i], &ids[i]);

		if (err)
			return err;
	}
	return 0;
}

static int reject_record(struct trace_writer *writer, const char *reason)
{
	error_format(
		writer->error, sizeof(writer->error),
		"could not add a record to %s: %s; this is a bug in tcheck-bpf, please report it",
		writer->path, reason);
	return -EINVAL;
}

static int add_encoded(struct trace_writer *writer, const struct trace_record *record)
{
	const struct trace_record_kind_format *format = trace_record_kind_format(record->kind);
	const char *texts[TRACE_RECORD_MAX_STRINGS];
	uint32_t ids[TRACE_RECORD_MAX_STRINGS] = { 0 };
	const char *refusal = NULL;
	unsigned char *body;
	size_t size;
	int err;

	if (!format)
		return reject_record(writer, "the record is of an unknown kind");
	size = format->encoded_size ? format->encoded_size(record, &refusal) : format->body_size;
	if (!size)
		return reject_record(writer, refusal ? refusal : "the record has no size");
	err = intern_strings(writer, texts, ids,
			     format->strings ? format->strings(record, texts) : 0);
	if (!err)
		err = reserve_chunk(writer, TRACE_FORMAT_RECORD_HEADER_SIZE + size);
	if (err) {
		error_format(writer->error, sizeof(writer->error),
			     "could not add a record to %s: %s", writer->path, strerror(-err));
		return err;
	}

	body = append_record(writer, record->kind, size);
	format->encode(body, record, ids);
	return 0;
}

int trace_writer_add(struct trace_writer *writer, const struct trace_record *record)
{
	uint64_t time;
	int err;

	if (writer->failure)
		return writer->failure;
	err = add_encoded(writer, record);
	if (err)
		return err;

	time = trace_record_time(record);
	if (time && (!writer->chunk_first_ns || time < writer->chunk_first_ns))
		writer->chunk_first_ns = time;
	if (time > writer->chunk_last_ns)
		writer->chunk_last_ns = time;
	writer->chunk_data_records++;
	writer->stats.records++;

	if (writer->chunk_data_records >= writer->max_records ||
	    writer->chunk_length - TRACE_FORMAT_CHUNK_HEADER_SIZE >= writer->max_bytes)
		return trace_writer_flush(writer);
	return 0;
}

int trace_writer_set_compression(struct trace_writer *writer, bool compress)
{
	if (!compress) {
		trace_chunk_codec_free(writer->codec);
		writer->codec = NULL;
		return 0;
	}
	if (!writer->codec && !(writer->codec = trace_chunk_codec_new()))
		return -ENOMEM;
	return 0;
}

/*
 * Compresses the pending payload in place when that makes it smaller;
 * returns the chunk flag to write and the payload's new length.
 */
static uint32_t compress_payload(struct trace_writer *writer, size_t *payload_length)
{
	unsigned char *payload = writer->chunk + TRACE_FORMAT_CHUNK_HEADER_SIZE;
	const unsigned char *stored;
	size_t length;

	if (!writer->codec)
		return 0;
	length = trace_chunk_compress(writer->codec, payload, *payload_length, &stored);
	/* A failed compression costs only the saving: the chunk goes out as it is. */
	if (!length || length >= *payload_length)
		return 0;
	memcpy(payload, stored, length);
	*payload_length = length;
	return TRACE_FORMAT_CHUNK_ZSTD;
}

/* Fills the chunk header in front of a payload of 'payload_length' bytes and writes both. */
static int write_chunk(struct trace_writer *writer, size_t payload_length, uint32_t record_count,
		       uint64_t first_ns, uint64_t last_ns, uint32_t flags)
{
	unsigned char *header = writer->chunk;
	int err;

	memcpy(header + TRACE_FORMAT_CHUNK_MAGIC_AT, TRACE_FORMAT_CHUNK_MAGIC,
	       TRACE_FORMAT_CHUNK_MAGIC_SIZE);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT,
			     (uint32_t)payload_length);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT, record_count);
	trace_format_put_u32(
		header + TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT,
		(uint32_t)crc32(0L, header + TRACE_FORMAT_CHUNK_HEADER_SIZE, (uInt)payload_length));
	trace_format_put_u64(header + TRACE_FORMAT_CHUNK_FIRST_NS_AT, first_ns);
	trace_format_put_u64(header + TRACE_FORMAT_CHUNK_LAST_NS_AT, last_ns);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_FLAGS_AT, flags);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_HEADER_CRC_AT,
			     (uint32_t)crc32(0L, header, TRACE_FORMAT_CHUNK_HEADER_CRC_AT));

	/* One write() per chunk: readers see whole chunks or a cut last one. */
	err = write_all(writer->fd, writer->chunk, TRACE_FORMAT_CHUNK_HEADER_SIZE + payload_length);
	if (err) {
		writer_fail(writer, err, "writing a chunk to");
		return err;
	}
	writer->stats.chunks++;
	writer->stats.bytes += TRACE_FORMAT_CHUNK_HEADER_SIZE + payload_length;
	return 0;
}

int trace_writer_flush(struct trace_writer *writer)
{
	size_t payload_length = writer->chunk_length - TRACE_FORMAT_CHUNK_HEADER_SIZE;
	uint32_t flags;
	int err;

	if (writer->failure)
		return writer->failure;
	if (!writer->chunk_records)
		return 0;
	flags = compress_payload(writer, &payload_length);
	err = write_chunk(writer, payload_length, writer->chunk_records, writer->chunk_first_ns,
			  writer->chunk_last_ns, flags);
	if (err)
		return err;
	if (writer->chunk_first_ns &&
	    (!writer->trace_first_ns || writer->chunk_first_ns < writer->trace_first_ns))
		writer->trace_first_ns = writer->chunk_first_ns;
	if (writer->chunk_last_ns > writer->trace_last_ns)
		writer->trace_last_ns = writer->chunk_last_ns;
	writer->chunk_records_written += writer->chunk_records;
	reset_chunk(writer);
	return 0;
}

/* The closing chunk: the trace is whole, and says what it holds. */
static int write_closing_chunk(struct trace_writer *writer)
{
	uint64_t chunks = writer->stats.chunks;
	unsigned char *body;
	int err;

	reset_chunk(writer);
	err = reserve_chunk(writer, TRACE_FORMAT_CLOSING_SIZE);
	if (err)
		return err;
	body = writer->chunk + TRACE_FORMAT_CHUNK_HEADER_SIZE;
	trace_format_put_u64(body + TRACE_FORMAT_CLOSING_CHUNKS_AT, chunks);
	trace_format_put_u64(body + TRACE_FORMAT_CLOSING_RECORDS_AT, writer->chunk_records_written);
	trace_format_put_u64(body + TRACE_FORMAT_CLOSING_CLOSED_NS_AT, monotonic_ns());
	return write_chunk(writer, TRACE_FORMAT_CLOSING_SIZE, 0, writer->trace_first_ns,
			   writer->trace_last_ns, TRACE_FORMAT_CHUNK_CLOSING);
}

static void free_writer(struct trace_writer *writer)
{
	string_interner_destroy(&writer->strings);
	free(writer->chunk);
	free(writer->path);
	trace_chunk_codec_free(writer->codec);
	free(writer);
}

int trace_writer_close(struct trace_writer *writer, char *error, size_t error_size)
{
	char closing_error[ERROR_MESSAGE_SIZE];
	int err, closing;

	if (!writer)
		return 0;
	err = trace_writer_flush(writer);
	if (!err) {
		err = write_closing_chunk(writer);
		if (err && !writer->failure)
			writer_fail(writer, err, "closing");
	}
	/* Pipes and character devices cannot be synced and need not be. */
	if (!err && fsync(writer->fd) && errno != EINVAL && errno != EROFS) {
		err = -errno;
		writer_fail(writer, err, "saving (fsync)");
	}
	/*
	 * A trace that replaces another takes its place only when whole; a new
	 * one stays as far as it was written (the reader says where it ends).
	 */
	closing = output_file_close(&writer->output, !err || writer->output.created, closing_error,
				    sizeof(closing_error));
	if (closing && !err) {
		err = closing;
		error_format(writer->error, sizeof(writer->error), "%s", closing_error);
	}
	if (err)
		error_format(error, error_size, "%s", writer->error);
	free_writer(writer);
	return err;
}

void trace_writer_discard(struct trace_writer *writer)
{
	if (!writer)
		return;
	output_file_close(&writer->output, false, NULL, 0);
	free_writer(writer);
}

const char *trace_writer_error(const struct trace_writer *writer)
{
	return writer->error;
}

void trace_writer_get_stats(const struct trace_writer *writer, struct trace_writer_stats *stats)
{
	*stats = writer->stats;
}
