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

#include "base/command_text.h"
#include "base/error_message.h"
#include "base/output_file.h"
#include "base/string_interner.h"
#include "base/system_clock.h"
#include "trace/trace_chunk_codec.h"
#include "trace/trace_format.h"

#define ERROR_MESSAGE_SIZE 512
#define CLOCK_ANCHOR_ATTEMPTS 5

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

static uint64_t timespec_ns(const struct timespec *time)
{
	return (uint64_t)time->tv_sec * 1000000000ULL + (uint64_t)time->tv_nsec;
}

/*
 * Reads the wall clock between two monotonic reads and keeps the attempt
 * with the narrowest window, so a preemption in one attempt costs nothing.
 */
static int read_clock_anchor(uint64_t *monotonic_ns, uint64_t *realtime_ns)
{
	uint64_t narrowest = UINT64_MAX;

	for (int attempt = 0; attempt < CLOCK_ANCHOR_ATTEMPTS; attempt++) {
		struct timespec before, wall, after;
		uint64_t window;

		if (clock_gettime(CLOCK_MONOTONIC, &before) ||
		    clock_gettime(CLOCK_REALTIME, &wall) || clock_gettime(CLOCK_MONOTONIC, &after))
			return -errno;
		window = timespec_ns(&after) - timespec_ns(&before);
		if (window < narrowest) {
			narrowest = window;
			*monotonic_ns = timespec_ns(&before) + window / 2;
			*realtime_ns = timespec_ns(&wall);
		}
	}
	return 0;
}

/* Reads a small file into 'buffer' (NUL-terminated); returns the length or -errno. */
static ssize_t read_small_file(const char *path, char *buffer, size_t size)
{
	size_t length = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	while (length + 1 < size) {
		ssize_t got = read(fd, buffer + length, size - 1 - length);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			int saved = errno;

			close(fd);
			return -saved;
		}
		if (got == 0)
			break;
		length += (size_t)got;
	}
	close(fd);
	buffer[length] = '\0';
	return (ssize_t)length;
}

int trace_header_init_local(struct trace_header *header, int argc, char *const argv[], char *error,
			    size_t error_size)
{
	ssize_t length;
	int err;

	memset(header, 0, sizeof(*header));
	header->format_version = TRACE_FORMAT_VERSION_MAJOR;
	if (gethostname(header->hostname, sizeof(header->hostname) - 1)) {
		err = -errno;
		error_format(error, error_size, "could not read this machine's host name: %s",
			     strerror(-err));
		return err;
	}
	header->hostname[sizeof(header->hostname) - 1] = '\0';

	/* A missing boot id only weakens cross-trace checks: leave it empty. */
	length = read_small_file("/proc/sys/kernel/random/boot_id", header->boot_id,
				 sizeof(header->boot_id));
	while (length > 0 &&
	       (header->boot_id[length - 1] == '\n' || header->boot_id[length - 1] == ' '))
		header->boot_id[--length] = '\0';
	if (length < 0)
		header->boot_id[0] = '\0';

	err = read_clock_anchor(&header->anchor_monotonic_ns, &header->anchor_realtime_ns);
	if (err) {
		error_format(error, error_size,
			     "could not read the system clocks for the trace's time anchor: %s",
			     strerror(-err));
		return err;
	}

	if (argv) {
		command_text_join(header->command_line, sizeof(header->command_line), argc, argv);
		return 0;
	}
	length = read_small_file("/proc/self/cmdline", header->command_line,
				 sizeof(header->command_line));
	if (length < 0) {
		header->command_line[0] = '\0';
		return 0;
	}
	/* Arguments are NUL-separated there; the last NUL ends the list. */
	while (length > 0 && header->command_line[length - 1] == '\0')
		length--;
	for (ssize_t i = 0; i < length; i++)
		if (header->command_line[i] == '\0')
			header->command_line[i] = ' ';
	header->command_line[length] = '\0';
	return 0;
}

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
	size_t needed = writer->chunk_length + more;
	size_t capacity = writer->chunk_capacity;
	unsigned char *grown;

	if (needed <= capacity)
		return 0;
	while (capacity < needed)
		capacity *= 2;
	grown = realloc(writer->chunk, capacity);
	if (!grown)
		return -ENOMEM;
	writer->chunk = grown;
	writer->chunk_capacity = capacity;
	return 0;
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

/* A Python stack: its depth, then the string ids of its frames. Returns the bytes written. */
static size_t encode_stack(unsigned char *at, uint32_t depth, const uint32_t frame_ids[])
{
	trace_format_put_u32(at, depth);
	for (uint32_t i = 0; i < depth; i++)
		trace_format_put_u32(at + 4 + TRACE_FORMAT_STACK_FRAME_SIZE * i, frame_ids[i]);
	return 4 + TRACE_FORMAT_STACK_FRAME_SIZE * (size_t)depth;
}

static size_t stack_size(uint32_t depth)
{
	return 4 + TRACE_FORMAT_STACK_FRAME_SIZE * (size_t)depth;
}

/*
 * The strings of a record, in the order its encoder takes their ids:
 * NCCL call: function, stack frames. Python call: name, file, stack
 * frames, then for each argument its name and, for a str, its value.
 * Arrival state: collective, blocked-in, waiting, doing, missed, frames.
 */
#define MAX_RECORD_STRINGS (3 + TRACE_PY_STACK_MAX + 2 * TRACE_PY_ARGS_MAX)

static int collect_strings(const struct trace_record *record, const char *texts[])
{
	const struct trace_python_call *python = &record->python_call;
	int count = 0;

	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		texts[count++] = record->call.function;
		for (uint32_t i = 0; i < record->call.py_stack.depth; i++)
			texts[count++] = record->call.py_stack.frames[i];
		break;
	case TRACE_RECORD_PROCESS:
		texts[count++] = record->process.command;
		break;
	case TRACE_RECORD_COMMUNICATOR:
		texts[count++] = record->communicator.note;
		break;
	case TRACE_RECORD_LIBRARY:
		texts[count++] = record->library.path;
		texts[count++] = record->library.build_id;
		break;
	case TRACE_RECORD_STATS:
	case TRACE_RECORD_NETWORK:
	case TRACE_RECORD_ACTIVITY:
		break;
	case TRACE_RECORD_ARRIVAL:
		texts[count++] = record->arrival.collective;
		texts[count++] = record->arrival.blocked_in;
		texts[count++] = record->arrival.waiting;
		texts[count++] = record->arrival.doing;
		texts[count++] = record->arrival.missed;
		for (uint32_t i = 0; i < record->arrival.py_stack.depth; i++)
			texts[count++] = record->arrival.py_stack.frames[i];
		break;
	case TRACE_RECORD_PYTHON_CALL:
		texts[count++] = python->qualified_name;
		texts[count++] = python->file;
		for (uint32_t i = 0; i < python->py_stack.depth; i++)
			texts[count++] = python->py_stack.frames[i];
		for (uint32_t i = 0; i < python->arg_count; i++) {
			texts[count++] = python->args[i].name;
			if (python->args[i].type == TRACE_VALUE_STR)
				texts[count++] = python->args[i].text;
		}
		break;
	}
	return count;
}

static void encode_call(unsigned char *body, const struct trace_nccl_call *call,
			const uint32_t string_ids[])
{
	uint32_t function_id = string_ids[0];
	unsigned char *context;

	trace_format_put_u64(body + TRACE_FORMAT_CALL_ENTRY_NS_AT, call->entry_ns);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_DURATION_NS_AT, call->duration_ns);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_PID_AT, call->pid);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_TID_AT, call->tid);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_FUNCTION_AT, function_id);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_RESULT_AT, (uint32_t)call->result);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_DEPTH_AT, call->depth);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_GROUP_DEPTH_AT, call->group_depth);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_FLAGS_AT, call->flags);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_PARAM_COUNT_AT, call->param_count);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_OUT_VALUE_AT, call->out_value);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_UNIQUE_ID_HASH_AT, call->unique_id_hash);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_COMM_AT, call->comm);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_COMM_ID_AT, call->comm_id);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_RANK_AT, (uint32_t)call->rank);
	trace_format_put_u32(body + TRACE_FORMAT_CALL_NRANKS_AT, (uint32_t)call->nranks);
	trace_format_put_u64(body + TRACE_FORMAT_CALL_SEQ_AT, (uint64_t)call->seq);
	for (uint32_t i = 0; i < call->param_count; i++)
		trace_format_put_u64(body + TRACE_FORMAT_CALL_PARAMS_AT + 8 * i, call->params[i]);

	context = body + TRACE_FORMAT_CALL_PARAMS_AT + 8 * (size_t)call->param_count;
	trace_format_put_u32(context + TRACE_FORMAT_CALL_STEP_AT, (uint32_t)call->step);
	trace_format_put_u32(context + TRACE_FORMAT_CALL_STAGE_AT, call->stage);
	encode_stack(context + TRACE_FORMAT_CALL_STACK_AT, call->py_stack.depth, string_ids + 1);
}

static void encode_process(unsigned char *body, const struct trace_process *process,
			   uint32_t command_id)
{
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_PID_AT, process->pid);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_PARENT_PID_AT, process->parent_pid);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_RANK_AT, (uint32_t)process->rank);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_LOCAL_RANK_AT,
			     (uint32_t)process->local_rank);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_WORLD_SIZE_AT,
			     (uint32_t)process->world_size);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_EXIT_CODE_AT,
			     (uint32_t)process->exit_code);
	trace_format_put_u64(body + TRACE_FORMAT_PROCESS_START_NS_AT, process->start_ns);
	trace_format_put_u64(body + TRACE_FORMAT_PROCESS_END_NS_AT, process->end_ns);
	trace_format_put_u32(body + TRACE_FORMAT_PROCESS_COMMAND_AT, command_id);
}

static void encode_communicator(unsigned char *body, const struct trace_communicator *comm,
				uint32_t note_id)
{
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_PID_AT, comm->pid);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_ORIGIN_AT, comm->origin);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_HANDLE_AT, comm->handle);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_COMM_ID_AT, comm->comm_id);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_PARENT_COMM_ID_AT,
			     comm->parent_comm_id);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_RANK_AT, (uint32_t)comm->rank);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_NRANKS_AT, (uint32_t)comm->nranks);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_COLOR_AT, (uint32_t)comm->color);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_SPLIT_INDEX_AT, comm->split_index);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_NCCL_COMM_HASH_AT,
			     comm->nccl_comm_hash);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_SEQ_BASE_AT,
			     (uint64_t)comm->seq_base);
	trace_format_put_u64(body + TRACE_FORMAT_COMMUNICATOR_SEEN_NS_AT, comm->seen_ns);
	trace_format_put_u32(body + TRACE_FORMAT_COMMUNICATOR_NOTE_AT, note_id);
}

static void encode_library(unsigned char *body, const struct trace_library *library,
			   const uint32_t string_ids[2])
{
	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_PID_AT, library->pid);
	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_FUNCTIONS_ATTACHED_AT,
			     library->functions_attached);
	trace_format_put_u64(body + TRACE_FORMAT_LIBRARY_ATTACHED_NS_AT, library->attached_ns);
	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_PATH_AT, string_ids[0]);
	trace_format_put_u32(body + TRACE_FORMAT_LIBRARY_BUILD_ID_AT, string_ids[1]);
}

static void encode_network(unsigned char *body, const struct trace_network_sample *sample)
{
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_TIMESTAMP_NS_AT, sample->timestamp_ns);
	trace_format_put_u32(body + TRACE_FORMAT_NETWORK_PID_AT, sample->pid);
	trace_format_put_u32(body + TRACE_FORMAT_NETWORK_SOURCE_AT, sample->source);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_REQUESTS_POSTED_AT,
			     sample->requests_posted);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_REQUESTS_SIGNALLED_AT,
			     sample->requests_signalled);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_COMPLETIONS_AT, sample->completions);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_COMPLETION_ERRORS_AT,
			     sample->completion_errors);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_BYTES_POSTED_AT, sample->bytes_posted);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_BYTES_COMPLETED_AT,
			     sample->bytes_completed);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_LAST_POST_NS_AT, sample->last_post_ns);
	trace_format_put_u64(body + TRACE_FORMAT_NETWORK_LAST_COMPLETION_NS_AT,
			     sample->last_completion_ns);
}

static void encode_activity(unsigned char *body, const struct trace_activity_sample *sample)
{
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_TIMESTAMP_NS_AT, sample->timestamp_ns);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_PID_AT, sample->pid);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_AT, sample->threads);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_RUNNING_AT,
			     sample->threads_running);
	trace_format_put_u32(body + TRACE_FORMAT_ACTIVITY_THREADS_IO_WAIT_AT,
			     sample->threads_io_wait);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_CPU_NS_AT, sample->cpu_ns);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_READ_BYTES_AT, sample->read_bytes);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_WRITE_BYTES_AT, sample->write_bytes);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_READ_CHARS_AT, sample->read_chars);
	trace_format_put_u64(body + TRACE_FORMAT_ACTIVITY_WRITE_CHARS_AT, sample->write_chars);
}

static void encode_arrival(unsigned char *body, const struct trace_arrival_state *state,
			   const uint32_t string_ids[])
{
	trace_format_put_u64(body + TRACE_FORMAT_ARRIVAL_TIMESTAMP_NS_AT, state->timestamp_ns);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_PID_AT, state->pid);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_RANK_AT, (uint32_t)state->rank);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_FLAGS_AT, state->flags);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_NRANKS_AT, (uint32_t)state->nranks);
	trace_format_put_u64(body + TRACE_FORMAT_ARRIVAL_SEQ_AT, (uint64_t)state->seq);
	trace_format_put_u64(body + TRACE_FORMAT_ARRIVAL_COMM_HASH_AT, state->comm_hash);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_COLLECTIVE_AT, string_ids[0]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_BLOCKED_IN_AT, string_ids[1]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_WAITING_AT, string_ids[2]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_DOING_AT, string_ids[3]);
	trace_format_put_u32(body + TRACE_FORMAT_ARRIVAL_MISSED_AT, string_ids[4]);
	encode_stack(body + TRACE_FORMAT_ARRIVAL_STACK_AT, state->py_stack.depth, string_ids + 5);
}

static void encode_stats(unsigned char *body, const struct trace_stats *stats)
{
	trace_format_put_u64(body + TRACE_FORMAT_STATS_TIMESTAMP_NS_AT, stats->timestamp_ns);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_CALLS_AT, stats->calls);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_RINGBUF_DROPS_AT, stats->ringbuf_drops);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_UNMATCHED_RETURNS_AT,
			     stats->unmatched_returns);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_NESTING_OVERFLOWS_AT,
			     stats->nesting_overflows);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_FILTERED_AT, stats->filtered);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_PROCESS_DROPS_AT, stats->process_drops);
	trace_format_put_u64(body + TRACE_FORMAT_STATS_PYTHON_EVENTS_LOST_AT,
			     stats->python_events_lost);
}

static void encode_python_call(unsigned char *body, const struct trace_python_call *call,
			       const uint32_t string_ids[])
{
	const uint32_t *next_id;
	unsigned char *at;

	trace_format_put_u64(body + TRACE_FORMAT_PYTHON_ENTRY_NS_AT, call->entry_ns);
	trace_format_put_u64(body + TRACE_FORMAT_PYTHON_DURATION_NS_AT, call->duration_ns);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_PID_AT, call->pid);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_TID_AT, call->tid);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_DEPTH_AT, call->depth);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_FLAGS_AT, call->flags);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_FIRST_LINE_AT, (uint32_t)call->first_line);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_STEP_AT, (uint32_t)call->step);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT, string_ids[0]);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_FILE_AT, string_ids[1]);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_STAGE_AT, call->stage);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_RANK_AT, (uint32_t)call->rank);
	trace_format_put_u32(body + TRACE_FORMAT_PYTHON_WORLD_SIZE_AT, (uint32_t)call->world_size);
	at = body + TRACE_FORMAT_PYTHON_STACK_AT;
	at += encode_stack(at, call->py_stack.depth, string_ids + 2);
	next_id = string_ids + 2 + call->py_stack.depth;
	trace_format_put_u32(at, call->arg_count);
	at += 4;
	for (uint32_t i = 0; i < call->arg_count; i++, at += TRACE_FORMAT_ARGUMENT_SIZE) {
		const struct trace_python_arg *arg = &call->args[i];
		uint64_t value = 0;

		trace_format_put_u32(at + TRACE_FORMAT_ARGUMENT_NAME_AT, *next_id++);
		trace_format_put_u32(at + TRACE_FORMAT_ARGUMENT_TYPE_AT, arg->type);
		if (arg->type == TRACE_VALUE_STR)
			value = *next_id++;
		else if (arg->type == TRACE_VALUE_FLOAT)
			memcpy(&value, &arg->real, sizeof(value));
		else if (arg->type == TRACE_VALUE_INT || arg->type == TRACE_VALUE_BOOL)
			value = (uint64_t)arg->integer;
		trace_format_put_u64(at + TRACE_FORMAT_ARGUMENT_VALUE_AT, value);
	}
}

static size_t python_call_size(const struct trace_python_call *call)
{
	return TRACE_FORMAT_PYTHON_STACK_AT + stack_size(call->py_stack.depth) + 4 +
	       TRACE_FORMAT_ARGUMENT_SIZE * (size_t)call->arg_count;
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
	const char *texts[MAX_RECORD_STRINGS];
	uint32_t ids[MAX_RECORD_STRINGS] = { 0 };
	unsigned char *body;
	size_t size;
	int err;

	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		if (record->call.param_count > NCCL_MAX_PARAMS)
			return reject_record(writer,
					     "a call has more parameters than NCCL_MAX_PARAMS");
		if (record->call.py_stack.depth > TRACE_PY_STACK_MAX)
			return reject_record(writer, "a call has a Python stack too deep");
		size = TRACE_FORMAT_CALL_FIXED_SIZE + 8 * (size_t)record->call.param_count +
		       TRACE_FORMAT_CALL_CONTEXT_FIXED_SIZE +
		       stack_size(record->call.py_stack.depth);
		break;
	case TRACE_RECORD_PROCESS:
		size = TRACE_FORMAT_PROCESS_SIZE;
		break;
	case TRACE_RECORD_COMMUNICATOR:
		size = TRACE_FORMAT_COMMUNICATOR_SIZE;
		break;
	case TRACE_RECORD_LIBRARY:
		size = TRACE_FORMAT_LIBRARY_SIZE;
		break;
	case TRACE_RECORD_STATS:
		size = TRACE_FORMAT_STATS_SIZE_1_3;
		break;
	case TRACE_RECORD_PYTHON_CALL:
		if (record->python_call.py_stack.depth > TRACE_PY_STACK_MAX ||
		    record->python_call.arg_count > TRACE_PY_ARGS_MAX)
			return reject_record(writer,
					     "a Python call has too many frames or arguments");
		size = python_call_size(&record->python_call);
		break;
	case TRACE_RECORD_NETWORK:
		size = TRACE_FORMAT_NETWORK_SIZE;
		break;
	case TRACE_RECORD_ACTIVITY:
		size = TRACE_FORMAT_ACTIVITY_SIZE;
		break;
	case TRACE_RECORD_ARRIVAL:
		if (record->arrival.py_stack.depth > TRACE_PY_STACK_MAX)
			return reject_record(writer,
					     "an arrival state has a Python stack too deep");
		size = TRACE_FORMAT_ARRIVAL_STACK_AT + stack_size(record->arrival.py_stack.depth);
		break;
	default:
		return reject_record(writer, "the record is of an unknown kind");
	}
	err = intern_strings(writer, texts, ids, collect_strings(record, texts));
	if (!err)
		err = reserve_chunk(writer, TRACE_FORMAT_RECORD_HEADER_SIZE + size);
	if (err) {
		error_format(writer->error, sizeof(writer->error),
			     "could not add a record to %s: %s", writer->path, strerror(-err));
		return err;
	}

	body = append_record(writer, record->kind, size);
	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		encode_call(body, &record->call, ids);
		break;
	case TRACE_RECORD_PROCESS:
		encode_process(body, &record->process, ids[0]);
		break;
	case TRACE_RECORD_COMMUNICATOR:
		encode_communicator(body, &record->communicator, ids[0]);
		break;
	case TRACE_RECORD_LIBRARY:
		encode_library(body, &record->library, ids);
		break;
	case TRACE_RECORD_STATS:
		encode_stats(body, &record->stats);
		break;
	case TRACE_RECORD_PYTHON_CALL:
		encode_python_call(body, &record->python_call, ids);
		break;
	case TRACE_RECORD_NETWORK:
		encode_network(body, &record->network);
		break;
	case TRACE_RECORD_ACTIVITY:
		encode_activity(body, &record->activity);
		break;
	case TRACE_RECORD_ARRIVAL:
		encode_arrival(body, &record->arrival, ids);
		break;
	}
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
