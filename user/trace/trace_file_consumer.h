/* SPDX-License-Identifier: MIT */
/*
 * The trace file as one consumer of a recording (record -o): opened when
 * the probes load, every record written, flushed as it goes, renamed into
 * place at the end, or left out when the recording never began. A write
 * that fails stops the recording, never the traced job.
 */
#ifndef TCHECK_TRACE_FILE_CONSUMER_H
#define TCHECK_TRACE_FILE_CONSUMER_H

#include <stdbool.h>

#include "model/record_consumer.h"

struct trace_writer;

struct trace_file_consumer {
	const char *path;
	bool replace_existing; /* --force: the path may name a file that exists */
	int argc;	       /* the tcheck-bpf command line, for the header */
	char *const *argv;
	struct trace_writer *writer; /* open between start and close */
	bool failed;		     /* a write failed: nothing more is written */
};

/* The consumer that writes 'file' (its path and command line set by the caller). */
struct record_consumer trace_file_consumer(struct trace_file_consumer *file);

#endif /* TCHECK_TRACE_FILE_CONSUMER_H */
