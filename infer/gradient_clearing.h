/* SPDX-License-Identifier: MIT */
/*
 * Whether a step cleared its gradients without Optimizer.zero_grad: the
 * gradients are cleared between two optimizer steps that consume them, and
 * zero_grad is one way to do it. A program that sets every gradient to
 * None by hand (a ZeRO-style sharded optimizer does) shows no call, but its
 * backward shows it: autograd adds a gradient into an existing one in place
 * (aten::add_ inside the backward), and makes a new one where the gradient
 * is None. So a step (what ran between two optimizer steps) whose first
 * backward ran no in-place add_ found every gradient cleared. A gradient
 * zeroed in place earlier in the step (aten::zero_ on it: a module's own
 * zero_grad(), as PyTorch's examples call it, zeroes rather than frees on
 * torch 1.x) is cleared too, so an add into it does not count. A program
 * that stopped clearing them accumulates in its first backward and is not
 * excused, nor is one that zeroes other tensors (another model's
 * gradients), nor a process that never showed an in-place add (the tracer
 * does not watch them). A step that takes its turn after another
 * optimizer's (a GAN's generator step after its discriminator's,
 * optimizer_turns.h) may add into that optimizer's gradients, which are
 * cleared before that optimizer reads them again: adds into gradients the
 * shapes of the other turn's parameters, each once, do not count; an add
 * into one of this step's own shapes beyond those does. The rules this
 * excuses are those that ask for zero_grad in a step (APISequence
 * "zero_grad comes first", EventContain "every step contains zero_grad").
 */
#ifndef TCHECK_GRADIENT_CLEARING_H
#define TCHECK_GRADIENT_CLEARING_H

#include <stdbool.h>
#include <stdint.h>

#include "base/u64_map.h"
#include "infer_event.h"

/* What each process's current and last finished step showed. */
struct gradient_clearing {
	struct u64_map processes; /* pid -> its state */
};

/*
 * Whether 'event' ran before 'backward' (the first of each in one step):
 * then zero_grad's place before it is the program's own order, not what
 * clearing gradients means (cleared before the backward that fills them).
 * Zeroing after the forward, or an evaluation forward under no_grad before
 * zero_grad, are healthy; APISequence asks zero_grad to come first only
 * before the backward and what follows it. False without a backward.
 */
bool gradient_clearing_runs_before(const struct infer_event *event,
				   const struct infer_event *backward);

void gradient_clearing_init(struct gradient_clearing *clearing);
void gradient_clearing_free(struct gradient_clearing *clearing);

/*
 * Takes one event (any kind; events of a step come in any order); 'cached' is
 * the caller's slot for the event's process (NULL: looked up each time,
 * u64_map_get_or_add_cached). 0 or -ENOMEM.
 */
int gradient_clearing_observe(struct gradient_clearing *clearing, const struct infer_event *event,
			      void **cached);

/*
 * Whether step 'step' of process 'pid' (its current step or the one it
 * just finished) ran a backward whose first pass accumulated into no
 * existing gradient: false when unknown.
 */
bool gradient_clearing_fresh(const struct gradient_clearing *clearing, uint32_t pid, int32_t step);

/*
 * Whether finished step 'step' of process 'pid' cleared gradients (zero_grad)
 * that a backward had filled since the clearing before and that no update
 * had used: no optimizer step and no in-place change of a parameter between
 * the two clearings, as when a step is skipped (its iteration's gradients
 * thrown away). SAM (an update by hand between its two backward passes)
 * and adversarial training (the optimizer's step of the iteration before
 * between them) use theirs. False when unknown, or for the step still open.
 */
bool gradient_clearing_cleared_unused(const struct gradient_clearing *clearing, uint32_t pid,
				      int32_t step);

/* Whether a rule's event (its APISequence first, its EventContain child) is zero_grad. */
bool gradient_clearing_excuses(const char *name);

#endif /* TCHECK_GRADIENT_CLEARING_H */
