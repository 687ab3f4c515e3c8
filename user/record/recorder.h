/* SPDX-License-Identifier: MIT */
/*
 * Records the NCCL calls of running processes, or of a command it starts,
 * into a trace file and/or a live summary. Shared by `record` and `attach`.
 */
#ifndef TCHECK_RECORDER_H
#define TCHECK_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct trace_record;

/* What else follows a recording as it happens: the agent's metrics, live checks. */
struct recorder_observer {
	void *context;
	/* Every record, as it is (or would be) written to the trace: calls, processes, stats. */
	void (*record)(void *context, const struct trace_record *record);
	/*
	 * Twice a second: processes to start tracing (at most capacity, into
	 * pids); ones already traced are skipped. NULL: none.
	 */
	size_t (*discover)(void *context, pid_t *pids, size_t capacity);
	/* A probe attachment the kernel refused, on the file at path (host view). NULL: none. */
	void (*attach_failed)(void *context, const char *path);
	/* After each read of the ring buffer, its probes attached (monotonic now_ns). NULL: none.
	 */
	void (*polled)(void *context, uint64_t now_ns);
};

struct recorder_options {
	const pid_t *pids; /* --pid, repeatable */
	size_t pid_count;
	char *const *command;	  /* the command after --, NULL-terminated, or NULL */
	const char *output_path;  /* -o, or NULL for no trace file */
	bool replace_output;	  /* --force: -o may name a file that exists */
	const char *nccl_library; /* --nccl-lib, or NULL to discover */
	bool follow_children;	  /* trace processes the targets start (default) */
	bool live_status;	  /* print a summary line every second */
	double duration_seconds;  /* stop after this long; 0: when the targets end */
	size_t ring_buffer_bytes;
	bool python;			    /* also trace Python calls entered from C */
	const char *const *python_prefixes; /* NULL-ended selection; NULL: the defaults */
	const char *step_marker;      /* what advances the step; NULL: Optimizer.step's scope */
	const char *const *torch_ops; /* --torch-op requests ("add_", "zero_.default") */
	size_t torch_op_count;
	bool training_ops; /* also the training operators: updates, forward reads (--python) */
	const struct recorder_observer *observer; /* NULL: none */
	/*
	 * Run on when no target is left (the agent): until a signal; the caller
	 * says what it waits for, so no hint about --nccl-lib is given.
	 */
	bool until_stopped;
	/* Stop a process as its uncaught Python exception is about to end it (SIGSTOP). */
	bool freeze_on_crash;
	struct job_diagnosis *diagnosis; /* hang and slowdown detectors fed live, or NULL */
	int argc;			 /* the tcheck-bpf command line, for the trace header */
	char *const *argv;
};

/*
 * Runs until the targets exit, the duration passes, or SIGINT/SIGTERM.
 * Returns the process exit status for tcheck-bpf: with a command, the
 * command's own status; 1 for errors of tcheck-bpf itself.
 */
int recorder_run(const struct recorder_options *options);

#endif /* TCHECK_RECORDER_H */
