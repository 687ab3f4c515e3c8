/* SPDX-License-Identifier: MIT */
/*
 * Pauses: a rank that lags its peers while doing something of its own
 * (writing a checkpoint, reading data, an evaluation loop) is no hang.
 * From each process's activity samples (record kind 8: CPU time, I/O
 * counters, thread states read from /proc) the tracker follows what it did
 * since its last communication call, so the hang detector can tell a rank
 * at work outside any collective from one that sits idle, and the
 * diagnosis can report the pause for what it is when the rank comes back.
 * A pause recurring in the rank's pattern of pauses (same communicator and
 * position in its step, as many collectives after the last one as between
 * the two before) is one too, idle or not. See docs/hang-detection.md,
 * "Pauses".
 */
#ifndef TCHECK_PAUSE_TRACKER_H
#define TCHECK_PAUSE_TRACKER_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "model/activity_interval.h"
#include "model/trace_records.h"

#define PAUSE_MAX_PROCESSES 256

/* A busy pause longer than this many times the longest one learned is a hang. */
#define PAUSE_LEARNED_FACTOR 10.0
/* ... and, before one is learned, one longer than this. */
#define PAUSE_UNLEARNED_MAX_NS (300.0 * 1e9)

enum pause_cause {
	/* What it did between samples (model/activity_interval.h): */
	PAUSE_IDLE = ACTIVITY_IDLE,
	PAUSE_FILE_IO = ACTIVITY_FILE_IO,
	PAUSE_IO_WAIT = ACTIVITY_IO_WAIT,
	PAUSE_COMPUTING = ACTIVITY_COMPUTING,
	PAUSE_RECURRING = 4, /* idle, where it paused before */
};

/* What a process did since its last communication call. */
struct pause_stretch {
	uint64_t start_ns;	/* its last call's entry */
	uint64_t busy_until_ns; /* the end of its latest busy sample interval after start, 0 none */
	uint64_t sampled_ns;	/* time covered by sample intervals after start */
	uint64_t cpu_ns, storage_bytes, syscall_bytes;
	unsigned samples, io_wait_samples;
	/* The hang detector held back a hang for it: reported as a pause when it ends. */
	bool held;
	uint64_t held_comm_id;	  /* the communicator it lagged on */
	int64_t held_position;	  /* its collectives there modulo the period, -1 unknown */
	int64_t held_collectives; /* its collectives there */
};

struct pause_process {
	uint32_t pid;
	bool sampled; /* latest holds a sample */
	struct trace_activity_sample latest;
	struct pause_stretch current;
	struct pause_stretch last; /* the stretch that ended with its latest call */
	uint64_t last_end_ns;	   /* ... at that call's entry */
	bool last_reported;	   /* reported as a pause */
	uint64_t returned_ns;	   /* when it came back from its latest pause reported, 0 none */
	enum pause_cause returned_cause; /* ... and what that pause was */
	double longest_ns;		 /* the longest pause learned, 0 none */
	/*
	 * Where it last paused (communicator, position in the step, its
	 * collectives there), for how long, and how many collectives came
	 * between its last two pauses there (0: unknown): the job's pattern
	 * of pauses.
	 */
	uint64_t learned_comm_id;
	int64_t learned_position;
	int64_t learned_collectives;
	int64_t learned_interval;
	double learned_ns;
};

struct pause_tracker {
	unsigned count; /* slots used; a forgotten process's has pid 0 */
	struct pause_process processes[PAUSE_MAX_PROCESSES];
};

/* A pause that ended: the process came back with a communication call. */
struct pause_finding {
	uint32_t pid;
	int32_t job_rank; /* filled by the caller, -1 unknown */
	enum pause_cause cause;
	uint64_t start_ns, end_ns;
	uint64_t cpu_ns, storage_bytes, syscall_bytes;
	unsigned io_wait_samples;
	uint64_t comm_id;	  /* the communicator it lagged on, 0 unknown */
	const char *resumed_with; /* the call it came back with */
	int64_t resumed_seq;
};

/* What a process did between two of its samples (the later one's I/O wait counts). */
enum pause_cause pause_interval_cause(const struct trace_activity_sample *earlier,
				      const struct trace_activity_sample *later);

/* What a whole stretch was, from its sums: I/O first, then I/O wait, then the CPU. */
enum pause_cause pause_stretch_cause(const struct pause_stretch *stretch, uint64_t end_ns);

const char *pause_cause_name(enum pause_cause cause);

void pause_tracker_sample(struct pause_tracker *tracker,
			  const struct trace_activity_sample *sample);

/*
 * The process's entry, added when new; NULL for pid 0 and when
 * PAUSE_MAX_PROCESSES are kept. It stays where it is until the process is
 * forgotten (pause_tracker_forget frees its slot for another): a caller
 * that keeps it finds the process without a look-up until then.
 */
struct pause_process *pause_tracker_process(struct pause_tracker *tracker, uint32_t pid);
/* pause_tracker_sample and pause_tracker_call for the process's entry (NULL: nothing, false). */
void pause_process_sample(struct pause_process *process,
			  const struct trace_activity_sample *sample);
bool pause_process_call(struct pause_process *process, uint64_t entry_ns,
			struct pause_finding *ended);

/*
 * The process made a communication call entered at 'entry_ns': its stretch
 * ends there and is kept as its last one. Returns true with 'ended' filled
 * when the hang detector held it (a pause, learned from); false otherwise
 * (or for an entry not after the stretch's start).
 */
bool pause_tracker_call(struct pause_tracker *tracker, uint32_t pid, uint64_t entry_ns,
			struct pause_finding *ended);

/*
 * Whether the process's last stretch, ended by the call that made it come
 * 'lead_ns' after its peers, explains that lead: file I/O or I/O wait for
 * half the lead or more. True with 'ended' filled (a pause, learned from).
 */
bool pause_tracker_explains_lead(struct pause_tracker *tracker, uint32_t pid, uint64_t lead_ns,
				 struct pause_finding *ended);

/*
 * Until when the process's own activity explains its silence since
 * 'since_ns': the end of its latest busy sample interval, when it made no
 * call since 'since_ns' (or the return from a pause it reported since, the
 * pause's cause), was busy after it, and its stretch is not longer
 * than the pause limit (PAUSE_LEARNED_FACTOR times the longest pause
 * learned, or PAUSE_UNLEARNED_MAX_NS); 'cause' (may be NULL) is then what
 * its stretch was so far. 0 when nothing explains it (no samples, idle).
 */
uint64_t pause_tracker_active_until(const struct pause_tracker *tracker, uint32_t pid,
				    uint64_t since_ns, uint64_t now_ns, enum pause_cause *cause);

/*
 * The pause the process is due to make again here, by its pattern of
 * pauses: one at this position (communicator, collectives modulo the
 * period) as many collectives ('collectives': its count there now) after
 * its last one as between the two before. Its length, 0 when none is
 * due: an idle pause here may last hang_factor times as long.
 */
double pause_tracker_recurring_ns(const struct pause_tracker *tracker, uint32_t pid,
				  uint64_t comm_id, int64_t position, int64_t collectives);

/*
 * The hang detector held back a hang of this process lagging on a
 * communicator quiet since 'since_ns' (nothing when it made a call since).
 */
void pause_tracker_hold(struct pause_tracker *tracker, uint32_t pid, uint64_t since_ns,
			uint64_t comm_id, int64_t position, int64_t collectives);

/* A hang was reported for the process after all: its stretch is no pause. */
void pause_tracker_release(struct pause_tracker *tracker, uint32_t pid);

/* Whether the process's stretch is held (a pause in progress). */
bool pause_tracker_held(const struct pause_tracker *tracker, uint32_t pid);

void pause_tracker_forget(struct pause_tracker *tracker, uint32_t pid);

/* "pause: job rank 0 (pid 42) writing files for 3.012 s ..." (no newline). */
void pause_finding_text(const struct pause_finding *pause, char *text, size_t size);

/* {"kind":"pause", ...}; NULL when out of memory. */
json_t *pause_finding_json(const struct pause_finding *pause);

#endif /* TCHECK_PAUSE_TRACKER_H */
