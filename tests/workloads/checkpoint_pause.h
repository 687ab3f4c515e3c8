/* SPDX-License-Identifier: MIT */
/*
 * A healthy pause for the NCCL workload (--checkpoint R:N:MS): rank R, at
 * the start of every N-th step (N, 2N, ...), writes a checkpoint file
 * beside its logs for MS ms, again and again, each written aside, flushed
 * and renamed, while the other ranks go on to their next collective and wait
 * there. Each pause is logged to DIR/rank-R.checkpoints, one JSON line
 * with its step, start and end (CLOCK_MONOTONIC), after it ends.
 */
#ifndef TCHECK_CHECKPOINT_PAUSE_H
#define TCHECK_CHECKPOINT_PAUSE_H

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "rank_launcher.h"

#define CHECKPOINT_BYTES (1024 * 1024)

struct checkpoint_pause {
	int rank; /* -1: none */
	int every;
	long ms;
};

/* "RANK:EVERY:MS" for --checkpoint. */
static inline bool parse_checkpoint_pause(const char *text, struct checkpoint_pause *pause)
{
	int consumed = 0;

	return sscanf(text, "%d:%d:%ld%n", &pause->rank, &pause->every, &pause->ms, &consumed) ==
		       3 &&
	       !text[consumed] && pause->rank >= 0 && pause->every > 0 && pause->ms > 0;
}

static inline uint64_t checkpoint_clock_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

/*
 * One save: written aside, flushed to storage (as a careful job does, and so
 * the kernel's write-back of it does not spill into the steps after the
 * pause), and renamed into place.
 */
static inline int write_checkpoint(const char *path, const char *contents, size_t length)
{
	char temporary[PATH_MAX + 8];
	int fd, failed;

	snprintf(temporary, sizeof(temporary), "%s.tmp", path);
	fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	failed = write(fd, contents, length) != (ssize_t)length || fsync(fd) != 0;
	failed |= close(fd) != 0;
	return failed || rename(temporary, path) != 0 ? -1 : 0;
}

/* The pause, when it is due for this rank and step; 0, or -1 when a file cannot be written. */
static inline int checkpoint_pause_run(const struct checkpoint_pause *pause, const char *log_dir,
				       int rank, int step)
{
	static char contents[CHECKPOINT_BYTES];
	char path[PATH_MAX];
	uint64_t start, end;
	unsigned saves = 0;
	FILE *log;

	if (pause->rank != rank || step == 0 || step % pause->every)
		return 0;
	snprintf(path, sizeof(path), "%s/rank-%d.checkpoint", log_dir, rank);
	start = checkpoint_clock_ns();
	do {
		contents[saves % sizeof(contents)] = (char)saves;
		if (write_checkpoint(path, contents, sizeof(contents)) < 0)
			return -1;
		saves++;
	} while (checkpoint_clock_ns() - start < (uint64_t)pause->ms * 1000000ULL);
	end = checkpoint_clock_ns();
	snprintf(path, sizeof(path), "%s/rank-%d.checkpoints", log_dir, rank);
	log = fopen(path, "a");
	if (!log)
		return -1;
	fprintf(log, "{\"rank\":%d,\"step\":%d,\"saves\":%u,\"start_ns\":%llu,\"end_ns\":%llu}\n",
		rank, step, saves, (unsigned long long)start, (unsigned long long)end);
	return fclose(log) ? -1 : 0;
}

#endif /* TCHECK_CHECKPOINT_PAUSE_H */
