// SPDX-License-Identifier: MIT
/*
 * Tests of traces that are not whole and of compressed ones: a damaged
 * chunk costs that chunk only (on a file and on a pipe), strings it defined
 * read as lost, compressed chunks read back what was written, and a trace
 * of an older format, which has no closing chunk, is not called unclosed.
 */
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
#include "scratch_files.h"
#include "unit.h"

#define ERROR_SIZE 640
#define CALLS 4000
#define CALLS_PER_CHUNK 100
/* Where issue reports flipped a byte: inside the first chunks of any trace. */
#define FLIPPED_OFFSET 5000

/*
 * Call i: entry time 1 s + i ms, seq i, and a function name from a set the
 * first chunk defines, or, from call 2000 on, names first met there.
 */
static struct trace_record numbered_call(unsigned i, char *name, size_t name_size)
{
	struct trace_record record = { .kind = TRACE_RECORD_NCCL_CALL };

	if (i < CALLS / 2)
		snprintf(name, name_size, "ncclAllReduce%u", i % 7);
	else
		snprintf(name, name_size, "ncclLate%u", i % 300);
	record.call.entry_ns = 1000000000ULL + i * 1000000ULL;
	record.call.duration_ns = 500;
	record.call.pid = 42;
	record.call.tid = 42;
	record.call.function = name;
	record.call.seq = i;
	record.call.rank = -1;
	record.call.nranks = -1;
	record.call.step = -1;
	return record;
}

static void write_calls(const char *path, bool compress)
{
	char error[ERROR_SIZE] = "", name[32];
	struct trace_header header = { .anchor_monotonic_ns = 1000000000ULL,
				       .anchor_realtime_ns = 1800000000000000000ULL };
	struct trace_writer *writer;

	unlink(path);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_FATAL(writer != NULL);
	CU_ASSERT_EQUAL(trace_writer_set_chunk_limits(writer, CALLS_PER_CHUNK, 0), 0);
	CU_ASSERT_EQUAL(trace_writer_set_compression(writer, compress), 0);
	for (unsigned i = 0; i < CALLS; i++) {
		struct trace_record record = numbered_call(i, name, sizeof(name));

		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &record), 0);
	}
	CU_ASSERT_EQUAL_FATAL(trace_writer_close(writer, error, sizeof(error)), 0);
}

static void flip_byte(const char *path, long offset)
{
	int fd = open(path, O_RDWR);
	unsigned char byte;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(pread(fd, &byte, 1, offset), 1);
	byte ^= 0x5a;
	CU_ASSERT_EQUAL_FATAL(pwrite(fd, &byte, 1, offset), 1);
	close(fd);
}

struct damage_read {
	long records;
	long gaps;	  /* places where the seq numbers jump */
	long missing;	  /* calls the gaps leave out */
	long wrong_names; /* a name read that is neither the written one nor "(lost)" */
	long lost_names;  /* names read as "(lost)" */
	int status;
	char damage[1024]; /* trace_reader_damage(), "" when none */
	int truncated;
};

/* Reads every call, checking each against what was written for its seq. */
static void read_calls(struct trace_reader *reader, struct damage_read *read)
{
	struct trace_record record;
	long expected = 0;
	char name[32];

	memset(read, 0, sizeof(*read));
	while ((read->status = trace_reader_next(reader, &record)) > 0) {
		struct trace_record written;

		CU_ASSERT_EQUAL_FATAL(record.kind, TRACE_RECORD_NCCL_CALL);
		if (record.call.seq != expected) {
			read->gaps++;
			read->missing += record.call.seq - expected;
		}
		expected = record.call.seq + 1;
		written = numbered_call((unsigned)record.call.seq, name, sizeof(name));
		CU_ASSERT_EQUAL(record.call.entry_ns, written.call.entry_ns);
		if (strcmp(record.call.function, "(lost)") == 0)
			read->lost_names++;
		else if (strcmp(record.call.function, name) != 0)
			read->wrong_names++;
		read->records++;
	}
	read->missing += CALLS - expected;
	if (trace_reader_damage(reader))
		snprintf(read->damage, sizeof(read->damage), "%s", trace_reader_damage(reader));
	read->truncated = trace_reader_truncated(reader) != NULL;
}

static void read_file_calls(const char *path, struct damage_read *read)
{
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader = trace_reader_open(path, error, sizeof(error));

	CU_ASSERT_FATAL(reader != NULL);
	read_calls(reader, read);
	trace_reader_close(reader);
}

/* The same, with the file's bytes coming through a named pipe (nothing to seek back in). */
static void read_pipe_calls(const char *path, struct damage_read *read)
{
	const char *fifo = scratch_path("damage.fifo");
	char error[ERROR_SIZE] = "";
	struct trace_reader *reader;
	int child_status;
	pid_t child;

	unlink(fifo);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		char command[1024];

		snprintf(command, sizeof(command), "cat '%s' > '%s'", path, fifo);
		_exit(system(command) == 0 ? 0 : 1);
	}
	reader = trace_reader_open(fifo, error, sizeof(error));
	CU_ASSERT_FATAL(reader != NULL);
	read_calls(reader, read);
	trace_reader_close(reader);
	waitpid(child, &child_status, 0);
	CU_ASSERT_EQUAL(child_status, 0);
	unlink(fifo);
}

static void check_one_chunk_lost(const struct damage_read *read)
{
	CU_ASSERT_EQUAL(read->status, 0);
	CU_ASSERT_EQUAL(read->gaps, 1);
	CU_ASSERT_EQUAL(read->missing, CALLS_PER_CHUNK);
	CU_ASSERT_EQUAL(read->records, CALLS - CALLS_PER_CHUNK);
	CU_ASSERT_EQUAL(read->wrong_names, 0);
	CU_ASSERT_FALSE(read->truncated);
	CU_ASSERT(strstr(read->damage, "damaged bytes were skipped") != NULL);
	CU_ASSERT(strstr(read->damage, "reading went on at the next whole chunk") != NULL);
	CU_ASSERT(strstr(read->damage, " written between 2027-01-15T") != NULL);
}

UNIT_TEST(trace_damage, a_flipped_byte_loses_only_its_chunk)
{
	const char *path = scratch_path("flipped.trace");
	struct damage_read read;

	for (int compress = 0; compress <= 1; compress++) {
		write_calls(path, compress);
		read_file_calls(path, &read);
		CU_ASSERT_EQUAL(read.records, CALLS);
		CU_ASSERT_STRING_EQUAL(read.damage, "");

		flip_byte(path, FLIPPED_OFFSET);
		read_file_calls(path, &read);
		check_one_chunk_lost(&read);
		/* Chunks written from call 2000 on define their names anew: none is lost. */
		CU_ASSERT(read.lost_names < CALLS / 2);
		read_pipe_calls(path, &read);
		check_one_chunk_lost(&read);
	}
	unlink(path);
}

UNIT_TEST(trace_damage, strings_of_a_lost_chunk_read_as_lost)
{
	const char *path = scratch_path("lost-strings.trace");
	struct damage_read read;
	struct stat status;

	/* The first chunk's records hold the definitions of the seven early names. */
	write_calls(path, false);
	CU_ASSERT_EQUAL_FATAL(stat(path, &status), 0);
	flip_byte(path, 200);
	read_file_calls(path, &read);
	CU_ASSERT_EQUAL(read.status, 0);
	CU_ASSERT_EQUAL(read.records, CALLS - CALLS_PER_CHUNK);
	CU_ASSERT_EQUAL(read.wrong_names, 0);
	/* The early names are lost with their definitions; the late ones, defined later, are not.
	 */
	CU_ASSERT_EQUAL(read.lost_names, CALLS / 2 - CALLS_PER_CHUNK);
	unlink(path);
}

UNIT_TEST(trace_damage, damage_running_to_the_end_is_said)
{
	const char *path = scratch_path("damaged-tail.trace");
	struct damage_read read;
	struct stat status;

	write_calls(path, true);
	CU_ASSERT_EQUAL_FATAL(stat(path, &status), 0);
	/* The closing chunk's signature: nothing whole comes after it. */
	flip_byte(path,
		  status.st_size - TRACE_FORMAT_CHUNK_HEADER_SIZE - TRACE_FORMAT_CLOSING_SIZE);
	read_file_calls(path, &read);
	CU_ASSERT_EQUAL(read.records, CALLS);
	CU_ASSERT(strstr(read.damage, "nothing whole came after them") != NULL);
	/* Its closing chunk lost, the trace cannot be shown closed. */
	CU_ASSERT_TRUE(read.truncated);
	unlink(path);
}

UNIT_TEST(trace_damage, compressed_chunks_read_back_and_are_smaller)
{
	const char *plain = scratch_path("plain.trace");
	const char *compressed = scratch_path("compressed.trace");
	struct stat plain_status, compressed_status;
	struct damage_read read;

	write_calls(plain, false);
	write_calls(compressed, true);
	CU_ASSERT_EQUAL_FATAL(stat(plain, &plain_status), 0);
	CU_ASSERT_EQUAL_FATAL(stat(compressed, &compressed_status), 0);
	/* Calls differing in a few fields compress well past half. */
	CU_ASSERT(compressed_status.st_size * 4 < plain_status.st_size);
	read_file_calls(compressed, &read);
	CU_ASSERT_EQUAL(read.status, 0);
	CU_ASSERT_EQUAL(read.records, CALLS);
	CU_ASSERT_EQUAL(read.gaps, 0);
	CU_ASSERT_EQUAL(read.wrong_names, 0);
	CU_ASSERT_EQUAL(read.lost_names, 0);
	CU_ASSERT_FALSE(read.truncated);
	unlink(plain);
	unlink(compressed);
}

/* Rewrites the file header's minor version, its checksum made to match. */
static void set_minor_version(unsigned char *file, uint32_t minor)
{
	uint32_t body_length = trace_format_get_u32(file + TRACE_FORMAT_FILE_BODY_LENGTH_AT);
	uLong crc;

	trace_format_put_u32(file + TRACE_FORMAT_FILE_MINOR_AT, minor);
	crc = crc32(0L, file, TRACE_FORMAT_FILE_CRC_AT);
	crc = crc32(crc, file + TRACE_FORMAT_FILE_FIXED_SIZE, body_length);
	trace_format_put_u32(file + TRACE_FORMAT_FILE_CRC_AT, (uint32_t)crc);
}

UNIT_TEST(trace_damage, a_trace_of_format_1_4_is_not_called_unclosed)
{
	const char *path = scratch_path("format-1-4.trace");
	struct damage_read read;
	unsigned char *file;
	struct stat status;
	size_t length;
	FILE *stream;

	/* Format 1.4 had no closing chunk and no compression: drop the closing chunk. */
	write_calls(path, false);
	CU_ASSERT_EQUAL_FATAL(stat(path, &status), 0);
	length =
		(size_t)status.st_size - TRACE_FORMAT_CHUNK_HEADER_SIZE - TRACE_FORMAT_CLOSING_SIZE;
	file = malloc((size_t)status.st_size);
	CU_ASSERT_FATAL(file != NULL);
	stream = fopen(path, "rb");
	CU_ASSERT_FATAL(stream != NULL);
	CU_ASSERT_EQUAL_FATAL(fread(file, 1, (size_t)status.st_size, stream),
			      (size_t)status.st_size);
	fclose(stream);
	set_minor_version(file, 4);
	stream = fopen(path, "wb");
	CU_ASSERT_FATAL(stream != NULL);
	CU_ASSERT_EQUAL(fwrite(file, 1, length, stream), length);
	fclose(stream);
	read_file_calls(path, &read);
	CU_ASSERT_EQUAL(read.records, CALLS);
	CU_ASSERT_FALSE(read.truncated);

	/* The same bytes as format 1.6: whole chunks, no closing one. */
	set_minor_version(file, TRACE_FORMAT_CLOSING_SINCE_MINOR);
	stream = fopen(path, "wb");
	CU_ASSERT_FATAL(stream != NULL);
	CU_ASSERT_EQUAL(fwrite(file, 1, length, stream), length);
	fclose(stream);
	read_file_calls(path, &read);
	CU_ASSERT_EQUAL(read.records, CALLS);
	CU_ASSERT_TRUE(read.truncated);
	free(file);
	unlink(path);
}
