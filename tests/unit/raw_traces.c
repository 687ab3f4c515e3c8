// SPDX-License-Identifier: MIT
/* Trace files built byte by byte, and read back, for the trace format tests. */
#include "raw_traces.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "trace/trace_format.h"
#include "trace/trace_reader.h"
#include "scratch_files.h"
#include "unit.h"

unsigned char *bytes_extend(struct bytes *buffer, size_t length)
{
	if (buffer->length + length > buffer->capacity) {
		buffer->capacity = (buffer->length + length) * 2 + 64;
		buffer->data = realloc(buffer->data, buffer->capacity);
		if (!buffer->data)
			abort();
	}
	buffer->length += length;
	return buffer->data + buffer->length - length;
}

void bytes_append(struct bytes *buffer, const void *data, size_t length)
{
	if (!length)
		return;
	memcpy(bytes_extend(buffer, length), data, length);
}

void bytes_put_u16(struct bytes *buffer, uint16_t value)
{
	trace_format_put_u16(bytes_extend(buffer, 2), value);
}

void bytes_put_u32(struct bytes *buffer, uint32_t value)
{
	trace_format_put_u32(bytes_extend(buffer, 4), value);
}

void bytes_put_u64(struct bytes *buffer, uint64_t value)
{
	trace_format_put_u64(bytes_extend(buffer, 8), value);
}

void write_file(const char *path, const unsigned char *data, size_t length)
{
	FILE *file = fopen(path, "wb");

	CU_ASSERT_FATAL(file != NULL);
	CU_ASSERT_FATAL(fwrite(data, 1, length, file) == length);
	fclose(file);
}

struct bytes read_whole_file(const char *path)
{
	struct bytes content = { 0 };
	unsigned char block[4096];
	FILE *file = fopen(path, "rb");
	size_t got;

	CU_ASSERT_FATAL(file != NULL);
	while ((got = fread(block, 1, sizeof(block), file)) > 0)
		bytes_append(&content, block, got);
	fclose(file);
	return content;
}

/* A trace file written from raw bytes, to reach states the writer never produces. */
void raw_file_header(struct bytes *file, uint32_t major, uint32_t minor)
{
	static const char *const strings[] = { "testhost", "boot-0001", "tcheck-bpf record" };
	size_t start = file->length;
	uLong crc;

	bytes_append(file, TRACE_FORMAT_FILE_MAGIC, TRACE_FORMAT_FILE_MAGIC_SIZE);
	bytes_put_u32(file, major);
	bytes_put_u32(file, minor);
	bytes_put_u32(file, 0); /* body length, set below */
	bytes_put_u32(file, 0); /* checksum, set below */
	bytes_put_u64(file, 1000);
	bytes_put_u64(file, 2000);
	for (int i = 0; i < 3; i++) {
		bytes_put_u32(file, (uint32_t)strlen(strings[i]));
		bytes_append(file, strings[i], strlen(strings[i]));
	}
	trace_format_put_u32(file->data + start + TRACE_FORMAT_FILE_BODY_LENGTH_AT,
			     (uint32_t)(file->length - start - TRACE_FORMAT_FILE_FIXED_SIZE));
	crc = crc32(0L, file->data + start, TRACE_FORMAT_FILE_CRC_AT);
	crc = crc32(crc, file->data + start + TRACE_FORMAT_FILE_FIXED_SIZE,
		    (uInt)(file->length - start - TRACE_FORMAT_FILE_FIXED_SIZE));
	trace_format_put_u32(file->data + start + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);
}

void raw_record(struct bytes *payload, unsigned kind, const struct bytes *body)
{
	bytes_put_u16(payload, (uint16_t)kind);
	bytes_put_u16(payload, 0);
	bytes_put_u32(payload, (uint32_t)body->length);
	bytes_append(payload, body->data, body->length);
}

void raw_string(struct bytes *payload, uint32_t id, const char *text)
{
	struct bytes body = { 0 };

	bytes_put_u32(&body, id);
	bytes_append(&body, text, strlen(text));
	raw_record(payload, TRACE_FORMAT_KIND_STRING, &body);
	free(body.data);
}

/* A call body referring to 'function_id', with 'extra' bytes a newer writer might append. */
void raw_call(struct bytes *payload, uint32_t function_id, uint32_t param_count, size_t extra)
{
	struct bytes body = { 0 };

	memset(bytes_extend(&body, TRACE_FORMAT_CALL_FIXED_SIZE + 8 * param_count + extra), 0,
	       TRACE_FORMAT_CALL_FIXED_SIZE + 8 * param_count + extra);
	trace_format_put_u64(body.data + TRACE_FORMAT_CALL_ENTRY_NS_AT, 5000);
	trace_format_put_u32(body.data + TRACE_FORMAT_CALL_PID_AT, 77);
	trace_format_put_u32(body.data + TRACE_FORMAT_CALL_FUNCTION_AT, function_id);
	trace_format_put_u32(body.data + TRACE_FORMAT_CALL_PARAM_COUNT_AT, param_count);
	for (uint32_t i = 0; i < param_count; i++)
		trace_format_put_u64(body.data + TRACE_FORMAT_CALL_PARAMS_AT + 8 * i, 100 + i);
	raw_record(payload, TRACE_RECORD_NCCL_CALL, &body);
	free(body.data);
}

void raw_chunk(struct bytes *file, const struct bytes *payload, uint32_t record_count,
	       uint32_t payload_length, uint32_t flags)
{
	unsigned char *header = bytes_extend(file, TRACE_FORMAT_CHUNK_HEADER_SIZE);

	memcpy(header, TRACE_FORMAT_CHUNK_MAGIC, TRACE_FORMAT_CHUNK_MAGIC_SIZE);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT, payload_length);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT, record_count);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT,
			     (uint32_t)crc32(0L, payload->data, (uInt)payload->length));
	trace_format_put_u64(header + TRACE_FORMAT_CHUNK_FIRST_NS_AT, 0);
	trace_format_put_u64(header + TRACE_FORMAT_CHUNK_LAST_NS_AT, 0);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_FLAGS_AT, flags);
	trace_format_put_u32(header + TRACE_FORMAT_CHUNK_HEADER_CRC_AT,
			     (uint32_t)crc32(0L, header, TRACE_FORMAT_CHUNK_HEADER_CRC_AT));
	bytes_append(file, payload->data, payload->length);
}

/* Opens 'path' and reads to the end; returns the final status and the records read. */
int read_all(const char *path, long *records, char *error, size_t error_size)
{
	struct trace_reader *reader = trace_reader_open(path, error, error_size);
	struct trace_record record;
	int status;

	*records = 0;
	if (!reader)
		return -errno;
	while ((status = trace_reader_next(reader, &record)) > 0)
		(*records)++;
	snprintf(error, error_size, "%s", trace_reader_error(reader));
	/* The error stays: reading again gives the same answer. */
	if (status < 0)
		CU_ASSERT_EQUAL(trace_reader_next(reader, &record), status);
	/* Damage read past is no error, but the damage is said: here, as one. */
	if (status == 0 && trace_reader_damage(reader)) {
		snprintf(error, error_size, "%s", trace_reader_damage(reader));
		status = -EBADMSG;
	}
	trace_reader_close(reader);
	return status;
}

/* A file header with its checksum made to match, whatever the fields say. */
void reseal_file_header(struct bytes *file)
{
	uint32_t body_length = trace_format_get_u32(file->data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	size_t covered = body_length < file->length - TRACE_FORMAT_FILE_FIXED_SIZE
				 ? body_length
				 : file->length - TRACE_FORMAT_FILE_FIXED_SIZE;
	uLong crc = crc32(0L, file->data, TRACE_FORMAT_FILE_CRC_AT);

	crc = crc32(crc, file->data + TRACE_FORMAT_FILE_FIXED_SIZE, (uInt)covered);
	trace_format_put_u32(file->data + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);
}

/* Writes a one-chunk file around 'payload' and reads it; returns the status. */
int read_crafted(const struct bytes *payload, uint32_t record_count, uint32_t flags, long *records,
		 char *error)
{
	const char *path = scratch_path("crafted.trace");
	struct bytes file = { 0 };
	int status;

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, payload, record_count, (uint32_t)payload->length, flags);
	write_file(path, file.data, file.length);
	status = read_all(path, records, error, ERROR_SIZE);
	free(file.data);
	unlink(path);
	return status;
}
