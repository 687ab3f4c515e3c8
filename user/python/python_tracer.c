// SPDX-License-Identifier: MIT
/* Python calls: probes on each CPython, code objects named once, selection applied. */
#include "python/python_tracer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/log.h"
#include "base/remote_memory.h"
#include "base/system_clock.h"
#include "base/u64_map.h"
#include "probe/process_info.h"
#include "python/python_arguments.h"
#include "python/python_exec_layout.h"
#include "python/python_layout.h"
#include "python/python_losses.h"
#include "python/python_meta.h"
#include "python/python_mode_calls.h"
#include "python/python_module_classes.h"
#include "python/python_module_modes.h"
#include "python/python_module_paths.h"
#include "python/python_names.h"
#include "python/python_tracer_state.h"
#include "python/python_type_attributes.h"

/* Training APIs worth following when the user names none. */
const char *const python_default_prefixes[] = {
	"torch.optim.",
	TRACE_MODULE_CALL_NAME,
	"torch.nn.modules.module.Module.train",
	"torch.nn.modules.module.Module.eval",
	"torch.autograd.backward",
	"torch.autograd.function.",
	"torch.utils.checkpoint.CheckpointFunction.",
	"torch.nn.utils.clip_grad",
	"torch.distributed.",
	"torch.nn.parallel.distributed.",
	"torch.utils.data.dataloader.",
	NULL,
};

/* The default step marker: the record_function scope torch opens in Optimizer.step. */
static const char default_step_marker[] = "Optimizer.step#";

/* What the tracer itself needs a code object for, besides the user's selection. */
enum code_role {
	CODE_ROLE_NONE = 0,
	CODE_ROLE_STAGE_SETTER = 1 << 0,
	CODE_ROLE_STEP_MARKER = 1 << 1,
};

/* A code object, named. */
struct named_code {
	uint64_t name_object; /* its name object's address: a reused code address has another */
	char *qualified_name;
	char *file;
	int first_line;
	int selected;	  /* by the user: its calls go to the trace */
	int roles;	  /* enum code_role: its calls are read, not necessarily traced */
	bool module_call; /* Module._call_impl: its calls carry self's class */
	int argument_name_count;
	char argument_names[TCHECK_PYTHON_ARGS_MAX][64];
	/* A module or class body (no CO_NEWLOCALS): freed once run, its address reused. */
	bool runs_once;
};

struct python_tracer *python_tracer_new(struct probe_session *session, const char *const *prefixes,
					python_tracer_emit_fn emit, void *context)
{
	struct python_tracer *tracer = calloc(1, sizeof(*tracer));

	if (!tracer)
		return NULL;
	tracer->session = session;
	tracer->code_name = python_tracer_code_name;
	tracer->prefixes = prefixes ? prefixes : python_default_prefixes;
	tracer->module_calls_selected =
		python_name_selected(TRACE_MODULE_CALL_NAME, tracer->prefixes);
	tracer->step_marker = default_step_marker;
	tracer->emit = emit;
	tracer->context = context;
	u64_map_init(&tracer->probed_files);
	string_interner_init(&tracer->scope_names);
	return tracer;
}

void python_tracer_set_step_marker(struct python_tracer *tracer, const char *marker)
{
	tracer->step_marker = marker && marker[0] ? marker : default_step_marker;
}

const char *python_tracer_step_marker(const struct python_tracer *tracer)
{
	return tracer->step_marker;
}

static void free_named_code(struct named_code *named)
{
	free(named->qualified_name);
	free(named->file);
	free(named);
}

static void free_process(struct python_process *process)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&process->codes, &i, &key, &value);)
		free_named_code(value);
	u64_map_free(&process->codes);
	python_module_classes_free(&process->module_classes);
	u64_map_free(&process->train_overrides);
	python_module_paths_free(&process->module_paths);
	python_module_modes_free(&process->module_modes);
	torch_held_ops_free(&process->held_ops);
	free(process);
}

void python_tracer_free(struct python_tracer *tracer)
{
	if (!tracer)
		return;
	u64_map_free(&tracer->probed_files);
	string_interner_destroy(&tracer->scope_names);
	for (size_t i = 0; i < tracer->operator_name_count; i++)
		free(tracer->operator_names[i]);
	free(tracer->operator_names);
	free(tracer->operator_readings);
	free(tracer);
}

void python_tracer_forget_process(struct python_tracer *tracer, struct python_process **process)
{
	if (!*process)
		return;
	if (!(*process)->refused)
		probe_session_set_python_stack_layout(tracer->session, (uint32_t)(*process)->pid,
						      NULL);
	free_process(*process);
	*process = NULL;
}

void python_tracer_end_process(struct python_tracer *tracer, struct python_process *process)
{
	process = python_process_followed(process);
	if (!process)
		return;
	if (python_tracer_release_held_ops(tracer, process, 0, true))
		log_warning("process %d: its last operators could not be written", process->pid);
	python_tracer_close_backward(tracer, process);
}

/* What the NCCL probes need to walk a thread's frames; -ENOENT without _PyRuntime. */
static int share_stack_layout(struct python_tracer *tracer, pid_t pid,
			      const struct python_layout *layout)
{
	struct tcheck_python_stack_layout shared = {
		.interpreters_head = layout->addresses.runtime_state +
				     (uint64_t)layout->runtime_interpreters_head,
		.interpreter_threads_head = layout->interpreter_threads_head,
		.thread_next = layout->thread_next,
		.thread_id = layout->thread_id,
		.thread_frame = layout->thread_frame,
		.thread_cframe = layout->thread_cframe,
		.cframe_current_frame = layout->cframe_current_frame,
		.frame_code = layout->frame_code,
		.frame_previous = layout->frame_previous,
		.frame_owner = layout->frame_owner,
		.frame_owner_c_stack = layout->frame_owner_c_stack,
		.none = layout->addresses.none,
		.code_name_offset = layout->code_qualified_name >= 0 ? layout->code_qualified_name
								     : layout->code_name,
		.unicode_type = layout->addresses.unicode_type,
		.unicode_state = layout->unicode_state,
		.unicode_ascii_data = layout->unicode_ascii_data,
		/* PyBaseExceptionObject: head, dict, args, then (3.11+) notes, traceback. */
		.exception_args = 24,
		.exception_traceback = layout->minor >= 11 ? 40 : 32,
		/* 3.11+: a traceback's frame object points at its interpreter frame. */
		.frame_object_frame = layout->minor >= 11 ? 24 : -1,
		.tuple_items = layout->tuple_items,
		.long_digits = layout->long_digits,
		.thread_exception_handled = layout->thread_exception_handled,
		.long_type = layout->addresses.long_type,
		.system_exit_type = layout->addresses.system_exit,
	};
	/* The walk reads code, previous (8 bytes each) and owner (1 byte) in one go. */
	int header_size = layout->frame_code + 8;

	if (layout->frame_previous + 8 > header_size)
		header_size = layout->frame_previous + 8;
	if (layout->frame_owner + 1 > header_size)
		header_size = layout->frame_owner + 1;
	shared.frame_header_size = (uint32_t)header_size;
	if (!layout->addresses.runtime_state || shared.frame_header_size > 128 ||
	    (layout->thread_frame < 0 && layout->thread_cframe < 0))
		return -ENOENT;
	return probe_session_set_python_stack_layout(tracer->session, (uint32_t)pid, &shared);
}

/* RANK and WORLD_SIZE as the launcher set them (torchrun, the exec launcher). */
static void read_rank(pid_t pid, struct python_process *process)
{
	struct process_info info;
	char error[256];

	process->rank = process->world_size = -1;
	if (process_info_read(pid, &info, error, sizeof(error))) {
		log_debug("process %d: %s", pid, error);
		return;
	}
	process->rank = info.rank;
	process->world_size = info.world_size;
	process_info_free(&info);
}

/* What the entry probe needs to read arguments and callers in this process. */
void python_tracer_describe_for_probes(const struct python_layout *layout,
				       struct tcheck_python_process *shared)
{
	shared->frame_code_offset = layout->frame_code;
	shared->code_name_offset =
		layout->code_qualified_name >= 0 ? layout->code_qualified_name : layout->code_name;
	shared->thread_frame_offset = layout->thread_frame;
	shared->thread_cframe_offset = layout->thread_cframe;
	shared->cframe_current_frame_offset = layout->cframe_current_frame;
	shared->frame_previous_offset = layout->frame_previous;
	shared->frame_localsplus_offset = layout->frame_localsplus;
	shared->frame_owner_offset = layout->frame_owner;
	shared->frame_owner_c_stack = layout->frame_owner_c_stack;
	shared->code_argument_count_offset = layout->code_argument_count;
	shared->code_keyword_only_count_offset = layout->code_keyword_only_count;
	shared->float_value_offset = layout->float_value;
	shared->long_size_offset = layout->long_size;
	shared->long_digits_offset = layout->long_digits;
	shared->unicode_length_offset = layout->unicode_length;
	shared->unicode_state_offset = layout->unicode_state;
	shared->unicode_ascii_data_offset = layout->unicode_ascii_data;
	shared->unicode_compact_data_offset = layout->unicode_compact_data;
	shared->long_type = layout->addresses.long_type;
	shared->float_type = layout->addresses.float_type;
	shared->bool_type = layout->addresses.bool_type;
	shared->unicode_type = layout->addresses.unicode_type;
	shared->none = layout->addresses.none;
	shared->true_object = layout->addresses.true_object;
}

/*
 * A process whose CPython cannot be followed: said once (its state, kept
 * refused, says so), counted, and its probes told.
 */
static void refuse_process(struct python_tracer *tracer, struct python_process **slot, pid_t pid)
{
	if (!*slot)
		*slot = calloc(1, sizeof(**slot));
	if (*slot) {
		u64_map_init(&(*slot)->codes);
		u64_map_init(&(*slot)->module_classes);
		(*slot)->pid = pid;
		(*slot)->refused = true;
	}
	probe_session_set_python_process(tracer->session, (uint32_t)pid, NULL);
	tracer->losses.refused_processes++;
}

int python_tracer_probe_file(struct python_tracer *tracer, const struct python_runtime *runtime,
			     char *error, size_t error_size)
{
	char exception_error[256];
	uint64_t identity;
	int result = 0;

	if (file_identity(runtime->host_path, &identity))
		return error_fail(error, error_size, ENOENT, "cannot open %s", runtime->host_path);
	if (u64_map_get(&tracer->probed_files, identity))
		return 0;
	if (!tracer->torch_events_only)
		result = probe_session_attach_python(tracer->session, runtime->host_path,
						     runtime->eval_frame_file_offset, error,
						     error_size);
	if (result)
		return result;
	/*
	 * The exception that ends a process, for crash reports (uncaught, or
	 * caught by a launcher that then exits): without it a crash still has
	 * its exit.
	 */
	if (probe_session_attach_python_exceptions(
		    tracer->session, runtime->host_path, runtime->err_display_file_offset,
		    runtime->set_object_file_offset, exception_error, sizeof(exception_error)))
		log_warning("%s: uncaught exceptions are not read: %s", runtime->path,
			    exception_error);
	u64_map_put(&tracer->probed_files, identity, tracer);
	if (!tracer->torch_events_only)
		log_info("probed Python %s's frame evaluator in %s at file offset 0x%llx "
			 "(_PyEval_EvalFrameDefault+%llu)",
			 runtime->version, runtime->path,
			 (unsigned long long)runtime->eval_frame_file_offset,
			 (unsigned long long)runtime->eval_frame_probe_skip);
	return 0;
}

/*
 * Probes the frame evaluator of a process's interpreter (once per file:
 * the probes see every process that maps it). A failure is said once per
 * process and counted until a later try succeeds.
 */
static int probe_evaluator(struct python_tracer *tracer, pid_t pid, struct python_process *process,
			   char *error, size_t error_size)
{
	char why[256];
	int result = python_tracer_probe_file(tracer, &process->runtime, why, sizeof(why));

	if (result) {
		if (process->evaluator_failure_said)
			return 0;
		error_fail(error, error_size, -result,
			   "process %d: the frame evaluator of %s cannot be probed (%s): its "
			   "Python calls are not followed",
			   pid, process->runtime.path, why);
		process->evaluator_failure_said = true;
		tracer->losses.unprobed_processes++;
		return result;
	}
	if (process->evaluator_failure_said)
		tracer->losses.unprobed_processes--;
	process->evaluator_probed = true;
	return 0;
}

int python_tracer_add_process(struct python_tracer *tracer, struct python_process **slot, pid_t pid,
			      char *error, size_t error_size)
{
	struct tcheck_python_process shared = { .frame_code_offset = 0 };
	struct python_process *process = *slot;
	struct python_runtime runtime;
	int result;

	if (process && process->refused)
		return 0;
	if (process) {
		/* A probe that could not be attached is tried again as the process is looked at. */
		if (!process->evaluator_probed &&
		    probe_evaluator(tracer, pid, process, error, error_size) < 0)
			log_debug("process %d: %s", pid, error);
		python_tracer_follow_torch(tracer, pid, process);
		return 1;
	}
	result = python_runtime_find(pid, &runtime, error, error_size);
	/* No interpreter, or no process any more (a short-lived child): nothing to follow. */
	if (result == -ENOENT || result == -ESRCH)
		return 0;
	if (result) {
		refuse_process(tracer, slot, pid);
		return result;
	}
	process = calloc(1, sizeof(*process));
	if (!process)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	process->pid = pid;
	u64_map_init(&process->codes);
	u64_map_init(&process->module_classes);
	u64_map_init(&process->train_overrides);
	python_module_paths_init(&process->module_paths);
	python_module_modes_init(&process->module_modes);
	python_meta_init(&process->meta);
	read_rank(pid, process);
	result = python_layout_for(&runtime, &process->layout, error, error_size);
	if (result < 0) {
		free_process(process);
		refuse_process(tracer, slot, pid);
		return result;
	}
	*slot = process;
	process->runtime = runtime;
	tracer->losses.followed_processes++;
	python_tracer_describe_for_probes(&process->layout, &shared);
	result = probe_session_set_python_process(tracer->session, (uint32_t)pid, &shared);
	if (result)
		return error_fail(error, error_size, -result,
				  "cannot register process %d's Python: %s", pid,
				  strerror(-result));
	if (python_exec_layout_share(tracer->session, pid, runtime.host_path, &shared))
		log_debug("process %d: its interpreter is not followed from the exec on", pid);
	/* Without it NCCL calls carry no Python caller; everything else works. */
	if (share_stack_layout(tracer, pid, &process->layout))
		log_warning("process %d: NCCL calls and parameter initialisations will not "
			    "name their Python callers (the interpreter's thread list was not "
			    "found), so InitialisedOnce does not judge it",
			    pid);
	python_tracer_follow_torch(tracer, pid, process);
	result = probe_evaluator(tracer, pid, process, error, error_size);
	return result < 0 ? result : 1;
}

/* Names a code object once, decides on it, and tells the probes. */
static struct named_code *name_code(struct python_tracer *tracer, struct python_process *process,
				    uint32_t pid, uint64_t address, uint64_t name_object)
{
	struct named_code *named = u64_map_get(&process->codes, address);
	char module[512], error[256];
	struct python_code code;
	size_t length;

	if (named && named->name_object == name_object)
		return named;
	if (python_code_read((pid_t)pid, &process->layout, address, &code, error, sizeof(error))) {
		log_debug("process %u: code object at 0x%llx: %s", pid, (unsigned long long)address,
			  error);
		return NULL;
	}
	/*
	 * Freed and its address reused since the call: this is another code
	 * object, and a verdict taken on it would be kept for the one called.
	 */
	if (code.name_object != name_object) {
		log_debug("process %u: the code object at 0x%llx was replaced before it could be "
			  "named",
			  pid, (unsigned long long)address);
		return NULL;
	}
	/* The address was freed and reused by another code object: name it anew. */
	if (named)
		free_named_code(u64_map_remove(&process->codes, address));
	named = calloc(1, sizeof(*named));
	if (!named)
		return NULL;
	named->name_object = name_object;
	named->runs_once = !(code.flags & PYTHON_CODE_NEW_LOCALS);
	python_module_of_file(code.filename, module, sizeof(module));
	length = strlen(module) + strlen(code.qualified_name) + 2;
	named->qualified_name = malloc(length);
	named->file = strdup(code.filename);
	if (!named->qualified_name || !named->file ||
	    u64_map_put(&process->codes, address, named)) {
		free_named_code(named);
		return NULL;
	}
	snprintf(named->qualified_name, length, "%s.%s", module, code.qualified_name);
	named->first_line = code.first_line;
	named->selected = python_name_selected(named->qualified_name, tracer->prefixes);
	if (strcmp(named->qualified_name, PYTHON_STAGE_SETTER) == 0)
		named->roles |= CODE_ROLE_STAGE_SETTER;
	if (python_tracer_is_step_marker(tracer, named->qualified_name))
		named->roles |= CODE_ROLE_STEP_MARKER;
	if (strcmp(named->qualified_name, TRACE_MODULE_CALL_NAME) == 0)
		named->module_call = true;
	named->argument_name_count = code.argument_name_count < TCHECK_PYTHON_ARGS_MAX
					     ? code.argument_name_count
					     : TCHECK_PYTHON_ARGS_MAX;
	for (int i = 0; i < named->argument_name_count; i++)
		snprintf(named->argument_names[i], sizeof(named->argument_names[i]), "%s",
			 code.argument_names[i]);
	probe_session_set_code_verdict(tracer->session, pid, address, name_object,
				       named->selected || named->roles ? TCHECK_CODE_SELECTED
								       : TCHECK_CODE_IGNORED);
	return named;
}

/*
 * The callers' names. A caller is only a code address. A function's code
 * object lives as long as its module, so its cached name stands; a module or
 * class body's is freed once it has run and its address may now hold another
 * code object, so its name object is read again (all such callers in one
 * read) and the cached name kept only where it still matches, or where no
 * other code object has taken its place (the process has ended, or freed it
 * at exit). Callers not named yet are read likewise.
 */
void python_tracer_name_callers(struct python_tracer *tracer, struct python_process *process,
				const uint64_t *addresses, uint32_t count, const char **names)
{
	pid_t pid = process->pid;
	int name_offset = process->layout.code_qualified_name >= 0
				  ? process->layout.code_qualified_name
				  : process->layout.code_name;
	struct remote_span spans[TCHECK_PY_STACK_MAX];
	uint64_t name_objects[TCHECK_PY_STACK_MAX] = { 0 };
	uint32_t read_count = 0, read_index[TCHECK_PY_STACK_MAX];
	char error[256];
	bool read_together;

	for (uint32_t i = 0; i < count; i++) {
		struct named_code *cached = u64_map_get(&process->codes, addresses[i]);

		names[i] = cached && !cached->runs_once ? cached->qualified_name : NULL;
		if (names[i])
			continue;
		spans[read_count] = (struct remote_span){
			.address = addresses[i] + (uint64_t)name_offset,
			.buffer = &name_objects[read_count],
			.size = sizeof(name_objects[read_count]),
		};
		read_index[read_count++] = i;
	}
	if (read_count == 0)
		return;
	read_together = remote_memory_read_spans((pid_t)pid, spans, read_count, "code object names",
						 error, sizeof(error)) == 0;
	for (uint32_t r = 0; r < read_count; r++) {
		uint32_t i = read_index[r];
		struct named_code *named = NULL;

		/* One unmapped caller fails the whole read: read the others one by one. */
		if (read_together ||
		    remote_memory_read_u64((pid_t)pid, spans[r].address, &name_objects[r]) == 0)
			named = name_code(tracer, process, pid, addresses[i], name_objects[r]);
		if (!named)
			named = u64_map_get(&process->codes, addresses[i]);
		names[i] = named ? named->qualified_name : NULL;
	}
}

/* The arguments the probe kept, decoded and named; *values holds their texts. */
static void fill_arguments(struct python_tracer *tracer, const struct named_code *named,
			   struct python_process *process,
			   const struct tcheck_python_record *record,
			   struct trace_python_call *call,
			   struct python_argument_value values[TCHECK_PYTHON_ARGS_MAX])
{
	uint32_t count = record->arg_count < TCHECK_PYTHON_ARGS_MAX ? record->arg_count
								    : TCHECK_PYTHON_ARGS_MAX;

	call->arg_count = 0;
	for (uint32_t i = 0; i < count; i++) {
		const struct tcheck_python_arg *raw = &record->args[i];
		struct trace_python_arg *arg = &call->args[call->arg_count];
		struct python_argument_value *value = &values[call->arg_count];

		if (raw->type == TCHECK_PYTHON_ARG_OBJECT) {
			if (named->module_call &&
			    python_module_class_add(&process->module_classes, record->header.pid,
						    raw->value, call))
				tracer->losses.unread_module_classes++;
			continue;
		}
		if (raw->position >= named->argument_name_count ||
		    python_argument_decode(raw, process->layout.long_tagged, value))
			continue;
		arg->name = named->argument_names[raw->position];
		arg->type = value->type;
		arg->integer = value->integer;
		arg->real = value->real;
		arg->text = value->text;
		call->arg_count++;
	}
}

/* Whether the stage follows the top modules the program calls (python_module_modes.h). */
static bool module_calls_followed(const struct python_tracer *tracer)
{
	return !tracer->torch_events_only && tracer->module_calls_selected;
}

static void stage_changed(struct python_tracer *tracer, struct python_process *process,
			  uint64_t at_ns, int result)
{
	if (result < 0)
		log_debug("process %d: out of memory following the modes of its modules",
			  process->pid);
	python_meta_set_stage(
		&process->meta, at_ns,
		python_module_modes_stage(&process->module_modes, module_calls_followed(tracer)));
}

/*
 * A call of a module seen built and never given a mode: it says so where
 * its class overrides train() (TRACE_MODULE_TRAIN_NOT_RUN_ARG); a class
 * that cannot be read is counted, not taken for one without an override.
 */
static void follow_train_override(struct python_tracer *tracer, struct python_process *process,
				  pid_t pid, const struct python_module_call *module,
				  struct trace_python_call *call)
{
	enum python_type_answer overrides = python_type_overrides_cached(
		&process->train_overrides, &process->module_classes, pid, &process->layout,
		module->type, "train", "Module", "torch.");

	if (overrides == PYTHON_TYPE_UNKNOWN)
		tracer->losses.unread_train_overrides++;
	else if (overrides == PYTHON_TYPE_YES && call->arg_count < TRACE_PY_ARGS_MAX)
		call->args[call->arg_count++] = (struct trace_python_arg){
			.name = TRACE_MODULE_TRAIN_NOT_RUN_ARG,
			.type = TRACE_VALUE_BOOL,
			.integer = 1,
		};
}

/*
 * A module call (named callers in call): its module is a submodule, or a top
 * module that may change the stage from its entry on when met first; a call
 * whose top is not known (python_module_paths.h) places no top module. The
 * call's own stage is its top module's mode: an EMA copy's or a teacher's
 * forward is in stage eval while its process trains another model; a
 * submodule given a mode of its own says it (TRACE_MODULE_TRAINING_ARG).
 */
static void follow_module_call(struct python_tracer *tracer, struct python_process *process,
			       const struct tcheck_python_record *record,
			       struct trace_python_call *call)
{
	struct python_module_call module;
	uint32_t own;
	int result;

	if (!python_module_call_of(record, call, &module) ||
	    (module.module == module.top && !module.top_known))
		return;
	result = python_module_modes_called(&process->module_modes, module.module, module.top);
	if (result)
		stage_changed(tracer, process, record->header.timestamp_ns, result);
	if (!module_calls_followed(tracer))
		return;
	call->stage = python_module_modes_of(&process->module_modes, module.top);
	if (python_module_modes_never_set(&process->module_modes, module.module))
		follow_train_override(tracer, process, record->header.pid, &module, call);
	if (python_module_modes_own(&process->module_modes, module.module, module.top, &own) &&
	    call->arg_count < TRACE_PY_ARGS_MAX)
		call->args[call->arg_count++] = (struct trace_python_arg){
			.name = TRACE_MODULE_TRAINING_ARG,
			.type = TRACE_VALUE_BOOL,
			.integer = own == TRACE_STAGE_TRAIN,
		};
}

/*
 * Module.__setattr__(self, name, value): any attribute set before the
 * module's first call says it was seen being built; "training" set by a
 * train() or eval() reaches the module; the outermost train()'s sets the
 * stage from then on.
 */
static void follow_stage(struct python_tracer *tracer, struct python_process *process,
			 const struct tcheck_python_record *record,
			 const struct trace_python_call *call)
{
	uint32_t depth = record->stack_depth < TCHECK_PY_STACK_MAX ? record->stack_depth
								   : TCHECK_PY_STACK_MAX;
	struct python_mode_caller callers[TCHECK_PY_STACK_MAX] = { 0 };
	const char *names[TCHECK_PY_STACK_MAX];
	const struct tcheck_python_arg *self = python_record_self(record);
	uint64_t module = 0;
	uint32_t stage;

	if (self)
		memcpy(&module, self->bytes, sizeof(module));
	if (!python_mode_flag_set(call, &stage)) {
		if (python_module_modes_attribute_set(&process->module_modes, module, false))
			log_debug("process %d: out of memory following the modes of its modules",
				  process->pid);
		return;
	}
	python_tracer_name_callers(tracer, process, record->stack, depth, names);
	for (uint32_t i = 0; i < depth; i++) {
		const struct named_code *named = u64_map_get(&process->codes, record->stack[i]);

		callers[i].qualified_name = names[i];
		callers[i].argument_count = named ? named->argument_name_count : 0;
		for (int a = 0; a < callers[i].argument_count && a < 2; a++)
			callers[i].argument_names[a] = named->argument_names[a];
	}
	if (python_module_modes_attribute_set(&process->module_modes, module,
					      python_mode_call_made_by_mode_call(callers, depth)))
		log_debug("process %d: out of memory following the modes of its modules",
			  process->pid);
	if (python_mode_call_is_outermost(callers, depth))
		stage_changed(tracer, process, record->return_ns,
			      python_module_modes_set(&process->module_modes, module, stage));
}

int python_tracer_handle(struct python_tracer *tracer, struct python_process *process,
			 const struct tcheck_python_record *record)
{
	struct trace_record out = { .kind = TRACE_RECORD_PYTHON_CALL,
				    .python_call = { .rank = -1, .world_size = -1 } };
	struct python_argument_value values[TCHECK_PYTHON_ARGS_MAX];
	struct trace_python_call *call = &out.python_call;
	const char *caller_names[TCHECK_PY_STACK_MAX];
	struct named_code *named;
	uint32_t stack_depth;
	int result = 0;

	process = python_process_followed(process);
	if (!process) {
		python_losses_count_unfollowed(&tracer->losses, record->header.pid);
		return 0;
	}
	named = name_code(tracer, process, record->header.pid, record->code, record->code_name);
	if (!named) {
		python_losses_count_unnamed(&tracer->losses, record->header.pid,
					    &process->ended_unnamed_said);
		return 0;
	}
	/*
	 * Sent although ignored: code the probes had no verdict for yet (its
	 * first calls, while the daemon names it) or whose verdict left their
	 * map (least recently used). Such a call places no held operator: it
	 * reaches the daemon only while the daemon is behind, and where the
	 * operators go must not depend on that.
	 */
	if (!named->selected && !named->roles) {
		probe_session_set_code_verdict(tracer->session, record->header.pid, record->code,
					       record->code_name, TCHECK_CODE_IGNORED);
		return 0;
	}
	/* A followed call entered since the last step's end places the operators held since. */
	result =
		python_tracer_release_held_ops(tracer, process, record->header.timestamp_ns, false);
	if (result)
		return result;
	fill_arguments(tracer, named, process, record, call, values);
	if (named->roles & CODE_ROLE_STAGE_SETTER)
		follow_stage(tracer, process, record, call);
	if (named->selected) {
		call->entry_ns = record->header.timestamp_ns;
		call->duration_ns = record->return_ns > record->header.timestamp_ns
					    ? record->return_ns - record->header.timestamp_ns
					    : 0;
		call->pid = record->header.pid;
		call->tid = record->header.tid;
		call->depth = record->depth;
		call->flags = record->flags & TCHECK_PYTHON_RAISED ? TRACE_PYTHON_RAISED : 0;
		if (named->runs_once)
			call->flags |= TRACE_PYTHON_RUNS_ONCE;
		call->first_line = named->first_line;
		call->qualified_name = named->qualified_name;
		call->file = named->file;
		python_tracer_fill_meta(process, record->header.timestamp_ns, call);
		stack_depth = record->stack_depth < TRACE_PY_STACK_MAX ? record->stack_depth
								       : TRACE_PY_STACK_MAX;
		if (stack_depth > TCHECK_PY_STACK_MAX)
			stack_depth = TCHECK_PY_STACK_MAX;
		python_tracer_name_callers(tracer, process, record->stack, stack_depth,
					   caller_names);
		for (uint32_t i = 0; i < stack_depth; i++) {
			if (!caller_names[i])
				tracer->losses.unnamed_callers++;
			call->py_stack.frames[call->py_stack.depth++] =
				caller_names[i] ? caller_names[i] : PYTHON_UNREADABLE_FRAME;
		}
		if (named->module_call &&
		    python_module_path_add(&process->module_paths, &process->module_classes,
					   &process->layout, record, call) < 0)
			tracer->losses.unplaced_modules++;
		if (named->module_call)
			follow_module_call(tracer, process, record, call);
		result = tracer->emit(tracer->context, &out);
	}
	/* The marker call ends a step: calls entered after its return are in the next. */
	if (named->roles & CODE_ROLE_STEP_MARKER) {
		python_meta_end_step(&process->meta, record->header.timestamp_ns,
				     record->return_ns);
		tracer->losses.step_marks++;
	}
	return result;
}

const char *python_tracer_code_name(struct python_tracer *tracer, struct python_process *process,
				    uint64_t code, uint64_t name_object)
{
	struct named_code *named;

	process = python_process_followed(process);
	if (!process)
		return NULL;
	named = name_code(tracer, process, (uint32_t)process->pid, code, name_object);
	if (!named) {
		tracer->losses.unnamed_callers++;
		return NULL;
	}
	return named->qualified_name;
}

int python_tracer_meta(const struct python_process *process, uint64_t at_ns, int32_t *step,
		       uint32_t *stage)
{
	struct python_meta_state state;

	if (!process || process->refused)
		return -ENOENT;
	state = python_meta_at(&process->meta, at_ns);
	*step = state.step;
	*stage = state.stage;
	return 0;
}

void python_tracer_get_losses(const struct python_tracer *tracer,
			      struct python_tracer_losses *losses)
{
	*losses = tracer->losses;
}
