/* SPDX-License-Identifier: MIT */
/*
 * Where uprobes see PyTorch from outside the process: the C++ functions
 * that open and close torch.autograd.profiler.record_function scopes
 * (Optimizer.step and Optimizer.zero_grad run inside one), the start of a
 * backward pass, and the entry points of chosen ATen operators, as file
 * offsets in libtorch_cpu.so, with the registers that carry the scope name
 * and the key that pairs an exit with its enter. Which functions those are
 * depends on the torch version (docs/torch-scopes.md). Functions return 0
 * or a negative errno and fill error with a sentence.
 */
#ifndef TCHECK_TORCH_PROBES_H
#define TCHECK_TORCH_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "probe/call_sites.h"
#include "probe/function_returns.h"
#include "python/torch_tensor_layout.h"

/* The torch release a libtorch_cpu.so belongs to. */
struct torch_version {
	int major;
	int minor;
	int patch;	   /* -1 when the text has none */
	char text[64];	   /* as found: "1.13.0a0", "2.3.1+cu121", "1.13.0" */
	char source[4096]; /* where it was read, as a phrase for messages */
};

/* How the scope name and the pairing key reach the probes. */
enum torch_scope_method {
	/*
	 * torch 1.13: Python calls _record_function_enter, whose C++ code is
	 * not exported. It and the exported record_function_enter_new both
	 * call one internal function (name, args, at::RecordFunction &),
	 * found through the direct call in the exported one: that enter site
	 * carries the name and the key.
	 */
	TORCH_SCOPE_SHARED_ENTER,
	/*
	 * torch 2.x: Python calls _record_function_enter_new, exported. Its
	 * entry carries the name; the key is the object the next
	 * at::RecordFunction constructor on the same thread builds.
	 */
	TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR,
};

/* The std::string layout the library was built with, read from its mangled names. */
enum torch_string_abi {
	TORCH_STRING_CXX11, /* data pointer at +0, length at +8 */
	TORCH_STRING_COW,   /* _GLIBCXX_USE_CXX11_ABI=0: a pointer, length 24 bytes before */
};

enum torch_register {
	TORCH_REGISTER_NONE,
	TORCH_REGISTER_RDI,
	TORCH_REGISTER_RSI,
	TORCH_REGISTER_RDX,
};

/* One place a uprobe attaches. */
struct torch_probe_site {
	char *symbol;	      /* mangled name (C++ name when not exported); NULL: not found */
	bool exported;	      /* false: an internal function found through a call to it */
	uint64_t address;     /* virtual address in the file */
	uint64_t file_offset; /* what a uprobe attaches at */
	char *reading;	      /* what its registers carry, as a sentence */
};

struct torch_scope_probes {
	enum torch_scope_method method;
	enum torch_string_abi string_abi;
	bool verified; /* watched on a live process of this version; false: read from the sources */
	struct torch_probe_site enter;
	struct torch_probe_site key;  /* where the key is read: the enter site itself in 1.13 */
	struct torch_probe_site exit; /* RecordFunction::end: every RecordFunction's end */
	/*
	 * The exit operators' tail jumps to RecordFunction::end (key in rdi),
	 * reached only where a record_function scope ends; symbol NULL when
	 * not found (torch_scope_exit.c). The intrusive_ptr form (what 2.x's
	 * Python calls) and the tensor-handle form (what 1.13's calls).
	 */
	struct torch_probe_site exit_operator;
	struct torch_probe_site exit_handle_operator;
	/*
	 * The scope ends are probed on the exit operators instead of exit. In
	 * 2.x the enter site then opens the scope with no key (key_register
	 * NONE) and the constructor is not probed: the exit operator closes
	 * the thread's innermost open scope.
	 */
	bool exit_at_operators;
	enum torch_register name_register; /* at enter: the const std::string * of the name */
	enum torch_register args_register; /* at enter: the optional args string */
	enum torch_register key_register;  /* at the key site: the at::RecordFunction * */
	enum torch_register exit_register; /* at exit: the at::RecordFunction * it ends */
};

/* The entry point of one ATen operator overload: at::_ops::NAME::call. */
struct torch_op_probe {
	char *request;		  /* as asked: "add_" or "add_.Tensor" */
	char *operator_name;	  /* the at::_ops struct: "add__Tensor" */
	uint64_t function_offset; /* its first byte's file offset: the site may lie past it */
	struct torch_probe_site site;
};

/* c10d::ProcessGroup(int, int) (1.13's backends) and c10d::Backend(int, int) (2.x's). */
#define TORCH_PROCESS_GROUP_SITES 2

/* Built, finished, failed. */
#define TORCH_GLOO_WORK_SITES 3

/* As many as the c10d operation table has room for (TCHECK_C10D_SITES_MAX). */
#define TORCH_C10D_SITES 32
/* As many as c10d_api.c's backends: gloo, NCCL. */
#define TORCH_C10D_BACKENDS 2

/* One c10d backend's collectives, in the library that defines them. */
struct torch_c10d_probes {
	char *library_path; /* as the process sees it; NULL: not mapped, not found */
	char *host_path;    /* openable from here */
	/* By c10d_api.h's operation number; symbol NULL when absent. */
	struct torch_probe_site sites[TORCH_C10D_SITES];
};

struct torch_probes {
	char *library_path; /* as the process sees it, or as given */
	char *host_path;    /* openable from here */
	struct torch_version version;
	struct torch_scope_probes scopes;
	struct torch_probe_site backward; /* Engine::execute; symbol NULL when absent */
	/* Its return instructions (file offsets); none, with the reason, when not found. */
	struct function_returns backward_returns;
	char backward_returns_note[256];
	/* The base constructors of c10d process groups (rank, size); symbol NULL when absent. */
	struct torch_probe_site process_groups[TORCH_PROCESS_GROUP_SITES];
	struct torch_probe_site prefix_store; /* PrefixStore's constructor; symbol NULL absent */
	/*
	 * Where a gloo work is built and ends (AsyncWork's constructor,
	 * finishWorkGloo, finishWorkGlooError), by tcheck_c10d_work_event - 1;
	 * symbol NULL when absent.
	 */
	struct torch_probe_site gloo_work[TORCH_GLOO_WORK_SITES];
	/*
	 * The c10d collectives, by c10d_api.c's backend number: gloo's in this
	 * library, NCCL's in the libtorch_cuda.so beside it or mapped with it.
	 */
	struct torch_c10d_probes c10d[TORCH_C10D_BACKENDS];
	/*
	 * c10::GradMode::set_enabled in the libc10.so mapped with it or beside
	 * it (torch_grad_mode.c): the thread's autograd switch, which
	 * torch.no_grad() turns off. Paths and symbol NULL when not found.
	 * grad_state: c10::AutogradState::set_tls_state as libtorch_python.so
	 * calls it, torch.inference_mode()'s guard entering and leaving: the
	 * site names the first of its calls, grad_state_calls holds them all
	 * (libc10's own thirty calls a training step do not pass there), and
	 * the probe's cookie says where the state keeps the mode
	 * (TCHECK_GRAD_MODE_FROM_*); symbol NULL when absent or the state's
	 * layout is not known, grad_state_missing then saying why when the
	 * calls were looked for.
	 */
	char *c10_library_path;	   /* as the process sees it */
	char *c10_host_path;	   /* openable from here */
	char *python_library_path; /* libtorch_python.so, as the process sees it */
	char *python_host_path;
	struct torch_probe_site grad_mode;
	struct torch_probe_site grad_state;
	struct call_sites grad_state_calls;
	char grad_state_missing[256];
	uint64_t grad_state_cookie;
	struct torch_tensor_layout tensor_layout; /* zeros for a version not checked */
	struct torch_op_probe *ops; /* every overload of every request, in request order */
	size_t op_count, op_capacity;
};

/* The operators a training step's checks start from: the updates and the zeroing. */
extern const char *const torch_default_ops[];
extern const size_t torch_default_op_count;

/*
 * Resolves everything for the libtorch_cpu.so at library_path (and the
 * libtorch_cuda.so beside it, of the same version suffix, if any) and the
 * operators named in ops ("add_" for every overload, "add_.Tensor" for
 * one, "zero_.default" for the overload without a name). Refuses torch
 * versions whose scope functions are not known, and fails with -ENOENT
 * naming the first operator the library lacks. Free with torch_probes_free.
 */
int torch_probes_resolve(const char *library_path, const char *const *ops, size_t op_count,
			 struct torch_probes **probes, char *error, size_t error_size);

/*
 * Where the process's libtorch_cpu.so can be opened from here (host_path);
 * -ENOENT while it has not mapped one. A cheap look before resolving.
 */
int torch_probes_process_library(pid_t pid, char *host_path, size_t size);

/*
 * The same for the libtorch_cpu.so a running process has mapped, and the
 * libtorch_cuda.so mapped with it (NCCL's process groups) when there is one.
 */
int torch_probes_resolve_process(pid_t pid, const char *const *ops, size_t op_count,
				 struct torch_probes **probes, char *error, size_t error_size);

/*
 * Adds to resolved probes the requested operators this torch has, skipping
 * those it lacks (the training operators, whatever the version); 0 or
 * -ENOMEM (torch_operators.c).
 */
int torch_operators_resolve_available(struct torch_probes *probes, const char *const *requests,
				      size_t request_count, char *error, size_t error_size);

/*
 * The c10d collectives each backend defines, gloo's in this library and
 * NCCL's in the libtorch_cuda.so at cuda_path (NULL: none), and where its
 * tensors keep their element count (torch_c10d.c); 0 or -ENOMEM. Absent
 * ones stay empty.
 */
int torch_c10d_resolve(struct torch_probes *probes, const char *cuda_path,
		       const char *cuda_host_path, char *error, size_t error_size);

/* The libraries a torch sets grad mode in: paths as the process sees them and openable here. */
struct torch_grad_mode_libraries {
	const char *c10_path; /* NULL: none */
	const char *c10_host_path;
	const char *python_path; /* NULL: none */
	const char *python_host_path;
};

/*
 * c10::GradMode::set_enabled(bool) in libc10.so and libtorch_python.so's
 * calls of c10::AutogradState::set_tls_state, where the probe learns each
 * thread's grad mode (torch_grad_mode.c). 0, or -ENOMEM; a library or a
 * symbol not found leaves the site empty.
 */
int torch_grad_mode_resolve(struct torch_probes *probes,
			    const struct torch_grad_mode_libraries *libraries, char *error,
			    size_t error_size);

/* How many of a backend's operations were found. */
size_t torch_c10d_site_count(const struct torch_c10d_probes *backend);

void torch_c10d_free(struct torch_probes *probes);

/*
 * The attach cookie of c10d operation 'index' (probe_abi.h's TCHECK_C10D_*);
 * 'awaited' when its work's end is probed.
 */
uint64_t torch_c10d_cookie(const struct torch_probes *probes, size_t index, bool awaited);

void torch_probes_free(struct torch_probes *probes);

/* Writes the probe sites and how to read them, one line each. */
void torch_probes_print(const struct torch_probes *probes, FILE *out);

/*
 * The torch version of a libtorch_cpu.so: from torch/version.py when the
 * library sits in a torch package's lib/ directory (pip and conda), else
 * from its versioned file name, symbolic links followed
 * (libtorch_cpu.so.1.13.0 in Debian and Ubuntu). -ENOENT when neither
 * tells it.
 */
int torch_version_detect(const char *library_path, struct torch_version *version, char *error,
			 size_t error_size);

/*
 * Parses "2.3.1+cu121" or "1.13.0a0" (source is left empty); -EINVAL when
 * it does not start with MAJOR.MINOR.
 */
int torch_version_parse(const char *text, struct torch_version *version);

/*
 * Whether a mangled name is at::_ops::NAME::call for the request;
 * operator_name receives NAME. A request without an overload matches the
 * struct NAME and every NAME_OVERLOAD whose overload does not start with
 * '_' (so "add" does not take the in-place "add__Tensor").
 */
bool torch_op_symbol_matches(const char *symbol, const char *request, char *operator_name,
			     size_t operator_name_size);

/*
 * The one direct call in code to a function that is not a PLT stub, as a
 * virtual address: code holds the bytes of a function at address, and
 * read_target reads 16 bytes at a virtual address of the same file.
 * -ENOENT when there is none, -EMLINK when there are several.
 */
int torch_find_internal_call(const uint8_t *code, size_t size, uint64_t address,
			     int (*read_target)(void *context, uint64_t address, uint8_t bytes[16]),
			     void *context, uint64_t *target);

const char *torch_register_name(enum torch_register which);

#endif /* TCHECK_TORCH_PROBES_H */
