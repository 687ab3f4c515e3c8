/* SPDX-License-Identifier: MIT */
/*
 * A deterministic mix of every trace record kind, with values that use
 * every bit, for the trace format tests: written by the real writer and
 * compared field by field when read back.
 */
#ifndef TCHECK_TESTS_SAMPLE_RECORDS_H
#define TCHECK_TESTS_SAMPLE_RECORDS_H

#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

/* The kinds sample_record() cycles through. */
#define SAMPLE_KINDS 9

void test_header(struct trace_header *header);

/* The NCCL function names the sample calls cycle through. */
extern const char *const sample_function_names[];

/* A Python call or torch scope for sample 'index', its shape chosen by 'variant'. */
struct trace_python_call sample_python_call(unsigned index, unsigned variant);

/* Record 'index' of a deterministic mix of every kind, with values that use every bit. */
struct trace_record sample_record(unsigned index);

int records_equal(const struct trace_record *a, const struct trace_record *b);

/* Writes sample records 0..count-1, flushing after every 'per_chunk' of them. */
void write_samples(const char *path, unsigned count, unsigned per_chunk, uint64_t *chunk_ends,
		   unsigned *chunk_end_count);

/* Reads every record; returns how many matched samples 0..n in order, or -1 on a mismatch. */
long read_and_compare(struct trace_reader *reader, int *status);

#endif /* TCHECK_TESTS_SAMPLE_RECORDS_H */
