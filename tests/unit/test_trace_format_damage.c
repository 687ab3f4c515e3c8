// SPDX-License-Identifier: MIT
/* Tests of trace files cut short or damaged: every cut, damaged chunks and headers, pipes, crafted
 * and random records. */
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

UNIT_TEST(trace_format, cut_at_every_byte_offset)
{
	const char *path = scratch_path("three-chunks.trace");
	const char *cut_path = scratch_path("cut.trace");
	uint64_t chunk_ends[3];
	unsigned chunk_end_count;
	struct bytes whole;
	size_t header_size;

	/* Two chunks hold a Python call (samples 5 and 11), one of them a raised one. */
	write_samples(path, 12, 4, chunk_ends, &chunk_end_count);
	CU_ASSERT_EQUAL_FATAL(chunk_end_count, 3);
	whole = read_whole_file(path);
	/* Then the closing chunk. */
	CU_ASSERT_EQUAL_FATAL(whole.length, chunk_ends[2] + TRACE_FORMAT_CHUNK_HEADER_SIZE +
						    TRACE_FORMAT_CLOSING_SIZE);
	header_size = TRACE_FORMAT_FILE_FIXED_SIZE +
		      trace_format_get_u32(whole.data + TRACE_FORMAT_FILE_BODY_LENGTH_AT);

	for (size_t cut = 0; cut <= whole.length; cut++) {
		char error[ERROR_SIZE] = "";
		struct trace_reader *reader;
		long expected = 0, matched;
		int at_boundary = cut == header_size, closed = cut == whole.length, status;

		for (unsigned i = 0; i < chunk_end_count; i++) {
			if (cut >= chunk_ends[i])
				expected += 4;
			if (cut == chunk_ends[i])
				at_boundary = 1;
		}
		write_file(cut_path, whole.data, cut);
		reader = trace_reader_open(cut_path, error, sizeof(error));
		if (cut < header_size) {
			CU_ASSERT_PTR_NULL(reader);
			CU_ASSERT(strstr(error, cut_path) != NULL);
			trace_reader_close(reader);
			continue;
		}
		CU_ASSERT_FATAL(reader != NULL);
		matched = read_and_compare(reader, &status);
		CU_ASSERT_EQUAL(status, 0);
		CU_ASSERT_EQUAL(matched, expected);
		/* Cut anywhere short of the end, the trace was not closed. */
		CU_ASSERT_EQUAL(trace_reader_truncated(reader) != NULL, !closed);
		CU_ASSERT_EQUAL(trace_reader_stats(reader)->truncated, !at_boundary && !closed);
		CU_ASSERT_EQUAL(trace_reader_stats(reader)->unclosed, at_boundary);
		CU_ASSERT_STRING_EQUAL(trace_reader_error(reader), "");
		if (!at_boundary && !closed)
			CU_ASSERT(strstr(trace_reader_truncated(reader), "before that chunk is "
									 "complete") != NULL);
		if (at_boundary)
			CU_ASSERT(strstr(trace_reader_truncated(reader), "not closed") != NULL);
		trace_reader_close(reader);
	}
	free(whole.data);
	unlink(cut_path);
	unlink(path);
}

UNIT_TEST(trace_format, damaged_middle_chunk_is_named)
{
	const char *path = scratch_path("damaged.trace");
	char error[ERROR_SIZE] = "", expected[64];
	uint64_t chunk_ends[3];
	unsigned chunk_end_count;
	struct bytes whole;
	long records;

	write_samples(path, 9, 3, chunk_ends, &chunk_end_count);
	whole = read_whole_file(path);

	/* A byte of chunk 1's payload. */
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_HEADER_SIZE + 5] ^= 0x10;
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	/* That chunk is lost, and only that one: the reader goes on at chunk 2. */
	CU_ASSERT_EQUAL(records, 6);
	snprintf(expected, sizeof(expected), "chunk 1 at byte offset %llu",
		 (unsigned long long)chunk_ends[0]);
	CU_ASSERT(strstr(error, expected) != NULL);
	CU_ASSERT(strstr(error, "checksum") != NULL);
	CU_ASSERT(strstr(error, path) != NULL);
	CU_ASSERT(strstr(error, "losing 16 records (string definitions counted) written between") !=
		  NULL);
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_HEADER_SIZE + 5] ^= 0x10;

	/* A byte of chunk 1's header. */
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT] ^= 0x01;
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT_EQUAL(records, 6);
	CU_ASSERT(strstr(error, expected) != NULL);
	CU_ASSERT(strstr(error, "damaged header") != NULL);
	CU_ASSERT(strstr(error, "losing an unknown number of records") != NULL);
	whole.data[chunk_ends[0] + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT] ^= 0x01;

	/* The chunk signature. */
	whole.data[chunk_ends[1]] = 'X';
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT_EQUAL(records, 6);
	CU_ASSERT(strstr(error, "chunk 2") != NULL);
	CU_ASSERT(strstr(error, "signature") != NULL);
	whole.data[chunk_ends[1]] = 'C';

	/* The file header. */
	whole.data[TRACE_FORMAT_FILE_FIXED_SIZE + 20] ^= 0x40;
	write_file(path, whole.data, whole.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "damaged file header") != NULL);
	free(whole.data);
	unlink(path);
}

UNIT_TEST(trace_format, not_a_trace)
{
	const char *path = scratch_path("not-a-trace.txt");
	static const char text[] = "this is a text file, long enough to hold a header\n";
	char error[ERROR_SIZE] = "", expected[200];
	long records;

	write_file(path, (const unsigned char *)text, sizeof(text) - 1);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	snprintf(expected, sizeof(expected), "%s is not a tcheck-bpf trace", path);
	CU_ASSERT(strstr(error, expected) != NULL);

	write_file(path, (const unsigned char *)text, 0);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "is empty") != NULL);

	CU_ASSERT_EQUAL(read_all(scratch_path("missing.trace"), &records, error, sizeof(error)),
			-ENOENT);
	CU_ASSERT(strstr(error, "missing.trace") != NULL);
	CU_ASSERT(strstr(error, "No such file") != NULL);
	unlink(path);
}

UNIT_TEST(trace_format, damaged_file_headers)
{
	const char *path = scratch_path("bad-header.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 };
	long records;

	raw_file_header(&file, 0, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "version 0") != NULL);

	file.length = 0;
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 0);
	trace_format_put_u32(file.data + TRACE_FORMAT_FILE_BODY_LENGTH_AT, 3);
	reseal_file_header(&file);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "file header of 3 bytes") != NULL);

	/* The host name's length runs past the end of the header body. */
	file.length = 0;
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 0);
	trace_format_put_u32(
		file.data + TRACE_FORMAT_FILE_FIXED_SIZE + TRACE_FORMAT_HEADER_STRINGS_AT, 1000);
	reseal_file_header(&file);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "strings overrun") != NULL);

	/* The body is longer than the file. */
	file.length = 0;
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 0);
	file.length -= 5;
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "ends inside its file header") != NULL);

	CU_ASSERT_EQUAL(read_all("/tmp", &records, error, sizeof(error)), -EISDIR);
	CU_ASSERT(strstr(error, "is a directory") != NULL);
	free(file.data);
	unlink(path);
}

/* Feeds 'length' bytes of 'data' through a named pipe and reads them as a trace. */
static int read_through_pipe(const unsigned char *data, size_t length, long *records,
			     int *truncated, char *error)
{
	const char *fifo = scratch_path("trace.fifo");
	struct trace_reader *reader;
	struct trace_record record;
	int status, child_status;
	pid_t child;

	unlink(fifo);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		int fd = open(fifo, O_WRONLY);

		if (fd >= 0 && write(fd, data, length) == (ssize_t)length)
			_exit(0);
		_exit(1);
	}
	*records = 0;
	reader = trace_reader_open(fifo, error, ERROR_SIZE);
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_rewind(reader), -ESPIPE);
	while ((status = trace_reader_next(reader, &record)) > 0)
		(*records)++;
	*truncated = trace_reader_truncated(reader) != NULL;
	trace_reader_close(reader);
	waitpid(child, &child_status, 0);
	unlink(fifo);
	return status;
}

UNIT_TEST(trace_format, reading_from_a_pipe)
{
	const char *path = scratch_path("pipe.trace");
	char error[ERROR_SIZE] = "";
	uint64_t chunk_ends[3];
	unsigned chunk_end_count;
	struct bytes whole;
	int truncated;
	long records;

	write_samples(path, 9, 3, chunk_ends, &chunk_end_count);
	whole = read_whole_file(path);
	CU_ASSERT_EQUAL(read_through_pipe(whole.data, whole.length, &records, &truncated, error),
			0);
	CU_ASSERT_EQUAL(records, 9);
	CU_ASSERT_FALSE(truncated);
	/* Cut inside the last payload: no file size to check first, the read comes up short. */
	CU_ASSERT_EQUAL(
		read_through_pipe(whole.data, chunk_ends[2] - 3, &records, &truncated, error), 0);
	CU_ASSERT_EQUAL(records, 6);
	CU_ASSERT_TRUE(truncated);
	free(whole.data);
	unlink(path);
}

UNIT_TEST(trace_format, chunk_claiming_a_huge_payload)
{
	const char *path = scratch_path("huge.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 };
	long records;

	raw_string(&payload, 1, "ncclSend");
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, &payload, 1, 0xfffffff0U, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT(read_all(path, &records, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "chunk 0") != NULL);
	CU_ASSERT(strstr(error, "4294967280 bytes") != NULL);

	/* Within the limit but past the end of the file: a cut chunk, not an allocation. */
	free(file.data);
	file = (struct bytes){ 0 };
	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, TRACE_FORMAT_VERSION_MINOR);
	raw_chunk(&file, &payload, 1, TRACE_FORMAT_MAX_CHUNK_PAYLOAD, 0);
	write_file(path, file.data, file.length);
	CU_ASSERT_EQUAL(read_all(path, &records, error, sizeof(error)), 0);

	CU_ASSERT(read_crafted(&payload, 1000, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "claims 1000 records") != NULL);
	free(payload.data);
	free(file.data);
	unlink(path);
}

UNIT_TEST(trace_format, malformed_records_are_errors)
{
	char error[ERROR_SIZE] = "";
	struct bytes payload = { 0 };
	long records;

	/* A string id used but never defined. */
	raw_string(&payload, 1, "ncclAllReduce");
	raw_call(&payload, 5, 0, 0);
	CU_ASSERT(read_crafted(&payload, 2, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "string id 5") != NULL);
	CU_ASSERT(strstr(error, "chunk 0") != NULL);
	CU_ASSERT(strstr(error, "record 1") != NULL);

	/* A string defined out of order. */
	payload.length = 0;
	raw_string(&payload, 2, "ncclAllReduce");
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "defines string id 2 where id 1 comes next") != NULL);

	/* More records counted than present, and fewer. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	raw_call(&payload, 1, 0, 0);
	CU_ASSERT(read_crafted(&payload, 3, 0, &records, error) < 0);
	CU_ASSERT_EQUAL(records, 1);
	CU_ASSERT(strstr(error, "holds 2 records but its header says 3") != NULL);
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);

	/* A record longer than what is left of the chunk. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	trace_format_put_u32(payload.data + TRACE_FORMAT_RECORD_LENGTH_AT, 5000);
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "claims 5000 bytes") != NULL);

	/* A call too short for the parameters it claims. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	raw_call(&payload, 1, 3, 0);
	trace_format_put_u32(payload.data + payload.length - 24 - TRACE_FORMAT_CALL_FIXED_SIZE +
				     TRACE_FORMAT_CALL_PARAM_COUNT_AT,
			     4000000000U);
	CU_ASSERT(read_crafted(&payload, 2, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "too short") != NULL);

	/* A known kind shorter than its fixed fields. */
	payload.length = 0;
	raw_record(&payload, TRACE_RECORD_STATS, &(struct bytes){ 0 });
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "stats record of 0 bytes") != NULL);

	/* Bytes after the last record that do not make a record header. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	bytes_put_u32(&payload, 0);
	CU_ASSERT(read_crafted(&payload, 1, 0, &records, error) < 0);
	CU_ASSERT(strstr(error, "cut off") != NULL);

	/* A chunk using a feature this version does not have. */
	payload.length = 0;
	raw_string(&payload, 1, "ncclAllReduce");
	CU_ASSERT_EQUAL(read_crafted(&payload, 1, 0x4, &records, error), -EPROTONOSUPPORT);
	CU_ASSERT(strstr(error, "newer tcheck-bpf") != NULL);
	free(payload.data);
}

UNIT_TEST(trace_format, random_records_never_crash_the_reader)
{
	char error[ERROR_SIZE];
	struct bytes payload = { 0 };
	unsigned seed = 12345;
	long records;

	/* Valid checksums around random contents reach every check past them. */
	for (int round = 0; round < 300; round++) {
		unsigned record_count = 0;

		payload.length = 0;
		raw_string(&payload, 1, "ncclAllReduce");
		record_count++;
		for (int i = 0; i < 1 + round % 6; i++) {
			struct bytes body = { 0 };
			unsigned kind =
				(unsigned)rand_r(&seed) % (TRACE_FORMAT_LAST_KNOWN_KIND + 2);
			size_t length = (size_t)rand_r(&seed) % 140;

			for (size_t b = 0; b < length; b++) {
				unsigned char byte = (unsigned char)rand_r(&seed);

				/* Small string ids and counts reach the decoders more often. */
				bytes_append(&body, &byte, 1);
			}
			if (kind == TRACE_RECORD_PYTHON_CALL &&
			    length >= TRACE_FORMAT_PYTHON_SIZE && rand_r(&seed) % 2) {
				trace_format_put_u32(
					body.data + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT, 1);
				trace_format_put_u32(body.data + TRACE_FORMAT_PYTHON_FILE_AT,
						     (uint32_t)rand_r(&seed) % 3);
			} else if (length >= TRACE_FORMAT_CALL_FIXED_SIZE && rand_r(&seed) % 2) {
				trace_format_put_u32(body.data + TRACE_FORMAT_CALL_FUNCTION_AT, 1);
				trace_format_put_u32(body.data + TRACE_FORMAT_CALL_PARAM_COUNT_AT,
						     (uint32_t)rand_r(&seed) % 12);
			}
			raw_record(&payload, kind, &body);
			record_count++;
			free(body.data);
		}
		if (round % 5 == 0)
			payload.length -= (size_t)rand_r(&seed) % 9;
		read_crafted(&payload, record_count, 0, &records, error);
	}
	free(payload.data);
}
