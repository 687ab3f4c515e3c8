/* SPDX-License-Identifier: MIT */
/*
 * The relation engine's state and what its passes share: the events
 * collected, the rule a pass found emitted under a precondition, and the
 * passes kept in files of their own (sequence_inference.c: APISequence;
 * update_inference.c: ParametersUpdated and Consistent on rank updates).
 * Private to infer/; inference.h is the interface.
 */
#ifndef TCHECK_INFERENCE_ENGINE_H
#define TCHECK_INFERENCE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infer_event.h"
#include "inference.h"
#include "optimizer_firsts.h"
#include "process_uses.h"
#include "rule_support.h"
#include "rules.h"

/* Least passing examples for an invariant to be emitted. */
#define MIN_PASSING 2

struct inference {
	struct rule_set *rules;
	struct infer_event *events;
	size_t count;
	size_t capacity;
	/* Python occurrence of each event within its (pid, name, step), for Consistent. */
	uint32_t *occurrence;
	uint32_t pipeline;	 /* of the events added next */
	uint32_t pipeline_count; /* pipelines given so far */
	struct process_uses uses;
	struct optimizer_firsts firsts; /* which optimizer steps are their optimizer's first */
	struct rule_evidence evidence;
};

static inline int inference_compare_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

static inline int inference_compare_i64(int64_t a, int64_t b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

bool inference_same_process_step(const struct infer_event *a, const struct infer_event *b);

/* Whether the examples come from two steps or more (unknown steps count as one). */
int inference_several_steps(const struct infer_event *const *examples, size_t count);

/*
 * Adds 'rule' when it has MIN_PASSING examples, the support its scope needs,
 * and a precondition that tells the passing from the failing examples. Peers:
 * for cross-rank relations, another event of each example's group, else
 * NULL. 0, or -ENOMEM.
 */
int inference_emit_pairs(struct inference *inference, struct rule *rule,
			 const struct infer_event *const *passing,
			 const struct infer_event *const *passing_peers, size_t passing_count,
			 const struct infer_event *const *failing,
			 const struct infer_event *const *failing_peers, size_t failing_count,
			 const char *excluded);
/* The same without peers. */
int inference_emit(struct inference *inference, struct rule *rule,
		   const struct infer_event *const *passing, size_t passing_count,
		   const struct infer_event *const *failing, size_t failing_count,
		   const char *excluded);

/*
 * The passes kept apart. Each takes 'order' (room for a pointer per event)
 * and 'passing' and 'failing' (the same) as scratch; 0, or -ENOMEM.
 */
/* APISequence: in every step of a process, A before B; leaves 'order' by process and step. */
int inference_sequences(struct inference *inference, const struct infer_event **order,
			const struct infer_event **passing, const struct infer_event **failing);
int inference_parameter_updates(struct inference *inference, const struct infer_event **order,
				const struct infer_event **passing,
				const struct infer_event **failing);
int inference_rank_updates(struct inference *inference, const struct infer_event **order,
			   const struct infer_event **passing, const struct infer_event **failing);

#endif /* TCHECK_INFERENCE_ENGINE_H */
