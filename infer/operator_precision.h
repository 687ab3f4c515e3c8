/* SPDX-License-Identifier: MIT */
/*
 * OnePrecision: in every step, a forward operator that reads a weight
 * (linear, conv) computes in one dtype. Training is in full precision or in
 * mixed precision, where an autocast region lowers every such operator
 * alike; a layer that runs in float32 while the others of its kind run in
 * bfloat16 was left out of the region (lightning-thunder#725: a linear
 * primitive the autocast transformation skipped), and mixed-precision
 * training silently loses its speed and memory savings while every loss
 * looks right.
 *
 * The precision a call computes in is the dtype of the weight it reads,
 * with one exception: autocast's kernel for an operator casts its arguments
 * and calls the same operator again. So a call followed, on its thread and
 * before any other weight-reading call, by a call of the same operator on a
 * weight of the same sizes is the wrapper of that call: the second call's
 * dtype is the precision of both (Float[40, 10], then BFloat16[40, 10]: one
 * linear in bfloat16). A layer applied twice in a row computes in its own
 * dtype either way.
 *
 * Only calls made with autograd on are judged: a forward under no_grad()
 * is an evaluation or a teacher's, which a program may well run in full
 * precision beside a mixed-precision training forward (a validation that
 * wants exact metrics), and the report's bug is in the training forward.
 *
 * Known limit: a program that keeps a layer in float32 on purpose inside an
 * autocast region (`autocast(enabled=False)` around it), or a model that
 * mixes float64 and float32 layers by design, reads exactly like the
 * report's bug and is flagged.
 */
#ifndef TCHECK_OPERATOR_PRECISION_H
#define TCHECK_OPERATOR_PRECISION_H

#include <stdbool.h>
#include <stddef.h>

#include "base/u64_map.h"
#include "infer_event.h"
#include "rule_support.h"
#include "rules.h"

/* Operators judged per process and step (distinct names). */
#define OPERATOR_PRECISION_NAMES_MAX 8

/*
 * An example: the calls of operator 'call->name' in one step of a process;
 * 'first' the first of them, 'call' one computing in another dtype than it
 * (holds false), or 'first' again (holds true).
 */
typedef int (*operator_precision_example_fn)(void *context, const struct infer_event *first,
					     const struct infer_event *call, bool holds);

/* Each process's step so far: the precision of each operator, and the call still open. */
struct operator_precision_tracker {
	struct u64_map processes; /* hash of (pipeline, pid) -> struct operator_precision_step */
	struct string_pool *pool; /* the events' */
};

/* 'pool' is the one the events' strings are interned in; it must outlive the tracker. */
void operator_precision_tracker_init(struct operator_precision_tracker *tracker,
				     struct string_pool *pool);
void operator_precision_tracker_free(struct operator_precision_tracker *tracker);

/*
 * Whether an event is an operator call that names the dtype of the weight it
 * reads, made with autograd on.
 */
bool operator_precision_wants(const struct infer_event *event);

/*
 * Follows one event of a process, in the process's order. A step the
 * process has left is handed to 'example', one call per operator: the call
 * on autocast's cast weight stands for its wrapper, without its
 * requires_grad (a cast copy is no frozen weight). 'cached' is the caller's
 * slot for the event's process (NULL: looked up each time,
 * u64_map_get_or_add_cached). Returns 0, -ENOMEM, or what 'example'
 * returned when not 0.
 */
int operator_precision_observe(struct operator_precision_tracker *tracker,
			       const struct infer_event *event, void **cached,
			       operator_precision_example_fn example, void *context);

/* Hands every step still open to 'example' (the end of the trace). */
int operator_precision_finish(struct operator_precision_tracker *tracker,
			      operator_precision_example_fn example, void *context);

/*
 * Finds the OnePrecision invariants of 'events' (one rule per operator the
 * references run in one dtype in every step) and adds them to 'rules'.
 * Returns 0 or -ENOMEM.
 */
int infer_operator_precision(struct rule_set *rules, const struct infer_event *events, size_t count,
			     const struct rule_evidence *evidence);

#endif /* TCHECK_OPERATOR_PRECISION_H */
