/* SPDX-License-Identifier: MIT */
/*
 * Which model a step's weight read belongs to, and whether the step trains
 * it. A read's model is the outermost module call (Module._call_impl) around
 * it on its thread, among the step's events; the call's stage is its top
 * module's mode (python_module_modes.h). A step trains the models some of
 * whose read weights its optimizer step changed; a program may also read
 * the weights of a model it keeps in eval() without training it: a
 * distillation teacher, an EMA copy. The rules on what the optimizer changes
 * of what the forward reads (ParametersUpdated, TrainableUpdated) leave out
 * the reads of a model in eval() none of whose weights the step changed,
 * once the step trains one. A model in training mode called in pieces
 * (encoder, then head), a step that changes nothing the forward reads, and
 * reads no module call holds (a functional forward, a trace without the
 * frame evaluator's calls) are judged as before.
 */
#ifndef TCHECK_MODEL_CALLS_H
#define TCHECK_MODEL_CALLS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/u64_map.h"
#include "infer_event.h"

struct model_calls {
	const struct infer_event **outermost; /* by thread, then entry */
	size_t count;
	struct u64_map trained; /* outermost call -> non-NULL: a read of it changed */
};

/* Whether the rules on updates keep an event for this: a module call. */
bool model_calls_wants(const struct infer_event *event);

/* Whether a Python function's name is the module call's (Module._call_impl). */
bool model_calls_is_module_call(const char *name);

/* The weight an operator reads (linear, conv, embedding: "tensor:weight"), or 0. */
uint64_t model_calls_weight_read(const struct infer_event *event);

/* Finds the outermost module calls of a step's events; 0 or -ENOMEM. */
int model_calls_find(struct model_calls *calls, const struct infer_event *const *events,
		     size_t count);

/* The outermost module call around an event on its thread, or NULL. */
const struct infer_event *model_calls_around(const struct model_calls *calls,
					     const struct infer_event *event);

/* A read whose weight the step's optimizer changed: its model is trained; 0 or -ENOMEM. */
int model_calls_note_changed(struct model_calls *calls, const struct infer_event *read);

/* Whether a read is of a model in eval() the step does not train, when it trains one. */
bool model_calls_of_another_model(const struct model_calls *calls, const struct infer_event *read);

void model_calls_free(struct model_calls *calls);

#endif /* TCHECK_MODEL_CALLS_H */
