/* SPDX-License-Identifier: MIT */
/*
 * The regions a step ran under torch.utils.checkpoint's reentrant form
 * (use_reentrant=True, the default before torch 2.4, and transformers'
 * gradient checkpointing): CheckpointFunction.forward runs its region with
 * autograd off, and the backward runs it again with autograd on, so the
 * weights read there get their gradients then, though their reads in the
 * forward say grad_mode False. The backward runs a region again only when
 * one of its inputs requires grad; when none does (LoRA adapters over a
 * frozen embedding, open-unlearning#178, transformers#26221) its weights
 * never get a gradient and never change, and only a warning says so.
 *
 * A region counts as run for training when the program had autograd on
 * around it: the nearest weight read outside every region (before it,
 * else after it), in the outermost module call around the region where
 * there is one, else on its thread, was made with autograd on. A model run
 * whole under torch.no_grad() (a teacher, a target network) with
 * checkpointed blocks reads its other layers with autograd off too; a
 * region with no such read leaves its reads as they are: without a
 * gradient.
 */
#ifndef TCHECK_CHECKPOINT_REGIONS_H
#define TCHECK_CHECKPOINT_REGIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "infer_event.h"
#include "model_calls.h"

/* The qualified name of the reentrant checkpoint's forward, as the tracer names it. */
#define CHECKPOINT_FORWARD_NAME "torch.utils.checkpoint.CheckpointFunction.forward"

struct checkpoint_regions {
	const struct infer_event **forwards; /* CheckpointFunction.forward calls */
	bool *for_training;		     /* ... whether the program had autograd on around it */
	size_t count;
};

/* Whether an event is a reentrant checkpoint's forward. */
bool checkpoint_regions_is_forward(const struct infer_event *event);

/*
 * Finds the regions among one step's events (any order), given the step's
 * outermost module calls (model_calls_find). Returns 0 or -ENOMEM.
 */
int checkpoint_regions_find(struct checkpoint_regions *regions,
			    const struct infer_event *const *events, size_t count,
			    const struct model_calls *models);

/*
 * Whether a weight read gets no gradient from that read: made with autograd
 * off (infer_event_read_without_grad), and not in training inside a region
 * run for training. What the optimizer does to such a weight says nothing
 * of the step: ParametersUpdated and TrainableUpdated leave such reads out
 * (FrozenUnchanged keeps them: a frozen weight must not move, however it
 * was read). 'regions' may be NULL (none).
 */
bool checkpoint_regions_read_gets_no_gradient(const struct checkpoint_regions *regions,
					      const struct infer_event *read);

void checkpoint_regions_free(struct checkpoint_regions *regions);

#endif /* TCHECK_CHECKPOINT_REGIONS_H */
