// SPDX-License-Identifier: MIT
/* Tests of finding record_function scope and ATen operator probe sites in libtorch_cpu.so. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "model/c10d_api.h"
#include "python/torch_probes.h"
#include "library_tools.h"
#include "loaded_code.h"
#include "unit.h"

/* Debian's python3-torch 1.13 (libtorch1.13): the package's library, the one Python loads. */
#define DEBIAN_TORCH "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0"
#define DEBIAN_PYTHON "/usr/bin/python3"
#define COMPARED_BYTES 24

static const char *const checked_ops[] = { "add_", "zero_", "mul_", "_foreach_add_",
					   "add_.Tensor" };
#define CHECKED_OP_COUNT (sizeof(checked_ops) / sizeof(checked_ops[0]))

UNIT_TEST(torch_probes, version_text_is_parsed)
{
	struct torch_version version;

	CU_ASSERT_EQUAL_FATAL(torch_version_parse("1.13.0a0", &version), 0);
	CU_ASSERT_EQUAL(version.major, 1);
	CU_ASSERT_EQUAL(version.minor, 13);
	CU_ASSERT_EQUAL(version.patch, 0);
	CU_ASSERT_STRING_EQUAL(version.text, "1.13.0a0");
	CU_ASSERT_EQUAL_FATAL(torch_version_parse("2.3.1+cu121", &version), 0);
	CU_ASSERT_EQUAL(version.major, 2);
	CU_ASSERT_EQUAL(version.minor, 3);
	CU_ASSERT_EQUAL(version.patch, 1);
	CU_ASSERT_EQUAL_FATAL(torch_version_parse("2.10", &version), 0);
	CU_ASSERT_EQUAL(version.minor, 10);
	CU_ASSERT_EQUAL(version.patch, -1);
	CU_ASSERT_EQUAL(torch_version_parse("abc", &version), -EINVAL);
	CU_ASSERT_EQUAL(torch_version_parse("1.", &version), -EINVAL);
	CU_ASSERT_EQUAL(torch_version_parse("", &version), -EINVAL);
}

UNIT_TEST(torch_probes, operator_requests_match_overloads)
{
	const char *in_place = "_ZN2at4_ops11add__Tensor4callERNS_6TensorERKS2_RKN3c106ScalarE";
	const char *functional = "_ZN2at4_ops10add_Tensor4callERKNS_6TensorES4_RKN3c106ScalarE";
	const char *zero = "_ZN2at4_ops5zero_4callERNS_6TensorE";
	char name[64] = "";

	CU_ASSERT(torch_op_symbol_matches(in_place, "add_", name, sizeof(name)));
	CU_ASSERT_STRING_EQUAL(name, "add__Tensor");
	CU_ASSERT(torch_op_symbol_matches(in_place, "add_.Tensor", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches(in_place, "add", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches(in_place, "add_.Scalar", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches(in_place, "add_.default", NULL, 0));
	CU_ASSERT(torch_op_symbol_matches(functional, "add", name, sizeof(name)));
	CU_ASSERT_STRING_EQUAL(name, "add_Tensor");
	CU_ASSERT(torch_op_symbol_matches(functional, "add.Tensor", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches(functional, "add_", NULL, 0));
	CU_ASSERT(torch_op_symbol_matches(zero, "zero_", NULL, 0));
	CU_ASSERT(torch_op_symbol_matches(zero, "zero_.default", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches(zero, "zero", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches(
		"_ZN2at4_ops5zero_10redispatchEN3c1014DispatchKeySetERNS_6TensorE", "zero_", NULL,
		0));
	CU_ASSERT_FALSE(torch_op_symbol_matches(
		"_ZN2at4_ops15multiply_Tensor4callERKNS_6TensorES4_", "mul", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches("_ZN2at4_ops99zero_4callE", "zero_", NULL, 0));
	CU_ASSERT_FALSE(torch_op_symbol_matches("_ZN2at4_ops5zero_4callE", "", NULL, 0));
}

/* A made-up code segment at address 0x1000: the function under test and what it calls. */
struct fake_segment {
	uint8_t bytes[0x400];
};

static int read_fake_segment(void *context, uint64_t address, uint8_t bytes[16])
{
	struct fake_segment *segment = context;

	if (address < 0x1000 || address + 16 > 0x1000 + sizeof(segment->bytes))
		return -ERANGE;
	memcpy(bytes, segment->bytes + (address - 0x1000), 16);
	return 0;
}

/* Writes "call target" at code offset at, for a function that starts at 0x1000 + start. */
static void put_call(struct fake_segment *segment, size_t at, uint64_t target)
{
	int32_t displacement = (int32_t)(target - (0x1000 + at + 5));

	segment->bytes[at] = 0xe8;
	memcpy(segment->bytes + at + 1, &displacement, sizeof(displacement));
}

UNIT_TEST(torch_probes, internal_call_is_told_from_plt_calls)
{
	static const uint8_t plt[] = { 0xff, 0x25, 0x10, 0x20, 0x00, 0x00 };
	static const uint8_t plt_ibt[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25, 0x00 };
	static const uint8_t helper[] = { 0x41, 0x56, 0x41, 0x55 }; /* push r14; push r13 */
	static const uint8_t other[] = { 0x55, 0x48, 0x89, 0xe5 };  /* push rbp; mov rsp, rbp */
	struct fake_segment segment;
	const uint8_t *function = segment.bytes + 0x200;
	uint64_t target = 0;

	memset(segment.bytes, 0x90, sizeof(segment.bytes));
	memcpy(segment.bytes + 0x000, plt, sizeof(plt));
	memcpy(segment.bytes + 0x010, plt_ibt, sizeof(plt_ibt));
	memcpy(segment.bytes + 0x100, helper, sizeof(helper));
	memcpy(segment.bytes + 0x180, other, sizeof(other));
	/* The function at 0x1200: two PLT calls, a call to itself, and one to the helper. */
	put_call(&segment, 0x204, 0x1000);
	put_call(&segment, 0x210, 0x1010);
	put_call(&segment, 0x220, 0x1200);
	put_call(&segment, 0x230, 0x1100);
	segment.bytes[0x240] = 0xc3;
	CU_ASSERT_EQUAL(torch_find_internal_call(function, 0x50, 0x1200, read_fake_segment,
						 &segment, &target),
			0);
	CU_ASSERT_EQUAL(target, 0x1100);
	/* A second internal callee makes the answer ambiguous. */
	put_call(&segment, 0x238, 0x1180);
	CU_ASSERT_EQUAL(torch_find_internal_call(function, 0x50, 0x1200, read_fake_segment,
						 &segment, &target),
			-EMLINK);
	/* Only PLT calls: none. */
	CU_ASSERT_EQUAL(torch_find_internal_call(function, 0x18, 0x1200, read_fake_segment,
						 &segment, &target),
			-ENOENT);
}

static char fixture_directory[64];

static void remove_fixtures(void)
{
	char command[128];

	snprintf(command, sizeof(command), "rm -rf '%s'", fixture_directory);
	if (system(command) != 0)
		fprintf(stderr, "could not remove the test fixtures in %s\n", fixture_directory);
}

static bool write_file(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");

	if (!file)
		return false;
	fputs(text, file);
	return fclose(file) == 0;
}

/*
 * Package layouts without a real library: a pip-like torch/lib with
 * version.py, a distribution-like versioned file reached through links,
 * a library that says nothing of its version, and unknown versions.
 */
static bool fixtures_ready(void)
{
	static int state = -1;
	char command[1024];

	if (state >= 0)
		return state == 1;
	state = 0;
	snprintf(fixture_directory, sizeof(fixture_directory), "/tmp/tcheck-torch-XXXXXX");
	if (!mkdtemp(fixture_directory))
		return false;
	atexit(remove_fixtures);
	snprintf(command, sizeof(command),
		 "cd %s && mkdir -p pip/torch/lib dist/lib other plain newer/torch/lib "
		 "older/torch/lib && touch pip/torch/lib/libtorch_cpu.so "
		 "dist/lib/libtorch_cpu.so.1.13.1 plain/libtorch_cpu.so "
		 "newer/torch/lib/libtorch_cpu.so older/torch/lib/libtorch_cpu.so && "
		 "ln -s libtorch_cpu.so.1.13.1 dist/lib/libtorch_cpu.so && "
		 "ln -s ../dist/lib/libtorch_cpu.so other/libtorch_cpu.so",
		 fixture_directory);
	if (system(command) != 0)
		return false;
	const struct {
		const char *name;
		const char *text;
	} files[] = {
		{ "pip/torch/version.py", "from typing import Optional\n__all__ = ['__version__']\n"
					  "__version__ = '2.4.0+cpu'\ndebug = False\n" },
		{ "newer/torch/version.py", "__version__ = \"3.0.0\"\n" },
		{ "older/torch/version.py", "__version__ = '1.12.1'\n" },
	};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(command, sizeof(command), "%s/%s", fixture_directory, files[i].name);
		if (!write_file(command, files[i].text))
			return false;
	}
	state = 1;
	return true;
}

static void fixture_path(char *path, size_t size, const char *name)
{
	snprintf(path, size, "%s/%s", fixture_directory, name);
}

UNIT_TEST(torch_probes, version_comes_from_package_or_file_name)
{
	struct torch_version version;
	char path[256], error[512] = "";

	CU_ASSERT_FATAL(fixtures_ready());
	fixture_path(path, sizeof(path), "pip/torch/lib/libtorch_cpu.so");
	CU_ASSERT_EQUAL_FATAL(torch_version_detect(path, &version, error, sizeof(error)), 0);
	CU_ASSERT_STRING_EQUAL(version.text, "2.4.0+cpu");
	CU_ASSERT_EQUAL(version.major, 2);
	CU_ASSERT_EQUAL(version.minor, 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(version.source, "pip/torch/version.py"));
	/* Two links: other/ -> dist/lib/libtorch_cpu.so -> libtorch_cpu.so.1.13.1 */
	fixture_path(path, sizeof(path), "other/libtorch_cpu.so");
	CU_ASSERT_EQUAL_FATAL(torch_version_detect(path, &version, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(version.major, 1);
	CU_ASSERT_EQUAL(version.minor, 13);
	CU_ASSERT_EQUAL(version.patch, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(version.source, "libtorch_cpu.so.1.13.1"));
	fixture_path(path, sizeof(path), "plain/libtorch_cpu.so");
	CU_ASSERT_EQUAL(torch_version_detect(path, &version, error, sizeof(error)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "cannot tell which torch version"));
	CU_ASSERT_PTR_NOT_NULL(strstr(error, path));
}

UNIT_TEST(torch_probes, unknown_versions_are_refused)
{
	const char *const versions[][2] = { { "newer/torch/lib/libtorch_cpu.so", "3.0.0" },
					    { "older/torch/lib/libtorch_cpu.so", "1.12.1" } };
	struct torch_probes *probes = (struct torch_probes *)1;
	char path[256], error[512];

	CU_ASSERT_FATAL(fixtures_ready());
	for (size_t i = 0; i < 2; i++) {
		error[0] = '\0';
		fixture_path(path, sizeof(path), versions[i][0]);
		CU_ASSERT_EQUAL(torch_probes_resolve(path, torch_default_ops,
						     torch_default_op_count, &probes, error,
						     sizeof(error)),
				-ENOTSUP);
		CU_ASSERT_PTR_NULL(probes);
		CU_ASSERT_PTR_NOT_NULL(strstr(error, versions[i][1]));
		CU_ASSERT_PTR_NOT_NULL(strstr(error, "is not a version whose record_function"));
	}
	/* A known version whose file is no library says so. */
	fixture_path(path, sizeof(path), "pip/torch/lib/libtorch_cpu.so");
	CU_ASSERT(torch_probes_resolve(path, NULL, 0, &probes, error, sizeof(error)) < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, path));
}

static bool debian_torch_present(void)
{
	return access(DEBIAN_TORCH, R_OK) == 0;
}

/* The bytes a uprobe at file_offset would patch, as the file has them. */
static bool file_bytes(const char *path, uint64_t file_offset, uint8_t bytes[COMPARED_BYTES])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t got;

	if (fd < 0)
		return false;
	got = pread(fd, bytes, COMPARED_BYTES, (off_t)file_offset);
	close(fd);
	return got == COMPARED_BYTES;
}

/*
 * The independent check of an exported site: the dynamic loader's address
 * for the name (dlsym) holds the bytes at the computed file offset, and it
 * lies at the computed address from the load base.
 */
/* A site offset bytes into its exported symbol, as the loader placed it. */
static bool exported_site_matches_at(void *handle, const struct torch_probe_site *site,
				     uint64_t offset)
{
	uint8_t from_file[COMPARED_BYTES];
	const void *loaded;
	Dl_info info;

	if (!site->symbol || !site->exported)
		return false;
	loaded = dlsym(handle, site->symbol);
	if (!loaded || !dladdr(loaded, &info) ||
	    !file_bytes(DEBIAN_TORCH, site->file_offset, from_file))
		return false;
	return (uintptr_t)loaded - (uintptr_t)info.dli_fbase + offset == site->address &&
	       loaded_code_matches((const uint8_t *)loaded + offset, from_file, COMPARED_BYTES);
}

static bool exported_site_matches(void *handle, const struct torch_probe_site *site)
{
	return exported_site_matches_at(handle, site, 0);
}

/*
 * The internal enter function, found apart from the resolver: objdump's
 * disassembly of the exported enter function, whose one direct call that
 * does not go through the PLT is to it. 0 when objdump is missing.
 */
static uint64_t objdump_internal_callee(const char *library, uint64_t address, uint64_t size)
{
	char command[1024], line[1024];
	uint64_t found = 0;
	size_t count = 0;
	FILE *output;

	snprintf(command, sizeof(command),
		 "objdump -d --no-show-raw-insn --start-address=0x%llx --stop-address=0x%llx "
		 "'%s' 2>/dev/null",
		 (unsigned long long)address, (unsigned long long)(address + size), library);
	output = popen(command, "r");
	if (!output)
		return 0;
	while (fgets(line, sizeof(line), output)) {
		unsigned long long target;
		char *call = strstr(line, "\tcall ");

		if (!call || strstr(line, "@plt>") || strstr(line, "*"))
			continue;
		if (sscanf(call + strlen("\tcall "), "%llx", &target) == 1) {
			found = target;
			count++;
		}
	}
	pclose(output);
	return count == 1 ? found : 0;
}

/* Every defined exported at::_ops::...::call nm lists for a request, counted independently. */
static size_t nm_operator_count(const char *request)
{
	char line[2048], name[1900], type;
	unsigned long long address;
	size_t count = 0;
	FILE *output;

	output = popen("nm -D --defined-only '" DEBIAN_TORCH "' 2>/dev/null", "r");
	if (!output)
		return 0;
	while (fgets(line, sizeof(line), output))
		if (sscanf(line, "%llx %c %1899s", &address, &type, name) == 3 &&
		    (type == 'T' || type == 'W') && torch_op_symbol_matches(name, request, NULL, 0))
			count++;
	pclose(output);
	return count;
}

/*
 * Debian's 1.13: the internal enter both enter operators call, with the name
 * in rdi and the RecordFunction in rdx; the exit on RecordFunction::end with
 * the key in rdi; C++11 strings.
 */
static void assert_shared_enter_method(const struct torch_probes *probes)
{
	CU_ASSERT_EQUAL(probes->scopes.method, TORCH_SCOPE_SHARED_ENTER);
	CU_ASSERT(probes->scopes.verified);
	CU_ASSERT_EQUAL(probes->scopes.string_abi, TORCH_STRING_CXX11);
	CU_ASSERT_EQUAL(probes->scopes.name_register, TORCH_REGISTER_RDI);
	CU_ASSERT_EQUAL(probes->scopes.key_register, TORCH_REGISTER_RDX);
	CU_ASSERT_EQUAL(probes->scopes.exit_register, TORCH_REGISTER_RDI);
	CU_ASSERT_FALSE(probes->scopes.enter.exported);
	CU_ASSERT_STRING_EQUAL(probes->scopes.exit.symbol, "_ZN2at14RecordFunction3endEv");
	/* Ends on both exit operators' jumps to end(), keys still paired. */
	CU_ASSERT(probes->scopes.exit_at_operators);
	CU_ASSERT_PTR_NOT_NULL(probes->scopes.exit_operator.symbol);
	CU_ASSERT_PTR_NOT_NULL(probes->scopes.exit_handle_operator.symbol);
}

/* Where gloo's works are built and end: all three sites, named as nm names them. */
static void assert_gloo_work_sites(const struct torch_probes *probes)
{
	static const char *const names[TORCH_GLOO_WORK_SITES] = {
		"9AsyncWorkC2E", "9AsyncWork14finishWorkGlooEv", "9AsyncWork19finishWorkGlooErrorE"
	};

	for (int i = 0; i < TORCH_GLOO_WORK_SITES; i++) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(probes->gloo_work[i].symbol);
		CU_ASSERT_PTR_NOT_NULL(strstr(probes->gloo_work[i].symbol, names[i]));
		CU_ASSERT(probes->gloo_work[i].file_offset != 0);
	}
}

UNIT_TEST(torch_probes, debian_torch_sites_are_where_the_loader_puts_them)
{
	struct torch_probes *probes = NULL;
	char error[1024] = "";
	uint8_t from_file[COMPARED_BYTES];
	uint64_t enter_new_address = 0, enter_new_size = 0;
	void *handle;

	if (!debian_torch_present()) {
		CU_PASS("no Debian python3-torch at " DEBIAN_TORCH ": skipped");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(torch_probes_resolve(DEBIAN_TORCH, checked_ops, CHECKED_OP_COUNT,
						   &probes, error, sizeof(error)),
			      0);
	CU_ASSERT_EQUAL(probes->version.major, 1);
	CU_ASSERT_EQUAL(probes->version.minor, 13);
	assert_shared_enter_method(probes);
	/*
	 * The exit operators' tail jumps to end(): 1.13's record_function.__exit__
	 * calls the tensor-handle form, TorchScript the intrusive_ptr form.
	 */
	CU_ASSERT(objdump_instruction_jumps_to(DEBIAN_TORCH,
					       probes->scopes.exit_handle_operator.address,
					       "_ZN2at14RecordFunction3endEv"));
	CU_ASSERT(objdump_instruction_jumps_to(DEBIAN_TORCH, probes->scopes.exit_operator.address,
					       "_ZN2at14RecordFunction3endEv"));
	CU_ASSERT(objdump_instruction_is(DEBIAN_TORCH,
					 probes->scopes.exit_handle_operator.address - 3, "mov"));
	CU_ASSERT_EQUAL(probes->scopes.key.file_offset, probes->scopes.enter.file_offset);
	CU_ASSERT_PTR_NOT_NULL(probes->backward.symbol);
	/* The constructor whose prefix names each c10d group alike on every rank. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(probes->prefix_store.symbol);
	CU_ASSERT_PTR_NOT_NULL(strstr(probes->prefix_store.symbol, "PrefixStoreC2E"));
	assert_gloo_work_sites(probes);
	CU_ASSERT_PTR_NOT_NULL(strstr(probes->scopes.enter.reading, "data pointer at +0"));
	/*
	 * add_ and mul_ have .Tensor and .Scalar; zero_ one; _foreach_add_ three;
	 * add_.Tensor is one of add_'s, probed once.
	 */
	CU_ASSERT_EQUAL(probes->op_count, 2 + 1 + 2 + 3);
	for (size_t r = 0; r + 1 < CHECKED_OP_COUNT; r++) {
		size_t ours = 0;

		for (size_t i = 0; i < probes->op_count; i++)
			ours += strcmp(probes->ops[i].request, checked_ops[r]) == 0;
		CU_ASSERT_EQUAL(ours, nm_operator_count(checked_ops[r]));
	}
	for (size_t i = 0; i < probes->op_count; i++)
		for (size_t j = i + 1; j < probes->op_count; j++)
			CU_ASSERT_NOT_EQUAL(probes->ops[i].site.file_offset,
					    probes->ops[j].site.file_offset);

	handle = dlopen(DEBIAN_TORCH, RTLD_LAZY | RTLD_LOCAL);
	if (!handle) {
		CU_PASS("dlopen of Debian's libtorch_cpu.so failed: sites not compared with loaded "
			"bytes");
		torch_probes_free(probes);
		return;
	}
	/*
	 * RecordFunction::end opens with "cmpb $0x0,0x68(%rdi)" (single-stepped
	 * under a uprobe) and a short je: the exit is probed on the je.
	 */
	{
		static const uint8_t compare[] = { 0x80, 0x7f }, short_je = 0x74;
		const uint8_t *end = dlsym(handle, probes->scopes.exit.symbol);

		CU_ASSERT_PTR_NOT_NULL_FATAL(end);
		CU_ASSERT(loaded_code_matches(end, compare, sizeof(compare)) &&
			  loaded_code_matches(end + 4, &short_je, 1));
		CU_ASSERT(exported_site_matches_at(handle, &probes->scopes.exit, 4));
	}
	CU_ASSERT(exported_site_matches(handle, &probes->backward));
	for (size_t i = 0; i < probes->op_count; i++)
		CU_ASSERT(exported_site_matches(handle, &probes->ops[i].site));

	/* The internal enter site: the loaded copy holds its bytes at its address... */
	{
		const char *enter_new = "_ZN5torch8autograd8profiler25record_function_enter_"
					"newERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcE"
					"EERKN3c108optionalIS7_EE";
		void *loaded = dlsym(handle, enter_new);
		Dl_info info;
		ElfW(Sym) *symbol = NULL;

		CU_ASSERT_PTR_NOT_NULL_FATAL(loaded);
		CU_ASSERT_FATAL(dladdr1(loaded, &info, (void **)&symbol, RTLD_DL_SYMENT) != 0);
		CU_ASSERT_PTR_NOT_NULL_FATAL(symbol);
		enter_new_address = (uintptr_t)loaded - (uintptr_t)info.dli_fbase;
		enter_new_size = symbol->st_size;
		CU_ASSERT(file_bytes(DEBIAN_TORCH, probes->scopes.enter.file_offset, from_file));
		CU_ASSERT(loaded_code_matches((const uint8_t *)info.dli_fbase +
						      probes->scopes.enter.address,
					      from_file, COMPARED_BYTES));
	}
	/* ...and objdump, reading the exported function apart from us, sees the same call. */
	{
		uint64_t callee =
			objdump_internal_callee(DEBIAN_TORCH, enter_new_address, enter_new_size);

		if (callee == 0) {
			CU_PASS("objdump found no single internal call: the enter site was checked "
				"against the loaded bytes only");
		} else {
			CU_ASSERT_EQUAL(callee, probes->scopes.enter.address);
		}
	}
	torch_probes_free(probes);
}

/*
 * Debian trixie's torch 2.6 (the second torch stack of the end-to-end tests,
 * tools/stacks/torch-root.sh trixie): the sites found in its library are the ones
 * nm and objdump name, read apart from us (its scope sites, like every 2.x
 * build's: test_torch_scope_sites.c).
 */
UNIT_TEST(torch_probes, torch_26_sites_match_nm_and_objdump)
{
	const char *root = getenv("TCHECK_TORCH2_ROOT");
	struct torch_probes *probes = NULL;
	char library[1024], error[1024] = "";

	snprintf(library, sizeof(library), "%s/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0",
		 root && root[0] ? root : "/var/cache/tcheck-bpf/trixie-torch");
	if (access(library, R_OK) != 0) {
		CU_PASS("no torch 2.6 root (tools/stacks/torch-root.sh trixie builds it): skipped");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(torch_probes_resolve(library, checked_ops, CHECKED_OP_COUNT, &probes,
						   error, sizeof(error)),
			      0);
	CU_ASSERT_EQUAL(probes->version.major, 2);
	CU_ASSERT_PTR_NOT_NULL(probes->backward.symbol);
	CU_ASSERT_PTR_NOT_NULL_FATAL(probes->prefix_store.symbol);
	CU_ASSERT_PTR_NOT_NULL(strstr(probes->prefix_store.symbol, "PrefixStoreC2E"));
	assert_gloo_work_sites(probes);
	CU_ASSERT_EQUAL(probes->version.minor, 6);
	/* The operators: as many overloads as nm lists, as on 1.13. */
	CU_ASSERT(probes->op_count >= CHECKED_OP_COUNT);
	torch_probes_free(probes);
}

/* Starts Debian's Python with torch imported; returns its pid, or -1. */
static pid_t start_torch_python(int *release)
{
	int ready[2], hold[2];
	char byte;
	pid_t child;

	if (pipe(ready) != 0)
		return -1;
	if (pipe(hold) != 0) {
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	child = fork();
	if (child == 0) {
		dup2(hold[0], 0);
		dup2(ready[1], 1);
		close(ready[0]);
		close(hold[1]);
		execl(DEBIAN_PYTHON, DEBIAN_PYTHON, "-c",
		      "import sys, "
		      "torch\nsys.stdout.write('r')\nsys.stdout.flush()\nsys.stdin.read()",
		      (char *)NULL);
		_exit(127);
	}
	close(ready[1]);
	close(hold[0]);
	if (child < 0 || read(ready[0], &byte, 1) != 1) {
		close(ready[0]);
		close(hold[1]);
		if (child > 0)
			waitpid(child, NULL, 0);
		return -1;
	}
	close(ready[0]);
	*release = hold[1];
	return child;
}

UNIT_TEST(torch_probes, live_python_process_maps_the_same_sites)
{
	struct torch_probes *from_process = NULL, *from_file = NULL;
	char error[1024] = "";
	int release = -1, status;
	pid_t child;

	if (!debian_torch_present() || access(DEBIAN_PYTHON, X_OK) != 0) {
		CU_PASS("no Debian python3-torch: skipped");
		return;
	}
	child = start_torch_python(&release);
	if (child < 0) {
		CU_PASS("Debian's python3 could not import torch: skipped");
		return;
	}
	CU_ASSERT_EQUAL(torch_probes_resolve_process(child, torch_default_ops,
						     torch_default_op_count, &from_process, error,
						     sizeof(error)),
			0);
	CU_ASSERT_EQUAL(torch_probes_resolve(DEBIAN_TORCH, torch_default_ops,
					     torch_default_op_count, &from_file, error,
					     sizeof(error)),
			0);
	if (from_process && from_file) {
		CU_ASSERT_STRING_EQUAL(from_process->library_path, DEBIAN_TORCH);
		CU_ASSERT_PTR_NOT_NULL(strstr(from_process->host_path, "/root" DEBIAN_TORCH));
		CU_ASSERT_EQUAL(from_process->version.minor, 13);
		CU_ASSERT_EQUAL(from_process->scopes.enter.file_offset,
				from_file->scopes.enter.file_offset);
		CU_ASSERT_EQUAL(from_process->scopes.exit.file_offset,
				from_file->scopes.exit.file_offset);
		CU_ASSERT_EQUAL_FATAL(from_process->op_count, from_file->op_count);
		for (size_t i = 0; i < from_file->op_count; i++)
			CU_ASSERT_EQUAL(from_process->ops[i].site.file_offset,
					from_file->ops[i].site.file_offset);
	}
	torch_probes_free(from_process);
	torch_probes_free(from_file);
	close(release);
	CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
}

UNIT_TEST(torch_probes, process_without_torch_is_told_apart)
{
	struct torch_probes *probes = NULL;
	char error[512] = "";
	pid_t child = fork();

	/* A fresh program: this process may have mapped libtorch_cpu.so for another test. */
	if (child == 0) {
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	CU_ASSERT_FATAL(child > 0);
	for (int tries = 0; tries < 200; tries++) {
		char path[64], target[64] = "";

		snprintf(path, sizeof(path), "/proc/%d/exe", (int)child);
		if (readlink(path, target, sizeof(target) - 1) > 0 && strstr(target, "sleep"))
			break;
		usleep(10000);
	}
	CU_ASSERT_EQUAL(torch_probes_resolve_process(child, NULL, 0, &probes, error, sizeof(error)),
			-ENOENT);
	CU_ASSERT_PTR_NULL(probes);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "has not mapped libtorch_cpu.so"));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

/* The libraries of Debian trixie's CUDA build of torch 2.6 (tools/stacks/torch-cuda-libraries.sh).
 */
static bool torch_cuda_libraries(char *cpu, size_t cpu_size, char *cuda, size_t cuda_size)
{
	const char *directory = getenv("TCHECK_TORCH_CUDA_LIBRARIES");

	if (!directory || !directory[0])
		directory = "/var/cache/tcheck-bpf/torch-cuda-2.6";
	snprintf(cpu, cpu_size, "%s/libtorch_cpu.so.2.6.0", directory);
	snprintf(cuda, cuda_size, "%s/libtorch_cuda.so.2.6.0", directory);
	return access(cpu, R_OK) == 0 && access(cuda, R_OK) == 0;
}

/* A process-group method as nm lists it. */
struct nm_method {
	char name[512];
	uint64_t address;
};

/*
 * The methods of the class ("ProcessGroupNCCL") nm lists under the names of
 * c10d_api.c's operations ("allreduce", "send", ...), whatever their
 * arguments: read apart from the tracer's own mangling. Returns how many, at
 * most 'capacity'.
 */
static size_t nm_process_group_methods(const char *library, const char *class_name,
				       struct nm_method *methods, size_t capacity)
{
	char command[1024], line[2048], name[512], expected[128];
	unsigned long long address;
	size_t count = 0;
	FILE *output;

	snprintf(command, sizeof(command),
		 "nm -D --defined-only '%s' 2>/dev/null | grep _ZN4c10d%zu%s", library,
		 strlen(class_name), class_name);
	output = popen(command, "r");
	if (!output)
		return 0;
	while (fgets(line, sizeof(line), output)) {
		if (sscanf(line, "%llx %*s %511s", &address, name) != 2)
			continue;
		for (size_t i = 0; i < c10d_operation_count() && count < capacity; i++) {
			const char *method = c10d_operation_at(i)->method;

			snprintf(expected, sizeof(expected), "_ZN4c10d%zu%s%zu%sE",
				 strlen(class_name), class_name, strlen(method), method);
			if (strncmp(name, expected, strlen(expected)) == 0) {
				snprintf(methods[count].name, sizeof(methods[count].name), "%s",
					 name);
				methods[count++].address = address;
			}
		}
	}
	pclose(output);
	return count;
}

/* Every probed NCCL collective is one nm lists, at its start or a few bytes in; none missed. */
static void assert_nccl_sites_match_nm(const struct torch_probes *probes, const char *cuda)
{
	const struct torch_c10d_probes *nccl = &probes->c10d[C10D_BACKEND_NCCL];
	struct nm_method methods[64];
	size_t listed = nm_process_group_methods(cuda, "ProcessGroupNCCL", methods, 64),
	       matched = 0;

	CU_ASSERT_STRING_EQUAL(c10d_backend_at(C10D_BACKEND_NCCL)->name, "nccl");
	/* allreduce, broadcast, reduce, allgather, send, recv, barrier ... every one of the table.
	 */
	CU_ASSERT_EQUAL(listed, c10d_operation_count());
	CU_ASSERT_EQUAL(torch_c10d_site_count(nccl), listed);
	for (size_t i = 0; i < TORCH_C10D_SITES; i++) {
		const struct torch_probe_site *site = &nccl->sites[i];

		if (!site->symbol)
			continue;
		for (size_t m = 0; m < listed; m++)
			if (strcmp(methods[m].name, site->symbol) == 0 &&
			    site->address >= methods[m].address &&
			    site->address < methods[m].address + 16)
				matched++;
		CU_ASSERT_PTR_NOT_NULL(strstr(site->reading, "(nccl)"));
	}
	CU_ASSERT_EQUAL(matched, listed);
}

/*
 * The CUDA build: ProcessGroupNCCL's collectives are probed in the
 * libtorch_cuda.so beside its libtorch_cpu.so, gloo's still in
 * libtorch_cpu.so, and its scopes resolve as the CPU build's do.
 */
UNIT_TEST(torch_probes, cuda_build_probes_nccl_process_groups_in_libtorch_cuda)
{
	struct torch_probes *probes = NULL;
	char cpu[1024], cuda[1024], error[1024] = "";

	if (!torch_cuda_libraries(cpu, sizeof(cpu), cuda, sizeof(cuda))) {
		CU_PASS("no CUDA torch libraries (tools/stacks/torch-cuda-libraries.sh): skipped");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(torch_probes_resolve(cpu, checked_ops, CHECKED_OP_COUNT, &probes,
						   error, sizeof(error)),
			      0);
	CU_ASSERT_EQUAL(probes->version.major, 2);
	CU_ASSERT_EQUAL(probes->version.minor, 6);
	/* Its scope sites: test_torch_scope_sites.c. */
	CU_ASSERT_PTR_NOT_NULL(probes->prefix_store.symbol);
	assert_gloo_work_sites(probes);
	CU_ASSERT_EQUAL(torch_c10d_site_count(&probes->c10d[C10D_BACKEND_GLOO]),
			c10d_operation_count());
	CU_ASSERT_STRING_EQUAL(probes->c10d[C10D_BACKEND_GLOO].library_path, cpu);
	CU_ASSERT_PTR_NOT_NULL_FATAL(probes->c10d[C10D_BACKEND_NCCL].library_path);
	CU_ASSERT_STRING_EQUAL(probes->c10d[C10D_BACKEND_NCCL].library_path, cuda);
	assert_nccl_sites_match_nm(probes, cuda);
	torch_probes_free(probes);
}

/*
 * A CPU build has no libtorch_cuda.so: gloo's collectives only (as many as
 * nm lists; 1.13's gloo lacks some), and no NCCL library named.
 */
UNIT_TEST(torch_probes, cpu_build_has_no_nccl_process_groups)
{
	struct torch_probes *probes = NULL;
	struct nm_method methods[64];
	char error[1024] = "";

	if (!debian_torch_present()) {
		CU_PASS("no Debian python3-torch at " DEBIAN_TORCH ": skipped");
		return;
	}
	CU_ASSERT_EQUAL_FATAL(
		torch_probes_resolve(DEBIAN_TORCH, NULL, 0, &probes, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(torch_c10d_site_count(&probes->c10d[C10D_BACKEND_GLOO]),
			nm_process_group_methods(DEBIAN_TORCH, "ProcessGroupGloo", methods, 64));
	CU_ASSERT(torch_c10d_site_count(&probes->c10d[C10D_BACKEND_GLOO]) >= 10);
	CU_ASSERT_PTR_NULL(probes->c10d[C10D_BACKEND_NCCL].library_path);
	CU_ASSERT_EQUAL(torch_c10d_site_count(&probes->c10d[C10D_BACKEND_NCCL]), 0);
	torch_probes_free(probes);
}

/*
 * A process that maps libtorch_cpu.so and, when 'map_cuda', libtorch_cuda.so
 * (as a CUDA torch does at import, one after the other; here a child maps
 * the files without running them): the NCCL sites come from the
 * libtorch_cuda.so in its maps, or beside its libtorch_cpu.so before that
 * is mapped, and equal those found from the files.
 */
static void assert_process_gets_nccl_sites(bool map_cuda)
{
	struct torch_probes *from_process = NULL, *from_file = NULL;
	char cpu[1024], cuda[1024], error[1024] = "", byte;
	int ready[2], hold[2], status;
	pid_t child;

	if (!torch_cuda_libraries(cpu, sizeof(cpu), cuda, sizeof(cuda))) {
		CU_PASS("no CUDA torch libraries (tools/stacks/torch-cuda-libraries.sh): skipped");
		return;
	}
	CU_ASSERT_FATAL(pipe(ready) == 0 && pipe(hold) == 0);
	child = fork();
	if (child == 0) {
		const char *paths[] = { cpu, cuda };

		close(ready[0]);
		close(hold[1]);
		for (int i = 0; i < (map_cuda ? 2 : 1); i++) {
			int fd = open(paths[i], O_RDONLY);
			struct stat info;

			if (fd < 0 || fstat(fd, &info) != 0 ||
			    mmap(NULL, (size_t)info.st_size, PROT_READ, MAP_PRIVATE, fd, 0) ==
				    MAP_FAILED)
				_exit(1);
			close(fd);
		}
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		/* Until the test closes its end. */
		while (read(hold[0], &byte, 1) > 0)
			;
		_exit(0);
	}
	close(ready[1]);
	close(hold[0]);
	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_FATAL(read(ready[0], &byte, 1) == 1);
	close(ready[0]);
	CU_ASSERT_EQUAL(
		torch_probes_resolve_process(child, NULL, 0, &from_process, error, sizeof(error)),
		0);
	CU_ASSERT_EQUAL(torch_probes_resolve(cpu, NULL, 0, &from_file, error, sizeof(error)), 0);
	if (from_process && from_file) {
		CU_ASSERT_PTR_NOT_NULL_FATAL(from_process->c10d[C10D_BACKEND_NCCL].library_path);
		CU_ASSERT_STRING_EQUAL(from_process->c10d[C10D_BACKEND_NCCL].library_path, cuda);
		CU_ASSERT_EQUAL(torch_c10d_site_count(&from_process->c10d[C10D_BACKEND_NCCL]),
				c10d_operation_count());
		for (size_t i = 0; i < TORCH_C10D_SITES; i++)
			CU_ASSERT_EQUAL(from_process->c10d[C10D_BACKEND_NCCL].sites[i].file_offset,
					from_file->c10d[C10D_BACKEND_NCCL].sites[i].file_offset);
	}
	torch_probes_free(from_process);
	torch_probes_free(from_file);
	close(hold[1]);
	CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

UNIT_TEST(torch_probes, process_mapping_libtorch_cuda_gets_nccl_sites)
{
	assert_process_gets_nccl_sites(true);
}

UNIT_TEST(torch_probes, process_yet_to_map_libtorch_cuda_gets_nccl_sites_beside)
{
	assert_process_gets_nccl_sites(false);
}
