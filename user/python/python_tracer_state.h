/* SPDX-License-Identifier: MIT */
/*
 * The Python tracer's state, shared by python_tracer.c (interpreters and
 * Python calls) and python_tracer_torch.c (torch scopes, operators and
 * process groups), and by nothing else.
 */
#ifndef TCHECK_PYTHON_TRACER_STATE_H
#define TCHECK_PYTHON_TRACER_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/string_interner.h"
#include "base/u64_map.h"
#include "python/python_layout.h"
#include "python/python_meta.h"
#include "python/python_module_modes.h"
#include "python/python_module_paths.h"
#include "python/python_tracer.h"
#include "python/torch_held_ops.h"
#include "python/torch_op_readings.h"
#include "tcheck/probe_abi.h"

/* Backward passes kept open per process, nested or on several threads. */
#define PYTHON_BACKWARD_OPEN_MAX 8

struct python_process {
	pid_t pid;
	/* Runs a Python the tracer cannot follow (said once): nothing else here is set. */
	bool refused;
	bool torch_looked_up;	       /* libtorch_cpu was found (and probed, or refused) */
	bool evaluator_probed;	       /* its interpreter's frame evaluator carries the probes */
	bool evaluator_failure_said;   /* probing it failed, and the user was told */
	bool ended_unnamed_said;       /* calls of it were lost: it ended before they were named */
	struct python_runtime runtime; /* where its interpreter is */
	int32_t rank;		       /* RANK of its initial environment, -1 unknown */
	bool rank_from_group;	       /* its first process group was seen */
	int32_t world_size;	       /* WORLD_SIZE, -1 unknown */
	struct python_meta_timeline meta; /* step and stage over time */
	struct python_layout layout;
	struct u64_map codes;	       /* code address -> named_code */
	struct u64_map module_classes; /* type address -> class name (python_module_classes.h) */
	/* type address -> whether its class overrides Module.train() (python_type_attributes.h) */
	struct u64_map train_overrides;
	struct python_module_paths module_paths; /* module address -> attribute path */
	struct python_module_modes module_modes; /* the stage from its models' modes */
	/* Backward passes entered whose end is awaited, oldest first (any thread). */
	struct trace_python_call backward_open[PYTHON_BACKWARD_OPEN_MAX];
	unsigned backward_open_count;
	struct torch_held_ops held_ops; /* operators entered since a step's end, not yet placed */
};

struct python_tracer {
	struct probe_session *session;
	const char *const *prefixes;
	const char *step_marker; /* a scope name prefix or a qualified name prefix */
	python_tracer_emit_fn emit;
	void *context;
	struct u64_map probed_files;	    /* file identity -> non-NULL once probed */
	struct string_interner scope_names; /* scope names, kept for the records */
	struct python_tracer_losses losses;
	const char *const *torch_ops; /* --torch-op requests */
	size_t torch_op_count;
	bool training_ops; /* also the operators of updates and forward reads (torch_op_readings.h)
			    */
	bool torch_events_only;			    /* the frame evaluator is not probed */
	bool module_calls_selected;		    /* the prefixes select Module._call_impl */
	char **operator_names;			    /* by operator number: "aten::add_.Tensor" */
	struct torch_op_reading *operator_readings; /* by operator number */
	size_t operator_name_count;
	size_t operator_name_capacity, operator_reading_capacity;
	/*
	 * Names a code object of a followed process (python_tracer_code_name),
	 * for the frames an operator's probe read: set by python_tracer_new, so
	 * that the torch half reaches the code cache without a link to it.
	 */
	const char *(*code_name)(struct python_tracer *tracer, struct python_process *process,
				 uint64_t code, uint64_t name_object);
};

/* The process's state where its Python is followed; NULL for none or a refused one. */
static inline struct python_process *python_process_followed(struct python_process *process)
{
	return process && !process->refused ? process : NULL;
}

/* Whether a scope name or a qualified name is the step marker's (it starts with it). */
bool python_tracer_is_step_marker(const struct python_tracer *tracer, const char *name);

/*
 * Places the operators held since the last step's end (torch_held_ops.h)
 * when a call or scope entered at entry_ns shows where they belong, or
 * whatever it shows when 'all'; 0, or the first emission's error.
 */
int python_tracer_release_held_ops(struct python_tracer *tracer, struct python_process *process,
				   uint64_t entry_ns, bool all);

/*
 * Emits the backward passes the process left open, at their start (their
 * end was not seen), and counts them.
 */
void python_tracer_close_backward(struct python_tracer *tracer, struct python_process *process);

/*
 * Step, stage, rank and world size of an event that began at entry_ns.
 * Here, not in python_tracer.c: the torch side fills its events with it too.
 */
static inline void python_tracer_fill_meta(const struct python_process *process, uint64_t entry_ns,
					   struct trace_python_call *call)
{
	struct python_meta_state state = python_meta_at(&process->meta, entry_ns);

	call->step = state.step;
	/* A module is built in training mode: until one is switched, a torch process trains. */
	call->stage = state.stage == TRACE_STAGE_UNKNOWN && process->torch_looked_up
			      ? TRACE_STAGE_TRAIN
			      : state.stage;
	call->rank = process->rank;
	call->world_size = process->world_size;
}

/*
 * Names the code objects at addresses (a stack, innermost first) into names:
 * NULL where a name cannot be read.
 */
void python_tracer_name_callers(struct python_tracer *tracer, struct python_process *process,
				const uint64_t *addresses, uint32_t count, const char **names);

/*
 * Probes torch's scope entry and end, and the --torch-op operators, in a
 * process that has libtorch_cpu, once per library file. Only the verified
 * scope layout (torch 1.13: the name and the key at one entry site, C++11
 * strings) is probed.
 */
void python_tracer_follow_torch(struct python_tracer *tracer, pid_t pid,
				struct python_process *process);

/* What the entry probe needs to read arguments and callers, from a layout. */
void python_tracer_describe_for_probes(const struct python_layout *layout,
				       struct tcheck_python_process *shared);

/*
 * Probes an interpreter file's frame evaluator and its exception sites, once
 * per file (the probes see every process that maps it); 0 when done now or
 * before, negative errno with a sentence.
 */
int python_tracer_probe_file(struct python_tracer *tracer, const struct python_runtime *runtime,
			     char *error, size_t error_size);

#endif /* TCHECK_PYTHON_TRACER_STATE_H */
