/* SPDX-License-Identifier: MIT */
/*
 * The encoding handlers of each record kind, for the kind table
 * (trace_record_kinds.c). A kind with strings lists them in the order its
 * encoder takes their ids; a kind whose size varies says it, or refuses a
 * record it cannot write with a reason.
 */
#ifndef TCHECK_TRACE_RECORD_ENCODE_H
#define TCHECK_TRACE_RECORD_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

int trace_encode_call_strings(const struct trace_record *record, const char *texts[]);
size_t trace_encode_call_size(const struct trace_record *record, const char **refusal);
void trace_encode_call(unsigned char *body, const struct trace_record *record,
		       const uint32_t string_ids[]);

int trace_encode_process_strings(const struct trace_record *record, const char *texts[]);
void trace_encode_process(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[]);

int trace_encode_communicator_strings(const struct trace_record *record, const char *texts[]);
void trace_encode_communicator(unsigned char *body, const struct trace_record *record,
			       const uint32_t string_ids[]);

int trace_encode_library_strings(const struct trace_record *record, const char *texts[]);
void trace_encode_library(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[]);

void trace_encode_stats(unsigned char *body, const struct trace_record *record,
			const uint32_t string_ids[]);

int trace_encode_python_call_strings(const struct trace_record *record, const char *texts[]);
size_t trace_encode_python_call_size(const struct trace_record *record, const char **refusal);
void trace_encode_python_call(unsigned char *body, const struct trace_record *record,
			      const uint32_t string_ids[]);

void trace_encode_network(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[]);

void trace_encode_activity(unsigned char *body, const struct trace_record *record,
			   const uint32_t string_ids[]);

int trace_encode_arrival_strings(const struct trace_record *record, const char *texts[]);
size_t trace_encode_arrival_size(const struct trace_record *record, const char **refusal);
void trace_encode_arrival(unsigned char *body, const struct trace_record *record,
			  const uint32_t string_ids[]);

#endif /* TCHECK_TRACE_RECORD_ENCODE_H */
