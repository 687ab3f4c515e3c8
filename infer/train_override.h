/* SPDX-License-Identifier: MIT */
/*
 * TrainOverrideRan: a module trains only after its class's train()
 * override has run for it. nn.Module builds every module in training mode
 * without calling train(), so what a class adds in its train(self, mode)
 * override (mmpretrain's backbones freeze their first stages and keep
 * batch norms in eval() there) happens only once the program calls train()
 * or eval() on the module or on a model holding it. A runner that trains
 * without ever calling model.train() (mmpretrain#702) trains the stages
 * the configuration froze, with no error.
 *
 * An example is a module call in stage train. It breaks the rule where its
 * class overrides train() (a class of the program's or a library's;
 * torch's own DistributedDataParallel, whose train() is plumbing, is not
 * counted) and no train() or eval() has reached the module since the
 * tracer saw it built (INFER_EVENT_TRAIN_NOT_RUN). A module the tracer came
 * upon already built (attach) is not judged: an earlier train() is not
 * known. Every training forward of the references is an example that
 * holds, whether or not their classes override train(), as every step of
 * theirs is FrozenUnchanged's.
 */
#ifndef TCHECK_TRAIN_OVERRIDE_H
#define TCHECK_TRAIN_OVERRIDE_H

#include <stdbool.h>
#include <stddef.h>

#include "infer_event.h"
#include "rule_support.h"
#include "rules.h"

/* Whether an event is an example: a module call in stage train. */
bool train_override_wants(const struct infer_event *event);

/* Whether such a call holds: its module's train() override, if any, has run. */
bool train_override_holds(const struct infer_event *event);

/*
 * Finds the TrainOverrideRan invariant of 'events' (a rule about module
 * calls when no reference breaks it) and adds it to 'rules'. Returns 0 or
 * -ENOMEM.
 */
int infer_train_override(struct rule_set *rules, const struct infer_event *events, size_t count,
			 const struct rule_evidence *evidence);

#endif /* TCHECK_TRAIN_OVERRIDE_H */
