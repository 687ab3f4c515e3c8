/* SPDX-License-Identifier: MIT */
/*
 * Records the NCCL calls (and Python calls, torch scopes, c10d collectives)
 * of running processes, or of a command it starts: drains the probes,
 * builds records and hands each to the consumers the verb registered.
 * Shared by `record`, `attach` and `agent`.
 */
#ifndef TCHECK_RECORDER_H
#define TCHECK_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct record_consumer;

/* Where the processes to trace come from besides the command line: the agent's discovery. */
struct recorder_observer {
	void *context;
	/*
	 * Twice a second: processes to start tracing (at most capacity, into
	 * pids); ones already traced are skipped. NULL: none.
	 */
	size_t (*discover)(void *context, pid_t *pids, size_t capacity);
	/* A probe attachment the kernel refused, on the file at path (host view). NULL: none. */
	void (*attach_failed)(void *context, const char *path);
};

struct recorder_options {
	const pid_t *pids; /* --pid, repeatable */
	size_t pid_count;
	char *const *command;	  /* the command after --, NULL-terminated, or NULL */
	const char *output_path;  /* -o, named in the closing line; NULL: no trace file */
	bool replace_output;	  /* --force: -o may name a file that exists */
	const char *nccl_library; /* --nccl-lib, or NULL to discover */
	bool follow_children;	  /* trace processes the targets start (default) */
	double duration_seconds;  /* stop after this long; 0: when the targets end */
	size_t ring_buffer_bytes;
	bool python;			    /* also trace Python calls entered from C */
	const char *const *python_prefixes; /* NULL-ended selection; NULL: the defaults */
	const char *step_marker;      /* what advances the step; NULL: Optimizer.step's scope */
	const char *const *torch_ops; /* --torch-op requests ("add_", "zero_.default") */
	size_t torch_op_count;
	bool training_ops; /* also the training operators: updates, forward reads (--python) */
	/*
	 * Python through torch's probes only (scopes, backward, operators):
	 * CPython's frame evaluator is not probed (--rules that need no
	 * Python function's calls).
	 */
	bool torch_events_only;
	const struct recorder_observer *observer; /* NULL: none */
	/*
	 * What follows the recording (trace file, detectors, live status, rule
	 * checker, metrics): each record goes to each, in this order.
	 */
	const struct record_consumer *consumers;
	size_t consumer_count;
	/*
	 * Run on when no target is left (the agent): until a signal; the caller
	 * says what it waits for, so no hint about --nccl-lib is given.
	 */
	bool until_stopped;
	/* Stop a process as its uncaught Python exception is about to end it (SIGSTOP). */
	bool freeze_on_crash;
	int argc; /* the tcheck-bpf command line, for the trace header */
	char *const *argv;
};

/*
 * Runs until the targets exit, the duration passes, or SIGINT/SIGTERM.
 * Returns the process exit status for tcheck-bpf: with a command, the
 * command's own status; 1 for errors of tcheck-bpf itself.
 */
int recorder_run(const struct recorder_options *options);

#endif /* TCHECK_RECORDER_H */
