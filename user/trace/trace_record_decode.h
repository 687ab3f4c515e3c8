/* SPDX-License-Identifier: MIT */
/*
 * Between the trace reader and its record decoder, and nothing else: the
 * decoder turns the body of one record into a struct trace_record, asking
 * the reader for the strings it names and reporting damage through it.
 */
#ifndef TCHECK_TRACE_RECORD_DECODE_H
#define TCHECK_TRACE_RECORD_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "trace/trace_reader.h"

/* The smallest body of a known kind (newer writers may append, never remove); 0 unknown. */
uint32_t trace_record_minimum_body(unsigned kind);

/*
 * Decodes a record of a known kind whose body was checked to be at least
 * trace_record_minimum_body(kind). Returns 0, or the reader's failure.
 */
int trace_record_decode(struct trace_reader *reader, unsigned kind, const unsigned char *body,
			uint32_t length, size_t record_at, struct trace_record *out);

/* From trace_reader.c. */

/* Resolves a string id met in a record; NULL (with the error set) when it was never defined. */
const char *trace_reader_string_lookup(struct trace_reader *reader, const unsigned char *at,
				       size_t record_at);

/* Says where the damaged record sits in its chunk; returns the failure. */
int trace_reader_record_corrupt(struct trace_reader *reader, size_t record_at, const char *problem);

/* The first failure met, 0 while there is none. */
int trace_reader_failure(const struct trace_reader *reader);

#endif /* TCHECK_TRACE_RECORD_DECODE_H */
