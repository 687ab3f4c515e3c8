/* SPDX-License-Identifier: MIT */
/*
 * Each kind of trace record described once: its name, the smallest body a
 * reader accepts, and the handlers that encode and decode it. The writer
 * and the reader take every kind from this table, so adding a kind is one
 * row here and its two handlers (trace_record_encode.c,
 * trace_record_decode.c); docs/architecture.md lists what else a kind
 * touches (its dump and Perfetto cases, which the compiler names).
 */
#ifndef TCHECK_TRACE_RECORD_KINDS_H
#define TCHECK_TRACE_RECORD_KINDS_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"
#include "trace/trace_record_decode.h"

/*
 * The most strings one record names: an NCCL call its function and stack;
 * a Python call its name, file, stack, and each argument's name and text;
 * an arrival state five texts and its stack.
 */
#define TRACE_RECORD_MAX_STRINGS (3 + TRACE_PY_STACK_MAX + 2 * TRACE_PY_ARGS_MAX)

struct trace_record_kind_format {
	enum trace_record_kind kind;
	const char *name;      /* as dump and messages write it: "nccl_call" */
	uint32_t minimum_body; /* the smallest body a reader accepts (older minors' size) */
	uint32_t body_size;    /* what the writer writes; 0 when encoded_size says */
	/* The strings the record names, in the order encode takes their ids; NULL: none. */
	int (*strings)(const struct trace_record *record, const char *texts[]);
	/* The body size of a record of varying size; 0 with 'refusal' set when it cannot be
	 * written. */
	size_t (*encoded_size)(const struct trace_record *record, const char **refusal);
	void (*encode)(unsigned char *body, const struct trace_record *record,
		       const uint32_t string_ids[]);
	int (*decode)(struct trace_record_decoding *decoding, const unsigned char *body,
		      uint32_t length, struct trace_record *record);
};

/* The description of 'kind', or NULL for a kind this version does not know. */
const struct trace_record_kind_format *trace_record_kind_format(unsigned kind);

/* The name of a record kind ("nccl_call", "string", ...), or "unknown". */
const char *trace_record_kind_name(unsigned kind);

#endif /* TCHECK_TRACE_RECORD_KINDS_H */
