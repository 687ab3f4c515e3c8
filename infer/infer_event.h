/* SPDX-License-Identifier: MIT */
/*
 * Events as the inference and checking engines see them: an NCCL or Python
 * call reduced to its name, its meta variables (rank, step, stage,
 * communicator, ...) and its primitive fields, every string interned in a
 * pool so that equal values are equal pointers.
 */
#ifndef TCHECK_INFER_EVENT_H
#define TCHECK_INFER_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

enum infer_event_kind {
	INFER_EVENT_NCCL = 1,
	INFER_EVENT_PYTHON = 2,
	INFER_EVENT_STEP = 3, /* a whole step of one process, the parent of what ran in it */
};

#define INFER_FIELDS_MAX 12

/*
 * A module call of a submodule put in training mode on its own inside a
 * model in eval() (TRACE_MODULE_TRAINING_ARG True: Monte Carlo dropout's
 * dropout modules). A flag, not a field: like the module's class and path
 * it says what this program does with its model, which no rule carries.
 */
#define INFER_EVENT_OWN_TRAINING_MODE (1U << 16)

/*
 * The first step of an optimizer made later in the run (optimizer_firsts.h):
 * an Optimizer.step#* scope that changed a parameter no earlier optimizer
 * step of its process had changed, after others had (NEW_PARAMETERS), or
 * the first after an optimizer of torch.optim was built (NEW_OPTIMIZER).
 * "first_step" is True there as at step 0.
 */
#define INFER_EVENT_NEW_PARAMETERS (1U << 17)
#define INFER_EVENT_NEW_OPTIMIZER (1U << 18)

/*
 * The first optimizer step after a state dict was loaded into an optimizer
 * of torch.optim (optimizer_firsts.h). Whether it builds state depends on
 * what the loaded state holds, which the trace does not say: a checkpoint's
 * momentum buffers (a resume goes on) or none (a state saved before any
 * step, as a learning-rate range test restores). "first_step" is not known
 * there, unless the step changed new parameters.
 */
#define INFER_EVENT_AFTER_STATE_LOAD (1U << 19)

/*
 * A module call whose class overrides nn.Module.train() while no train()
 * or eval() has reached the module since it was built
 * (TRACE_MODULE_TRAIN_NOT_RUN_ARG): the override has not run for it.
 */
#define INFER_EVENT_TRAIN_NOT_RUN (1U << 20)

/*
 * A torch scope named "Family#Implementation" (Optimizer.step#SGD.step) is
 * an event of its family, "Optimizer.step#*", with the implementation as the
 * field "implementation": rules about optimizer steps then hold for any
 * optimizer.
 */
#define INFER_SCOPE_ANY "*"
/* The field holding a scope's implementation. */
#define INFER_IMPLEMENTATION_FIELD "implementation"
/* The torch scope families the relations on training steps name. */
#define OPTIMIZER_STEP_FAMILY "Optimizer.step#" INFER_SCOPE_ANY
#define ZERO_GRAD_FAMILY "Optimizer.zero_grad#" INFER_SCOPE_ANY
#define BACKWARD_FAMILY "Autograd.backward#" INFER_SCOPE_ANY

/* Between two frames of an event's call_path. */
#define INFER_CALL_PATH_SEPARATOR " < "

/* A named value: "count" = "1024", "arg:lr" = "0.1". */
struct infer_field {
	const char *name;
	const char *value;
};

struct infer_event {
	uint32_t kind; /* enum infer_event_kind */
	const char *name;
	uint32_t pipeline; /* which input (one program's trace) it came from, from 0 */
	uint32_t pid;
	uint32_t tid;
	int32_t rank; /* in the communicator (NCCL) or the job (Python), -1 unknown */
	int32_t nranks;
	int32_t step; /* -1 unknown */
	uint32_t stage;
	/* TRACE_PYTHON_TORCH_SCOPE, TRACE_PYTHON_TORCH_OP of a Python call; INFER_EVENT_OWN_* */
	uint32_t flags;
	uint64_t comm_id; /* 0 for none */
	int64_t seq;	  /* -1 for none */
	uint64_t entry_ns;
	uint64_t exit_ns;
	const char *context; /* innermost Python frame, "" when none */
	/*
	 * The module a module call ran, for people: its path in its model and
	 * its class ("Backbone.stage1 (Stage)"), the class alone where the path
	 * was not read; "" for other events. Never a field: a rule on it would
	 * fit one model.
	 */
	const char *module;
	/*
	 * A torch operator's Python callers as its probe read them (an
	 * initialiser's zero_ on a parameter), innermost first, joined by
	 * INFER_CALL_PATH_SEPARATOR; "" for other events and where none was read.
	 */
	const char *call_path;
	uint32_t field_count;
	/* Interned in the pool: events with the same fields share one array (memory). */
	const struct infer_field *fields;
};

/* Interned strings: one copy of each, compared by pointer. */
struct string_pool;

struct string_pool *string_pool_new(void);
/* The pool's copy of 'text', or NULL when out of memory. */
const char *string_pool_intern(struct string_pool *pool, const char *text);
/*
 * The pool's copy of an array of interned fields, or NULL when out of
 * memory; the same array for every equal list of fields.
 */
const struct infer_field *string_pool_intern_fields(struct string_pool *pool,
						    const struct infer_field *fields,
						    uint32_t count);
void string_pool_free(struct string_pool *pool);

/*
 * Fills 'event' from an NCCL or Python call record. Returns 1 when the
 * record is such a call, 0 for other records, for code that runs once
 * (module and class bodies) and for calls that never returned, -1 when out
 * of memory.
 */
int infer_event_from_record(struct string_pool *pool, const struct trace_record *record,
			    struct infer_event *event);

/* The value of a field, or NULL when the event has none of that name. */
const char *infer_event_field(const struct infer_event *event, const char *name);

/* The tensor identity a field holds ("tensor:self", "tensor:weight"), or 0 when none. */
uint64_t infer_event_tensor(const struct infer_event *event, const char *field);

/* Whether a flag field ("requires_grad:self") is known and true. */
bool infer_event_field_is_true(const struct infer_event *event, const char *field);

/* The field and meta variable that say a Python call's stage ("train", "eval"). */
#define INFER_STAGE_FIELD "stage"

/*
 * Whether the calls named 'name' train the model: an optimizer's step or a
 * backward pass (their scope families). Only of those is the stage a rule
 * ("stage of Optimizer.step#* is always train"): a model left in eval()
 * trains there, and that is the mistake. Any other call made in eval()
 * (zero_grad in the tutorial's shared train/val loop, a loss or metric of
 * an evaluation) trains nothing, whatever the references did.
 */
bool infer_name_trains(const char *name);

/*
 * The value of a meta variable or field as an interned string: "rank",
 * "nranks", "stage", "comm", "context", "first_step" (step 0, or an
 * optimizer's first step: INFER_EVENT_NEW_PARAMETERS or NEW_OPTIMIZER; not
 * known after a state load, INFER_EVENT_AFTER_STATE_LOAD) or a field name.
 * NULL when unknown: a precondition never names an unknown value.
 */
const char *infer_event_variable(struct string_pool *pool, const struct infer_event *event,
				 const char *variable);

/*
 * Whether a field describes a tensor (trace_arg_describes_tensor): its
 * identity, a digest of its contents or its shape, compared only as
 * identity or across replicas, never as a value or precondition.
 */
bool infer_field_describes_tensor(const char *name);

/* Whether an event is an operation (NCCL call, torch scope or operator), not a Python frame. */
int infer_event_is_operation(const struct infer_event *event);

/*
 * Whether an operator read its weight with autograd off (grad_mode:weight
 * False: under torch.no_grad() or torch.inference_mode(), a target
 * network's, an EMA copy's or a teacher's forward, or a reentrant
 * checkpoint's region: checkpoint_regions.h).
 */
bool infer_event_read_without_grad(const struct infer_event *read);

/* The field that says whether a call was left by an exception ("True", "False"). */
#define INFER_RAISED_FIELD "raised"

/*
 * Whether one value of 'field' on the calls of 'event''s name makes an
 * APIOutput or APIArg rule. Not "raised" of a Python function: one left by
 * an exception that something catches is Python's ordinary control flow
 * (torch's non-reentrant checkpoint stops its recomputation in the
 * backward by raising through the module calls it is running again, an
 * iterator ends by StopIteration, a loop skips a batch that ran out of
 * memory), and one that nothing catches ends the program, which the crash
 * report gives. An operation's (optimizer step, backward, operator,
 * collective) is a rule. Whether the ranks agree on it (Consistent) is
 * inferred still.
 */
bool infer_constant_is_rule(const struct infer_event *event, const char *field);

/*
 * Whether the per-step relations (APISequence, EventContain of a step) learn
 * from and judge a process's step: a step is what ran between two ends of
 * the step marker (two optimizer steps). Step 0 runs from the process's
 * start to its first optimizer step: no optimizer step came before it
 * whose gradients had to be cleared, and start-up code runs in it, so a
 * program that clears the gradients after its optimizer's step looks like
 * one that clears them before the forward in every other step.
 */
bool infer_step_between_markers(int32_t step);

/*
 * Whether 'inner' ran inside 'outer' on its thread (entered at or after it,
 * ended at or before it): an operator in an optimizer's step, the closure
 * optimizer.step(closure) calls. An event does not run inside itself.
 */
bool infer_event_runs_inside(const struct infer_event *inner, const struct infer_event *outer);

/*
 * Whether APISequence orders an event in its step: not one of an evaluation
 * (stage eval). A program evaluates where it likes (after the optimizer's
 * step, before the scheduler's, every N steps), so an evaluation's calls
 * say nothing of a training step's order; a program left in eval() is the
 * stage rules' to catch.
 */
bool infer_event_in_training_order(const struct infer_event *event);

/*
 * qsort comparator of pointers to events: by pipeline, process, step, then
 * entry time, so that the events of one step of a process stand in a row.
 */
int infer_event_order_by_process_step(const void *left, const void *right);

/* The variables a precondition may use for this event, in a stable order. */
size_t infer_event_variables(const struct infer_event *event, const char **names, size_t max);

#endif /* TCHECK_INFER_EVENT_H */
