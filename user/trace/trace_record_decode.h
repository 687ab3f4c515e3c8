/* SPDX-License-Identifier: MIT */
/*
 * Turns the body of one trace record into a struct trace_record. The
 * decoder knows the layout of each kind and nothing of the reader: the
 * reader hands it the strings defined so far and reports the damage the
 * decoder notes, with where the record sits.
 */
#ifndef TCHECK_TRACE_RECORD_DECODE_H
#define TCHECK_TRACE_RECORD_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"
#include "trace/trace_format.h"

/* What a record's string ids resolve against, and what went wrong decoding it. */
struct trace_record_decoding {
	char *const *strings;	  /* id N at [N - 1]; NULL for one a skipped chunk defined */
	uint32_t defined_strings; /* ids 1 to this are defined */
	bool strings_lost;	  /* a skipped chunk may have defined ids past defined_strings */
	const char *lost_text;	  /* what a string lost with a skipped chunk reads as */
	int failure;		  /* set by trace_record_decode: 0, or why the record is damaged */
	char problem[160];	  /* the damage as a phrase: "is too short for its Python stack" */
};

/* The kind's name as dump and messages write it ("nccl_call"), "unknown" for others. */
const char *trace_record_kind_name(unsigned kind);

/* The smallest body of a known kind (newer writers may append, never remove); 0 unknown. */
uint32_t trace_record_minimum_body(unsigned kind);

/*
 * Decodes a record of a known kind whose body was checked to be at least
 * trace_record_minimum_body(kind). Returns 0, or -EBADMSG with
 * decoding->problem saying what is wrong with the record.
 */
int trace_record_decode(struct trace_record_decoding *decoding, unsigned kind,
			const unsigned char *body, uint32_t length, struct trace_record *out);

#endif /* TCHECK_TRACE_RECORD_DECODE_H */
