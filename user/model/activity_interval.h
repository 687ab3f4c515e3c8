/* SPDX-License-Identifier: MIT */
/*
 * What a process did between two of its activity samples (record kind 8,
 * read from /proc): nothing of its own, or work that explains why it lags
 * its peers. One judgement for every reader of samples: the pause tracker
 * (a rank that lags while it writes a checkpoint is no hang) and the
 * snapshot's second reading (a rank behind the others that was at work in
 * between is not named).
 */
#ifndef TCHECK_ACTIVITY_INTERVAL_H
#define TCHECK_ACTIVITY_INTERVAL_H

#include <stdint.h>

#include "model/trace_records.h"

/*
 * Between two samples a process is busy when it used a quarter of a CPU
 * or more, moved ACTIVITY_BUSY_STORAGE_BYTES to or from storage, moved
 * ACTIVITY_BUSY_SYSCALL_BYTES through read and write calls (files on
 * tmpfs, pipes from data-loader workers), or had a thread in I/O wait
 * (state D) at the later sample. Less is the background of an idle
 * process: torch's own polling threads (torch 2.14's wake every 10 ms) and
 * a log line's page.
 */
#define ACTIVITY_BUSY_CPU_SHARE 0.25
#define ACTIVITY_BUSY_STORAGE_BYTES (64ULL * 1024)
#define ACTIVITY_BUSY_SYSCALL_BYTES (1024ULL * 1024)

enum activity_kind {
	ACTIVITY_IDLE = 0,	/* nothing: sleeping, no I/O, no CPU */
	ACTIVITY_FILE_IO = 1,	/* moving bytes through storage or read/write calls */
	ACTIVITY_IO_WAIT = 2,	/* a thread in uninterruptible I/O wait */
	ACTIVITY_COMPUTING = 3, /* using the CPU */
};

/* How much a cumulative counter grew from earlier to later (0 where it did not). */
uint64_t counter_growth(uint64_t earlier, uint64_t later);

/* Bytes moved to and from storage (read_bytes + write_bytes) from 'earlier' to 'later'. */
uint64_t activity_storage_growth(const struct trace_activity_sample *earlier,
				 const struct trace_activity_sample *later);
/* Bytes moved through read and write calls (rchar + wchar) from 'earlier' to 'later'. */
uint64_t activity_syscall_growth(const struct trace_activity_sample *earlier,
				 const struct trace_activity_sample *later);

/* What the process did from 'earlier' to 'later': I/O first, then I/O wait, then the CPU. */
enum activity_kind activity_interval_kind(const struct trace_activity_sample *earlier,
					  const struct trace_activity_sample *later);

#endif
