/* SPDX-License-Identifier: MIT */
/*
 * EvalModeRespected: in evaluation (eval()), an operator with a training
 * flag runs as in evaluation: dropout's `train` argument is False. A model
 * whose attention passes `training=True` whatever its mode
 * (transformers#33844) keeps dropping activations in eval(): outputs vary
 * from call to call and evaluation scores degrade, with no error.
 *
 * The tracer knows a process's stage from the last `training` attribute a
 * module was given, so a program that puts part of its model in eval() on
 * purpose while training (frozen batch norm, frozen stages) stays in stage
 * eval through its training forwards. An operator call in stage eval is
 * therefore judged only once the process runs the flagged operators in
 * stage train again: an evaluation phase the program leaves for training,
 * not the mode it trains in. A call made inside a module the program put
 * back in train() within the evaluation on purpose (Monte Carlo dropout:
 * model.eval(), then each nn.Dropout's train(); the module call says so,
 * INFER_EVENT_OWN_TRAINING_MODE) is not judged: that dropout follows its
 * module's mode, as the rule asks.
 */
#ifndef TCHECK_EVAL_MODE_H
#define TCHECK_EVAL_MODE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/u64_map.h"
#include "infer_event.h"
#include "rule_support.h"
#include "rules.h"

/* The fields of an operator's training flag: dropout's train, batch norm's training. */
#define EVAL_MODE_FLAG_FIELD "arg:train"
#define EVAL_MODE_TRAINING_FIELD "arg:training"
/* Calls kept per process and evaluation phase: the first ones judge it. */
#define EVAL_MODE_PHASE_CALLS_MAX 64

/* Each process's calls of flagged operators in its current evaluation phase. */
struct eval_mode_tracker {
	struct u64_map processes; /* hash of (pipeline, pid) -> struct eval_mode_phase */
};

/* An example: an operator call in an evaluation phase and whether it ran as in evaluation. */
typedef int (*eval_mode_example_fn)(void *context, const struct infer_event *call, bool holds);

void eval_mode_tracker_init(struct eval_mode_tracker *tracker);
void eval_mode_tracker_free(struct eval_mode_tracker *tracker);

/* Whether an event is an operator call with a training flag. */
bool eval_mode_wants(const struct infer_event *event);

/* The name of the event's training flag field ("arg:train"), or NULL for none. */
const char *eval_mode_flag_field(const struct infer_event *event);

/*
 * Follows one event of a process, in the process's order. A flagged call in
 * stage eval is kept; one in stage train ends the evaluation phase and
 * hands each call kept to 'example'. 'cached' is the caller's slot for the
 * event's process (NULL: looked up each time, u64_map_get_or_add_cached).
 * Returns 0, -ENOMEM, or what 'example' returned when not 0.
 */
int eval_mode_observe(struct eval_mode_tracker *tracker, const struct infer_event *event,
		      void **cached, eval_mode_example_fn example, void *context);

/*
 * Finds the EvalModeRespected invariants of 'events' (one rule per flagged
 * operator whose evaluation phases the references show) and adds them to
 * 'rules'. Returns 0 or -ENOMEM.
 */
int infer_eval_mode(struct rule_set *rules, const struct infer_event *events, size_t count,
		    const struct rule_evidence *evidence);

#endif /* TCHECK_EVAL_MODE_H */
