/* SPDX-License-Identifier: MIT */
/*
 * What a step's optimizer does to the weights its forward reads, by whether
 * each was read trainable (requires_grad True) or frozen (False): the
 * weight of linear, conv and embedding, by its TensorImpl address, read
 * outside the optimizer's step.
 *
 * FrozenUnchanged: the optimizer's step changes no weight read frozen. A
 * layer frozen with requires_grad_(False) that the optimizer still holds,
 * its gradient left a zero tensor (zero_grad(set_to_none=False)), is still
 * moved by weight decay and momentum: that breaks it. Every step with an
 * optimizer step and a forward is an example.
 *
 * TrainableUpdated: once the optimizer's step changes some weight the
 * forward reads, it changes every weight read trainable. An optimizer built
 * over part of the model (optim.SGD(model.out.parameters())) or a step that
 * drops parameters it should update breaks it. A step whose optimizer
 * changes none of them is ParametersUpdated's. Only in a process outside a
 * job of several ranks: a sharded optimizer (ZeRO) updates its rank's share
 * by design and receives the others'.
 */
#ifndef TCHECK_REQUIRES_GRAD_UPDATES_H
#define TCHECK_REQUIRES_GRAD_UPDATES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/u64_map.h"
#include "infer_event.h"
#include "rule_support.h"
#include "rules.h"

/* What one step of one process shows. */
struct requires_grad_finding {
	const struct infer_event *step; /* the (first) optimizer step: the example */
	/* FrozenUnchanged */
	bool frozen_applies; /* an optimizer step and a forward that reads weights */
	bool frozen_holds;
	const struct infer_event *frozen_update; /* violated: the update of a frozen weight */
	const struct infer_event *frozen_read;	 /* ... and the weight's read */
	/* TrainableUpdated */
	bool trainable_applies; /* ... and its optimizer changed one, outside a multi-rank job */
	bool trainable_holds;
	const struct infer_event *trainable_read; /* violated: a trainable weight not changed */
};

/* Whether an event takes part (an optimizer step, or an operator naming a tensor). */
bool requires_grad_updates_wants(const struct infer_event *event);

/*
 * Judges the events of one step of one process (any order; those
 * requires_grad_updates_wants refuses are ignored). 'other_turn' (NULL:
 * none) holds, where the step takes its turn after another optimizer's
 * (optimizer_turns.h), the parameters that one changed: reads of them are
 * the other model's and need not change. 'unchanged' (NULL: not wanted)
 * gets every weight read trainable that broke TrainableUpdated (tensor ->
 * its read): the other optimizer's turn may come after this step.
 * Returns 0, or -ENOMEM.
 */
int requires_grad_updates_judge(const struct infer_event *const *events, size_t count,
				const struct u64_map *other_turn, struct u64_map *unchanged,
				struct requires_grad_finding *finding);

/*
 * Finds the FrozenUnchanged and TrainableUpdated invariants of 'events'
 * (each one rule, about any optimizer's step) and adds them to 'rules'.
 * Returns 0 or -ENOMEM.
 */
int infer_requires_grad_updates(struct rule_set *rules, const struct infer_event *events,
				size_t count, const struct rule_evidence *evidence);

#endif /* TCHECK_REQUIRES_GRAD_UPDATES_H */
