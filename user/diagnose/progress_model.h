/* SPDX-License-Identifier: MIT */
/*
 * The progress of a job, per communicator and rank: the collectives and
 * point-to-point calls each rank issued (sequence, type, size, time), the
 * steps found from the period of the collective pattern, and the expected
 * step time learned online (warm-up excluded; the running average moves
 * only with steps within alpha of it; a first step that the next two
 * disagree with gives way to the median of the three). The hang and
 * slowdown detectors read it; it needs no kernel.
 */
#ifndef TCHECK_PROGRESS_MODEL_H
#define TCHECK_PROGRESS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "base/watched_time.h"
#include "model/trace_records.h"

#define PROGRESS_MAX_RANKS 64
#define PROGRESS_WINDOW 512	/* collectives remembered per communicator */
#define PROGRESS_SIGNATURES 256 /* collectives kept to find the period */
#define PROGRESS_MAX_PERIOD 64

struct progress_options {
	double hang_factor; /* no progress for this many expected steps is a hang */
	double hang_min_ns; /* ... and for this long at least: a short step's pause is none */
	/*
	 * Before the job's step time is learned (the first steps): a rank that
	 * never issued a call the others did, for this long, is a hang.
	 */
	double hang_unlearned_ns;
	/*
	 * A job whose processes stopped stepping with no call in flight (no
	 * collective to wait on): silent for this long at least is a hang.
	 */
	double stall_min_ns;
	unsigned flight_calls;	   /* calls kept per process for crash reports (0: 16) */
	double slowdown_threshold; /* a step this many times the expected one is slow (beta) */
	double slowdown_min_ns;	   /* ... and late by this much at least */
	double alpha;		   /* steps within this ratio update the expected time */
	unsigned warmup_steps;	   /* steps not learned from */
};

void progress_options_default(struct progress_options *options);

/* The last call a rank made on a communicator. */
struct progress_event {
	const char *function;
	uint64_t count;
	uint64_t entry_ns;
	uint64_t duration_ns;
	int64_t seq;
	int32_t step; /* Python step at the call, -1 unknown */
	bool open;    /* not returned when last seen: the rank is inside it (duration so far) */
};

/* How many calls counted while in flight a rank remembers, until they return. */
#define PROGRESS_OPEN_REMEMBERED 8

/* A call counted while in flight (open), remembered so its return is not counted again. */
struct progress_open_call {
	uint64_t entry_ns;
	uint32_t tid;
	int64_t collective_index; /* its collective on the communicator, -1 for none */
};

struct progress_rank {
	bool present;
	bool finished; /* destroyed the communicator */
	uint32_t pid;
	int64_t collectives; /* collective calls issued on the communicator */
	int64_t p2p_calls;
	/* Its first collective has its place among the others' (progress_model.c: place_rank). */
	bool placed;
	struct progress_event last;
	uint32_t last_tid; /* the thread of 'last': an open call seen again is the same call */
	/*
	 * The latest calls counted while open (a ring): a gloo call's return comes
	 * when its work ends, after later calls of other threads.
	 */
	struct progress_open_call open_calls[PROGRESS_OPEN_REMEMBERED];
	unsigned open_calls_seen;
	/*
	 * The tracer numbers each call a rank made on the communicator (seq):
	 * seq less the rank's point-to-point calls and collectives counted,
	 * at its first numbered collective. A later call whose numbering runs
	 * ahead of that says collectives of the rank never reached the model.
	 */
	bool numbered;
	int64_t numbering_offset;
};

/* The n-th collective of a communicator, as each rank reached it. */
struct progress_slot {
	int64_t index; /* which collective occupies the slot, -1 none */
	const char *function;
	uint64_t count;
	uint64_t arrival_ns[PROGRESS_MAX_RANKS]; /* 0: not yet */
	uint64_t duration_ns[PROGRESS_MAX_RANKS];
	int64_t seq[PROGRESS_MAX_RANKS]; /* the rank's NCCL sequence number of the call */
	/* What each rank called there (its function and element count): ranks may disagree. */
	const char *functions[PROGRESS_MAX_RANKS];
	uint64_t counts[PROGRESS_MAX_RANKS];
	/*
	 * The time the rank's process had spent inside calls that returned
	 * (on any communicator, or none) when it arrived: between two
	 * collectives, what it did not spend waiting it spent computing.
	 */
	uint64_t inside_before_ns[PROGRESS_MAX_RANKS];
	/* The calling thread's time waiting for a CPU at its arrival, and which thread (0 unknown).
	 */
	uint64_t cpu_wait_ns[PROGRESS_MAX_RANKS];
	uint32_t tid[PROGRESS_MAX_RANKS];
	/*
	 * Ranks (bit r) whose call there never reached the model, its place
	 * known from the rank's numbering: arrival_ns is when its next call
	 * came, a bound and not a time, and it has no function or count.
	 */
	uint64_t guessed;
};

/*
 * How far the last rank comes after the others at a communicator's
 * collectives, learned over them: its running mean and mean deviation
 * upwards (slowdown_detector_learn).
 */
struct progress_lead {
	double mean_ns;
	double jitter_ns;
	uint32_t samples;
};

struct progress_comm {
	uint64_t comm_id;
	int32_t nranks;
	struct progress_rank ranks[PROGRESS_MAX_RANKS];
	struct progress_slot *window; /* PROGRESS_WINDOW slots */
	/* Ranks' entries a slot may hold: nranks, or more if a call named a rank past it. */
	int32_t slot_width;
	uint64_t signatures[PROGRESS_SIGNATURES];
	int64_t signature_count;
	/*
	 * The sequence number of the first collective seen here, where ranks
	 * number alike (TRACE_CALL_SEQ_FROM_LIBRARY): index 0 of the window.
	 */
	int64_t seq_origin;
	bool seq_origin_known;
	int32_t period; /* collectives per step, 0 not known yet */
	int32_t offset; /* collectives before the first periodic step */
	int64_t steps_completed;
	uint64_t last_boundary_ns; /* the last rank's arrival at the last step boundary */
	double expected_step_ns;   /* 0 while learning */
	unsigned learned_steps;
	double steps_per_period; /* job steps one step of this communicator spans, at least 1 */
	/* Expected wait before each position of the step, learned with the step time. */
	double expected_gap_ns[PROGRESS_MAX_PERIOD];
	/*
	 * A step slower than alpha times the first one learned, kept while that
	 * first one is the only sample (0: none): a third decides by the median.
	 */
	double disputed_step_ns;
	double disputed_gap_ns[PROGRESS_MAX_PERIOD];
	uint64_t last_progress_ns; /* last time any rank issued a call here */
	bool hang_reported;
	/*
	 * Its calls are seen entered only (c10d's: the work runs and completes
	 * unseen): a collective every rank issued may well have finished.
	 */
	bool entries_only;
	/*
	 * Its calls last until their work ends (c10d's, awaited): a rank
	 * inside one is waiting for the others.
	 */
	bool work_awaited;
	/*
	 * The job's own jitter: how long the last rank arrived after the others
	 * at each collective, and how much longer the rank that computed
	 * longest between two collectives computed than the others.
	 */
	struct progress_lead arrival_lead, compute_lead;
	int64_t lead_learned_index; /* the last collective learned from, -1 none */
	int64_t judged_index;	    /* the last collective found completed and judged, -1 none */
};

#define PROGRESS_BLOCKED_MAX 256

/*
 * A thread's latest call on no communicator (ncclGroupEnd of blocking
 * sends): blocked while 'open'. A returned one is kept so that a sighting
 * in flight read before its return, and handed over after it, is known
 * as stale.
 */
struct progress_blocked {
	uint32_t pid, tid;
	uint64_t entry_ns;
	bool open;
};

#define PROGRESS_PROCESSES_MAX 256
#define PROGRESS_CALLS_KEPT 256 /* a process's latest communication calls, for its pattern */

/* One communication call of a process: where, what, which of that communicator's calls. */
struct progress_call_mark {
	uint64_t comm_id;
	const char *function;
	int64_t seq;
};

/*
 * A process across its communicators: the time it spent inside calls that
 * returned (depth 0, any thread), and its latest communication calls in
 * the order it made them (a ring), from which its own per-step pattern is
 * found.
 */
struct progress_process {
	uint32_t pid;
	uint64_t inside_ns;
	struct progress_call_mark calls[PROGRESS_CALLS_KEPT];
	uint64_t call_count; /* ever: the next goes at call_count % PROGRESS_CALLS_KEPT */
};

#define PROGRESS_INITS_MAX 16

/*
 * A communicator being created (ncclCommInitRank): which of its ranks
 * entered the init call, since when, and which returned. The call blocks
 * until every rank has entered it, so a rank that never does leaves the
 * others inside it.
 */
struct progress_init {
	uint64_t comm_id; /* the identity the communicator will have (its unique id) */
	int32_t nranks;
	const char *function;
	uint64_t entry_ns[PROGRESS_MAX_RANKS]; /* 0: never entered */
	uint32_t pid[PROGRESS_MAX_RANKS];
	bool returned[PROGRESS_MAX_RANKS];
	bool hang_reported;
};

struct progress_model {
	struct progress_options options;
	struct progress_comm *comms;
	unsigned comm_count;
	size_t comm_capacity;
	uint64_t now_ns;	     /* latest time seen in any record or tick */
	struct watched_time watched; /* what tcheck-bpf's own ticks say it was there to see */
	struct progress_blocked blocked[PROGRESS_BLOCKED_MAX];
	unsigned blocked_count;
	struct progress_init inits[PROGRESS_INITS_MAX]; /* the latest ones, oldest replaced */
	unsigned init_count;				/* of inits[] in use */
	unsigned inits_seen; /* ever: the next goes at inits_seen % MAX */
	struct progress_process processes[PROGRESS_PROCESSES_MAX];
	unsigned process_count;
};

/*
 * Whether the process is blocked inside a call (seen open and not returned)
 * other than on 'comm' (NULL: any): on another communicator, or in a call on
 * none (ncclGroupEnd waiting for its sends and receives).
 */
bool progress_model_blocked_elsewhere(const struct progress_model *model,
				      const struct progress_comm *comm, uint32_t pid);

/* The element count of a call ("count", "sendcount" or "recvcount"), 0 when it has none. */
uint64_t progress_call_count(const struct trace_nccl_call *call);

/* NULL when out of memory; 'options' NULL for the defaults. */
struct progress_model *progress_model_new(const struct progress_options *options);
void progress_model_free(struct progress_model *model);

/*
 * Takes one call. A call still open (TRACE_CALL_OPEN, a rank blocked
 * inside it) counts as issued from its entry; when it returns, or is seen
 * open again, it is the same call, not a new one. Returns the communicator it advanced (NULL when
 * the call is not a communication call with a known communicator and rank), and sets
 * *completed_step to the last step it completed, or -1.
 */
struct progress_comm *progress_model_add_call(struct progress_model *model,
					      const struct trace_nccl_call *call,
					      int64_t *completed_step);
/*
 * The same for a call of 'process', the model's entry of the call's pid
 * (progress_process_of, kept by the caller; NULL when the model keeps no
 * more processes).
 */
struct progress_comm *progress_model_add_process_call(struct progress_model *model,
						      struct progress_process *process,
						      const struct trace_nccl_call *call,
						      int64_t *completed_step);

/* A process exited: its communicators are done, not stuck. */
void progress_model_process_ended(struct progress_model *model, uint32_t pid);

/*
 * The call the process would make next if it kept to its own pattern: of
 * the periods its latest calls (on all its communicators) repeat with,
 * three times over at least (twice for periods of four calls or more), the
 * one that holds over the longest stretch gives the call one period before
 * the next; its seq is the one after the process's last on that
 * communicator. False when no pattern is found.
 */
bool progress_model_next_call(const struct progress_model *model, uint32_t pid,
			      struct progress_call_mark *next);

/* Moves the clock without a call (periodic ticks, stats records). */
void progress_model_advance(struct progress_model *model, uint64_t now_ns);

/*
 * How long a silence that began at since_ns has lasted by now, counted from
 * the end of a later gap tcheck-bpf did not watch (watched_time.h); 0 when
 * it begins later than now.
 */
double progress_model_silence_ns(const struct progress_model *model, uint64_t since_ns);

/*
 * The shortest expected step of any communicator learned from two job
 * steps or more: the job's step. 0 unknown.
 */
double progress_model_job_step_ns(const struct progress_model *model);

/* The slot of collective 'index', or NULL when it is not remembered. */
const struct progress_slot *progress_comm_slot(const struct progress_comm *comm, int64_t index);

/* The last rank's arrival at collective 'index', 0 when some rank has not arrived. */
uint64_t progress_comm_last_arrival(const struct progress_comm *comm, int64_t index);
/* Whether a rank's arrival at collective 'index' is guessed (progress_slot.guessed). */
bool progress_comm_guessed(const struct progress_comm *comm, int64_t index);

/* Index of the collective that ends step 'step' (the period must be known). */
int64_t progress_comm_step_end(const struct progress_comm *comm, int64_t step);

/* Whether the call is a collective (every rank of the communicator takes part). */
bool progress_is_collective(const struct nccl_function *function);
bool progress_is_point_to_point(const struct nccl_function *function);

#endif /* TCHECK_PROGRESS_MODEL_H */
