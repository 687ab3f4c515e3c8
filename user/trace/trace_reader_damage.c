// SPDX-License-Identifier: MIT
/*
 * What the trace reader says of a trace that is not whole: cut inside a
 * chunk, never closed by its recorder, or damaged; and how it reads past a
 * damaged chunk to the next whole one (docs/trace-format.md, "Damage").
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/error_message.h"
#include "base/system_clock.h"
#include "trace/trace_reader_state.h"

/* Wall-clock text of a record time, through the header's clock anchor. */
static void record_time_text(const struct trace_reader *reader, uint64_t monotonic_ns, char *text,
			     size_t size)
{
	const struct trace_header *header = &reader->header;

	realtime_text(monotonic_ns - header->anchor_monotonic_ns + header->anchor_realtime_ns, text,
		      size);
}

/* "its last record was written at T, S s after its first", or that it holds none. */
static void last_record_text(const struct trace_reader *reader, char *text, size_t size)
{
	char last[40];

	if (!reader->last_record_ns) {
		snprintf(text, size, "it holds no record with a time");
		return;
	}
	record_time_text(reader, reader->last_record_ns, last, sizeof(last));
	snprintf(text, size,
		 "its last record was written at %s (CLOCK_MONOTONIC %" PRIu64
		 " ns), %.1f s after its first",
		 last, reader->last_record_ns,
		 (double)(reader->last_record_ns - reader->first_record_ns) / 1e9);
}

/* The trace ends inside the chunk at reader->chunk_offset: what a killed recorder leaves. */
int trace_reader_end_truncated(struct trace_reader *reader, uint64_t present)
{
	char last[160];

	last_record_text(reader, last, sizeof(last));
	error_format(reader->truncation, sizeof(reader->truncation),
		     "%s ends %" PRIu64 " bytes into chunk %" PRIu32 " (byte offset %" PRIu64
		     "), before that chunk is complete: the recorder stopped without closing "
		     "the trace (killed, or out of disk space), so what it recorded after "
		     "that may be lost; %s; the %" PRIu64 " records of the %" PRIu64
		     " complete chunks before it were all read",
		     reader->path, present, reader->chunk_index, reader->chunk_offset, last,
		     reader->stats.records, reader->stats.chunks);
	reader->stats.truncated = 1;
	reader->stats.bytes += present;
	reader->finished = 1;
	return 0;
}

/* The end of the file at a chunk boundary: a trace of format 1.6 on must have been closed. */
int trace_reader_end(struct trace_reader *reader)
{
	char last[160];

	reader->finished = 1;
	if (reader->closed || reader->stats.version_major != TRACE_FORMAT_VERSION_MAJOR ||
	    reader->stats.version_minor < TRACE_FORMAT_CLOSING_SINCE_MINOR)
		return 0;
	last_record_text(reader, last, sizeof(last));
	error_format(reader->truncation, sizeof(reader->truncation),
		     "%s was not closed by its recorder (it was killed, or its machine "
		     "stopped): %s; what it recorded after that may be lost; the %" PRIu64
		     " records of its %" PRIu64 " complete chunks were all read",
		     reader->path, last, reader->stats.records, reader->stats.chunks);
	reader->stats.unclosed = 1;
	return 0;
}

/* Chunk damage: a failure that trace_reader_resync() reads past, losing this chunk only. */
int trace_reader_chunk_corrupt(struct trace_reader *reader, const char *problem)
{
	reader->damage_pending = 1;
	return trace_reader_fail(reader, -EBADMSG,
				 "%s: chunk %" PRIu32 " at byte offset %" PRIu64 " %s",
				 reader->path, reader->chunk_index, reader->chunk_offset, problem);
}

/* The header checks a chunk must pass before its payload is read; "" when it does. */
void trace_reader_chunk_header_problem(const unsigned char *header, char *problem, size_t size)
{
	uint32_t payload_length =
		trace_format_get_u32(header + TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT);
	uint32_t record_count = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT);
	uint32_t flags = trace_format_get_u32(header + TRACE_FORMAT_CHUNK_FLAGS_AT);

	problem[0] = '\0';
	if (memcmp(header + TRACE_FORMAT_CHUNK_MAGIC_AT, TRACE_FORMAT_CHUNK_MAGIC,
		   TRACE_FORMAT_CHUNK_MAGIC_SIZE) != 0)
		snprintf(problem, size, "does not start with the chunk signature");
	else if (!trace_checksum_matches(
			 crc32(0L, header, TRACE_FORMAT_CHUNK_HEADER_CRC_AT),
			 trace_format_get_u32(header + TRACE_FORMAT_CHUNK_HEADER_CRC_AT)))
		snprintf(problem, size, "has a damaged header (its checksum does not match)");
	else if (payload_length > TRACE_FORMAT_MAX_CHUNK_PAYLOAD)
		snprintf(problem, size,
			 "claims a payload of %" PRIu32 " bytes, more than the %u this reader "
			 "accepts",
			 payload_length, TRACE_FORMAT_MAX_CHUNK_PAYLOAD);
	else if (!(flags & TRACE_FORMAT_CHUNK_ZSTD) &&
		 record_count > payload_length / TRACE_FORMAT_RECORD_HEADER_SIZE)
		snprintf(problem, size,
			 "claims %" PRIu32 " records, more than its %" PRIu32 " bytes can hold",
			 record_count, payload_length);
}

/* Whether a chunk header found while skipping damage can be read on from. */
static int chunk_header_whole(const unsigned char *header)
{
	char problem[160];

	trace_reader_chunk_header_problem(header, problem, sizeof(problem));
	return !problem[0];
}

/* The chunk's times, now that all its records were read. */
void trace_reader_count_chunk_times(struct trace_reader *reader)
{
	uint64_t first =
		trace_format_get_u64(reader->chunk_header + TRACE_FORMAT_CHUNK_FIRST_NS_AT);
	uint64_t last = trace_format_get_u64(reader->chunk_header + TRACE_FORMAT_CHUNK_LAST_NS_AT);

	if (first && (!reader->first_record_ns || first < reader->first_record_ns))
		reader->first_record_ns = first;
	if (last > reader->last_record_ns)
		reader->last_record_ns = last;
}

/* Keeps what the first damaged stretch was and, where its header tells, when it was written. */
static void note_first_damage(struct trace_reader *reader, int found)
{
	const unsigned char *header = reader->chunk_header;

	error_format(reader->first_damage, sizeof(reader->first_damage), "%s", reader->error);
	reader->damage_resumed = found;
	if (reader->chunk_header_whole) {
		reader->damage_from_ns =
			trace_format_get_u64(header + TRACE_FORMAT_CHUNK_FIRST_NS_AT);
		reader->damage_to_ns = trace_format_get_u64(header + TRACE_FORMAT_CHUNK_LAST_NS_AT);
		return;
	}
	reader->damage_from_ns = reader->last_record_ns;
	reader->damage_span_open = 1;
}

/*
 * Reads past a damaged chunk: searches from its second byte for the next
 * chunk header whose checksum holds, counts what was passed over, and
 * clears the failure so reading goes on there.
 */
int trace_reader_resync(struct trace_reader *reader)
{
	uint32_t count =
		trace_format_get_u32(reader->chunk_header + TRACE_FORMAT_CHUNK_RECORD_COUNT_AT);
	uint64_t lost = 0, skipped_in_search = 0;
	int found = 1, err = 0;

	/* What of the chunk was not handed out; unknown when its header is damaged too. */
	if (reader->in_chunk && reader->position < reader->payload_length)
		lost = count - reader->chunk_records_read + 1;
	else if (!reader->in_chunk && reader->chunk_header_whole)
		lost = count;
	if (reader->in_chunk)
		trace_reader_count_chunk_times(reader);
	/* A chunk whose checksums held ends where its header says; any other is searched past. */
	if (!reader->payload_whole) {
		err = trace_input_unread(&reader->input, reader->payload, reader->payload_read);
		if (!err && reader->chunk_header_read > 1)
			err = trace_input_unread(&reader->input, reader->chunk_header + 1,
						 reader->chunk_header_read - 1);
		if (err)
			return trace_reader_fail(reader, err, "out of memory reading %s",
						 reader->path);
		found = trace_input_skip_to(&reader->input, TRACE_FORMAT_CHUNK_MAGIC,
					    TRACE_FORMAT_CHUNK_HEADER_SIZE, chunk_header_whole,
					    &skipped_in_search);
		if (found < 0)
			return trace_reader_fail(reader, found, "could not read the trace %s: %s",
						 reader->path, strerror(-found));
	}
	if (!reader->stats.damaged_chunks)
		note_first_damage(reader, found);
	reader->damage_pending = 0;
	reader->failure = 0;
	reader->error[0] = '\0';
	reader->in_chunk = 0;
	reader->payload_read = 0;
	reader->stats.damaged_chunks++;
	reader->stats.skipped_bytes += reader->input.offset - reader->chunk_offset;
	reader->stats.skipped_records += lost;
	if (!reader->chunk_header_whole)
		reader->stats.skipped_records_unknown = 1;
	reader->strings_lost = 1;
	reader->chunk_index++;
	reader->offset = reader->input.offset;
	reader->stats.bytes = reader->offset;
	return 0;
}

const char *trace_reader_truncated(const struct trace_reader *reader)
{
	return reader->stats.truncated || reader->stats.unclosed ? reader->truncation : NULL;
}

/* " written between T1 and T2", " written after T1", or "" when the times are unknown. */
static void damage_span_text(const struct trace_reader *reader, char *text, size_t size)
{
	char from[40] = "", to[40] = "";

	text[0] = '\0';
	if (reader->damage_from_ns)
		record_time_text(reader, reader->damage_from_ns, from, sizeof(from));
	if (reader->damage_to_ns)
		record_time_text(reader, reader->damage_to_ns, to, sizeof(to));
	/* Records are not sorted by time across chunks: the span is between the two. */
	if (reader->damage_from_ns && reader->damage_to_ns && strcmp(from, to) == 0)
		snprintf(text, size, " written at %s", from);
	else if (reader->damage_from_ns && reader->damage_to_ns)
		snprintf(text, size, " written between %s and %s",
			 reader->damage_from_ns <= reader->damage_to_ns ? from : to,
			 reader->damage_from_ns <= reader->damage_to_ns ? to : from);
	else if (reader->damage_from_ns)
		snprintf(text, size, " written after %s", from);
	else if (reader->damage_to_ns)
		snprintf(text, size, " written before %s", to);
}

const char *trace_reader_damage(struct trace_reader *reader)
{
	const struct trace_reader_stats *stats = &reader->stats;
	char lost[64], span[120], more[120] = "";

	if (!stats->damaged_chunks)
		return NULL;
	if (stats->skipped_records_unknown && !stats->skipped_records)
		snprintf(lost, sizeof(lost), "an unknown number of records");
	else
		snprintf(lost, sizeof(lost), "%s%" PRIu64 " records",
			 stats->skipped_records_unknown ? "at least " : "", stats->skipped_records);
	damage_span_text(reader, span, sizeof(span));
	if (stats->damaged_chunks > 1)
		snprintf(more, sizeof(more), " (%" PRIu64 " damaged stretches in all)",
			 stats->damaged_chunks);
	error_format(reader->damage, sizeof(reader->damage),
		     "%s; %" PRIu64 " damaged bytes were skipped, losing %s (string "
		     "definitions counted)%s; %s%s",
		     reader->first_damage, stats->skipped_bytes, lost, span,
		     reader->damage_resumed ? "reading went on at the next whole chunk"
					    : "nothing whole came after them",
		     more);
	return reader->damage;
}
