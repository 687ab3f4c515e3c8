// SPDX-License-Identifier: MIT
/*
 * The sites of torch's record_function scopes: where the scope name, the
 * key that pairs an exit with its enter, and the exit are read, through
 * the enter function's one internal call (1.13) or the exported enter and
 * the RecordFunction constructor it calls (2.x, whether or not the build
 * inlined the internal enter into it).
 */
#include "python/torch_probe_sites.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error_message.h"
#include "probe/library_file.h"
#include "probe/uprobe_entry_site.h"

/* A mangled-name prefix; the rest of the name encodes a signature that varies by release. */
#define ENTER_NEW_PREFIX "_ZN5torch8autograd8profiler25record_function_enter_newE"

#define RECORD_FUNCTION_END "_ZN2at14RecordFunction3endEv"
#define RECORD_FUNCTION_CONSTRUCTOR "_ZN2at14RecordFunctionC1ENS_11RecordScopeE"
#define RECORD_FUNCTION_BASE_CONSTRUCTOR "_ZN2at14RecordFunctionC2ENS_11RecordScopeE"

/* The name the 1.13 sources give the internal function both enter operators call. */
#define SHARED_ENTER_NAME                                                               \
	"torch::autograd::profiler::record_function_enter(std::string const&, "         \
	"c10::optional<std::string> const&, at::RecordFunction&), internal, called by " \
	"record_function_enter_new"

#define INTERNAL_CALL_CANDIDATES 8
/* The internal function lies in the same code segment, near its caller. */
#define INTERNAL_CALL_REACH (64ull << 20)

/* A PLT entry jumps through the GOT at once, with or without an IBT landing pad first. */
static bool is_plt_stub(const uint8_t bytes[16])
{
	const uint8_t *cursor = bytes;

	if (uprobe_is_branch_landing_pad(cursor, 16))
		cursor += UPROBE_BRANCH_LANDING_PAD_SIZE;
	if (cursor[0] == 0xf2)
		cursor++;
	return cursor[0] == 0xff && cursor[1] == 0x25;
}

/* The first instruction of a compiled function: endbr64, a push, or making room on the stack. */
static bool looks_like_function_entry(const uint8_t bytes[16])
{
	if (uprobe_is_branch_landing_pad(bytes, 16))
		return true;
	if (bytes[0] >= 0x50 && bytes[0] <= 0x57)
		return true;
	if (bytes[0] == 0x41 && bytes[1] >= 0x50 && bytes[1] <= 0x57)
		return true;
	return bytes[0] == 0x48 && (bytes[1] == 0x83 || bytes[1] == 0x81) && bytes[2] == 0xec;
}

int torch_find_internal_call(const uint8_t *code, size_t size, uint64_t address,
			     int (*read_target)(void *context, uint64_t address, uint8_t bytes[16]),
			     void *context, uint64_t *target)
{
	uint64_t candidates[INTERNAL_CALL_CANDIDATES];
	size_t candidate_count = 0;

	for (size_t i = 0; i + 5 <= size; i++) {
		uint8_t bytes[16];
		uint64_t destination;
		int32_t displacement;
		bool known = false;

		/* call rel32: the target is relative to the next instruction. */
		if (code[i] != 0xe8)
			continue;
		memcpy(&displacement, code + i + 1, sizeof(displacement));
		destination = address + i + 5 + (int64_t)displacement;
		if (destination >= address && destination < address + size)
			continue;
		if (destination + INTERNAL_CALL_REACH < address ||
		    destination > address + INTERNAL_CALL_REACH)
			continue;
		if (read_target(context, destination, bytes) != 0 || is_plt_stub(bytes) ||
		    !looks_like_function_entry(bytes))
			continue;
		for (size_t j = 0; j < candidate_count; j++)
			known = known || candidates[j] == destination;
		if (!known && candidate_count < INTERNAL_CALL_CANDIDATES)
			candidates[candidate_count++] = destination;
	}
	if (candidate_count == 0)
		return -ENOENT;
	if (candidate_count > 1)
		return -EMLINK;
	*target = candidates[0];
	return 0;
}

/* Reads code of one file by virtual address, for code in the segment of a known symbol. */
struct code_reader {
	int fd;
	uint64_t address_minus_offset; /* of the segment holding the known symbol */
	uint64_t file_size;
};

static int read_code(void *context, uint64_t address, uint8_t bytes[16])
{
	struct code_reader *reader = context;
	uint64_t offset = address - reader->address_minus_offset;

	if (address < reader->address_minus_offset || offset + 16 > reader->file_size)
		return -ERANGE;
	return pread(reader->fd, bytes, 16, (off_t)offset) == 16 ? 0 : -EIO;
}

static const char *string_layout(enum torch_string_abi abi)
{
	return abi == TORCH_STRING_CXX11
		       ? "a std::string: data pointer at +0, length at +8"
		       : "a std::string of the pre-C++11 ABI: a pointer at +0 to "
			 "the characters, the length in the 8 bytes 24 before them";
}

/* The argument layout of the optional args string, from the enter function's mangled name. */
static const char *optional_layout(const char *enter_symbol, enum torch_string_abi abi)
{
	if (strstr(enter_symbol, "N3c108optionalI"))
		return "a c10::optional<std::string>: engaged byte at +0, the string at +8";
	if (abi == TORCH_STRING_CXX11)
		return "a std::optional<std::string>: the string at +0, engaged byte at +32";
	return "a std::optional<std::string>: the string at +0, engaged byte at +8";
}

static int refuse_version(const struct torch_version *version, char *error, size_t error_size)
{
	return error_fail(error, error_size, ENOTSUP,
			  "torch %s (read from %s) is not a version whose record_function scope "
			  "functions are known: tcheck-bpf knows torch 1.13 and 2.x; see "
			  "docs/torch-scopes.md to add one",
			  version->text, version->source);
}

static int choose_method(struct torch_probes *probes, char *error, size_t error_size)
{
	const struct torch_version *version = &probes->version;

	if (version->major == 1 && version->minor == 13) {
		probes->scopes.method = TORCH_SCOPE_SHARED_ENTER;
		probes->scopes.verified = true;
		return 0;
	}
	/*
	 * 2.x: Python calls the exported enter_new itself, which builds the
	 * at::RecordFunction with the exported constructor whatever the build
	 * inlined (Debian's 2.6 and 2.14 keep an internal enter call; pip's
	 * 2.11 inlines it): both sites exist in every build. Watched live on
	 * Debian's 2.6 and 2.14; checked in the CUDA 2.6 build's code.
	 */
	if (version->major == 2) {
		probes->scopes.method = TORCH_SCOPE_ENTER_THEN_CONSTRUCTOR;
		probes->scopes.verified = true;
		return 0;
	}
	return refuse_version(version, error, error_size);
}

/* 1.13: follows the exported enter function's one internal call to the function both share. */
static int resolve_shared_enter(struct torch_probes *probes, const char *enter_new_symbol,
				const struct elf_symbol_location *enter_new, char *error,
				size_t error_size)
{
	struct elf_symbol_location shared = { 0 };
	struct code_reader reader;
	uint8_t *code;
	struct stat st;
	uint64_t target;
	int err;

	if (enter_new->size == 0 || enter_new->size > 4096)
		return error_fail(error, error_size, ENOEXEC,
				  "%s gives record_function_enter_new a size of %llu bytes; its "
				  "call to the shared enter function cannot be read",
				  probes->host_path, (unsigned long long)enter_new->size);
	reader.fd = library_file_open(probes->host_path, error, error_size);
	if (reader.fd < 0)
		return reader.fd;
	code = malloc(enter_new->size);
	if (!code || fstat(reader.fd, &st) != 0 ||
	    pread(reader.fd, code, enter_new->size, (off_t)enter_new->file_offset) !=
		    (ssize_t)enter_new->size) {
		free(code);
		close(reader.fd);
		return error_fail(error, error_size, EIO, "cannot read the code of %s in %s",
				  enter_new_symbol, probes->host_path);
	}
	reader.address_minus_offset = enter_new->address - enter_new->file_offset;
	reader.file_size = (uint64_t)st.st_size;
	err = torch_find_internal_call(code, enter_new->size, enter_new->address, read_code,
				       &reader, &target);
	free(code);
	close(reader.fd);
	if (err)
		return error_fail(error, error_size, ENOENT,
				  "record_function_enter_new in %s makes %s direct call to an "
				  "internal function, so the function that receives the scope name "
				  "in torch 1.13 cannot be told apart; this build differs from "
				  "Debian's 1.13",
				  probes->host_path, err == -ENOENT ? "no" : "more than one");
	shared.address = target;
	shared.file_offset = target - reader.address_minus_offset;
	return torch_probe_site_set(&probes->scopes.enter, SHARED_ENTER_NAME, false, &shared);
}

/* The enter site is the internal function the exported enter calls: name in rdi, key in rdx. */
static int use_shared_enter(struct torch_probes *probes, const char *enter_new_symbol,
			    const struct elf_symbol_location *enter_new, const char *optional,
			    char *error, size_t error_size)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	int err;

	err = resolve_shared_enter(probes, enter_new_symbol, enter_new, error, error_size);
	if (!err)
		err = torch_probe_site_set_reading(
			&scopes->enter,
			"rdi -> the scope name, %s; rsi -> the args, %s; rdx -> "
			"the at::RecordFunction, the key its exit passes",
			string_layout(scopes->string_abi), optional);
	if (!err)
		err = torch_probe_site_move_to_emulated_instruction(probes->host_path,
								    &scopes->enter);
	if (!err)
		err = torch_probe_site_set(
			&scopes->key, scopes->enter.symbol, false,
			&(struct elf_symbol_location){ .address = scopes->enter.address,
						       .file_offset = scopes->enter.file_offset });
	if (!err)
		err = torch_probe_site_set_reading(&scopes->key, "rdx at the enter site: the key");
	scopes->name_register = TORCH_REGISTER_RDI;
	scopes->args_register = TORCH_REGISTER_RSI;
	scopes->key_register = TORCH_REGISTER_RDX;
	return err;
}

/* The exported enter gives the name; the next RecordFunction constructor on the thread the key. */
static int use_enter_then_constructor(struct torch_probes *probes, const char *enter_new_symbol,
				      const struct elf_symbol_location *enter_new,
				      const char *optional, char *error, size_t error_size)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	const char *constructor = RECORD_FUNCTION_CONSTRUCTOR;
	struct elf_symbol_location location = { 0 };
	int err;

	err = torch_probe_site_set(&scopes->enter, enter_new_symbol, true, enter_new);
	if (!err)
		err = torch_probe_site_set_reading(
			&scopes->enter,
			"rsi -> the scope name, %s; rdx -> the args, %s; rdi -> "
			"the slot the returned _RecordFunction pointer is written "
			"to (an intrusive_ptr returned through a hidden pointer)",
			string_layout(scopes->string_abi), optional);
	if (!err)
		err = torch_probe_site_move_to_emulated_instruction(probes->host_path,
								    &scopes->enter);
	if (!err && elf_symbol_find(probes->host_path, constructor, &location, NULL, 0)) {
		constructor = RECORD_FUNCTION_BASE_CONSTRUCTOR;
		err = elf_symbol_find(probes->host_path, constructor, &location, error, error_size);
	}
	if (!err)
		err = torch_probe_site_set(&scopes->key, constructor, true, &location);
	if (!err)
		err = torch_probe_site_set_reading(
			&scopes->key, "rdi -> the at::RecordFunction being built, sil -> its "
				      "RecordScope (7, USER_SCOPE); the first user scope a thread "
				      "builds after an enter is that scope's key");
	if (!err)
		err = torch_probe_site_move_to_emulated_instruction(probes->host_path,
								    &scopes->key);
	scopes->name_register = TORCH_REGISTER_RSI;
	scopes->args_register = TORCH_REGISTER_RDX;
	scopes->key_register = TORCH_REGISTER_RDI;
	return err;
}

/* The one exported record_function_enter_new; names holds the symbol it points into. */
static int enter_new_find(struct torch_probes *probes, struct torch_name_list *names,
			  const char **symbol, struct elf_symbol_location *location, char *error,
			  size_t error_size)
{
	int err;

	err = torch_dynamic_names_with_prefix(probes->host_path, ENTER_NEW_PREFIX, names, error,
					      error_size);
	if (err)
		return err;
	err = torch_single_defined_symbol(probes->host_path, names, symbol, location);
	if (err)
		return error_fail(error, error_size, ENOENT,
				  "%s %s torch::autograd::profiler::record_function_enter_new, the "
				  "exported function record_function scopes are found from",
				  probes->host_path,
				  err == -ENOENT ? "does not export" : "exports more than one");
	return 0;
}

/* The std::string layout, from how the enter function's mangled name spells its argument. */
static int string_abi_find(struct torch_probes *probes, const char *enter_new_symbol, char *error,
			   size_t error_size)
{
	if (strstr(enter_new_symbol, "NSt7__cxx1112basic_string")) {
		probes->scopes.string_abi = TORCH_STRING_CXX11;
		return 0;
	}
	if (strstr(enter_new_symbol, "RKSs")) {
		probes->scopes.string_abi = TORCH_STRING_COW;
		return 0;
	}
	return error_fail(error, error_size, ENOTSUP,
			  "%s: the scope name argument of %s is of no known std::string layout",
			  probes->host_path, enter_new_symbol);
}

/* The enter and key sites by the chosen method. */
static int enter_and_key_resolve(struct torch_probes *probes, const char *enter_new_symbol,
				 const struct elf_symbol_location *enter_new, char *error,
				 size_t error_size)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	const char *optional = optional_layout(enter_new_symbol, scopes->string_abi);

	if (scopes->method == TORCH_SCOPE_SHARED_ENTER)
		return use_shared_enter(probes, enter_new_symbol, enter_new, optional, error,
					error_size);
	return use_enter_then_constructor(probes, enter_new_symbol, enter_new, optional, error,
					  error_size);
}

/* at::RecordFunction::end: the exit of every scope, and of much else. */
static int exit_resolve(struct torch_probes *probes, char *error, size_t error_size)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	struct elf_symbol_location location = { 0 };
	int err;

	err = elf_symbol_find(probes->host_path, RECORD_FUNCTION_END, &location, error, error_size);
	if (!err)
		err = torch_probe_site_set(&scopes->exit, RECORD_FUNCTION_END, true, &location);
	if (!err)
		err = torch_probe_site_set_reading(
			&scopes->exit,
			"rdi -> the at::RecordFunction ending, equal to its enter's key; "
			"it runs again when the handle is destroyed and around every "
			"autograd node: close the open scope with that key, ignore the rest");
	if (!err)
		err = torch_probe_site_move_to_emulated_instruction(probes->host_path,
								    &scopes->exit);
	scopes->exit_register = TORCH_REGISTER_RDI;
	return err;
}

/*
 * Scope ends on the exit operators where this build has the ones Python
 * calls: 1.13 both forms (its shared enter sees both enter operators, and
 * keys pair them); 2.x the intrusive_ptr form only, with no key, since its
 * enter site sees only enter_new. Elsewhere RecordFunction::end, as before.
 */
static int exit_operators_choose(struct torch_probes *probes)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	int err = torch_scope_exit_operators_resolve(probes);

	if (err == -ENOMEM)
		return err;
	if (scopes->method == TORCH_SCOPE_SHARED_ENTER) {
		scopes->exit_at_operators =
			scopes->exit_operator.symbol && scopes->exit_handle_operator.symbol;
		return 0;
	}
	torch_probe_site_free(&scopes->exit_handle_operator);
	scopes->exit_at_operators = scopes->exit_operator.symbol != NULL;
	if (scopes->exit_at_operators)
		scopes->key_register = TORCH_REGISTER_NONE;
	return 0;
}

/* The site helpers return a bare -ENOMEM: say it. */
static int out_of_memory_said(int err, char *error, size_t error_size)
{
	return err == -ENOMEM ? error_fail(error, error_size, ENOMEM, "out of memory") : err;
}

int torch_scopes_resolve(struct torch_probes *probes, char *error, size_t error_size)
{
	struct torch_name_list names = { 0 };
	struct elf_symbol_location enter_new = { 0 };
	const char *enter_new_symbol = NULL;
	int err;

	err = choose_method(probes, error, error_size);
	if (!err)
		err = enter_new_find(probes, &names, &enter_new_symbol, &enter_new, error,
				     error_size);
	if (!err)
		err = string_abi_find(probes, enter_new_symbol, error, error_size);
	if (!err)
		err = out_of_memory_said(enter_and_key_resolve(probes, enter_new_symbol, &enter_new,
							       error, error_size),
					 error, error_size);
	torch_name_list_free(&names);
	if (!err)
		err = out_of_memory_said(exit_resolve(probes, error, error_size), error,
					 error_size);
	if (!err)
		err = out_of_memory_said(exit_operators_choose(probes), error, error_size);
	return err;
}
