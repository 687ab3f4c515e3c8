/* SPDX-License-Identifier: MIT */
/*
 * EventContain: what a parent contains. Parents are torch scopes
 * (Optimizer.step#*) and whole steps of a process; children are
 * operations that ran inside the parent's interval on its thread (NCCL
 * calls, torch scopes and operators), or in the step (NCCL calls and
 * scopes, and operators only when one program is given: the model's
 * forward and backward run operators of their own). A rule about an
 * operator applies at most where the process uses it. Found as "every parent
 * contains the child" and "every parent contains the child exactly N
 * times", each under a safe precondition.
 */
#ifndef TCHECK_EVENT_CONTAIN_H
#define TCHECK_EVENT_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rule_support.h"
#include "rules.h"

/* The name of the step parent's descriptor (kind "step"). */
#define STEP_PARENT_NAME "step"

/*
 * Finds the EventContain invariants of 'events' and adds them to 'rules'.
 * Needs at least evidence->min_passing passing examples from two steps or
 * more; a parent whose process never made the child is no example. Returns
 * 0 or -ENOMEM.
 */
int infer_event_contain(struct rule_set *rules, const struct infer_event *events, size_t count,
			const struct rule_evidence *evidence);

/* Whether an event may be the parent of an EventContain rule about a named event. */
int event_contain_is_parent(const struct infer_event *event);

/*
 * Whether a parent is an example (in inference) and judged (in checking): a
 * scope always, a step when it lies between two optimizer steps
 * (infer_step_between_markers); step 0 still shows what the process calls.
 */
bool event_contain_judged(const struct infer_event *parent);

/*
 * Whose parents a "used" rule waits for: a parent's process and, for a
 * scope, its implementation (an optimizer's class, "SGD.step"), so that one
 * optimizer's operators are never asked of another in the same process.
 */
uint64_t event_contain_holder(const struct infer_event *parent);

/*
 * A step that ran two optimizer steps or more one after the other (a model's
 * parameters split between two optimizers, stepped in one iteration): a flag
 * of the step parent. How many times such a step runs an optimizer's own
 * scopes (Optimizer.step#*, Optimizer.zero_grad#*) is its number of
 * optimizers, so it is no example of "exactly N times" of them and is not
 * judged on it; "contains" still holds or not.
 */
#define EVENT_CONTAIN_SEVERAL_OPTIMIZERS (1U << 31)
/*
 * A step whose optimizer's own scopes ran inside its optimizer step: the
 * closure optimizer.step(closure) calls zero_grad in, which LBFGS calls up
 * to max_iter times a step. Their count is the closure's, so the step is
 * not judged on "exactly N times" of them either.
 */
#define EVENT_CONTAIN_OPTIMIZER_CLOSURE (1U << 30)

/* Whether a child of this name is one of an optimizer's own scopes ("Optimizer.*"). */
bool event_contain_is_optimizer_scope(const char *child);

/*
 * Whether 'parent' is an example of (and judged on) how many times it holds
 * 'child'. Never for the optimizer's zero_grad: clearing is idempotent, and
 * a program may clear twice in a step (before each of SAM's two backward
 * passes, or before the forward and again after the step); only a step
 * without it is judged ("contains", and the order rules).
 */
bool event_contain_count_judged(const struct infer_event *parent, const char *child);

/* The last call of one child counted in a parent. */
struct contain_last_call {
	bool seen;
	uint32_t tid;
	uint64_t entry_ns, exit_ns;
};

/*
 * Whether a torch scope nests with the last call of its name counted in
 * the same parent (same thread, one inside the other): then it is the same
 * call seen twice and is not counted again. ZeroRedundancyOptimizer.step
 * runs its local optimizer's step: two Optimizer.step#* scopes, one step of
 * the optimizer. 'last' follows the outer of the two, or this call when it
 * is counted. Calls come in any order (inference: by entry, checking: by
 * return). Other events never nest here.
 */
bool event_contain_nested_again(struct contain_last_call *last, uint32_t tid, uint64_t entry_ns,
				uint64_t exit_ns, bool torch_scope);

#endif /* TCHECK_EVENT_CONTAIN_H */
