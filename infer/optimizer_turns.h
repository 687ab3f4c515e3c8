/* SPDX-License-Identifier: MIT */
/*
 * Optimizers that take turns. A GAN steps its discriminator's optimizer,
 * then its generator's, with a backward between them, so each is a step of
 * its own (the step marker ends at each). Each step's optimizer then changes
 * parameters the other does not, while each step still touches the other
 * model: the discriminator's step runs the generator's forward, the
 * generator's step runs the discriminator's forward, and its backward adds
 * into the discriminator's gradients, cleared again before the
 * discriminator's optimizer next reads them. A step takes its turn after the
 * step just before it when both steps' optimizers changed parameters and
 * none in common. Then what the step reads of the other model is trained in
 * the other turn, not left behind, and gradients added into of the other
 * turn's parameters (matched by shape, each parameter once) are not this
 * step's to clear. One optimizer stepped every step changes the same
 * parameters each time and takes no turns.
 */
#ifndef TCHECK_OPTIMIZER_TURNS_H
#define TCHECK_OPTIMIZER_TURNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/u64_map.h"
#include "infer_event.h"

/* The parameters one step's optimizer changed. */
struct optimizer_turn {
	int32_t step;		/* -1: none noted */
	struct u64_map changed; /* tensor -> its shape's hash (OPTIMIZER_TURN_NO_SHAPE unknown) */
};

#define OPTIMIZER_TURN_NO_SHAPE ((uintptr_t)1)

void optimizer_turn_init(struct optimizer_turn *turn, int32_t step);
void optimizer_turn_free(struct optimizer_turn *turn);
/* Frees 'into' and moves 'from' there, leaving 'from' empty for 'step'. */
void optimizer_turn_move(struct optimizer_turn *into, struct optimizer_turn *from, int32_t step);

/*
 * Whether an operator updates a parameter in place: a tensor that requires
 * grad, with a scale that changes it (parameter_updates_changes). Only an
 * optimizer (under no_grad) updates a leaf that requires grad in place.
 */
bool optimizer_turn_is_update(const struct infer_event *event);

/* The hash of a tensor field's shape ("shape:self" for "tensor:self"), never 0. */
uintptr_t optimizer_turn_shape(const struct infer_event *event, const char *shape_field);

/* Notes the parameter an update changed (optimizer_turn_is_update). 0 or -ENOMEM. */
int optimizer_turn_note(struct optimizer_turn *turn, const struct infer_event *update);

/* Notes the parameters the updates among a step's events changed, inside an optimizer step. */
int optimizer_turn_collect(struct optimizer_turn *turn, const struct infer_event *const *events,
			   size_t count);

/* Whether 'after' takes its turn after 'before': consecutive steps, both changed, none in common.
 */
bool optimizer_turns_alternate(const struct optimizer_turn *before,
			       const struct optimizer_turn *after);

bool optimizer_turn_changed(const struct optimizer_turn *turn, uint64_t tensor);

/*
 * Whether each tensor of 'tensors' (tensor -> its shape's hash) can be
 * given a parameter of 'turn' of its shape, each parameter once: they can
 * be that turn's parameters' gradients. False for a tensor of unknown shape.
 */
bool optimizer_turn_shapes_cover(const struct optimizer_turn *turn, const struct u64_map *tensors);

/*
 * The turns a process's optimizers took lately. A WGAN steps its critic's
 * optimizer several times for each step of its generator's (n_critic, 5 in
 * the paper's recipe), so the critic's steps follow one another: what they
 * read of the generator was trained in the generator's last turn, a few
 * steps before, or is trained in its next. A turn is what one step's
 * optimizers changed; a step that changes a parameter a kept turn changed
 * continues that turn and replaces it. A turn older than
 * OPTIMIZER_TURN_WINDOW steps excuses nothing: a model trained in a phase
 * long past (a pre-training optimizer) does not excuse one that stopped.
 */
#define OPTIMIZER_TURNS_KEPT 4
#define OPTIMIZER_TURN_WINDOW 8

struct optimizer_turns {
	struct optimizer_turn kept[OPTIMIZER_TURNS_KEPT]; /* newest first */
	size_t count;
};

void optimizer_turns_init(struct optimizer_turns *turns);
void optimizer_turns_free(struct optimizer_turns *turns);

/*
 * Puts in 'others' (tensor -> its shape's hash) the parameters changed by
 * the kept turns of the OPTIMIZER_TURN_WINDOW steps before 'turn' that share
 * none with it: another optimizer's, taking turns with this step's. Nothing
 * when 'turn' changed nothing. 0 or -ENOMEM.
 */
int optimizer_turns_others(const struct optimizer_turns *turns, const struct optimizer_turn *turn,
			   struct u64_map *others);

/*
 * Keeps 'turn' when it changed something (moved: 'turn' is left empty for
 * step -1), in place of the kept turns it shares a parameter with; the
 * oldest beyond OPTIMIZER_TURNS_KEPT is forgotten.
 */
void optimizer_turns_keep(struct optimizer_turns *turns, struct optimizer_turn *turn);

#endif /* TCHECK_OPTIMIZER_TURNS_H */
