// SPDX-License-Identifier: MIT
/*
 * Finds the uprobe sites of a libtorch_cpu.so, given by path or mapped by a
 * process: its version, record_function scopes, backward passes, process
 * groups and ATen operators, one step each; frees and prints them.
 */
#include "python/torch_probes.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error_message.h"
#include "model/c10d_api.h"
#include "probe/process_maps.h"
#include "python/torch_probe_sites.h"
#include "python/torch_tensor_layout.h"

/* A mangled-name prefix; the rest of the name encodes a signature that varies by release. */
#define ENGINE_EXECUTE_PREFIX "_ZN5torch8autograd6Engine7executeE"
#define PREFIX_STORE_PREFIX "_ZN4c10d11PrefixStoreC2E"

const char *const torch_default_ops[] = {
	"add_", "mul_", "zero_", "_foreach_add_", "_foreach_mul_", "_foreach_zero_",
};
const size_t torch_default_op_count = sizeof(torch_default_ops) / sizeof(torch_default_ops[0]);

const char *torch_register_name(enum torch_register which)
{
	switch (which) {
	case TORCH_REGISTER_RDI:
		return "rdi";
	case TORCH_REGISTER_RSI:
		return "rsi";
	case TORCH_REGISTER_RDX:
		return "rdx";
	case TORCH_REGISTER_NONE:
		break;
	}
	return "none";
}

/*
 * The one function of the library whose mangled name starts with 'prefix',
 * as 'site', with what its probe reads there. Optional: 'site' stays empty
 * when the library lacks it.
 */
static int resolve_optional(struct torch_probes *probes, const char *prefix, const char *reading,
			    struct torch_probe_site *site, char *error, size_t error_size)
{
	struct torch_name_list names = { 0 };
	struct elf_symbol_location location;
	const char *symbol;
	int err;

	err = torch_dynamic_names_with_prefix(probes->host_path, prefix, &names, error, error_size);
	if (err)
		return err;
	if (torch_single_defined_symbol(probes->host_path, &names, &symbol, &location) == 0) {
		err = torch_probe_site_set(site, symbol, true, &location);
		if (!err)
			err = torch_probe_site_set_reading(site, "%s", reading);
	}
	torch_name_list_free(&names);
	return err ? error_fail(error, error_size, ENOMEM, "out of memory") : 0;
}

/*
 * The same for a function probed at its entry only: the site moves past a
 * leading compare the kernel would single-step (torch_probe_sites.h).
 */
static int resolve_optional_entry(struct torch_probes *probes, const char *prefix,
				  const char *reading, struct torch_probe_site *site, char *error,
				  size_t error_size)
{
	int err = resolve_optional(probes, prefix, reading, site, error, error_size);

	if (!err && site->symbol &&
	    torch_probe_site_move_to_emulated_instruction(probes->host_path, site))
		return error_fail(error, error_size, ENOMEM, "out of memory");
	return err;
}

/*
 * Where Engine::execute returns, as file offsets: the backward pass's end.
 * Left empty, with the reason in backward_returns_note, when its code
 * cannot be decoded safely (function_returns.h).
 */
static void resolve_backward_returns(struct torch_probes *probes)
{
	struct function_returns *returns = &probes->backward_returns;
	struct elf_symbol_location location;
	char reason[200];

	returns->count = 0;
	if (elf_symbol_find(probes->host_path, probes->backward.symbol, &location, reason,
			    sizeof(reason)) ||
	    function_returns_find(probes->host_path, location.file_offset, location.address,
				  location.size, returns, reason, sizeof(reason))) {
		returns->count = 0;
		snprintf(probes->backward_returns_note, sizeof(probes->backward_returns_note),
			 "its returns are not probed: %s", reason);
		return;
	}
	for (size_t i = 0; i < returns->count; i++)
		returns->offsets[i] += location.file_offset;
	snprintf(probes->backward_returns_note, sizeof(probes->backward_returns_note),
		 "%zu return instruction(s) probed: the backward pass ends there; %zu jump(s) "
		 "leave the function (cold paths, tail calls): an end there is missed and "
		 "counted",
		 returns->count, returns->jumps_out);
}

/* torch::autograd::Engine::execute: optional, left empty when the library lacks it. */
static int resolve_backward(struct torch_probes *probes, char *error, size_t error_size)
{
	int err = resolve_optional_entry(probes, ENGINE_EXECUTE_PREFIX,
					 "rdi -> the slot of the returned gradients (a "
					 "std::vector returned by value), rsi -> the Engine; "
					 "entry: a backward pass starts",
					 &probes->backward, error, error_size);

	if (!err && probes->backward.symbol)
		resolve_backward_returns(probes);
	return err;
}

/*
 * The constructors every c10d process group runs with its rank and size:
 * ProcessGroup(int, int) under 1.13's backends, Backend(int, int) under
 * 2.x's (gloo, NCCL, MPI alike). Optional: left empty when absent.
 */
static int resolve_process_groups(struct torch_probes *probes, char *error, size_t error_size)
{
	static const char *const constructors[TORCH_PROCESS_GROUP_SITES] = {
		"_ZN4c10d12ProcessGroupC2Eii",
		"_ZN4c10d7BackendC2Eii",
	};
	struct elf_symbol_location location;
	int err = 0;

	for (int i = 0; !err && i < TORCH_PROCESS_GROUP_SITES; i++) {
		if (elf_symbol_find(probes->host_path, constructors[i], &location, NULL, 0))
			continue;
		err = torch_probe_site_set(&probes->process_groups[i], constructors[i], true,
					   &location);
		if (!err)
			err = torch_probe_site_set_reading(
				&probes->process_groups[i],
				"rdi -> the group being built, esi -> this process's "
				"rank in it, edx -> its size; the first group a "
				"process builds is the world");
		/* After the reading: moving the site adds to it. */
		if (!err)
			err = torch_probe_site_move_to_emulated_instruction(
				probes->host_path, &probes->process_groups[i]);
	}
	return err ? error_fail(error, error_size, ENOMEM, "out of memory") : 0;
}

/*
 * c10d::PrefixStore::PrefixStore(prefix, store): the prefix is the name of
 * the group built next on the thread. Optional: left empty when absent.
 */
static int resolve_prefix_store(struct torch_probes *probes, char *error, size_t error_size)
{
	return resolve_optional_entry(probes, PREFIX_STORE_PREFIX,
				      "rdi -> the store being built, rsi -> the prefix (a "
				      "std::string: data, length), rdx -> the wrapped store "
				      "(an intrusive_ptr: the Store *)",
				      &probes->prefix_store, error, error_size);
}

/* Where one of torch's other libraries is: as seen by the process, and openable here. */
struct sibling_library {
	const char *path; /* NULL: none */
	const char *host_path;
};

/* torch's other libraries a libtorch_cpu.so comes with. */
struct sibling_libraries {
	struct sibling_library cuda; /* libtorch_cuda.so: ProcessGroupNCCL */
	struct sibling_library c10;  /* libc10.so: c10::GradMode */
	/* libtorch_python.so: torch.inference_mode()'s calls into libc10.so */
	struct sibling_library python;
};

/*
 * Where gloo's works are built and end: their constructor (inside the
 * collective, on its thread) and the two ways execute() ends one. Optional.
 */
static int resolve_gloo_work(struct torch_probes *probes, char *error, size_t error_size)
{
	static const struct {
		const char *prefix;
		const char *reading;
	} sites[TORCH_GLOO_WORK_SITES] = {
		{ "_ZN4c10d16ProcessGroupGloo9AsyncWorkC2E",
		  "rdi -> the work being built, inside the collective that queues it" },
		{ "_ZN4c10d16ProcessGroupGloo9AsyncWork14finishWorkGlooEv",
		  "rdi -> the work: it completed, every rank took part" },
		{ "_ZN4c10d16ProcessGroupGloo9AsyncWork19finishWorkGlooErrorE",
		  "rdi -> the work: it ended with an error" },
	};
	int err = 0;

	for (int i = 0; !err && i < TORCH_GLOO_WORK_SITES; i++)
		err = resolve_optional_entry(probes, sites[i].prefix, sites[i].reading,
					     &probes->gloo_work[i], error, error_size);
	return err;
}

static int resolve_all(struct torch_probes *probes, const struct sibling_libraries *siblings,
		       const char *const *ops, size_t op_count, char *error, size_t error_size)
{
	int err;

	err = torch_version_detect(probes->host_path, &probes->version, error, error_size);
	if (!err)
		torch_tensor_layout_of(&probes->version, &probes->tensor_layout);
	if (!err)
		err = torch_scopes_resolve(probes, error, error_size);
	if (!err)
		err = resolve_backward(probes, error, error_size);
	if (!err)
		err = resolve_process_groups(probes, error, error_size);
	if (!err)
		err = resolve_prefix_store(probes, error, error_size);
	if (!err)
		err = resolve_gloo_work(probes, error, error_size);
	if (!err)
		err = torch_c10d_resolve(probes, siblings->cuda.path, siblings->cuda.host_path,
					 error, error_size);
	if (!err)
		err = torch_grad_mode_resolve(probes,
					      &(struct torch_grad_mode_libraries){
						      siblings->c10.path, siblings->c10.host_path,
						      siblings->python.path,
						      siblings->python.host_path },
					      error, error_size);
	if (!err)
		err = torch_operators_resolve(probes, ops, op_count, error, error_size);
	return err;
}

static struct torch_probes *probes_create(const char *path, const char *host_path)
{
	struct torch_probes *probes = calloc(1, sizeof(*probes));

	if (!probes)
		return NULL;
	probes->library_path = strdup(path);
	probes->host_path = strdup(host_path);
	if (!probes->library_path || !probes->host_path) {
		torch_probes_free(probes);
		return NULL;
	}
	return probes;
}

/* The length of 'path' up to and with its last '/' (0 without one). */
static size_t directory_length(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? (size_t)(slash - path) + 1 : 0;
}

/*
 * The library 'name' beside 'library_path', with the same suffix
 * (libtorch_cpu.so.2.6.0 beside libtorch_cuda.so.2.6.0); false when absent.
 */
static bool library_beside(const char *library_path, const char *name, char *path, size_t size)
{
	size_t directory = directory_length(library_path);
	const char *suffix = library_path + directory + strlen(TORCH_LIBRARY_NAME);
	int length;

	if (strncmp(library_path + directory, TORCH_LIBRARY_NAME, strlen(TORCH_LIBRARY_NAME)) != 0)
		return false;
	length = snprintf(path, size, "%.*s%s%s", (int)directory, library_path, name, suffix);
	return length > 0 && (size_t)length < size && access(path, R_OK) == 0;
}

int torch_probes_resolve(const char *library_path, const char *const *ops, size_t op_count,
			 struct torch_probes **probes, char *error, size_t error_size)
{
	struct sibling_libraries siblings = { 0 };
	struct torch_probes *result;
	char cuda_path[4096], c10_path[4096], python_path[4096];
	int err;

	*probes = NULL;
	if (access(library_path, R_OK) != 0)
		return error_fail(error, error_size, errno, "cannot read %s: %s", library_path,
				  strerror(errno));
	result = probes_create(library_path, library_path);
	if (!result)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	if (library_beside(library_path, TORCH_CUDA_LIBRARY_NAME, cuda_path, sizeof(cuda_path)))
		siblings.cuda = (struct sibling_library){ cuda_path, cuda_path };
	if (library_beside(library_path, TORCH_C10_LIBRARY_NAME, c10_path, sizeof(c10_path)))
		siblings.c10 = (struct sibling_library){ c10_path, c10_path };
	if (library_beside(library_path, TORCH_PYTHON_LIBRARY_NAME, python_path,
			   sizeof(python_path)))
		siblings.python = (struct sibling_library){ python_path, python_path };
	err = resolve_all(result, &siblings, ops, op_count, error, error_size);
	if (err) {
		torch_probes_free(result);
		return err;
	}
	*probes = result;
	return 0;
}

/* Whether 'path' names the library 'name' ("libtorch_cpu.so"), with a version suffix or not. */
static bool is_library(const char *path, const char *name)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t length = strlen(name);

	return strncmp(base, name, length) == 0 && (base[length] == '\0' || base[length] == '.');
}

int torch_probes_process_library(pid_t pid, char *host_path, size_t size)
{
	struct mapped_file_list list = { 0 };
	char error[256];
	int result = -ENOENT;

	if (process_maps_read(pid, &list, error, sizeof(error)))
		return -ENOENT;
	for (size_t i = 0; i < list.count && result; i++)
		if (is_library(list.files[i].path, TORCH_LIBRARY_NAME) &&
		    snprintf(host_path, size, "%s", list.files[i].host_path) < (int)size)
			result = 0;
	mapped_file_list_free(&list);
	return result;
}

/*
 * Not mapped yet (the loader maps torch's libraries one after the other)
 * or never: the one beside libtorch_cpu.so, of its suffix, is the one the
 * process loads. 'path' and 'host_path' receive it, as the process and
 * this tool see it.
 */
static void sibling_beside(const struct mapped_file *library, const char *name,
			   struct sibling_library *sibling, char *path, char *host_path,
			   size_t size)
{
	if (sibling->path || !library_beside(library->host_path, name, host_path, size) ||
	    snprintf(path, size, "%.*s%s", (int)directory_length(library->path), library->path,
		     host_path + directory_length(host_path)) >= (int)size)
		return;
	*sibling = (struct sibling_library){ path, host_path };
}

int torch_probes_resolve_process(pid_t pid, const char *const *ops, size_t op_count,
				 struct torch_probes **probes, char *error, size_t error_size)
{
	struct mapped_file_list list = { 0 };
	const struct mapped_file *library = NULL;
	struct sibling_libraries siblings = { 0 };
	char cuda_path[4096], cuda_host_path[4096], c10_path[4096], c10_host_path[4096];
	char python_path[4096], python_host_path[4096];
	struct torch_probes *result;
	int err;

	*probes = NULL;
	err = process_maps_read(pid, &list, error, error_size);
	if (err)
		return err;
	for (size_t i = 0; i < list.count; i++) {
		const struct mapped_file *file = &list.files[i];

		if (!library && is_library(file->path, TORCH_LIBRARY_NAME))
			library = file;
		else if (!siblings.cuda.path && is_library(file->path, TORCH_CUDA_LIBRARY_NAME))
			siblings.cuda = (struct sibling_library){ file->path, file->host_path };
		else if (!siblings.c10.path && is_library(file->path, TORCH_C10_LIBRARY_NAME))
			siblings.c10 = (struct sibling_library){ file->path, file->host_path };
		else if (!siblings.python.path && is_library(file->path, TORCH_PYTHON_LIBRARY_NAME))
			siblings.python = (struct sibling_library){ file->path, file->host_path };
	}
	if (!library) {
		mapped_file_list_free(&list);
		return error_fail(error, error_size, ENOENT,
				  "process %d has not mapped libtorch_cpu.so: it is not a PyTorch "
				  "process, or it has not imported torch yet",
				  (int)pid);
	}
	sibling_beside(library, TORCH_CUDA_LIBRARY_NAME, &siblings.cuda, cuda_path, cuda_host_path,
		       sizeof(cuda_path));
	sibling_beside(library, TORCH_C10_LIBRARY_NAME, &siblings.c10, c10_path, c10_host_path,
		       sizeof(c10_path));
	sibling_beside(library, TORCH_PYTHON_LIBRARY_NAME, &siblings.python, python_path,
		       python_host_path, sizeof(python_path));
	result = probes_create(library->path, library->host_path);
	if (!result) {
		mapped_file_list_free(&list);
		return error_fail(error, error_size, ENOMEM, "out of memory");
	}
	err = resolve_all(result, &siblings, ops, op_count, error, error_size);
	mapped_file_list_free(&list);
	if (err) {
		torch_probes_free(result);
		return err;
	}
	*probes = result;
	return 0;
}

void torch_probes_free(struct torch_probes *probes)
{
	if (!probes)
		return;
	torch_probe_site_free(&probes->scopes.enter);
	torch_probe_site_free(&probes->scopes.key);
	torch_probe_site_free(&probes->scopes.exit);
	torch_probe_site_free(&probes->scopes.exit_operator);
	torch_probe_site_free(&probes->scopes.exit_handle_operator);
	torch_probe_site_free(&probes->backward);
	torch_probe_site_free(&probes->prefix_store);
	for (int i = 0; i < TORCH_GLOO_WORK_SITES; i++)
		torch_probe_site_free(&probes->gloo_work[i]);
	for (int i = 0; i < TORCH_PROCESS_GROUP_SITES; i++)
		torch_probe_site_free(&probes->process_groups[i]);
	torch_c10d_free(probes);
	torch_probe_site_free(&probes->grad_mode);
	torch_probe_site_free(&probes->grad_state);
	free(probes->python_library_path);
	free(probes->python_host_path);
	free(probes->c10_library_path);
	free(probes->c10_host_path);
	for (size_t i = 0; i < probes->op_count; i++) {
		free(probes->ops[i].request);
		free(probes->ops[i].operator_name);
		torch_probe_site_free(&probes->ops[i].site);
	}
	free(probes->ops);
	free(probes->library_path);
	free(probes->host_path);
	free(probes);
}

static void print_site(FILE *out, const char *role, const struct torch_probe_site *site)
{
	if (!site->symbol) {
		fprintf(out, "%-10s not found\n", role);
		return;
	}
	fprintf(out, "%-10s offset 0x%llx (address 0x%llx) %s%s\n           %s\n", role,
		(unsigned long long)site->file_offset, (unsigned long long)site->address,
		site->symbol, site->exported ? "" : " [not exported]",
		site->reading ? site->reading : "");
}

void torch_probes_print(const struct torch_probes *probes, FILE *out)
{
	const struct torch_scope_probes *scopes = &probes->scopes;

	fprintf(out, "library    %s\n", probes->library_path);
	fprintf(out, "torch      %s (from %s)%s\n", probes->version.text, probes->version.source,
		probes->scopes.verified ? "" : "; scope sites read from the sources, not watched");
	print_site(out, "enter", &probes->scopes.enter);
	if (scopes->exit_at_operators && scopes->method == TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR)
		fprintf(out, "key        none: the exit operator closes the thread's innermost "
			     "open scope\n");
	else
		print_site(out, "key", &scopes->key);
	if (!scopes->exit_at_operators)
		print_site(out, "exit", &scopes->exit);
	if (scopes->exit_at_operators)
		print_site(out, "exit", &scopes->exit_operator);
	if (scopes->exit_at_operators && scopes->exit_handle_operator.symbol)
		print_site(out, "exit", &scopes->exit_handle_operator);
	print_site(out, "backward", &probes->backward);
	if (probes->backward.symbol)
		fprintf(out, "           %s\n", probes->backward_returns_note);
	print_site(out, "prefix store", &probes->prefix_store);
	for (int i = 0; i < TORCH_GLOO_WORK_SITES; i++)
		print_site(out, "gloo work", &probes->gloo_work[i]);
	for (int i = 0; i < TORCH_PROCESS_GROUP_SITES; i++)
		print_site(out, "process group", &probes->process_groups[i]);
	for (int b = 0; b < TORCH_C10D_BACKENDS; b++)
		for (int i = 0; i < TORCH_C10D_SITES; i++)
			if (probes->c10d[b].sites[i].symbol)
				print_site(out, c10d_operation_at((size_t)i)->api.name,
					   &probes->c10d[b].sites[i]);
	fprintf(out, "tensors    element count at TensorImpl+%u%s\n",
		probes->tensor_layout.numel_offset,
		probes->tensor_layout.numel_offset ? "" : " (unknown for this version: not read)");
	fprintf(out, "           storage after a %u-byte header%s\n",
		probes->tensor_layout.object_header,
		probes->tensor_layout.object_header
			? ""
			: " (unknown for this version: contents not read)");
	fprintf(out, "           requires_grad at AutogradMeta+%u%s\n",
		probes->tensor_layout.requires_grad_offset,
		probes->tensor_layout.requires_grad_offset
			? ""
			: " (unknown for this version: not read)");
	fprintf(out, "           grad_fn at AutogradMeta+%u%s\n",
		probes->tensor_layout.grad_fn_offset,
		probes->tensor_layout.grad_fn_offset ? ""
						     : " (unknown for this version: not read)");
	for (size_t i = 0; i < probes->op_count; i++)
		print_site(out, probes->ops[i].operator_name, &probes->ops[i].site);
	print_site(out, "grad mode", &probes->grad_mode);
	if (probes->grad_mode.symbol)
		fprintf(out, "           in %s\n", probes->c10_library_path);
	print_site(out, "grad state", &probes->grad_state);
	if (!probes->grad_state.symbol && probes->grad_state_missing[0])
		fprintf(out, "           %s\n", probes->grad_state_missing);
	if (!probes->grad_state.symbol)
		return;
	fprintf(out, "           in %s, calls at offsets", probes->python_library_path);
	for (size_t i = 0; i < probes->grad_state_calls.count; i++)
		fprintf(out, " 0x%llx",
			(unsigned long long)probes->grad_state_calls.file_offsets[i]);
	fprintf(out, "\n");
}
