/* SPDX-License-Identifier: MIT */
/*
 * The state of a running job read on arrival, out of process and without
 * waiting for a call: every thread's Python stack (python_stacks.h), the
 * NCCL, c10d or gloo function each thread is blocked in (native_stack.h),
 * each NCCL communicator's rank and operation count, found among the
 * stack words and read at the offsets of the library's DWARF, and each c10d
 * process group's sequence number (process_group_sequence.h). Nothing is
 * stopped, signalled or written. From it, job_snapshot_diagnose names a rank
 * that lags: the one whose communicator count is behind, or the one no
 * thread of which is inside the collective the others wait in.
 * Functions return 0 or a negative errno and fill error with a sentence.
 */
#ifndef TCHECK_JOB_SNAPSHOT_H
#define TCHECK_JOB_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model/trace_records.h"
#include "python/python_stacks.h"
#include "record/process_group_sequence.h"

/* How long attach waits before reading a job again to confirm a lagging rank. */
#define JOB_SNAPSHOT_CONFIRM_MS 300

/*
 * A step of reading a process (its maps, a thread's stack, a file's
 * symbols, its Python stacks) that takes longer leaves the process unread
 * (its unread_note says which step); the processes after it are read.
 */
#define JOB_SNAPSHOT_STALL_MS 10000

/* How far above its stack pointer a thread's stack is scanned. */
#define JOB_SNAPSHOT_STACK_BYTES (512 * 1024)

struct snapshot_thread {
	pid_t tid;
	char name[32];		   /* /proc/PID/task/TID/comm */
	char native_function[256]; /* innermost known function on its stack, "" none */
	char family[8];		   /* "nccl", "c10d", "gloo", "" */
	char collective[64];	   /* what that call is: "ncclAllReduce", "c10d::allreduce", "" */
	char native_note[256];	   /* why the stack was not read, "" when it was */
	const struct python_thread_stack *python; /* NULL: no Python thread state */
};

struct snapshot_communicator {
	uint64_t pointer; /* struct ncclComm * in the process */
	uint64_t comm_hash;
	int rank;
	int nranks;
	uint64_t op_count; /* operations this rank has issued on it */
};

struct snapshot_process {
	pid_t pid;
	int rank;	       /* job rank: a communicator's rank, else RANK; -1 unknown */
	bool maps_collectives; /* maps NCCL or libtorch: a rank, not a launcher */
	char command[256];
	struct python_stacks python;
	char python_note[512]; /* why no Python stack was read, "" when it was */
	struct snapshot_thread *threads;
	size_t thread_count;
	struct snapshot_communicator *communicators;
	size_t communicator_count;
	char communicator_note[512]; /* why no NCCL communicator was read, "" when none was needed
				      */
	struct process_group_reading *process_groups; /* c10d groups and their sequence numbers */
	size_t process_group_count;
	char process_group_note[256]; /* why a group's sequence number is unknown, "" none */
	char unread_note[1024];	      /* why the process was not read at all, "" when it was */
};

struct job_snapshot {
	uint64_t time_ns;      /* CLOCK_REALTIME when reading began */
	uint64_t monotonic_ns; /* CLOCK_MONOTONIC then: the time of its trace records */
	uint64_t read_ns;      /* how long reading took */
	struct snapshot_process *processes;
	size_t count;
};

/* A rank the state names as lagging. */
struct snapshot_finding {
	int rank;
	pid_t pid;
	char collective[64]; /* the collective the others wait in; "" unknown */
	/*
	 * Its sequence number on the communicator, -1 unknown: NCCL, the
	 * lagging rank's operation count; c10d, torch's number of the first
	 * collective the lagging rank did not issue (its own last + 1).
	 */
	int64_t sequence;
	int64_t last_sequence; /* c10d: the lagging rank's own last, -1 unknown */
	uint64_t comm_hash;    /* 0 unknown (c10d over gloo) */
	int nranks;	       /* the communicator's size, 0 unknown */
	char waiting[128];     /* the ranks waiting: "0, 2, 3" */
	char doing[512];       /* where the lagging rank is: its innermost Python frame */
	/* The first call it did not make, from a waiting rank's Python stack; "" unknown. */
	char missed[384];
};

struct snapshot_diagnosis {
	bool judged; /* false: nothing could be read to judge */
	struct snapshot_finding *findings;
	size_t count;
	char summary[768]; /* one sentence: the finding, or why there is none */
};

/*
 * Reads the state of every process in pids (job_snapshot_read.c); a
 * process that is gone or refuses to be read is an error, one whose read
 * stalls (JOB_SNAPSHOT_STALL_MS) is left unread and said in its note.
 */
int job_snapshot_read(const pid_t *pids, size_t count, struct job_snapshot *snapshot, char *error,
		      size_t error_size);
void job_snapshot_free(struct job_snapshot *snapshot);

/* Judges a snapshot (job_snapshot_report.c); free with snapshot_diagnosis_free. */
int job_snapshot_diagnose(const struct job_snapshot *snapshot,
			  struct snapshot_diagnosis *diagnosis);
void snapshot_diagnosis_free(struct snapshot_diagnosis *diagnosis);

/*
 * One reading is one instant: a healthy job is often caught with one rank
 * still computing while the others wait in a collective. A finding stands
 * when a second reading, 'later', makes it again (same rank, communicator
 * and sequence number as in 'earlier') and 'busy' (NULL: none) does not say
 * the rank was at work of its own in between (it fills 'why' when it was).
 * The others are dropped and the summary says why.
 */
typedef bool (*snapshot_busy_fn)(void *context, pid_t pid, char *why, size_t why_size);
void snapshot_diagnosis_confirm(const struct job_snapshot *snapshot,
				struct snapshot_diagnosis *later,
				const struct snapshot_diagnosis *earlier, snapshot_busy_fn busy,
				void *context);

/*
 * A rank named as lagging is read again JOB_SNAPSHOT_CONFIRM_MS later: the
 * snapshot and diagnosis are replaced by the second reading's, whose
 * findings stand only where snapshot_diagnosis_confirm keeps them (the rank
 * still behind, and no CPU or storage I/O of its own in between). -1, with
 * a warning and both freed, when the second reading fails.
 */
int job_snapshot_confirm(const pid_t *pids, size_t count, struct job_snapshot *snapshot,
			 struct snapshot_diagnosis *diagnosis);

/* The snapshot and its diagnosis as one JSON object, then a newline. */
int job_snapshot_write_json(const struct job_snapshot *snapshot,
			    const struct snapshot_diagnosis *diagnosis, FILE *out);
/* The same as lines for people: the finding, then each rank's threads and stacks. */
void job_snapshot_write_text(const struct job_snapshot *snapshot,
			     const struct snapshot_diagnosis *diagnosis, FILE *out);

/*
 * The snapshot as trace records (kind TRACE_RECORD_ARRIVAL), each handed
 * to 'emit': one per process the diagnosis does not name, then one per
 * finding, so that a reader has every other rank's state when it meets a
 * finding. The strings live as long as the snapshot.
 */
typedef int (*job_snapshot_record_fn)(void *context, const struct trace_record *record);
int job_snapshot_emit_records(const struct job_snapshot *snapshot,
			      const struct snapshot_diagnosis *diagnosis,
			      job_snapshot_record_fn emit, void *context);

/*
 * What attach and record --pid say first: the state of the targets (and,
 * with descendants, every process below them) read and judged at once (a
 * rank named as lagging is read again JOB_SNAPSHOT_CONFIRM_MS later and
 * stays named only if it is still behind and used no CPU or storage in
 * between: snapshot_diagnosis_confirm), logged as the text form with "on arrival" before it, then
 * handed to 'emit' as records (NULL: none) for the trace and the detectors. A state that cannot be
 * read is a warning with the reason, never a silent nothing.
 */
void job_snapshot_log_arrival(const pid_t *pids, size_t count, bool descendants,
			      job_snapshot_record_fn emit, void *context);

#endif /* TCHECK_JOB_SNAPSHOT_H */
