/* SPDX-License-Identifier: MIT */
/*
 * ScalarsSteady: an optimizer applies the same scalars from step to step
 * (SGD's add_ alpha is minus its learning rate) in a process that runs no
 * learning-rate scheduler. Once scheduler code ran in a process (its
 * construction included), its scalars are the scheduler's: a scheduler's
 * step() called from Python runs inside the caller's evaluator loop, where
 * it may not be seen at all (ReduceLROnPlateau under CPython 3.13), so no
 * step of that process is an example. A step's scalars are the (operator, argument,
 * value) triples of the update operators inside its optimizer step; a
 * change is a value of an operator's argument that the previous step
 * applied and this one replaced with another (a value only added, such as
 * SGD's momentum from its second step, is no change). What an optimizer
 * does with its scalars is its own (Adam rescales its step size every
 * step), so a rule names the implementation it was seen with. A step is
 * an example once the scalars have settled: its previous step applied the
 * scalars of the one before it. A warm-up written out in the loop (the
 * learning rate set by hand in each of the first steps) changes them every
 * step and is no example until it ends. A change after steady steps fails
 * when a state dict was loaded into an optimizer of torch.optim since the
 * previous step (a resume, with or without a rebuild, that brought other
 * scalars than it replaced: the step carries INFER_EVENT_AFTER_STATE_LOAD,
 * optimizer_firsts.h); a change the program made to its own
 * optimizer (a step decay written out, `param_group["lr"] = ...`, or a new
 * optimizer built at the decayed rate with no state loaded) is its
 * intent, and that step is no example.
 * Nor is a step that changed parameters no step had changed before
 * (INFER_EVENT_NEW_PARAMETERS): an optimizer built for a new phase (the
 * whole model fine-tuned at a lower rate after a linear probe, new layers)
 * brings scalars of its own.
 */
#ifndef TCHECK_SCALARS_STEADY_H
#define TCHECK_SCALARS_STEADY_H

#include <stdbool.h>
#include <stddef.h>

#include "infer_event.h"
#include "optimizer_firsts.h"
#include "rule_support.h"
#include "rules.h"

/* The field a ScalarsSteady rule names: the optimizer step's implementation ("SGD.step"). */
#define SCALARS_STEADY_FIELD INFER_IMPLEMENTATION_FIELD
/* Python code whose run in a step lets its scalars change: torch's schedulers. */
#define SCALARS_STEADY_SCHEDULER_PREFIX OPTIMIZER_SCHEDULER_PREFIX
/* The Python code followed for the rule: the schedulers, and states loaded into optimizers. */
#define SCALARS_STEADY_FOLLOWED_PREFIX OPTIMIZER_CODE_PREFIX

/* One (operator, argument, value) an optimizer step applied, with an update that did. */
struct applied_scalar {
	struct infer_event update;
	const char *argument; /* "arg:alpha" */
	const char *value;
};

/* What the process's last optimizer step applied. */
struct scalars_history {
	bool known;
	bool steady;	/* the last optimizer step applied the scalars of the one before it */
	bool scheduled; /* scheduler code ran in the process: its scalars are the scheduler's */
	size_t count, capacity;
	struct applied_scalar *scalars;
};

/* What one step of one process shows. */
struct scalars_steady_finding {
	bool applies; /* an optimizer step after settled ones, in a process with no scheduler */
	bool holds;
	const struct infer_event *step;	  /* the (first) optimizer step: the example */
	const struct infer_event *update; /* violated: an update applying a new value */
	struct infer_event before;	  /* ... and the previous step's with the value replaced */
};

/*
 * Whether an event takes part (an optimizer step, an update operator, a
 * scheduler's code).
 */
bool scalars_steady_wants(const struct infer_event *event);

/*
 * Judges the events of one step of one process (any order; those
 * scalars_steady_wants refuses are ignored) against what 'history' holds
 * of the process's previous optimizer step, then keeps this step's scalars
 * there when it has an optimizer step. Returns 0, or -ENOMEM.
 */
int scalars_steady_judge(const struct infer_event *const *events, size_t count,
			 struct scalars_history *history, struct scalars_steady_finding *finding);

void scalars_history_free(struct scalars_history *history);

/* Whether a rule applies to a step's example (its optimizer step). */
bool scalars_steady_rule_applies(struct string_pool *pool, const struct rule *rule,
				 const struct infer_event *step);

/*
 * Finds the ScalarsSteady invariants of 'events', one per optimizer
 * implementation, and adds them to 'rules'. Returns 0 or -ENOMEM.
 */
int infer_scalars_steady(struct rule_set *rules, const struct infer_event *events, size_t count,
			 const struct rule_evidence *evidence);

#endif /* TCHECK_SCALARS_STEADY_H */
