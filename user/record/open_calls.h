/* SPDX-License-Identifier: MIT */
/*
 * The library calls in flight: read from the probes' open_calls task storage
 * (what each thread has entered and not left, through an iterator) as call records flagged
 * TCHECK_CALL_OPEN, the form the exit probe gives a call its thread ended
 * inside. A rank blocked inside a collective is visible from its entry.
 */
#ifndef TCHECK_OPEN_CALLS_H
#define TCHECK_OPEN_CALLS_H

#include <stdint.h>

#include "tcheck/probe_abi.h"

/* Receives one open call; non-zero stops the walk. */
typedef int (*open_call_fn)(void *context, const struct tcheck_call_record *record);

/*
 * Hands each call open on a traced thread to 'visit', outermost first per
 * thread, as seen at 'now_ns' (its return_ns), from the open-calls iterator
 * link 'iterator_fd' (probe_session_open_calls_fd). Returns how many were
 * handed, or -errno when the iterator cannot be read.
 */
int open_calls_read(int iterator_fd, uint64_t now_ns, open_call_fn visit, void *context);

/*
 * Fills a call record from an open call of thread 'tid' of process 'pid',
 * 'depth' calls deep, as seen at 'now_ns'.
 */
void open_call_record(const struct tcheck_open_call *call, uint32_t pid, uint32_t tid,
		      uint32_t depth, uint64_t now_ns, struct tcheck_call_record *record);

#endif /* TCHECK_OPEN_CALLS_H */
