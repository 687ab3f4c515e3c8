/* SPDX-License-Identifier: MIT */
/*
 * Python calls of traced processes: finds each process's CPython, probes
 * its frame evaluator, names the code objects the probes report (once per
 * object, read from the process's memory), applies the selection, and
 * hands the calls on as trace records.
 */
#ifndef TCHECK_PYTHON_TRACER_H
#define TCHECK_PYTHON_TRACER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/trace_records.h"
#include "probe/probe_session.h"

struct python_tracer;
/*
 * The tracer's state for one process. The caller keeps it (the recorder, in
 * its process registry's slot): NULL until python_tracer_add_process makes
 * it, and handed to each call for that process, so the tracer looks no pid up.
 */
struct python_process;

/* Processes a closing sentence names, at most. */
#define PYTHON_LOSSES_PIDS_NAMED 8

/* Stands in a Python stack for a frame whose code object could not be read any more. */
#define PYTHON_UNREADABLE_FRAME "<unreadable>"

typedef int (*python_tracer_emit_fn)(void *context, const struct trace_record *record);

/* The training APIs followed when the user names none, NULL-ended. */
extern const char *const python_default_prefixes[];

/*
 * prefixes: qualified-name prefixes to keep ("torch.optim."), NULL-ended;
 * NULL keeps the default training APIs, an empty list no function (torch
 * scopes and operators still come).
 */
struct python_tracer *python_tracer_new(struct probe_session *session, const char *const *prefixes,
					python_tracer_emit_fn emit, void *context);
void python_tracer_free(struct python_tracer *tracer);

/*
 * What advances the step meta variable: a torch scope name prefix or a
 * Python qualified name prefix (as the trace names it), matched at the
 * call's end. NULL or empty: "Optimizer.step#", torch's Optimizer.step scope.
 */
void python_tracer_set_step_marker(struct python_tracer *tracer, const char *marker);

/*
 * Starts tracing a process's Python, its state made in '*process'. Returns 1
 * when it runs a supported CPython, 0 when it runs none, negative (error
 * filled) when it runs one the tracer cannot follow (its version is named in
 * the sentence; the process is kept refused, so it is said once).
 */
int python_tracer_add_process(struct python_tracer *tracer, struct python_process **process,
			      pid_t pid, char *error, size_t error_size);

/*
 * Follows an interpreter file before any process runs it (its first exec is
 * held meanwhile): its frame evaluator probed, its layout given to the
 * kernel, so that a process that execs it is followed from its first
 * instruction. 1 followed, 0 not a CPython executable (a libpython one is
 * followed per process), negative errno (error filled) when it cannot be.
 */
int python_tracer_follow_file(struct python_tracer *tracer, const char *host_path, char *error,
			      size_t error_size);

/*
 * What the tracer knows it missed, for the recorder's closing summary.
 * Losses in the kernel (a full ring buffer) are the probes' counters.
 */
struct python_tracer_losses {
	uint64_t
		unfollowed_events; /* Python, scope and operator events of processes not followed */
	/* The first of those processes, for the closing sentence. */
	uint32_t unfollowed_pids[PYTHON_LOSSES_PIDS_NAMED];
	uint32_t unfollowed_pid_count;
	uint64_t unnamed_calls; /* calls whose code object was gone before it could be named */
	/* calls that could not be named: their process had ended before the tracer read them */
	uint64_t ended_unnamed_calls;
	uint64_t unnamed_callers;    /* stack frames written as PYTHON_UNREADABLE_FRAME */
	uint32_t followed_processes; /* processes whose CPython was followed (not a loss) */
	uint32_t refused_processes;  /* processes whose CPython could not be followed */
	uint32_t unprobed_processes; /* processes whose frame evaluator could not be probed */
	uint64_t step_marks;	  /* calls and scopes that matched the step marker (not a loss) */
	uint64_t device_contents; /* operators whose tensor was in device memory: not read */
	uint64_t unreadable_contents;	/* operators whose tensor's bytes could not be read */
	uint64_t backward_ends_missed;	/* backward passes recorded without their end */
	uint64_t unread_module_classes; /* module calls whose class could not be read */
	uint64_t unplaced_modules;	/* module calls whose attribute path could not be read */
	/* calls of modules never given a mode whose class's train() override could not be read */
	uint64_t unread_train_overrides;
};

void python_tracer_get_losses(const struct python_tracer *tracer,
			      struct python_tracer_losses *losses);

/* What advances the step: the marker set, or the default. */
const char *python_tracer_step_marker(const struct python_tracer *tracer);

/*
 * The process's image ends (an exec, its pid reused) or the recording does:
 * the backward passes it left open are recorded at their start.
 */
void python_tracer_end_process(struct python_tracer *tracer, struct python_process *process);

/* Forgets a process, '*process' freed and set to NULL; nothing is recorded. */
void python_tracer_forget_process(struct python_tracer *tracer, struct python_process **process);

/*
 * The handlers of what the probes send take the state of the record's
 * process (NULL when the tracer has none: its events are counted as
 * unfollowed).
 */
/* Handles one TCHECK_RECORD_PYTHON_CALL record. */
int python_tracer_handle(struct python_tracer *tracer, struct python_process *process,
			 const struct tcheck_python_record *record);
/*
 * An uncaught exception as the process prints it: emitted as a Python call
 * record flagged TRACE_PYTHON_UNCAUGHT, named by the exception's type, its
 * message as the argument "message", the traceback's functions as its
 * stack (innermost first). Returns the emitter's result.
 */
int python_tracer_handle_exception(struct python_tracer *tracer, struct python_process *process,
				   const struct tcheck_python_exception_record *record);

/*
 * Handles one TCHECK_RECORD_PROCESS_GROUP record: the first group of a
 * process whose environment gave no rank sets its rank and world size
 * (returned, with 1); 0 when nothing changed.
 */
int python_tracer_handle_process_group(struct python_process *process,
				       const struct tcheck_process_group_record *record,
				       int32_t *rank, int32_t *world_size);

/* Handles one TCHECK_RECORD_TORCH_SCOPE record; Optimizer.step scopes advance the step. */
int python_tracer_handle_scope(struct python_tracer *tracer, struct python_process *process,
			       const struct tcheck_torch_scope_record *record);

/*
 * The qualified name of a code object of a traced process (module.Class.method),
 * named once and cached like the probes' reports; NULL when it cannot be read.
 * The string lives until the process is forgotten or the address reused.
 */
const char *python_tracer_code_name(struct python_tracer *tracer, struct python_process *process,
				    uint64_t code, uint64_t name_object);

/*
 * A traced process's meta variables at at_ns: step and stage (enum
 * trace_stage); -ENOENT when its Python is not followed.
 */
int python_tracer_meta(const struct python_process *process, uint64_t at_ns, int32_t *step,
		       uint32_t *stage);

/*
 * Torch operators to probe as libtorch_cpu is found ("add_", "zero_.default",
 * see torch_probes.h), kept by reference: they must outlive the tracer.
 */
void python_tracer_set_torch_ops(struct python_tracer *tracer, const char *const *ops,
				 size_t count);

/*
 * Also watch the training operators (torch_op_readings.h): what an optimizer
 * step updates and with which scalar, what the forward reads. Set with
 * --python, where no operator name is typed.
 */
void python_tracer_watch_training(struct python_tracer *tracer, bool watch);

/*
 * Follow Python through torch's probes only: the frame evaluator is not
 * probed, so no Python function's call is seen (nor the stage, which
 * Python sets); torch scopes, the backward pass and operators are. Set
 * before the first process is added.
 */
void python_tracer_set_torch_events_only(struct python_tracer *tracer, bool torch_events_only);

/*
 * Handles one TCHECK_RECORD_TORCH_OP record: the operator as
 * "aten::add_.Tensor", with its tensor's identity and its scalar as arguments.
 */
int python_tracer_handle_op(struct python_tracer *tracer, struct python_process *process,
			    const struct tcheck_torch_op_record *record);

/* "aten::NAME[.OVERLOAD]" of an at::_ops struct name ("add__Tensor") asked for as request. */
void torch_operator_display_name(const char *request, const char *operator_name, char *name,
				 size_t size);

#endif /* TCHECK_PYTHON_TRACER_H */
