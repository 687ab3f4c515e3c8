// SPDX-License-Identifier: MIT
/* Tests of the trace file format as the writer makes it: round trips of every kind, chunking,
 * flushing, rewinding, the writer's errors. */
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
#include "trace/trace_header_local.h"
#include "trace/trace_writer.h"
#include "raw_traces.h"
#include "sample_records.h"
#include "scratch_files.h"
#include "unit.h"

UNIT_TEST(trace_format, round_trip_of_every_record_kind)
{
	const char *path = scratch_path("round-trip.trace");
	char error[ERROR_SIZE] = "";
	const struct trace_reader_stats *stats;
	const struct trace_header *read_header;
	struct trace_header header;
	struct trace_reader *reader;
	int status;

	write_samples(path, 4 * SAMPLE_KINDS, 1000, NULL, NULL);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	test_header(&header);
	read_header = trace_reader_header(reader);
	CU_ASSERT_EQUAL(read_header->format_version, TRACE_FORMAT_VERSION_MAJOR);
	CU_ASSERT_STRING_EQUAL(read_header->hostname, header.hostname);
	CU_ASSERT_STRING_EQUAL(read_header->boot_id, header.boot_id);
	CU_ASSERT_STRING_EQUAL(read_header->command_line, header.command_line);
	CU_ASSERT_EQUAL(read_header->anchor_monotonic_ns, header.anchor_monotonic_ns);
	CU_ASSERT_EQUAL(read_header->anchor_realtime_ns, header.anchor_realtime_ns);

	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 4 * SAMPLE_KINDS);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &(struct trace_record){ 0 }), 0);
	CU_ASSERT_PTR_NULL(trace_reader_truncated(reader));
	CU_ASSERT_PTR_NULL(trace_reader_note(reader));
	stats = trace_reader_stats(reader);
	CU_ASSERT_EQUAL(stats->records, 4 * SAMPLE_KINDS);
	for (unsigned kind = TRACE_RECORD_NCCL_CALL; kind <= TRACE_FORMAT_LAST_KNOWN_KIND; kind++)
		CU_ASSERT_EQUAL(stats->records_by_kind[kind], 4);
	CU_ASSERT_EQUAL(stats->chunks, 1);
	CU_ASSERT_EQUAL(stats->unknown_records, 0);
	CU_ASSERT_FALSE(stats->truncated);
	/* The reader keeps the last stats record: the recording's loss counters. */
	for (unsigned index = 4 * SAMPLE_KINDS; index-- > 0;) {
		struct trace_record last = sample_record(index);

		if (last.kind != TRACE_RECORD_STATS)
			continue;
		CU_ASSERT_EQUAL(memcmp(&stats->recorded_counters, &last.stats, sizeof(last.stats)),
				0);
		break;
	}
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, stats_of_format_1_2_have_no_python_losses)
{
	const char *path = scratch_path("stats-1.2.trace");
	char error[ERROR_SIZE] = "";
	struct bytes file = { 0 }, payload = { 0 }, body = { 0 };
	struct trace_reader *reader;
	struct trace_record record;

	raw_file_header(&file, TRACE_FORMAT_VERSION_MAJOR, 2);
	memset(bytes_extend(&body, TRACE_FORMAT_STATS_SIZE), 0, TRACE_FORMAT_STATS_SIZE);
	trace_format_put_u64(body.data + TRACE_FORMAT_STATS_RINGBUF_DROPS_AT, 9);
	trace_format_put_u64(body.data + TRACE_FORMAT_STATS_PROCESS_DROPS_AT, 2);
	raw_record(&payload, TRACE_RECORD_STATS, &body);
	raw_chunk(&file, &payload, 1, (uint32_t)payload.length, 0);
	write_file(path, file.data, file.length);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(record.kind, TRACE_RECORD_STATS);
	CU_ASSERT_EQUAL(record.stats.ringbuf_drops, 9);
	CU_ASSERT_EQUAL(record.stats.process_drops, 2);
	CU_ASSERT_EQUAL(record.stats.python_events_lost, 0);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->recorded_counters.ringbuf_drops, 9);
	CU_ASSERT_PTR_NULL(trace_reader_note(reader));
	trace_reader_close(reader);
	free(body.data);
	free(payload.data);
	free(file.data);
	unlink(path);
}

UNIT_TEST(trace_format, many_chunks_and_interned_strings)
{
	const char *path = scratch_path("many-chunks.trace");
	char error[ERROR_SIZE] = "";
	struct trace_writer_stats written;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_reader *reader;
	struct trace_record record;
	unsigned count = 0;
	int status;

	/* One call per chunk: later chunks must reuse the ids the first ones defined. */
	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, 1, 0), 0);
	for (unsigned i = 0; i < 300; i++) {
		record = sample_record(0);
		record.call.function = sample_function_names[i % 3];
		record.call.seq = i;
		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	trace_writer_get_stats(writer, &written);
	CU_ASSERT_EQUAL(written.chunks, 300);
	CU_ASSERT_EQUAL(written.strings, 3);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);

	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	while ((status = trace_reader_next(reader, &record)) > 0) {
		CU_ASSERT_STRING_EQUAL(record.call.function, sample_function_names[count % 3]);
		CU_ASSERT_EQUAL(record.call.seq, count);
		count++;
	}
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(count, 300);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->chunks, 300);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->strings, 3);
	trace_reader_close(reader);

	/* Mixed kinds, several per chunk, over many chunks. */
	write_samples(path, 1000, 7, NULL, NULL);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 1000);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->chunks, (1000 + 6) / 7);
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, chunk_byte_limit)
{
	const char *path = scratch_path("byte-limit.trace");
	char error[ERROR_SIZE] = "";
	struct trace_writer_stats written;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_reader *reader;
	int status;

	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, 0, 1024), 0);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, 0, TRACE_WRITER_MAX_CHUNK_BYTES + 1),
			-EINVAL);
	for (unsigned i = 0; i < 200; i++) {
		struct trace_record record = sample_record(i);

		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	trace_writer_get_stats(writer, &written);
	/* Each chunk closes at the first record that takes it past 1 KiB. */
	CU_ASSERT(written.chunks >= 200 * 100 / 2048);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 200);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT(trace_reader_stats(reader)->chunks >= written.chunks);
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, flushed_chunks_survive_a_writer_that_never_closes)
{
	const char *path = scratch_path("killed.trace");
	char error[ERROR_SIZE] = "";
	struct trace_writer_stats written;
	struct trace_header header;
	struct trace_writer *writer;
	struct trace_reader *reader;
	struct stat status_before;
	int status;

	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	for (unsigned i = 0; i < 10; i++) {
		struct trace_record record = sample_record(i);

		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	/* Nothing reaches the file before a flush: never half a chunk. */
	CU_ASSERT_EQUAL(stat(path, &status_before), 0);
	trace_writer_get_stats(writer, &written);
	CU_ASSERT_EQUAL((uint64_t)status_before.st_size, written.bytes);
	CU_ASSERT_EQUAL(trace_writer_flush(writer), 0);
	CU_ASSERT_EQUAL(trace_writer_flush(writer), 0);
	trace_writer_get_stats(writer, &written);
	CU_ASSERT_EQUAL(written.chunks, 1);

	/* Read while the writer is still open, as after a kill -9. */
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 10);
	CU_ASSERT_EQUAL(status, 0);
	/* Whole chunks, but no closing one: the reader says when the last record was written. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(trace_reader_truncated(reader));
	CU_ASSERT(strstr(trace_reader_truncated(reader), "was not closed by its recorder") != NULL);
	CU_ASSERT(strstr(trace_reader_truncated(reader), "its last record was written at") != NULL);
	CU_ASSERT_TRUE(trace_reader_stats(reader)->unclosed);
	CU_ASSERT_FALSE(trace_reader_stats(reader)->truncated);
	trace_reader_close(reader);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);

	/* Closed: nothing to say. */
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 10);
	CU_ASSERT_PTR_NULL(trace_reader_truncated(reader));
	CU_ASSERT_FALSE(trace_reader_stats(reader)->unclosed);
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, rewind_reads_the_trace_again)
{
	const char *path = scratch_path("rewind.trace");
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	struct trace_record record;
	const char *first_function;
	int status;

	write_samples(path, 50, 4, NULL, NULL);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	first_function = record.call.function;
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), -1);
	CU_ASSERT_EQUAL(trace_reader_rewind(reader), 0);
	CU_ASSERT_EQUAL(read_and_compare(reader, &status), 50);
	CU_ASSERT_EQUAL(status, 0);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->records, 50);
	CU_ASSERT_EQUAL(trace_reader_stats(reader)->chunks, 13);
	/* Strings from the first pass are still the same memory. */
	CU_ASSERT_STRING_EQUAL(first_function, "ncclAllReduce");
	trace_reader_close(reader);
	unlink(path);
}

UNIT_TEST(trace_format, writer_errors_are_sentences)
{
	char error[ERROR_SIZE] = "";
	struct trace_header header;
	struct trace_record record = sample_record(0);
	struct trace_writer *writer;

	test_header(&header);
	writer = trace_writer_new("/nonexistent-directory/x.trace", &header, error, sizeof(error));
	CU_ASSERT_PTR_NULL(writer);
	CU_ASSERT_EQUAL(errno, ENOENT);
	CU_ASSERT(strstr(error, "/nonexistent-directory/x.trace") != NULL);
	CU_ASSERT(strstr(error, "No such file") != NULL);

	writer = trace_writer_new(scratch_path("invalid.trace"), &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	record.call.param_count = NCCL_MAX_PARAMS + 1;
	CU_ASSERT_EQUAL(trace_writer_add(writer, &record), -EINVAL);
	CU_ASSERT(strstr(trace_writer_error(writer), "parameters") != NULL);
	record.kind = (enum trace_record_kind)42;
	CU_ASSERT_EQUAL(trace_writer_add(writer, &record), -EINVAL);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
	unlink(scratch_path("invalid.trace"));

	/* A full disk: the writer stops and says why. */
	writer = trace_writer_new("/dev/full", &header, error, sizeof(error));
	if (writer)
		trace_writer_close(writer, error, sizeof(error));
	else
		CU_ASSERT(strstr(error, "/dev/full") != NULL);
}

UNIT_TEST(trace_format, long_strings_are_cut_to_the_limit)
{
	const char *path = scratch_path("long-string.trace");
	char error[ERROR_SIZE] = "";
	struct trace_header header;
	struct trace_record record = sample_record(1);
	struct trace_writer *writer;
	struct trace_reader *reader;
	char *command = malloc(TRACE_FORMAT_MAX_STRING + 100);

	if (!command) {
		CU_FAIL("out of memory");
		return;
	}
	memset(command, 'x', TRACE_FORMAT_MAX_STRING + 99);
	command[TRACE_FORMAT_MAX_STRING + 99] = '\0';
	record.process.command = command;
	test_header(&header);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_add(writer, &record), 0);
	CU_ASSERT_EQUAL(trace_writer_close(writer, error, sizeof(error)), 0);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	CU_ASSERT_EQUAL(trace_reader_next(reader, &record), 1);
	CU_ASSERT_EQUAL(strlen(record.process.command), TRACE_FORMAT_MAX_STRING);
	trace_reader_close(reader);
	free(command);
	unlink(path);
}

UNIT_TEST(trace_format, local_header)
{
	char *const arguments[] = { "tcheck-bpf", "record", "-o", "x.trace", NULL };
	char error[ERROR_SIZE] = "";
	struct trace_header header;

	CU_ASSERT_EQUAL(trace_header_init_local(&header, 4, arguments, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(header.format_version, TRACE_FORMAT_VERSION_MAJOR);
	CU_ASSERT(header.hostname[0] != '\0');
	CU_ASSERT_STRING_EQUAL(header.command_line, "tcheck-bpf record -o x.trace");
	CU_ASSERT(header.anchor_monotonic_ns > 0);
	/* Later than 2020: the wall clock part is a real date. */
	CU_ASSERT(header.anchor_realtime_ns > 1577836800ULL * 1000000000ULL);
	if (access("/proc/sys/kernel/random/boot_id", R_OK) == 0)
		CU_ASSERT_EQUAL(strlen(header.boot_id), 36);

	CU_ASSERT_EQUAL(trace_header_init_local(&header, 0, NULL, error, sizeof(error)), 0);
	CU_ASSERT(header.command_line[0] != '\0');
}
