// SPDX-License-Identifier: MIT
/*
 * Where record_function scopes are followed in every torch 2.x build here:
 * the exported record_function_enter_new (the name) and the
 * at::RecordFunction constructor it calls (the key), which exist whether or
 * not the build inlined the internal enter, and the exit operator's jump to
 * RecordFunction::end where scopes close, checked against nm and objdump
 * on Debian's 2.6 and 2.14 and on the CUDA build of 2.6 (read only).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/torch_probes.h"
#include "library_tools.h"
#include "unit.h"

#define ENTER_NEW                                                                      \
	"_ZN5torch8autograd8profiler25record_function_enter_newERKNSt7__cxx1112basic_" \
	"stringIcSt11char_traitsIcESaIcEEERKSt8optionalIS7_E"
#define CONSTRUCTOR "_ZN2at14RecordFunctionC1ENS_11RecordScopeE"
#define END "_ZN2at14RecordFunction3endEv"

/* The library under root (an environment variable's value, or the default) and relative path. */
static bool library_under(char *path, size_t size, const char *variable, const char *fallback,
			  const char *relative)
{
	const char *root = getenv(variable);

	snprintf(path, size, "%s/%s", root && root[0] ? root : fallback, relative);
	if (access(path, R_OK) == 0)
		return true;
	printf("\n    note: %s is not here (make deps caches it): skipped ", path);
	return false;
}

/*
 * A site that was moved past the endbr64 the function opens with, onto the
 * instruction the kernel emulates (a push), or left at the start when the
 * function has no endbr64.
 */
static void assert_site_opens(const char *library, uint64_t site, uint64_t function)
{
	CU_ASSERT(site == function || site == function + 4);
	CU_ASSERT(objdump_instruction_is(library, site, "push"));
	if (site == function + 4)
		CU_ASSERT(objdump_instruction_is(library, function, "endbr64"));
}

static void check_scope_sites(const char *library, int minor)
{
	struct torch_probes *probes = NULL;
	uint64_t enter_new, enter_new_size = 0, constructor, constructor_size = 0, end,
			    end_size = 0;
	char error[1024] = "";
	int err;

	err = torch_probes_resolve(library, NULL, 0, &probes, error, sizeof(error));
	if (err)
		printf("\n    %s: %s ", library, error);
	CU_ASSERT_EQUAL_FATAL(err, 0);
	CU_ASSERT_EQUAL(probes->version.major, 2);
	CU_ASSERT_EQUAL(probes->version.minor, minor);
	CU_ASSERT_EQUAL(probes->scopes.method, TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR);
	CU_ASSERT(probes->scopes.verified);
	CU_ASSERT_EQUAL(probes->scopes.string_abi, TORCH_STRING_CXX11);
	CU_ASSERT_EQUAL(probes->scopes.name_register, TORCH_REGISTER_RSI);
	/* Ends on the exit operator: the enter opens the scope with no key. */
	CU_ASSERT(probes->scopes.exit_at_operators);
	CU_ASSERT_EQUAL(probes->scopes.key_register, TORCH_REGISTER_NONE);
	CU_ASSERT_EQUAL(probes->scopes.exit_register, TORCH_REGISTER_RDI);

	/* The name where Python's _record_function_enter_new enters C++. */
	enter_new = nm_symbol(library, ENTER_NEW, &enter_new_size);
	CU_ASSERT_FATAL(enter_new != 0);
	CU_ASSERT_STRING_EQUAL(probes->scopes.enter.symbol, ENTER_NEW);
	assert_site_opens(library, probes->scopes.enter.address, enter_new);
	/* The key: the constructor, which enter_new calls (through the PLT here) in every build. */
	constructor = nm_symbol(library, CONSTRUCTOR, &constructor_size);
	CU_ASSERT_FATAL(constructor != 0);
	assert_site_opens(library, probes->scopes.key.address, constructor);
	CU_ASSERT(objdump_function_calls(library, enter_new, enter_new_size, CONSTRUCTOR));
	/* The exit: end()'s first branch, past endbr64 and the compare. */
	end = nm_symbol(library, END, &end_size);
	CU_ASSERT(end != 0 && probes->scopes.exit.address > end &&
		  probes->scopes.exit.address < end + end_size);
	CU_ASSERT(objdump_instruction_is(library, probes->scopes.exit.address, "je"));
	/*
	 * What is probed instead: record_function_exit_new's tail jump to end(),
	 * after "mov (%rdi),%rdi; add $0x10,%rdi" (the RecordFunction inside the
	 * PythonRecordFunction); 2.x's enter site does not see the tensor-handle
	 * form, which is left out.
	 */
	CU_ASSERT_PTR_NOT_NULL_FATAL(probes->scopes.exit_operator.symbol);
	CU_ASSERT(objdump_instruction_jumps_to(library, probes->scopes.exit_operator.address, END));
	CU_ASSERT(objdump_instruction_is(library, probes->scopes.exit_operator.address - 4, "add"));
	CU_ASSERT(objdump_instruction_is(library, probes->scopes.exit_operator.address - 7, "mov"));
	CU_ASSERT_PTR_NULL(probes->scopes.exit_handle_operator.symbol);
	torch_probes_free(probes);
}

/* Debian trixie's 2.6, whose enter_new keeps one internal enter call. */
UNIT_TEST(torch_scope_sites, debian_trixie_torch_2_6)
{
	char library[1024];

	if (library_under(library, sizeof(library), "TCHECK_TORCH2_ROOT",
			  "/var/cache/tcheck-bpf/trixie-torch",
			  "usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0"))
		check_scope_sites(library, 6);
}

/* Debian sid's 2.14 (tools/stacks/torch-root.sh sid). */
UNIT_TEST(torch_scope_sites, debian_sid_torch_2_14)
{
	char library[1024];

	if (library_under(library, sizeof(library), "TCHECK_TORCH214_ROOT",
			  "/var/cache/tcheck-bpf/sid-torch",
			  "usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.14.1"))
		check_scope_sites(library, 14);
}

/* The CUDA build of 2.6 (tools/stacks/torch-cuda-libraries.sh), another compilation. */
UNIT_TEST(torch_scope_sites, debian_cuda_torch_2_6)
{
	char library[1024];

	if (library_under(library, sizeof(library), "TCHECK_TORCH_CUDA_LIBRARIES",
			  "/var/cache/tcheck-bpf/torch-cuda-2.6", "libtorch_cpu.so.2.6.0"))
		check_scope_sites(library, 6);
}
