// SPDX-License-Identifier: MIT
/* Tests of trace files of other format versions: newer majors refused, unknown kinds of newer
 * minors skipped. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "trace/trace_format.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"
#include "raw_traces.h"
#include "sample_records.h"
#include "scratch_files.h"
#include "unit.h"

UNIT_TEST(trace_format, newer_major_version_is_refused)
{
	const char *path = scratch_path("version-2.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 };
	long records;

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR + 1, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT_EQUAL(read_all(path, &records, error, sizeof(error)), -EPROTONOSUPPORT);
	CU_ASSERT(strstr(error, "version 2.0") != NULL);
	CU_ASSERT(strstr(error, "newer tcheck-bpf") != NULL);
	free(file.data);
	unlink(path);
}

UNIT_TEST(trace_format, newer_minor_version_skips_unknown_kinds)
{
	const char *path = scratch_path("minor.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 }, future = { 0 };
	struct trace_reader *reader;
	struct trace_record record;
	char expected_version[32];

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR + 3);
	bytes_append(&future, "python frame", 12);
	raw_string(&payload, 1, "ncclAllReduce");
	raw_record(&payload, 99, &future);
	/* A known kind with fields appended by a newer writer. */
	raw_call(&payload, 1, 2, 24);
	raw_record(&payload, 100, &(struct bytes){ 0 });
	raw_chunk(&file, &payload, 4, (uint32_t)payload.length, 0);
	write_file(path, file.data, file.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_PTR_NOT_NULL(trace_reader_note(reader));
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(record.kind, TRACE_RECORD_NCCL_CALL);
	CU_ASSERT_STRING_EQUAL(record.call.function, "ncclAllReduce");
	CU_ASSERT_EQUAL(record.call.param_count, 2);
	CU_ASSERT_EQUAL(record.call.params[1], 101);
	CU_ASSERT_EQUAL(record.call.pid, 77);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->unknown_records, 2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_note(reader));
	CU_ASSERT(strstr(trace_reader_note(reader), "2 records") != NULL);
	snprintf(expected_version, sizeof(expected_version), "%d.%d", TRACE_FORMAT_VERSION_MAJOR,
		 TRACE_FORMAT_VERSION_MINOR + 3);
	CU_ASSERT(strstr(trace_reader_note(reader), expected_version) != NULL);
	trace_reader_close(reader);
	free(future.data);
	free(payload.data);
	free(file.data);
	unlink(path);
}

/*
 * Rewrites every record of kind 'from' as kind 'to' and reseals the
 * checksums: how a file looks to a reader that does not know 'from'.
 */
static unsigned relabel_kind(struct bytes *file, unsigned from, unsigned to)
{
	size_t chunk = TRACE_FORMAT_FILE_FIXED_SIZE +
		       trace_format_get_u32(file->data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	unsigned relabelled = 0;

	while (chunk + TRACE_FORMAT_CHUNK_HEADER_SIZE <= file->length) {
		unsigned char *header = file->data + chunk;
		unsigned char *payload = header + TRACE_FORMAT_CHUNK_HEADER_SIZE;
		uint32_t payload_length =
			trace_format_get_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT);
		size_t position = 0;

		while (position + TRACE_FORMAT_RECORD_HEADER_SIZE <= payload_length) {
			unsigned char *record = payload + position;

			if (trace_format_get_u16(record + TRACE_FORMAT_RECORD_KIND_AT) == from) {
				trace_format_put_u16(record + TRACE_FORMAT_RECORD_KIND_AT,
						     (uint16_t)to);
				relabelled++;
			}
			position += TRACE_FORMAT_RECORD_HEADER_SIZE +
				    trace_format_get_u32(record + TRACE_FORMAT_RECORD_LENGTH_AT);
		}
		trace_format_put_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT,
				     (uint32_t)crc32(0L, payload, payload_length));
		trace_format_put_u32(header + TRACE_FORMAT_CHUNK_HEADER_CRC_AT,
				     (uint32_t)crc32(0L, header, TRACE_FORMAT_CHUNK_HEADER_CRC_AT));
		chunk += TRACE_FORMAT_CHUNK_HEADER_SIZE + payload_length;
	}
	return relabelled;
}

/* Gives the file another minor format version and reseals the file header's checksum. */
static void set_minor_version(struct bytes *file, uint32_t minor)
{
	uint32_t body_length = trace_format_get_u32(file->data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	uLong crc;

	trace_format_put_u32(file->data + TRACE_FORMAT_FILE_MINOR_AT, minor);
	crc = crc32(0L, file->data, TRACE_FORMAT_FILE_CRC_AT);
	crc = crc32(crc, file->data + TRACE_FORMAT_FILE_FIXED_SIZE, body_length);
	trace_format_put_u32(file->data + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);
}

/* Of this reader's own format, a kind it does not know is damage, never a newer writer's. */
static void expect_note(const char *path, const struct bytes *whole, const char *words)
{
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	struct trace_record record;

	write_file(path, whole->data, whole->length);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	while (trace_reader_next(reader, &record) > 0)
		;
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_note(reader));
	if (!strstr(trace_reader_note(reader), words))
		fprintf(stderr, "\nexpected '%s' in: %s\n", words, trace_reader_note(reader));
	CU_ASSERT(strstr(trace_reader_note(reader), words) != NULL);
	trace_reader_close(reader);
}

UNIT_TEST(trace_format, an_unknown_kind_in_a_known_format_is_not_called_newer)
{
	const char *path = scratch_path("unknown-kind-known-format.trace");
	struct bytes whole;

	write_samples(path, 10 * SAMPLE_KINDS, 4, NULL, NULL);
	whole = read_whole_file(path);
	CU_ASSERT_EQUAL(
		relabel_kind(&whole, TRACE_RECORD_PYTHON_CALL, TRACE_FORMAT_LAST_KNOWN_KIND + 1),
		10);
	expect_note(path, &whole, "10 records of a kind that format does not have");
	set_minor_version(&whole, 1);
	expect_note(path, &whole,
		    "(trace format 1.1, which this tcheck-bpf reads) holds 10 records of a kind "
		    "that format does not have: skipped; the file may be damaged");
	set_minor_version(&whole, TRACE_FORMAT_VERSION_MINOR + 1);
	expect_note(path, &whole, "was written by a newer tcheck-bpf");
	free(whole.data);
	unlink(path);
}

UNIT_TEST(trace_format, a_reader_without_python_calls_skips_them)
{
	const char *path = scratch_path("python-unknown.trace");
	unsigned unknown_kind = TRACE_FORMAT_LAST_KNOWN_KIND + 1, relabelled;
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	struct trace_record record;
	struct bytes whole;
	unsigned sample = 0;
	int status;

	/*
	 * A reader of format 1.0 sees a Python call as this one sees a kind
	 * past the last it knows: give the Python calls such a kind.
	 */
	write_samples(path, 10 * SAMPLE_KINDS, 4, NULL, NULL);
	whole = read_whole_file(path);
	relabelled = relabel_kind(&whole, TRACE_RECORD_PYTHON_CALL, unknown_kind);
	CU_ASSERT_EQUAL(relabelled, 10);
	set_minor_version(&whole, TRACE_FORMAT_VERSION_MINOR + 1);
	write_file(path, whole.data, whole.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	while ((status = trace_reader_next(reader, &record)) > 0) {
		struct trace_record expected;

		if (sample % SAMPLE_KINDS == 5)
			sample++;
		expected = sample_record(sample++);
		CU_ASSERT(records_equal(&expected, &record));
	}
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->records, 10 * (SAMPLE_KINDS - 1));
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->unknown_records, 10);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->records_by_kind[TRACE_RECORD_PYTHON_CALL], 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_note(reader));
	CU_ASSERT(strstr(trace_reader_note(reader), "10 records") != NULL);
	CU_ASSERT(strstr(trace_reader_note(reader), "newer tcheck-bpf") != NULL);
	trace_reader_close(reader);
	free(whole.data);
	unlink(path);
}
