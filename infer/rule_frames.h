/* SPDX-License-Identifier: MIT */
/*
 * Whether a rule can be checked on torch-level events alone (torch scopes,
 * the backward pass, operators, NCCL calls), or needs the calls of Python
 * functions, which only a probe on CPython's frame evaluator sees. That
 * probe runs at every call CPython makes from C, followed or not (about 75
 * a step of a small MLP on torch 2.6), so a deploy whose rules need none of
 * them leaves it out. Needs no kernel.
 */
#ifndef TCHECK_RULE_FRAMES_H
#define TCHECK_RULE_FRAMES_H

#include <stdbool.h>
#include <stddef.h>

#include "infer/rules.h"

/*
 * Whether the rule needs Python functions' calls: it names a Python
 * function (not a torch scope "X#Y", not an operator "aten::..."), reads
 * the stage (set where Module.training is assigned, in Python), or is an
 * EvalModeRespected or ScalarsSteady rule (module calls; scheduler code).
 * When it does and 'reason' is not NULL, says why in 'reason'.
 */
bool rule_needs_python_frames(const struct rule *rule, char *reason, size_t reason_size);

/* Whether a descriptor is a torch scope or operator rather than a Python function. */
bool rule_descriptor_is_torch_level(const struct rule_descriptor *descriptor);

/*
 * Keeps only the rules checkable on torch-level events, in order; returns
 * how many were dropped.
 */
size_t rule_set_keep_torch_level(struct rule_set *set);

/*
 * Prefers the torch-level form of a rule where both hold: a rule about a
 * Python function goes when the same rule holds about the torch scope
 * family that wraps it ("implementation of Optimizer.step#* is always
 * SGD.step" says the scope wraps torch.optim.sgd.SGD.step, so "raised of
 * torch.optim.sgd.SGD.step is always False" goes when "raised of
 * Optimizer.step#* is always False" holds). Returns how many went; 0 or
 * more, or -ENOMEM.
 */
long rule_set_prefer_torch_level(struct rule_set *set);

#endif /* TCHECK_RULE_FRAMES_H */
