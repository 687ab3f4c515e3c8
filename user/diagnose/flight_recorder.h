/* SPDX-License-Identifier: MIT */
/*
 * What each traced process did last, kept from outside it: a ring of the
 * last calls it made itself (NCCL and c10d collectives, with communicator,
 * sequence number and whether it had returned), in the order it entered
 * them, whatever order their records arrive in, its last training step and stage, and its
 * last Python call or torch scope. A crash report reads it when the process
 * dies; nothing in the process is needed, so it works for a process that
 * was killed as for one that raised.
 */
#ifndef TCHECK_FLIGHT_RECORDER_H
#define TCHECK_FLIGHT_RECORDER_H

#include <stdbool.h>
#include <stdint.h>

#include "model/trace_records.h"

#define FLIGHT_CALLS_DEFAULT 16
#define FLIGHT_CALLS_MAX 256
#define FLIGHT_PROCESSES_MAX 4096

struct flight_call {
	const char *function;
	uint64_t comm_id;
	int32_t rank;
	int32_t nranks;
	int64_t seq;
	uint64_t count; /* elements, 0 unknown */
	uint64_t entry_ns;
	uint64_t duration_ns;
	int32_t step;
	bool open; /* not returned when last seen */
};

struct flight_process {
	uint32_t pid;
	unsigned next;	/* where the next call goes in calls[] */
	unsigned count; /* calls kept, at most the ring's size */
	struct flight_call *calls;
	int32_t step; /* the last step seen, -1 none */
	uint32_t stage;
	char last_python[128]; /* the last Python call or torch scope, "" none */
	uint64_t last_python_ns;
	/*
	 * The exception that ended the process: one no code caught, as the
	 * process printed it, or one a handler caught before it exited with a
	 * failure status (handled_at_exit); type "" none.
	 */
	struct flight_exception {
		bool handled_at_exit;
		char type[64];
		char message[192];
		unsigned frame_count;
		char frames[TRACE_PY_STACK_MAX][128]; /* innermost first */
	} exception;
};

struct flight_recorder {
	unsigned ring_size; /* calls per process */
	struct flight_process processes[FLIGHT_PROCESSES_MAX];
	unsigned process_count;
};

/* 'ring_size' calls per process (0: FLIGHT_CALLS_DEFAULT; at most FLIGHT_CALLS_MAX). */
void flight_recorder_init(struct flight_recorder *recorder, unsigned ring_size);
void flight_recorder_free(struct flight_recorder *recorder);

/*
 * A call the program made (depth 0; calls a library makes inside another are
 * left out): a new one enters the ring; the same call again (returned, or
 * open again) updates it.
 */
void flight_recorder_call(struct flight_recorder *recorder, const struct trace_nccl_call *call);
/* A Python call or torch scope: the process's step, stage and last Python event. */
void flight_recorder_python(struct flight_recorder *recorder,
			    const struct trace_python_call *python);

/*
 * The process's record, added when new; NULL when FLIGHT_PROCESSES_MAX are
 * kept or out of memory. It stays where it is while the recorder lives: a
 * caller that keeps it finds the process without a look-up.
 */
struct flight_process *flight_recorder_process(struct flight_recorder *recorder, uint32_t pid);
/* The same as flight_recorder_call and _python for the process's record (NULL: nothing). */
void flight_recorder_keep_call(const struct flight_recorder *recorder,
			       struct flight_process *process, const struct trace_nccl_call *call);
void flight_recorder_keep_python(struct flight_process *process,
				 const struct trace_python_call *python);

/* The process's record, NULL when it made nothing the recorder keeps. */
const struct flight_process *flight_recorder_find(const struct flight_recorder *recorder,
						  uint32_t pid);
/* Its i-th call, oldest first (i < count). */
const struct flight_call *flight_process_call(const struct flight_process *process, unsigned i,
					      unsigned ring_size);

#endif /* TCHECK_FLIGHT_RECORDER_H */
