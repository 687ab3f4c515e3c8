// SPDX-License-Identifier: MIT
/* The trace reader's first step: the file header, its signature, version, checksum and fields. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace_reader_state.h"

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

/* The file ends inside its header: the recorder wrote no record. */
static int header_cut_short(struct trace_reader *reader)
{
	return trace_reader_fail(
		reader, -EBADMSG,
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

	got = trace_input_read(&reader->input, fixed, TRACE_FORMAT_FILE_FIXED_SIZE);
	if (got < 0)
		return trace_reader_fail(reader, (int)got, "could not read the trace %s: %s", path,
					 strerror((int)-got));
	if (got == 0)
		return trace_reader_fail(
			reader, -EBADMSG,
			"%s is empty: the recorder wrote nothing to it, so there is no "
			"trace to read",
			path);
	if (memcmp(fixed, TRACE_FORMAT_FILE_MAGIC,
		   (size_t)got < TRACE_FORMAT_FILE_MAGIC_SIZE ? (size_t)got
							      : TRACE_FORMAT_FILE_MAGIC_SIZE) != 0)
		return trace_reader_fail(
			reader, -EBADMSG,
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
		return trace_reader_fail(
			reader, -EPROTONOSUPPORT,
			"%s uses trace format version %" PRIu32 ".%" PRIu32
			", newer than version %d that this tcheck-bpf reads: open it "
			"with a newer tcheck-bpf",
			reader->path, major, reader->stats.version_minor,
			TRACE_FORMAT_VERSION_MAJOR);
	if (major == 0)
		return trace_reader_fail(
			reader, -EBADMSG,
			"%s claims trace format version 0, which never existed: the "
			"file is corrupt",
			reader->path);
	return 0;
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
	if (!trace_checksum_matches(crc, trace_format_get_u32(fixed + TRACE_FORMAT_FILE_CRC_AT)))
		return trace_reader_fail(
			reader, -EBADMSG,
			"%s has a damaged file header (its checksum does not match): the "
			"file is corrupt",
			reader->path);
	err = parse_header_body(reader, body, body_length);
	if (err)
		return trace_reader_fail(
			reader, err,
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
		return trace_reader_fail(
			reader, -EBADMSG,
			"%s has a file header of %" PRIu32
			" bytes, outside the %d to %u a trace header has: the file is "
			"corrupt",
			path, body_length, TRACE_FORMAT_HEADER_MIN_BODY,
			TRACE_FORMAT_MAX_HEADER_BODY);
	body = malloc(body_length);
	if (!body)
		return trace_reader_fail(reader, -ENOMEM, "out of memory reading the header of %s",
					 path);
	got = trace_input_read(&reader->input, body, body_length);
	if (got < 0)
		err = trace_reader_fail(reader, (int)got, "could not read the trace %s: %s", path,
					strerror((int)-got));
	else if ((size_t)got < body_length)
		err = header_cut_short(reader);
	else
		err = header_body_parse(reader, fixed, body, body_length);
	free(body);
	return err;
}

int trace_reader_read_file_header(struct trace_reader *reader)
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
	reader->offset = reader->input.offset;
	reader->stats.bytes = reader->offset;
	return 0;
}
