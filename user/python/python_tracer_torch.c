// SPDX-License-Identifier: MIT
/* torch in a traced Python process: its scopes, operators and process groups, probed and named. */
#include "python/python_tracer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/log.h"
#include "base/system_clock.h"
#include "model/c10d_api.h"
#include "python/python_probe_frames.h"
#include "python/python_losses.h"
#include "python/python_tracer_state.h"
#include "python/torch_probes.h"

static uint64_t torch_register_bits(enum torch_register which)
{
	return which == TORCH_REGISTER_RDI   ? 1
	       : which == TORCH_REGISTER_RSI ? 2
	       : which == TORCH_REGISTER_RDX ? 3
					     : 0;
}

void python_tracer_set_torch_ops(struct python_tracer *tracer, const char *const *ops, size_t count)
{
	tracer->torch_ops = ops;
	tracer->torch_op_count = count;
}

void python_tracer_watch_training(struct python_tracer *tracer, bool watch)
{
	tracer->training_ops = watch;
}

void python_tracer_set_torch_events_only(struct python_tracer *tracer, bool torch_events_only)
{
	tracer->torch_events_only = torch_events_only;
}

void torch_operator_display_name(const char *request, const char *operator_name, char *name,
				 size_t size)
{
	size_t base = strcspn(request, ".");
	const char *overload = operator_name + base;

	/* "add__Tensor" asked as "add_": the struct is the name, '_', the overload. */
	if (strncmp(operator_name, request, base) == 0 && *overload == '_' && overload[1])
		snprintf(name, size, "aten::%.*s.%s", (int)base, request, overload + 1);
	else
		snprintf(name, size, "aten::%s", operator_name);
}

/*
 * A probe on each of libtorch_python's calls of AutogradState::set_tls_state
 * (torch.inference_mode() entering and leaving). A call left unprobed would
 * leave the mode wrong after it, so all or none.
 */
static void attach_grad_state_calls(struct python_tracer *tracer, pid_t pid,
				    const struct torch_probes *probes)
{
	const struct call_sites *calls = &probes->grad_state_calls;
	char error[512];

	if (probe_session_attach_grad_mode(tracer->session, probes->python_host_path,
					   calls->file_offsets, calls->count,
					   probes->grad_state_cookie, error, sizeof(error)))
		log_warning("process %d: %s; weights read under torch.inference_mode() are "
			    "judged as read for training",
			    pid, error);
	else
		log_info("process %d: probed %zu calls of AutogradState::set_tls_state "
			 "(torch.inference_mode()) in %s",
			 pid, calls->count, probes->python_library_path);
}

/*
 * Where autograd is switched on and off (torch.no_grad(), torch.inference_mode()):
 * a weight read with it off gets no gradient from that forward. Without it,
 * every read is judged as one autograd follows.
 */
static void attach_grad_mode(struct python_tracer *tracer, pid_t pid,
			     const struct torch_probes *probes)
{
	char error[512];

	if (!probes->grad_mode.symbol) {
		log_info("process %d: no c10::GradMode::set_enabled beside %s: weights read "
			 "under torch.no_grad() are judged as read for training",
			 pid, probes->library_path);
		return;
	}
	if (probe_session_attach_grad_mode(tracer->session, probes->c10_host_path,
					   &probes->grad_mode.file_offset, 1,
					   TCHECK_GRAD_MODE_FROM_BOOL, error, sizeof(error))) {
		log_warning("process %d: %s; weights read under torch.no_grad() are judged as "
			    "read for training",
			    pid, error);
		return;
	}
	if (!probes->grad_state.symbol)
		log_info("process %d: no call of c10::AutogradState::set_tls_state of a known "
			 "layout in libtorch_python.so beside %s%s%s: weights read under "
			 "torch.inference_mode() are judged as read for training",
			 pid, probes->library_path, probes->grad_state_missing[0] ? ": " : "",
			 probes->grad_state_missing);
	else
		attach_grad_state_calls(tracer, pid, probes);
}

/*
 * Attaches the operator probes; their cookies number the operators
 * (tracer->operator_names, operator_readings) and say what to read.
 */
static void attach_torch_ops(struct python_tracer *tracer, pid_t pid,
			     const struct torch_probes *probes)
{
	struct torch_op_reading *readings;
	uint64_t *offsets, *cookies;
	char error[512], name[256];
	size_t first = tracer->operator_name_count;

	if (probes->op_count == 0)
		return;
	offsets = calloc(probes->op_count, sizeof(*offsets));
	cookies = calloc(probes->op_count, sizeof(*cookies));
	if (!offsets || !cookies ||
	    growable_array_reserve((void **)&tracer->operator_names, first,
				   &tracer->operator_name_capacity, probes->op_count,
				   sizeof(*tracer->operator_names)) ||
	    growable_array_reserve((void **)&tracer->operator_readings, first,
				   &tracer->operator_reading_capacity, probes->op_count,
				   sizeof(*tracer->operator_readings)))
		goto out;
	readings = tracer->operator_readings;
	for (size_t i = 0; i < probes->op_count; i++) {
		torch_operator_display_name(probes->ops[i].request, probes->ops[i].operator_name,
					    name, sizeof(name));
		tracer->operator_names[first + i] = strdup(name);
		if (!tracer->operator_names[first + i]) {
			for (size_t j = first; j < first + i; j++)
				free(tracer->operator_names[j]);
			goto out;
		}
		offsets[i] = probes->ops[i].site.file_offset;
		readings[first + i] = torch_op_reading_of(probes->ops[i].operator_name);
		cookies[i] =
			torch_op_cookie(first + i, &readings[first + i], &probes->tensor_layout);
	}
	tracer->operator_name_count = first + probes->op_count;
	if (probe_session_attach_torch_ops(tracer->session, probes->host_path, offsets, cookies,
					   probes->op_count, error, sizeof(error)))
		log_warning("process %d: %s", pid, error);
	else
		log_info("probed %zu torch operator entry points in %s", probes->op_count,
			 probes->library_path);
	/* Only the rules on what the optimizer changes of what the forward reads ask for it. */
	if (tracer->training_ops)
		attach_grad_mode(tracer, pid, probes);
out:
	free(offsets);
	free(cookies);
}

/*
 * The backward pass as a scope of its own: the autograd engine's execute(),
 * its entry and its return instructions.
 */
static void attach_backward(struct python_tracer *tracer, pid_t pid,
			    const struct torch_probes *probes)
{
	bool ends_probed = false;
	char error[512];

	if (!probes->backward.symbol) {
		log_info(
			"process %d: %s has no torch::autograd::Engine::execute: the backward pass "
			"is not an event of its own",
			pid, probes->library_path);
		return;
	}
	if (probe_session_attach_backward(
		    tracer->session, probes->host_path, probes->backward.file_offset,
		    probes->backward_returns.offsets, probes->backward_returns.count, &ends_probed,
		    error, sizeof(error)))
		log_warning("process %d: %s; the backward pass is not an event of its own", pid,
			    error);
	else if (!probes->backward_returns.count)
		log_warning("process %d: the backward pass is recorded at its start only: "
			    "torch::autograd::Engine::execute in %s: %s",
			    pid, probes->library_path, probes->backward_returns_note);
	else if (!ends_probed)
		log_warning("process %d: the backward pass is recorded at its start only: the "
			    "probes on its returns could not be attached: %s",
			    pid, error);
}

/* The rank and size a process's process groups are built with: its job rank without RANK. */
static void attach_process_groups(struct python_tracer *tracer, pid_t pid,
				  const struct torch_probes *probes)
{
	uint64_t offsets[TORCH_PROCESS_GROUP_SITES];
	size_t count = 0;
	char error[512];

	for (int i = 0; i < TORCH_PROCESS_GROUP_SITES; i++)
		if (probes->process_groups[i].symbol)
			offsets[count++] = probes->process_groups[i].file_offset;
	if (count == 0) {
		log_debug("process %d: %s has no c10d process-group constructor", pid,
			  probes->library_path);
		return;
	}
	if (probe_session_attach_process_groups(tracer->session, probes->host_path, offsets, count,
						error, sizeof(error)))
		log_warning("process %d: %s; ranks come from the environment only", pid, error);
	if (!probes->prefix_store.symbol)
		log_info("process %d: %s has no c10d PrefixStore constructor: c10d subgroups are "
			 "not matched across ranks",
			 pid, probes->library_path);
	else if (probe_session_attach_store_prefix(tracer->session, probes->host_path,
						   probes->prefix_store.file_offset, error,
						   sizeof(error)))
		log_warning("process %d: %s; c10d subgroups are not matched across ranks", pid,
			    error);
}

/*
 * Where gloo's works are built and end: a gloo collective's call then
 * lasts until its work ends. False (its calls seen entered only) when the
 * build lacks one of the sites or they cannot be probed.
 */
static bool attach_gloo_work(struct python_tracer *tracer, pid_t pid,
			     const struct torch_probes *probes)
{
	uint64_t offsets[TORCH_GLOO_WORK_SITES], cookies[TORCH_GLOO_WORK_SITES];
	char error[512];
	size_t count = 0;

	for (int i = 0; i < TORCH_GLOO_WORK_SITES; i++)
		if (probes->gloo_work[i].symbol) {
			offsets[count] = probes->gloo_work[i].file_offset;
			cookies[count++] = (uint64_t)TCHECK_C10D_WORK_BUILT + (uint64_t)i;
		}
	/* Built and finished at least: a work that fails unseen stays open, as it is. */
	if (!probes->gloo_work[0].symbol || !probes->gloo_work[1].symbol) {
		log_info("process %d: %s has no gloo AsyncWork constructor or finishWorkGloo: "
			 "gloo collectives are seen entered only, not completed",
			 pid, probes->library_path);
		return false;
	}
	if (probe_session_attach_c10d_work(tracer->session, probes->host_path, offsets, cookies,
					   count, error, sizeof(error))) {
		log_warning("process %d: gloo collectives are seen entered only, not completed: %s",
			    pid, error);
		return false;
	}
	return true;
}

/* One backend's collectives: what each rank entered, whatever the scopes. */
static void attach_c10d_backend(struct python_tracer *tracer, pid_t pid,
				const struct torch_probes *probes, size_t backend_index,
				bool gloo_work_probed)
{
	const struct torch_c10d_probes *backend = &probes->c10d[backend_index];
	const char *name = c10d_backend_at(backend_index)->name;
	bool gloo = backend_index == C10D_BACKEND_GLOO;
	uint64_t offsets[TORCH_C10D_SITES], cookies[TORCH_C10D_SITES];
	size_t count = 0;
	char error[512];

	for (size_t i = 0; i < TORCH_C10D_SITES; i++)
		if (backend->sites[i].symbol) {
			bool awaited =
				gloo && gloo_work_probed && c10d_operation_at(i)->gloo_async_work;

			offsets[count] = backend->sites[i].file_offset;
			cookies[count++] = torch_c10d_cookie(probes, i, awaited);
		}
	if (count == 0) {
		log_info("process %d: %s has no %s process group: its c10d collectives are not "
			 "traced%s",
			 pid, backend->library_path, name, gloo ? " (NCCL's are, in libnccl)" : "");
		return;
	}
	if (probe_session_attach_c10d_collectives(tracer->session, backend->host_path, offsets,
						  cookies, count, error, sizeof(error))) {
		log_warning("process %d: %s collectives are not traced: %s", pid, name, error);
		return;
	}
	if (!probes->tensor_layout.numel_offset)
		log_warning("process %d: torch %s: where its tensors keep their size is not known; "
			    "%s collectives are traced without element count and dtype",
			    pid, probes->version.text, name);
	log_info("probed %zu %s collectives in %s", count, name, backend->library_path);
}

/* PyTorch's own collectives, in every backend this torch has (gloo; NCCL in CUDA builds). */
static void attach_c10d_collectives(struct python_tracer *tracer, pid_t pid,
				    const struct torch_probes *probes)
{
	bool gloo_work_probed = torch_c10d_site_count(&probes->c10d[C10D_BACKEND_GLOO]) > 0 &&
				attach_gloo_work(tracer, pid, probes);

	for (size_t b = 0; b < c10d_backend_count() && b < TORCH_C10D_BACKENDS; b++)
		if (probes->c10d[b].library_path)
			attach_c10d_backend(tracer, pid, probes, b, gloo_work_probed);
}

void python_tracer_follow_torch(struct python_tracer *tracer, pid_t pid,
				struct python_process *process)
{
	const struct torch_scope_probes *scopes;
	struct torch_probes *probes = NULL;
	char error[512], library[4096];
	uint64_t identity, cookie, exits[2];
	size_t exit_count = 1;
	int result;

	if (process->torch_looked_up)
		return;
	/* torch is imported after start: this is asked again as libraries load. */
	if (torch_probes_process_library(pid, library, sizeof(library))) {
		log_debug("process %d: no torch scopes yet: it has not mapped libtorch_cpu.so",
			  pid);
		return;
	}
	/* Another process's libtorch_cpu, probed already: the probes serve this one too. */
	if (!file_identity(library, &identity) && u64_map_get(&tracer->probed_files, identity)) {
		process->torch_looked_up = true;
		return;
	}
	result = torch_probes_resolve_process(pid, tracer->torch_ops, tracer->torch_op_count,
					      &probes, error, sizeof(error));
	/* An operator this torch lacks costs the operators, not the scopes. */
	if (result == -ENOENT && tracer->torch_op_count && !strstr(error, "has not mapped")) {
		log_warning("process %d: %s; following its scopes without operators", pid, error);
		result = torch_probes_resolve_process(pid, NULL, 0, &probes, error, sizeof(error));
	}
	if (!result && tracer->training_ops &&
	    torch_operators_resolve_available(probes, torch_training_ops, torch_training_op_count,
					      error, sizeof(error)))
		log_warning("process %d: the training operators are not watched: %s", pid, error);
	if (result) {
		/*
		 * Not mapped yet: asked again as libraries load. Mapped but refused
		 * (an unknown version, a missing operator): said once.
		 */
		if (strstr(error, "has not mapped") == NULL) {
			log_warning("process %d: %s", pid, error);
			process->torch_looked_up = true;
		} else {
			log_debug("process %d: no torch scopes yet: %s", pid, error);
		}
		return;
	}
	process->torch_looked_up = true;
	/* -vv: where each probe goes and what it reads, as docs/torch-scopes.md explains. */
	if (log_verbosity() >= 2) {
		fprintf(stderr, "tcheck-bpf: process %d: torch probe sites\n", pid);
		torch_probes_print(probes, stderr);
	}
	scopes = &probes->scopes;
	if (file_identity(probes->host_path, &identity)) {
		log_warning("process %d: cannot open %s, its libtorch_cpu", pid, probes->host_path);
		goto out;
	}
	if (u64_map_get(&tracer->probed_files, identity))
		goto out;
	u64_map_put(&tracer->probed_files, identity, tracer);
	/*
	 * Per version (docs/torch-scopes.md): 1.13's shared enter and 2.x's
	 * enter_new with the constructor after it were watched live and are
	 * probed; any other version was refused when resolving. Operators are
	 * the same exported at::_ops entry points in both.
	 */
	if (!scopes->verified || scopes->string_abi != TORCH_STRING_CXX11 ||
	    !scopes->enter.file_offset || !scopes->exit.file_offset ||
	    (scopes->method == TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR && !scopes->key.file_offset)) {
		log_warning("process %d: torch %s's record_function scopes (Optimizer.step, "
			    "zero_grad) are not followed: this build's probe sites were not "
			    "checked on a live process. Lost: the optimizer's scopes, and with "
			    "them the step number (every event gets step 0) and what is "
			    "step-based (rules, step time). Python calls and --torch-op operators "
			    "are still traced; --step-marker FUNCTION counts steps by a Python "
			    "function instead (docs/torch-scopes.md)",
			    pid, probes->version.text);
		attach_process_groups(tracer, pid, probes);
		attach_c10d_collectives(tracer, pid, probes);
		attach_torch_ops(tracer, pid, probes);
		goto out;
	}
	attach_process_groups(tracer, pid, probes);
	attach_c10d_collectives(tracer, pid, probes);
	exits[0] = scopes->exit.file_offset;
	cookie = torch_register_bits(scopes->name_register) << TCHECK_TORCH_NAME_REGISTER_SHIFT |
		 torch_register_bits(scopes->key_register) << TCHECK_TORCH_KEY_REGISTER_SHIFT;
	if (scopes->exit_at_operators) {
		exits[0] = scopes->exit_operator.file_offset;
		if (scopes->exit_handle_operator.symbol)
			exits[exit_count++] = scopes->exit_handle_operator.file_offset;
	}
	if (probe_session_attach_torch_scopes(
		    tracer->session, probes->host_path, scopes->enter.file_offset, cookie,
		    scopes->method == TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR &&
				    !scopes->exit_at_operators
			    ? scopes->key.file_offset
			    : 0,
		    exits, exit_count, error, sizeof(error)))
		log_warning("process %d: %s", pid, error);
	else
		log_info("probed torch %s's record_function scopes in %s", probes->version.text,
			 probes->library_path);
	attach_backward(tracer, pid, probes);
	attach_torch_ops(tracer, pid, probes);
out:
	torch_probes_free(probes);
}

int python_tracer_handle_process_group(struct python_process *process,
				       const struct tcheck_process_group_record *record,
				       int32_t *rank, int32_t *world_size)
{
	process = python_process_followed(process);
	/* The first group is the world; later ones (subgroups) number their ranks anew. */
	if (!process || process->rank_from_group)
		return 0;
	process->rank_from_group = true;
	if (process->rank >= 0 && process->world_size > 0)
		return 0;
	process->rank = record->rank;
	process->world_size = record->size;
	*rank = record->rank;
	*world_size = record->size;
	log_info("process %u: rank %d of %d, from its first process group", record->header.pid,
		 record->rank, record->size);
	return 1;
}

/* A torch scope or operator as a Python call record: times, thread, depth, meta variables. */
static void fill_torch_event(const struct python_process *process,
			     const struct tcheck_record_header *header, uint64_t return_ns,
			     uint32_t depth, uint32_t flags, struct trace_python_call *call)
{
	call->entry_ns = header->timestamp_ns;
	call->duration_ns = return_ns > header->timestamp_ns ? return_ns - header->timestamp_ns : 0;
	call->pid = header->pid;
	call->tid = header->tid;
	call->depth = depth;
	call->flags = flags;
	call->first_line = -1;
	call->file = "";
	python_tracer_fill_meta(process, header->timestamp_ns, call);
}

/* Scope names are few: each is kept once for the records that carry it. */
static const char *kept_scope_name(struct python_tracer *tracer, const char *name)
{
	return string_interner_intern(&tracer->scope_names, name);
}

/* A backward pass whose end was not seen: recorded at its start, and counted. */
static void emit_without_end(struct python_tracer *tracer, const struct trace_python_call *call)
{
	struct trace_record out = { .kind = TRACE_RECORD_PYTHON_CALL };

	out.python_call = *call;
	tracer->emit(tracer->context, &out);
	tracer->losses.backward_ends_missed++;
}

void python_tracer_close_backward(struct python_tracer *tracer, struct python_process *process)
{
	for (unsigned i = 0; i < process->backward_open_count; i++)
		emit_without_end(tracer, &process->backward_open[i]);
	process->backward_open_count = 0;
}

/*
 * A backward pass entered whose end will be probed: kept until then. The
 * oldest gives way when too many are open (ends missed, an exception's).
 */
static void open_backward(struct python_tracer *tracer, struct python_process *process,
			  const struct trace_python_call *call)
{
	if (process->backward_open_count == PYTHON_BACKWARD_OPEN_MAX) {
		emit_without_end(tracer, &process->backward_open[0]);
		memmove(&process->backward_open[0], &process->backward_open[1],
			sizeof(process->backward_open[0]) * (PYTHON_BACKWARD_OPEN_MAX - 1));
		process->backward_open_count--;
	}
	process->backward_open[process->backward_open_count++] = *call;
}

/*
 * A backward pass's end: the innermost pass open on the thread ends here
 * and is emitted with its duration. An end with none open (the pass began
 * before the probes) is dropped.
 */
static int close_backward(struct python_tracer *tracer, struct python_process *process,
			  const struct tcheck_torch_scope_record *record)
{
	struct trace_record out = { .kind = TRACE_RECORD_PYTHON_CALL };

	for (unsigned i = process->backward_open_count; i-- > 0;) {
		struct trace_python_call *call = &process->backward_open[i];

		if (call->tid != record->header.tid)
			continue;
		out.python_call = *call;
		out.python_call.duration_ns = record->header.timestamp_ns > call->entry_ns
						      ? record->header.timestamp_ns - call->entry_ns
						      : 0;
		memmove(call, call + 1, sizeof(*call) * (process->backward_open_count - i - 1));
		process->backward_open_count--;
		return tracer->emit(tracer->context, &out);
	}
	return 0;
}

bool python_tracer_is_step_marker(const struct python_tracer *tracer, const char *name)
{
	return strncmp(name, tracer->step_marker, strlen(tracer->step_marker)) == 0;
}

int python_tracer_handle_scope(struct python_tracer *tracer, struct python_process *process,
			       const struct tcheck_torch_scope_record *record)
{
	struct trace_record out = { .kind = TRACE_RECORD_PYTHON_CALL,
				    .python_call = { .rank = -1, .world_size = -1 } };
	char name[TCHECK_TORCH_SCOPE_NAME_BYTES + 1];
	int result;

	process = python_process_followed(process);
	if (!process) {
		python_losses_count_unfollowed(&tracer->losses, record->header.pid);
		return 0;
	}
	if (record->flags & TCHECK_TORCH_SCOPE_BACKWARD_END)
		return close_backward(tracer, process, record);
	memcpy(name, record->name, TCHECK_TORCH_SCOPE_NAME_BYTES);
	name[TCHECK_TORCH_SCOPE_NAME_BYTES] = '\0';
	/*
	 * A scope's opening only tells whether a step marker continues the last
	 * step, and so where the operators held since that step's end belong.
	 */
	if (record->flags & TCHECK_TORCH_SCOPE_OPENS) {
		if (python_tracer_is_step_marker(tracer, name))
			python_meta_marker_opens(&process->meta, record->header.timestamp_ns);
		return python_tracer_release_held_ops(tracer, process, record->header.timestamp_ns,
						      false);
	}
	if (strcmp(name, TCHECK_BACKWARD_SCOPE_NAME) == 0)
		python_meta_note_backward(&process->meta, record->header.timestamp_ns);
	result =
		python_tracer_release_held_ops(tracer, process, record->header.timestamp_ns, false);
	if (result)
		return result;
	out.python_call.qualified_name = kept_scope_name(tracer, name);
	if (!out.python_call.qualified_name)
		return -ENOMEM;
	fill_torch_event(process, &record->header, record->return_ns, record->depth,
			 TRACE_PYTHON_TORCH_SCOPE, &out.python_call);
	if (record->flags & TCHECK_TORCH_SCOPE_END_FOLLOWS) {
		open_backward(tracer, process, &out.python_call);
		return 0;
	}
	result = tracer->emit(tracer->context, &out);
	/* The step marker (by default an optimizer's step) ends a training step. */
	if (python_tracer_is_step_marker(tracer, name)) {
		python_meta_end_step(&process->meta, record->header.timestamp_ns,
				     record->return_ns);
		torch_held_ops_start(&process->held_ops, record->return_ns);
		tracer->losses.step_marks++;
	}
	return result;
}

/* "Float[101, 7]", "Long[12 elements]"; false when the shape was not read. */
static bool describe_shape(const struct tcheck_torch_op_record *record, char *text, size_t size)
{
	const char *dtype = torch_scalar_type_name(record->dtype);
	int used;

	if (!dtype || (!record->numel && !record->dims))
		return false;
	used = snprintf(text, size, "%s[", dtype);
	if (record->dims > TCHECK_TORCH_OP_DIMS_MAX)
		used += snprintf(text + used, size - (size_t)used, "%llu elements",
				 (unsigned long long)record->numel);
	for (uint32_t i = 0;
	     i < record->dims && i < TCHECK_TORCH_OP_DIMS_MAX && used > 0 && (size_t)used < size;
	     i++)
		used += snprintf(text + used, size - (size_t)used, "%s%llu", i ? ", " : "",
				 (unsigned long long)record->sizes[i]);
	if (used > 0 && (size_t)used < size)
		snprintf(text + used, size - (size_t)used, "]");
	return true;
}

/*
 * The operator's tensor (its TensorImpl address), its shape, whether it
 * requires grad and the digest of its contents where they were read, and
 * its scalar, as arguments; the shape's text is written to 'shape', which
 * must outlive the call's emission.
 */
static void op_arguments(struct python_tracer *tracer, const struct torch_op_reading *reading,
			 const struct tcheck_torch_op_record *record,
			 struct trace_python_call *call, char *shape, size_t shape_size)
{
	struct trace_python_arg *arg;

	if (reading->tensor_field && record->tensor) {
		bool updated = strcmp(reading->tensor_field, TORCH_TENSOR_UPDATED) == 0;

		arg = &call->args[call->arg_count++];
		/* A fake tensor torch.compile traces with: no parameter's read
		 * (torch_op_readings.h). */
		if (!updated && record->contents == TCHECK_TENSOR_CONTENTS_NO_DATA) {
			arg->name = TORCH_TENSOR_READ_DATA;
			arg->type = TRACE_VALUE_BOOL;
			arg->integer = 0;
		} else {
			arg->name = reading->tensor_field;
			arg->type = TRACE_VALUE_INT;
			arg->integer = (int64_t)record->tensor;
		}
		if (record->storage) {
			arg = &call->args[call->arg_count++];
			arg->name =
				updated ? TORCH_TENSOR_UPDATED_STORAGE : TORCH_TENSOR_READ_STORAGE;
			arg->type = TRACE_VALUE_INT;
			arg->integer = (int64_t)record->storage;
		}
		if (describe_shape(record, shape, shape_size)) {
			arg = &call->args[call->arg_count++];
			arg->name = updated ? TORCH_TENSOR_UPDATED_SHAPE : TORCH_TENSOR_READ_SHAPE;
			arg->type = TRACE_VALUE_STR;
			arg->text = shape;
		}
		if (record->requires_grad != TCHECK_REQUIRES_GRAD_UNKNOWN) {
			arg = &call->args[call->arg_count++];
			arg->name = updated ? TORCH_TENSOR_UPDATED_REQUIRES_GRAD
					    : TORCH_TENSOR_READ_REQUIRES_GRAD;
			arg->type = TRACE_VALUE_BOOL;
			arg->integer = record->requires_grad == TCHECK_REQUIRES_GRAD_YES;
		}
		if (!updated && record->requires_grad == TCHECK_REQUIRES_GRAD_COMPUTED) {
			arg = &call->args[call->arg_count++];
			arg->name = TORCH_TENSOR_READ_GRAD_FN;
			arg->type = TRACE_VALUE_BOOL;
			arg->integer = 1;
		}
		if (!updated && record->grad_mode == TCHECK_GRAD_MODE_OFF) {
			arg = &call->args[call->arg_count++];
			arg->name = TORCH_TENSOR_READ_GRAD_MODE;
			arg->type = TRACE_VALUE_BOOL;
			arg->integer = 0;
		}
		/* Read only where torch_op_reads_contents asked for them. */
		if (record->contents == TCHECK_TENSOR_CONTENTS_READ) {
			arg = &call->args[call->arg_count++];
			arg->name = TORCH_TENSOR_UPDATED_DIGEST;
			arg->type = TRACE_VALUE_INT;
			/* 48 bits: an integer every JSON reader keeps exactly. */
			arg->integer = (int64_t)(record->digest >> 16);
		} else if (record->contents == TCHECK_TENSOR_CONTENTS_DEVICE) {
			tracer->losses.device_contents++;
		} else if (record->contents == TCHECK_TENSOR_CONTENTS_UNREADABLE) {
			tracer->losses.unreadable_contents++;
		}
	}
	if (reading->scalar_field && record->scalar_tag != TCHECK_SCALAR_NONE) {
		arg = &call->args[call->arg_count++];
		arg->name = reading->scalar_field;
		if (record->scalar_tag == TCHECK_SCALAR_BOOL) {
			arg->type = TRACE_VALUE_BOOL;
			arg->integer = record->scalar != 0;
		} else if (record->scalar_tag == TCHECK_SCALAR_DOUBLE) {
			arg->type = TRACE_VALUE_FLOAT;
			memcpy(&arg->real, &record->scalar, sizeof(arg->real));
		} else {
			arg->type = TRACE_VALUE_INT;
			arg->integer = (int64_t)record->scalar;
		}
	}
}

/* The tracer and the operator's process, to name the frames its probe read. */
struct caller_namer {
	struct python_tracer *tracer;
	struct python_process *process;
};

static const char *name_caller(void *context, uint32_t pid, uint64_t code, uint64_t name_object)
{
	const struct caller_namer *namer = context;

	(void)pid;
	return namer->tracer->code_name(namer->tracer, namer->process, code, name_object);
}

static int emit_op(struct python_tracer *tracer, struct python_process *process,
		   const struct tcheck_torch_op_record *record)
{
	struct trace_record out = { .kind = TRACE_RECORD_PYTHON_CALL,
				    .python_call = { .rank = -1, .world_size = -1 } };
	char shape[128];

	if (record->operator>= tracer->operator_name_count)
		return 0;
	out.python_call.qualified_name = tracer->operator_names[record->operator];
	fill_torch_event(process, &record->header, record->return_ns, record->depth,
			 TRACE_PYTHON_TORCH_OP, &out.python_call);
	op_arguments(tracer, &tracer->operator_readings[record->operator], record,
		     &out.python_call, shape, sizeof(shape));
	if (record->py_depth) {
		struct python_probe_frames frames = { record->header.pid, record->py_depth,
						      record->py_flags, record->py_code,
						      record->py_name };
		struct caller_namer namer = { tracer, process };

		python_frames_fill(&frames, name_caller, &namer, &out.python_call.py_stack);
	}
	return tracer->emit(tracer->context, &out);
}

int python_tracer_release_held_ops(struct python_tracer *tracer, struct python_process *process,
				   uint64_t entry_ns, bool all)
{
	struct torch_held_ops *held = &process->held_ops;
	int result = 0;

	if (!all && !torch_held_ops_settled_by(held, entry_ns))
		return 0;
	held->holding = false;
	for (uint32_t i = 0; i < held->count; i++) {
		int emitted = emit_op(tracer, process, &held->ops[i]);

		if (!result)
			result = emitted;
	}
	held->count = 0;
	return result;
}

int python_tracer_handle_op(struct python_tracer *tracer, struct python_process *process,
			    const struct tcheck_torch_op_record *record)
{
	int released;

	process = python_process_followed(process);
	if (!process) {
		python_losses_count_unfollowed(&tracer->losses, record->header.pid);
		return 0;
	}
	if (torch_held_ops_keep(&process->held_ops, record))
		return 0;
	/* No room left: what is held is placed as things stand, before this one. */
	released = process->held_ops.holding
			   ? python_tracer_release_held_ops(tracer, process, 0, true)
			   : 0;
	return emit_op(tracer, process, record) ?: released;
}
