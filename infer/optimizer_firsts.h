/* SPDX-License-Identifier: MIT */
/*
 * Which optimizer steps are the first of their optimizer. An optimizer builds
 * its state at its first step (SGD's momentum buffers, Adam's moments), so
 * that step runs other operators than the steps after it: the meta variable
 * "first_step" says so. That is step 0 of a process, and also a step of an
 * optimizer made later in the run over parameters no optimizer step had
 * changed: a pruned or grown model given a fresh optimizer, a GAN's second
 * optimizer taking its first turn, a second phase with a new optimizer over
 * new layers, an optimizer made anew each epoch. An optimizer step is such
 * a first when an optimizer of torch.optim was built since the process's
 * last optimizer step (its constructor, called from C, is a Python call the
 * frame evaluator sees), or when an in-place update inside it
 * (optimizer_turn_is_update) changed a parameter that no earlier optimizer
 * step of its process changed, and an earlier one changed some: attached in
 * the middle of a run, the first step seen is not a first. The parameters
 * are what tell optimizers apart where Python frames are not followed (a
 * scope names the optimizer's class, not the object; `--rules` without the
 * frame evaluator): there an optimizer re-made over the same parameters is
 * not told apart, and a new parameter at a freed one's address is taken for
 * that one. The first step after a state dict was loaded into an optimizer
 * (where seen) is neither: INFER_EVENT_AFTER_STATE_LOAD, "first_step" not
 * known, since the loaded state may hold an optimizer's buffers (a resume)
 * or none (a state saved before any step).
 */
#ifndef TCHECK_OPTIMIZER_FIRSTS_H
#define TCHECK_OPTIMIZER_FIRSTS_H

#include "base/u64_map.h"
#include "infer_event.h"

/* Python code of torch's optimizers, their schedulers, and the loading of an optimizer's state. */
#define OPTIMIZER_CODE_PREFIX "torch.optim."
#define OPTIMIZER_SCHEDULER_PREFIX "torch.optim.lr_scheduler."
#define OPTIMIZER_LOAD_STATE_PREFIX "torch.optim.optimizer.Optimizer.load_state_dict"

/* What each process's optimizer steps have changed so far. */
struct optimizer_firsts {
	struct u64_map processes; /* (trace, pid) -> its state */
};

void optimizer_firsts_init(struct optimizer_firsts *firsts);
void optimizer_firsts_free(struct optimizer_firsts *firsts);

/*
 * Takes the events of a trace in its order (operators at their entry before
 * the scope they ran in, which is written at its end; a constructor before
 * the step that follows it) and sets INFER_EVENT_NEW_OPTIMIZER or
 * INFER_EVENT_NEW_PARAMETERS on an Optimizer.step#* scope that is the first
 * of its optimizer, and INFER_EVENT_AFTER_STATE_LOAD on the first after a
 * state load, as said above. 'cached' is the caller's slot for the
 * event's process (u64_map_get_or_add_cached; NULL: none). 0, or -ENOMEM
 * (the event is left as it was).
 */
int optimizer_firsts_observe(struct optimizer_firsts *firsts, struct infer_event *event,
			     void **cached);

/*
 * Python code that builds an optimizer: the constructor of a torch.optim
 * class (SGD.__init__; not a scheduler's, which is scheduler code).
 */
bool optimizer_firsts_is_construction(const struct infer_event *event);

/* Python code that loads a state dict into an optimizer (Optimizer.load_state_dict). */
bool optimizer_firsts_is_state_load(const struct infer_event *event);

#endif
