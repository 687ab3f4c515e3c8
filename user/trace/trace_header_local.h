/* SPDX-License-Identifier: MIT */
/* The header of a trace recorded on this machine, as the writer puts it at the top of the file. */
#ifndef TCHECK_TRACE_HEADER_LOCAL_H
#define TCHECK_TRACE_HEADER_LOCAL_H

#include <stddef.h>

#include "model/trace_records.h"

/*
 * Fills 'header' for this machine: host name, boot id (empty when
 * /proc/sys/kernel/random/boot_id cannot be read), the clock anchor, and
 * the command line from argv (or from /proc/self/cmdline when argv is
 * NULL). Returns 0, or a negative errno with 'error' filled.
 */
int trace_header_init_local(struct trace_header *header, int argc, char *const argv[], char *error,
			    size_t error_size);

#endif /* TCHECK_TRACE_HEADER_LOCAL_H */
