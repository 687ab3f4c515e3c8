/* SPDX-License-Identifier: MIT */
/*
 * One side of a diff: the traces of one run read into what can be compared
 * with another run of the same job, per job rank: the communication calls
 * in order with the communicator each used (known by the order the rank
 * first used it and its size, never by address or hash), the Python calls
 * and torch scopes and operators, and the step of each.
 */
#ifndef TCHECK_RUN_MODEL_H
#define TCHECK_RUN_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/nccl_api.h"
#include "model/trace_records.h"

/* No value: a parameter the function does not have. */
#define RUN_VALUE_NONE INT64_MIN

/* One communication call (collective or point-to-point) of a rank, as compared. */
struct run_call {
	const struct nccl_function *api; /* its nccl.h table entry */
	int communicator;		 /* index into the rank's communicators */
	int step;			 /* -1: before the first step */
	int64_t count;			 /* RUN_VALUE_NONE when the function has none */
	int64_t datatype;
	int64_t op;
	int64_t root;	   /* root of a rooted collective, or the peer of a send or receive */
	uint64_t entry_ns; /* on the side's common clock */
	uint64_t duration_ns;
};

/* A communicator as a rank sees it: the n-th it used, and its size. */
struct run_communicator {
	uint64_t key; /* comm_id, or the handle when the identity is unknown */
	bool shared;  /* key is comm_id: the same on every rank of the communicator */
	int number;   /* its name across the job: see run_communicator_name */
	int32_t nranks;
	size_t calls; /* communication calls the rank made on it */
};

/* A Python call, torch scope or torch operator of a rank. */
struct run_python_event {
	const char *name;
	char *arguments; /* "lr=0.1, nesterov=False", "" for none */
	int torch;	 /* 1 for a torch scope or operator, 0 for a Python function */
	int step;
	uint64_t entry_ns;
};

struct run_rank {
	int job_rank;
	struct run_call *calls;
	size_t call_count, call_capacity;
	struct run_communicator *communicators;
	size_t communicator_count, communicator_capacity;
	struct run_python_event *python;
	size_t python_count, python_capacity;
	int steps; /* steps seen: the highest step + 1 */
};

struct run_model;

/*
 * Reads 'count' traces of one run (hosts merged on their clock anchors).
 * Returns NULL with 'error' filled when a trace cannot be read or is damaged.
 */
struct run_model *run_model_load(const char *const *paths, int count, char *error,
				 size_t error_size);
void run_model_free(struct run_model *model);

/*
 * A model built record by record (tests, or records from elsewhere):
 * records of trace 'trace', times moved by 'shift_ns', then
 * run_model_finish() once. add returns 0 or -ENOMEM.
 */
struct run_model *run_model_new(void);
int run_model_add_record(struct run_model *model, int trace, const struct trace_record *record,
			 int64_t shift_ns);
void run_model_finish(struct run_model *model);

/* The highest job rank + 1; run_model_rank() is NULL for ranks not seen. */
int run_model_rank_limit(const struct run_model *model);
const struct run_rank *run_model_rank(const struct run_model *model, int job_rank);
/* Ranks seen. */
int run_model_rank_count(const struct run_model *model);
/* Calls and Python events of every rank. */
size_t run_model_event_count(const struct run_model *model);

/* Whether two calls are the same call: function, count, datatype, op and root or peer. */
int run_call_same(const struct run_call *a, const struct run_call *b);

/*
 * "comm 2 (4 ranks)": how reports name a rank's communicator, by its number
 * across the job (the same on every rank that uses it).
 */
void run_communicator_name(const struct run_rank *rank, int communicator, char *text, size_t size);

#endif /* TCHECK_RUN_MODEL_H */
