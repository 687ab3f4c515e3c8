/* SPDX-License-Identifier: MIT */
/*
 * Trace files built byte by byte for the trace format tests, to reach
 * states the writer never produces (damaged headers, unknown kinds,
 * malformed bodies), and the readers that judge them.
 */
#ifndef TCHECK_TESTS_RAW_TRACES_H
#define TCHECK_TESTS_RAW_TRACES_H

#include <stddef.h>
#include <stdint.h>

#define ERROR_SIZE 640

/* A growable byte buffer for building and cutting files. */
struct bytes {
	unsigned char *data;
	size_t length;
	size_t capacity;
};

/* Grows the buffer by length bytes; returns where they start. */
unsigned char *bytes_extend(struct bytes *buffer, size_t length);

void bytes_append(struct bytes *buffer, const void *data, size_t length);

void bytes_put_u16(struct bytes *buffer, uint16_t value);

void bytes_put_u32(struct bytes *buffer, uint32_t value);

void bytes_put_u64(struct bytes *buffer, uint64_t value);

void write_file(const char *path, const unsigned char *data, size_t length);

struct bytes read_whole_file(const char *path);

/* A trace file written from raw bytes, to reach states the writer never produces. */
void raw_file_header(struct bytes *file, uint32_t major, uint32_t minor);

void raw_record(struct bytes *payload, unsigned kind, const struct bytes *body);

void raw_string(struct bytes *payload, uint32_t id, const char *text);

/* A call body referring to 'function_id', with 'extra' bytes a newer writer might append. */
void raw_call(struct bytes *payload, uint32_t function_id, uint32_t param_count, size_t extra);

void raw_chunk(struct bytes *file, const struct bytes *payload, uint32_t record_count,
	       uint32_t payload_length, uint32_t flags);

/* Opens 'path' and reads to the end; returns the final status and the records read. */
int read_all(const char *path, long *records, char *error, size_t error_size);

/* A file header with its checksum made to match, whatever the fields say. */
void reseal_file_header(struct bytes *file);

/* Writes a one-chunk file around 'payload' and reads it; returns the status. */
int read_crafted(const struct bytes *payload, uint32_t record_count, uint32_t flags, long *records,
		 char *error);

#endif /* TCHECK_TESTS_RAW_TRACES_H */
