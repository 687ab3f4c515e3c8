/* SPDX-License-Identifier: MIT */
/*
 * The time tcheck-bpf itself was there to see. Something of it ticks
 * regularly (the recorder's loop every 100 ms live, a statistics record
 * every 200 ms in a trace, a snapshot's waits every 500 ms at most); a
 * longer gap between two ticks is time it did not watch: the machine was
 * paused (a virtual machine's snapshot, a frozen cgroup), tcheck-bpf was
 * stopped, or it was busy. In the first two cases what it watches (the
 * job's processes, a read of one) was most likely stopped with it, so a
 * span measured across the gap says nothing about them: the detectors
 * count silences from the tick that ended the gap and judge records seen
 * while the ticks have stopped only from the next tick on
 * (diagnose/job_diagnosis.c); a snapshot does not count the gap toward a
 * read's limit (record/job_snapshot_read.c).
 */
#ifndef TCHECK_WATCHED_TIME_H
#define TCHECK_WATCHED_TIME_H

#include <stdbool.h>
#include <stdint.h>

/* Ticks further apart than this leave time unwatched. */
#define WATCHED_TIME_GAP_NS 3000000000ULL
/*
 * Unwatched time worth a warning: a paused machine or a stopped tcheck-bpf
 * (a snapshot of a virtual machine, a frozen cgroup) stops it for longer;
 * a few seconds without a tick on a loaded machine are said with -v only.
 */
#define WATCHED_TIME_SAID_NS 10000000000ULL

struct watched_time {
	uint64_t last_tick_ns; /* 0: no tick yet (a trace without statistics records) */
	uint64_t last_cpu_ns;  /* tcheck-bpf's CPU time at the latest tick that knew it; 0 none */
	uint64_t gap_start_ns; /* the tick that began the latest gap */
	uint64_t resumed_ns;   /* the tick that ended it; 0 none */
	uint64_t unwatched_ns; /* all gaps together */
	unsigned gaps;
};

/* A gap a tick ended. */
struct watched_gap {
	uint64_t start_ns;
	uint64_t length_ns;
	/* tcheck-bpf's CPU time over it is known and under half of it: it was not running. */
	bool stopped;
};

/*
 * One of tcheck-bpf's own ticks at now_ns, with the CPU time it has used
 * (0 when unknown: a tick read from a trace). True when it ends a gap, then
 * described in *gap.
 */
bool watched_time_tick(struct watched_time *watched, uint64_t now_ns, uint64_t cpu_ns,
		       struct watched_gap *gap);

/*
 * Whether what is seen at now_ns may be judged: false while the ticks have
 * stopped for longer than a gap (the next tick says whether time went unwatched).
 */
bool watched_time_current(const struct watched_time *watched, uint64_t now_ns);

/* Where a silence that began at since_ns is counted from: since_ns, or the end of a later gap. */
uint64_t watched_time_silent_since(const struct watched_time *watched, uint64_t since_ns);

/*
 * Whether the latest gap overlaps from_ns to to_ns: a span measured across
 * it (how late a rank came to a collective) holds time nobody watched.
 */
bool watched_time_spans_gap(const struct watched_time *watched, uint64_t from_ns, uint64_t to_ns);

#endif /* TCHECK_WATCHED_TIME_H */
