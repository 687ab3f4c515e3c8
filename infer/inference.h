/* SPDX-License-Identifier: MIT */
/*
 * Invariant inference: collects the calls of one or more traces (ranks,
 * runs, hosts, programs) and finds the Consistent, APIArg, APIOutput,
 * APISequence and EventContain relations that hold on them under a safe
 * precondition.
 */
#ifndef TCHECK_INFERENCE_H
#define TCHECK_INFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "rules.h"

struct inference;

/* The rules found are added to 'rules', whose string pool events share. */
struct inference *inference_new(struct rule_set *rules);
void inference_free(struct inference *inference);

/*
 * The pipeline (one reference program's trace, numbered from 0) the records
 * added next come from; 0 until set. Rules record how many pipelines support
 * them, which decides where they apply (rule_support.h).
 */
void inference_set_pipeline(struct inference *inference, uint32_t pipeline);

/* Adds one record (other kinds than calls are ignored); 0 or -ENOMEM. */
int inference_add(struct inference *inference, const struct trace_record *record);

/* Events collected so far. */
size_t inference_event_count(const struct inference *inference);

/* Finds the invariants and adds them to the rule set; 0 or -ENOMEM. */
int inference_run(struct inference *inference);

#endif /* TCHECK_INFERENCE_H */
