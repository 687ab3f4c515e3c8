/* SPDX-License-Identifier: MIT */
/*
 * ParametersUpdated: in a training step, the optimizer's step changes some
 * weight the forward reads (the weight of linear, conv and embedding, by its
 * TensorImpl address), and every weight it changed in an earlier step of the
 * process that the forward still reads, with an update operator inside the
 * optimizer's step whose scale changes it (add_'s alpha, addcdiv_'s value,
 * lerp_'s weight not 0; mul_'s factor not 1). Layers frozen from the start
 * (fine-tuning a head) are never updated and never expected to be, and a
 * layer the program freezes mid-run (its weights read with requires_grad
 * False from then on) stops changing as it should: that is no violation,
 * but a notice (the finding's 'frozen'), once per weight, since a freeze
 * can be a schedule's mistake. It fails for an optimizer that holds
 * parameters the model does not read (another model's, a re-created
 * model's old ones), for every layer frozen, for a layer that stops
 * changing while it still requires grad, and for a learning rate of 0. A step whose
 * optimizer step updated only tensors that do not require grad (a fused
 * optimizer's step counters) changed its parameters out of sight: no example.
 * Only updates of tensors that may require grad change a weight: optimizer
 * state and temporaries do not, though their addresses may be a freed
 * weight's. Weights computed from a parameter (below) are not judged, nor
 * is a step that changes no weight read but trains a matrix no watched read
 * ever saw (prompt tuning's soft prompt, read through torch.cat).
 */
#ifndef TCHECK_PARAMETER_UPDATES_H
#define TCHECK_PARAMETER_UPDATES_H

#include <stdbool.h>
#include <stddef.h>

#include "base/u64_map.h"
#include "checkpoint_regions.h"
#include "infer_event.h"

/* What one step of one process shows. */
struct parameter_updates_finding {
	bool applies; /* the step has an optimizer step and a forward that reads weights */
	bool holds;
	const struct infer_event *step;	  /* the (first) optimizer step: the example */
	const struct infer_event *read;	  /* violated: the first weight read and not changed */
	const struct infer_event *update; /* ... and its update that changed nothing, or NULL */
	size_t weights;			  /* distinct weights the forward read */
	size_t changed;			  /* ... of them changed by the optimizer's step */
	size_t other_turn; /* ... of them changed by the other of optimizers taking turns */
	bool stopped;	   /* violated by a weight changed in an earlier step, not in this one */
	/* Held, but a weight changed before was read frozen and did not change: a notice. */
	const struct infer_event *frozen;
};

/* Whether an event is an optimizer's step (a torch scope of the family). */
bool parameter_updates_is_optimizer_step(const struct infer_event *event);

/* The optimizer step among 'events' an operator ran in (same thread, inside it), or NULL. */
const struct infer_event *parameter_updates_step_around(const struct infer_event *const *events,
							size_t count,
							const struct infer_event *event);

/*
 * Whether an update operator changes its tensor: an additive scale (alpha,
 * value, weight) of 0 or a factor (mul_'s, div_'s other) of 1 leaves it as it was.
 */
bool parameter_updates_changes(const struct infer_event *update);

/*
 * Whether an event takes part (an optimizer step, an operator naming a tensor,
 * a reentrant checkpoint's forward, or a broadcast or all-gather that may
 * bring a sharded optimizer's weights).
 */
bool parameter_updates_wants(const struct infer_event *event);

/*
 * Reparametrised layers (spectral_norm, weight_norm, parametrize) keep a
 * parameter (weight_orig) the optimizer changes and the forward does not
 * read, and compute the weight the forward reads from it, a new tensor at
 * each forward that is no parameter: its address, once freed, may hold an
 * optimizer's temporary. Adds to 'shapes' the hashed shapes of the tensors
 * requiring grad that the step's optimizer changed and its forward did not
 * read, given the step's checkpoint regions (NULL: none). 0, or -ENOMEM.
 */
int parameter_updates_unread_shapes(const struct infer_event *const *events, size_t count,
				    const struct checkpoint_regions *regions,
				    struct u64_map *shapes);

/*
 * Whether a weight read is computed from such a parameter: it does not
 * require grad of its own (the flag read is a leaf's) and 'shapes' holds
 * its shape. A frozen layer's weight has no unread parameter of its shape
 * changed beside it (its own trainable twins are read). Or a copy of one:
 * a weight in bfloat16 or half whose sizes are those of a float32
 * parameter the step changed and the forward did not read. Mixed precision
 * by hand (Apex's O2, Megatron-LM's and DeepSpeed's optimizers) keeps
 * float32 master copies in the optimizer and copies them into the model's
 * weights after its step, by an operator the tracer does not watch.
 */
bool parameter_updates_computed_weight(const struct infer_event *read,
				       const struct u64_map *shapes);

/*
 * Judges the events of one step of one process (any order; those
 * parameter_updates_wants refuses are ignored). 'history' holds the
 * weights the process's earlier steps changed (a map of TensorImpl
 * addresses, empty at its first step); the ones this step changes are
 * added. 'other_turn' (NULL: none) holds, where the step takes its turn
 * after another optimizer's (optimizer_turns.h), the parameters that one
 * changed: a weight read of them is the other model's, trained in its
 * turn, and is neither left unchanged nor stopped. Returns 0, or -ENOMEM.
 */
int parameter_updates_judge(const struct infer_event *const *events, size_t count,
			    struct u64_map *history, const struct u64_map *other_turn,
			    struct parameter_updates_finding *finding);

#endif /* TCHECK_PARAMETER_UPDATES_H */
