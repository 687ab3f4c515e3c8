/* SPDX-License-Identifier: MIT */
/*
 * Finds training processes on the node: those that map an NCCL library
 * (libnccl*, or libtorch_cuda* which may carry NCCL inside) or, when asked,
 * torch's CPU library (Python processes running torch). A selector narrows
 * it to processes whose command line contains a text.
 */
#ifndef TCHECK_PROCESS_FINDER_H
#define TCHECK_PROCESS_FINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum process_skip_reason {
	PROCESS_SKIP_CPU_JOB,
	PROCESS_SKIP_RANK_UNKNOWN,
};

struct process_finder_options {
	bool torch_without_nccl;      /* also processes mapping libtorch_cpu (CPU training) */
	const char *command_contains; /* NULL: any command line */
	int first_rank;		      /* with last_rank >= 0: only RANK in [first, last] */
	int last_rank;		      /* -1: any process, with a RANK or not */
	/*
	 * Told of each training process left out, and why (NULL: none): one
	 * that maps libtorch_cpu and no NCCL library, without
	 * torch_without_nccl (a CPU job); one with no RANK in its environment
	 * while a rank range is asked for and rank_of_unranked cannot read its
	 * rank yet (a launcher, or a torch.multiprocessing.spawn worker before
	 * its process group is made).
	 */
	void (*skipped)(void *context, pid_t pid, enum process_skip_reason reason);
	/*
	 * With a rank range: the rank of a training process with no RANK, read
	 * some other way (its communicators or c10d groups in its memory), -1
	 * while it cannot be. NULL: such a process is never placed.
	 */
	int (*rank_of_unranked)(void *context, pid_t pid);
	void *context;
};

/* Whether the text of a /proc/PID/maps marks a training process. */
bool process_finder_maps_match(const char *maps_text, bool torch_without_nccl);

/* The matching processes other than this one, at most capacity, in /proc order. */
size_t process_finder_scan(const struct process_finder_options *options, pid_t *pids,
			   size_t capacity);

#endif /* TCHECK_PROCESS_FINDER_H */
