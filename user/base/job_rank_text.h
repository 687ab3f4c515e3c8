/* SPDX-License-Identifier: MIT */
/*
 * The one way a process's job rank (RANK, the rank in the whole job; not
 * its rank in a communicator) is said in text: "job rank 3", or "no job
 * rank" for a process that has none (a single process, a launcher), never
 * "-1"; JSON says the same with null (export_json_known_or_null).
 */
#ifndef TCHECK_JOB_RANK_TEXT_H
#define TCHECK_JOB_RANK_TEXT_H

#include <stdint.h>

/* "job rank " and up to 11 characters, or "no job rank", and the NUL. */
#define JOB_RANK_TEXT_SIZE 24

/* Writes the job rank (negative: none) into 'text' and returns text. */
const char *job_rank_text(int32_t job_rank, char text[JOB_RANK_TEXT_SIZE]);

#endif /* TCHECK_JOB_RANK_TEXT_H */
