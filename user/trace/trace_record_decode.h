/* SPDX-License-Identifier: MIT */
/*
 * Turns the body of one trace record into a struct trace_record. The
 * decoders know the layout of each kind and nothing of the reader: the
 * reader hands them the strings defined so far and reports the damage they
 * note, with where the record sits.
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

/*
 * The decoding handler of each record kind, for the kind table
 * (trace_record_kinds.c). Each fills 'record' from a body of 'length' bytes,
 * at least the kind's minimum; 0, or -EBADMSG with decoding->problem saying
 * what is wrong with the record.
 */
int trace_decode_call(struct trace_record_decoding *decoding, const unsigned char *body,
		      uint32_t length, struct trace_record *record);
int trace_decode_process(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record);
int trace_decode_communicator(struct trace_record_decoding *decoding, const unsigned char *body,
			      uint32_t length, struct trace_record *record);
int trace_decode_library(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record);
int trace_decode_stats(struct trace_record_decoding *decoding, const unsigned char *body,
		       uint32_t length, struct trace_record *record);
int trace_decode_python_call(struct trace_record_decoding *decoding, const unsigned char *body,
			     uint32_t length, struct trace_record *record);
int trace_decode_network(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record);
int trace_decode_activity(struct trace_record_decoding *decoding, const unsigned char *body,
			  uint32_t length, struct trace_record *record);
int trace_decode_arrival(struct trace_record_decoding *decoding, const unsigned char *body,
			 uint32_t length, struct trace_record *record);

#endif /* TCHECK_TRACE_RECORD_DECODE_H */
