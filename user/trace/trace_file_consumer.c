// SPDX-License-Identifier: MIT
/* Writes a recording's records into its trace file, or its pieces, as one of its consumers. */
#include "trace/trace_file_consumer.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/growable_array.h"
#include "base/log.h"
#include "base/output_file.h"
#include "base/system_clock.h"
#include "model/trace_records.h"
#include "trace/trace_header_local.h"
#include "trace/trace_pieces.h"
#include "trace/trace_writer.h"

/* With --max-size, chunks of an eighth of it (4 KiB to the writer's default) bound the overshoot.
 */
#define PIECE_CHUNKS 8
#define SMALLEST_PIECE_CHUNK 4096U

/* Opens the next piece (or the only file); 0, or -1 after saying why. */
static int open_piece(struct trace_file_consumer *file, unsigned output_flags)
{
	struct trace_header header;
	char error[512];

	if (trace_header_init_local(&header, file->argc, file->argv, error, sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	if (!file->pieces_closed)
		file->wall_offset_ns =
			(int64_t)(header.anchor_realtime_ns - header.anchor_monotonic_ns);
	file->writer = trace_writer_open(file->path, &header, output_flags, error, sizeof(error));
	if (!file->writer) {
		log_error("%s", error);
		return -1;
	}
	if (file->max_size) {
		uint64_t chunk = file->max_size / PIECE_CHUNKS;

		if (chunk > TRACE_WRITER_DEFAULT_CHUNK_BYTES)
			chunk = TRACE_WRITER_DEFAULT_CHUNK_BYTES;
		if (chunk < SMALLEST_PIECE_CHUNK)
			chunk = SMALLEST_PIECE_CHUNK;
		trace_writer_set_chunk_limits(file->writer, 0, (uint32_t)chunk);
	}
	return 0;
}

/* Pieces need a regular file and no pieces of an earlier recording beside it; 0 or -1 (said). */
static int check_piece_path(const struct trace_file_consumer *file)
{
	char found[PATH_MAX];
	struct stat status;
	int err;

	if (output_file_is_standard(file->path) ||
	    (stat(file->path, &status) == 0 && !S_ISREG(status.st_mode))) {
		log_error("--max-size cuts the trace into files: -o %s is not a regular file",
			  file->path);
		return -1;
	}
	err = trace_pieces_find_any(file->path, found, sizeof(found));
	if (err < 0) {
		log_error("cannot look for earlier pieces of %s: %s", file->path, strerror(-err));
		return -1;
	}
	if (err > 0) {
		/* Rotation would rename onto it: the user's file is never overwritten. */
		log_error("%s is a piece of an earlier recording, which rotation would replace: "
			  "move or remove it first (--force replaces only %s)",
			  found, file->path);
		return -1;
	}
	return 0;
}

int trace_file_consumer_check(const struct trace_file_consumer *file)
{
	struct stat status;

	if (!file->replace_existing && !output_file_is_standard(file->path) &&
	    stat(file->path, &status) == 0 && S_ISREG(status.st_mode)) {
		log_error("cannot write %s: the file exists (give --force to replace it)",
			  file->path);
		return -1;
	}
	return file->max_size ? check_piece_path(file) : 0;
}

static int start(void *context)
{
	struct trace_file_consumer *file = context;

	string_interner_init(&file->context_strings);
	if (file->max_size && check_piece_path(file))
		return -1;
	if (file->max_files) {
		file->kept = calloc(file->max_files, sizeof(*file->kept));
		if (!file->kept) {
			log_error("out of memory");
			return -1;
		}
	}
	return open_piece(file, file->replace_existing ? 0 : OUTPUT_FILE_REFUSE_EXISTING);
}

/* A copy of a record that says who is who, its strings kept, for the pieces to come. */
static int keep_context(struct trace_file_consumer *file, const struct trace_record *record)
{
	struct string_interner *strings = &file->context_strings;
	struct trace_record *copy;

	if (record->kind != TRACE_RECORD_PROCESS && record->kind != TRACE_RECORD_COMMUNICATOR &&
	    record->kind != TRACE_RECORD_LIBRARY)
		return 0;
	if (growable_array_room_for_one((void **)&file->context, file->context_count,
					&file->context_capacity, sizeof(*file->context)))
		return -ENOMEM;
	copy = &file->context[file->context_count];
	*copy = *record;
	if (record->kind == TRACE_RECORD_PROCESS) {
		copy->process.command = string_interner_intern(strings, record->process.command);
		if (!copy->process.command)
			return -ENOMEM;
	} else if (record->kind == TRACE_RECORD_COMMUNICATOR) {
		copy->communicator.note =
			string_interner_intern(strings, record->communicator.note);
		if (!copy->communicator.note)
			return -ENOMEM;
	} else {
		copy->library.path = string_interner_intern(strings, record->library.path);
		copy->library.build_id = string_interner_intern(strings, record->library.build_id);
		if (!copy->library.path || !copy->library.build_id)
			return -ENOMEM;
	}
	file->context_count++;
	return 0;
}

/*
 * Whether the tracing saw the creation of the communicator the call is on:
 * its seq then counts from 0 there on every rank.
 */
static bool comm_seen_created(const struct trace_file_consumer *file,
			      const struct trace_nccl_call *call)
{
	for (size_t i = file->context_count; i-- > 0;) {
		const struct trace_communicator *comm = &file->context[i].communicator;

		if (file->context[i].kind == TRACE_RECORD_COMMUNICATOR && comm->pid == call->pid &&
		    comm->handle == call->comm)
			return comm->origin == TRACE_COMM_CREATED ||
			       comm->origin == TRACE_COMM_SPLIT;
	}
	return false;
}

/*
 * Writes a record into the current piece. A piece after the first does not
 * begin at the communicators' creation: its calls say their seq counts
 * from there, so that ranks are lined up by it and not by their first call
 * in the piece.
 */
static int add_to_piece(struct trace_file_consumer *file, const struct trace_record *record)
{
	struct trace_record flagged;

	if (!file->pieces_closed || record->kind != TRACE_RECORD_NCCL_CALL ||
	    record->call.seq < 0 || (record->call.flags & TRACE_CALL_SEQ_FROM_LIBRARY) ||
	    !comm_seen_created(file, &record->call))
		return trace_writer_add(file->writer, record);
	flagged.kind = TRACE_RECORD_NCCL_CALL;
	flagged.call = record->call;
	flagged.call.flags |= TRACE_CALL_SEQ_FROM_CREATION;
	return trace_writer_add(file->writer, &flagged);
}

static void count_record(struct trace_piece_summary *piece, const struct trace_record *record)
{
	uint64_t time = trace_record_time(record);

	piece->records++;
	if (time && (!piece->first_ns || time < piece->first_ns))
		piece->first_ns = time;
	if (time > piece->last_ns)
		piece->last_ns = time;
}

/* Closes the piece, renames the pieces along and opens the next; 0, or -1 after saying why. */
static int rotate(struct trace_file_consumer *file)
{
	char error[512];
	bool dropped;
	int pieces;

	if (trace_writer_close(file->writer, error, sizeof(error))) {
		file->writer = NULL;
		log_error("%s", error);
		return -1;
	}
	file->writer = NULL;
	pieces = trace_pieces_rotate(file->path, file->pieces, file->max_files, &dropped, error,
				     sizeof(error));
	if (pieces < 0) {
		log_error("%s", error);
		return -1;
	}
	if (file->kept) {
		struct trace_piece_summary *oldest = &file->kept[file->max_files - 1];

		if (dropped) {
			file->pieces_dropped++;
			file->dropped.records += oldest->records;
			if (!file->dropped.first_ns)
				file->dropped.first_ns = oldest->first_ns;
			file->dropped.last_ns = oldest->last_ns;
		}
		memmove(&file->kept[2], &file->kept[1],
			(file->max_files - 2) * sizeof(*file->kept));
		file->kept[1] = file->current;
	}
	file->pieces = (unsigned)pieces;
	file->pieces_closed++;
	memset(&file->current, 0, sizeof(file->current));
	if (open_piece(file, OUTPUT_FILE_REFUSE_EXISTING))
		return -1;
	for (size_t i = 0; i < file->context_count; i++)
		if (trace_writer_add(file->writer, &file->context[i])) {
			log_error("cannot write the trace %s: %s", file->path,
				  trace_writer_error(file->writer));
			return -1;
		}
	return 0;
}

static int write_record(void *context, const struct trace_record *record)
{
	struct trace_file_consumer *file = context;
	struct trace_writer_stats stats;

	if (!file->writer || file->failed)
		return 0;
	if (add_to_piece(file, record)) {
		/* Keep the target running; stop recording and say why. */
		log_error("cannot write the trace %s: %s", file->path,
			  trace_writer_error(file->writer));
		file->failed = true;
		return -1;
	}
	if (!file->max_size)
		return 0;
	count_record(&file->current, record);
	if (keep_context(file, record)) {
		log_error("out of memory keeping the processes for the next piece of %s",
			  file->path);
		file->failed = true;
		return -1;
	}
	trace_writer_get_stats(file->writer, &stats);
	if (stats.bytes >= file->max_size && rotate(file)) {
		file->failed = true;
		return -1;
	}
	return 0;
}

static void flush(void *context)
{
	struct trace_file_consumer *file = context;

	if (file->writer)
		trace_writer_flush(file->writer);
}

/* The closing lines of a recording in pieces: where they are, and what rotation removed. */
static void report_pieces(const struct trace_file_consumer *file)
{
	char first[32], last[32];

	if (!file->pieces_closed)
		return;
	log_notice("the trace is in %u pieces, %s.%u (oldest) to %s (newest), each a whole trace: "
		   "tcheck-bpf dump and check read them together",
		   file->pieces + 1, file->path, file->pieces, file->path);
	if (!file->pieces_dropped)
		return;
	realtime_text(file->dropped.first_ns + (uint64_t)file->wall_offset_ns, first,
		      sizeof(first));
	realtime_text(file->dropped.last_ns + (uint64_t)file->wall_offset_ns, last, sizeof(last));
	log_warning("--max-files %u: the %u oldest pieces were removed as newer ones came, with "
		    "the %llu records written from %s to %s",
		    file->max_files, file->pieces_dropped,
		    (unsigned long long)file->dropped.records, first, last);
}

static void free_rotation(struct trace_file_consumer *file)
{
	free(file->kept);
	file->kept = NULL;
	free(file->context);
	file->context = NULL;
	file->context_count = file->context_capacity = 0;
	string_interner_destroy(&file->context_strings);
}

static int close_file(void *context, bool recorded)
{
	struct trace_file_consumer *file = context;
	struct trace_writer *writer = file->writer;
	char error[512];
	int status = 0;

	file->writer = NULL;
	if (!recorded) {
		/* Nothing was recorded: no trace file is left to look like one. */
		trace_writer_discard(writer);
	} else if (writer && trace_writer_close(writer, error, sizeof(error))) {
		log_error("%s", error);
		status = -1;
	}
	if (recorded)
		report_pieces(file);
	free_rotation(file);
	return status;
}

struct record_consumer trace_file_consumer(struct trace_file_consumer *file)
{
	return (struct record_consumer){
		.context = file,
		.start = start,
		.record = write_record,
		.flush = flush,
		.close = close_file,
	};
}
