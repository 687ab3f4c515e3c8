/* SPDX-License-Identifier: MIT */
/*
 * Exports a trace as JSON Lines: one object per record, for scripts and
 * for comparing a recording with what a workload says it did.
 *
 * Value rules, shared with the Perfetto exporter:
 *  - addresses, handles, sizes and times are JSON integers; a value above
 *    INT64_MAX (never a user-space address) becomes a string holding the
 *    unsigned decimal number, so int(value) in Python reads both forms;
 *  - identities and hashes (comm_id, parent_comm_id, nccl_comm_hash, the
 *    unique id hashes) are "0x%016x" strings, null when 0 (unknown): they
 *    use all 64 bits, which JSON numbers do not carry exactly;
 *  - "unknown" ranks, counts and sequence numbers (-1) are null;
 *  - enum values (datatype, op, results) are their nccl.h names, or the
 *    integer when the name is not known;
 *  - strings that are not valid UTF-8 get U+FFFD for each bad byte.
 */
#ifndef TCHECK_EXPORT_JSONL_H
#define TCHECK_EXPORT_JSONL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model/trace_records.h"
#include "trace/trace_reader.h"

/* Only calls (NCCL and Python): no header, process, communicator, library or stats objects. */
#define EXPORT_CALLS_ONLY (1U << 0)

/*
 * Writes every record 'reader' has left to 'out', one JSON object a line,
 * preceded by a "header" object unless EXPORT_CALLS_ONLY is set. Returns
 * 0, or a negative errno with 'error' filled (the trace is damaged, or
 * 'out' could not be written). A trace cut short exports what it has and
 * returns 0: the caller shows trace_reader_truncated().
 */
int export_jsonl(struct trace_reader *reader, FILE *out, unsigned flags, char *error,
		 size_t error_size);

/* One record as the object export_jsonl writes for it; NULL when out of memory. */
json_t *export_json_record(const struct trace_record *record);
json_t *export_json_header(const struct trace_header *header);

/*
 * The "args" object of a call: its parameters under their nccl.h names,
 * decoded by type (see docs/trace-format.md for the per-type rules).
 */
json_t *export_json_call_args(const struct trace_nccl_call *call);

/*
 * Writes 'prefix', 'value' encoded with the json_dumpb() 'flags', then
 * 'suffix', in one stdio write. Returns 0 or a negative errno.
 */
int export_json_write(FILE *out, const char *prefix, const json_t *value, size_t flags,
		      const char *suffix);

/* Value builders that follow the rules above. */
json_t *export_json_unsigned(uint64_t value);
json_t *export_json_identity(uint64_t identity);
/* Always the identity's text, 0x0 included (export_json_identity makes 0 null). */
json_t *export_json_hexadecimal(uint64_t value);
json_t *export_json_known_or_null(int64_t value);
json_t *export_json_text(const char *text);
/* "train", "eval", or null for an unknown stage. */
json_t *export_json_stage(uint32_t stage);
/* The frames of a Python stack, innermost first, as an array of names. */
json_t *export_json_python_stack(const struct trace_python_stack *stack);
/* A Python call's primitive arguments as an object: parameter name to value. */
json_t *export_json_python_args(const struct trace_python_call *call);

#endif /* TCHECK_EXPORT_JSONL_H */
