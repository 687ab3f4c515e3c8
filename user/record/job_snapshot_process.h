/* SPDX-License-Identifier: MIT */
/*
 * Reading one process of a job snapshot (job_snapshot.c), for the reader
 * that bounds how long each takes (job_snapshot_read.c). The file tables
 * hold the symbols of the files the processes map, read once for all the
 * processes of one reader; they belong to one thread at a time.
 */
#ifndef TCHECK_JOB_SNAPSHOT_PROCESS_H
#define TCHECK_JOB_SNAPSHOT_PROCESS_H

#include <stddef.h>

#include "record/job_snapshot.h"

struct snapshot_file_tables;

struct snapshot_file_tables *snapshot_file_tables_new(void);
void snapshot_file_tables_free(struct snapshot_file_tables *tables);

/* Told before each step of a reading what it is about to do: "reading thread 12's stack". */
typedef void (*snapshot_step_fn)(void *context, const char *what);

/*
 * Reads process->pid into 'process' (pid and rank -1 set by the caller;
 * step may be NULL). 0, or a negative errno with error filled; either way
 * free it with snapshot_process_free.
 */
int snapshot_process_read(struct snapshot_process *process, struct snapshot_file_tables *tables,
			  snapshot_step_fn step, void *context, char *error, size_t error_size);
void snapshot_process_free(struct snapshot_process *process);

#endif /* TCHECK_JOB_SNAPSHOT_PROCESS_H */
