// SPDX-License-Identifier: MIT
/*
 * Where a record_function scope ends, found so that only scope ends hit a
 * probe. RecordFunction::end runs for every at::RecordFunction (the
 * guards around autograd nodes and operators), about ten times as often
 * as a scope closes. The profiler's exit operators, which Python's
 * record_function.__exit__ calls, end with a tail jump to it that holds
 * the scope's RecordFunction in rdi:
 *   record_function_exit_new (the intrusive_ptr form, 1.13 and 2.x):
 *     mov (%rdi),%rdi; add $OFFSET,%rdi; jmp RecordFunction::end
 *   record_function_exit_legacy (1.13's tensor-handle form):
 *     sub $8,%rsp; call CAST; add $8,%rsp; mov %rax,%rdi; jmp RecordFunction::end
 * Neither is exported; both lie in record_function_ops.cpp's code, beside
 * the exported _call_end_callbacks_on_fut_new. A jump counts when its
 * target is RecordFunction::end or the PLT stub whose relocation names it.
 */
#include "python/torch_probe_sites.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error_message.h"
#include "probe/elf_plt.h"
#include "probe/elf_tables.h"

#define RECORD_FUNCTION_END "_ZN2at14RecordFunction3endEv"
#define CALL_END_ON_FUT_PREFIX "_ZN5torch8autograd8profiler30_call_end_callbacks_on_fut_newE"
/* record_function_ops.cpp's code around the anchor, either side. */
#define EXIT_WINDOW (64u << 10)
#define JMP_REL32 0xe9
#define JMP_SIZE 5

static const uint8_t exit_new_head[] = { 0x48, 0x8b, 0x3f, 0x48, 0x83, 0xc7 };
/* The byte after exit_new_head is the RecordFunction's offset in PythonRecordFunction. */
#define EXIT_NEW_SIZE (sizeof(exit_new_head) + 1)
static const uint8_t exit_legacy_head[] = { 0x48, 0x83, 0xec, 0x08, 0xe8 };
static const uint8_t exit_legacy_tail[] = { 0x48, 0x83, 0xc4, 0x08, 0x48, 0x89, 0xc7 };
#define EXIT_LEGACY_SIZE (sizeof(exit_legacy_head) + 4 + sizeof(exit_legacy_tail))

struct exit_scan {
	struct elf_file file;
	uint64_t end_address;
	uint64_t end_stub; /* the file's PLT stub of end; 0 when it has none */
	uint8_t *code;	   /* the window's bytes */
	uint64_t code_address;
	size_t code_size;
};

/* Whether the jmp rel32 at window position 'at' goes to RecordFunction::end. */
static bool jumps_to_end(const struct exit_scan *scan, size_t at)
{
	int32_t displacement;
	uint64_t target;

	if (scan->code[at] != JMP_REL32 || at + JMP_SIZE > scan->code_size)
		return false;
	memcpy(&displacement, scan->code + at + 1, sizeof(displacement));
	target = scan->code_address + at + JMP_SIZE + (int64_t)displacement;
	return target == scan->end_address || (scan->end_stub && target == scan->end_stub);
}

static bool exit_new_before(const struct exit_scan *scan, size_t at)
{
	return at >= EXIT_NEW_SIZE &&
	       memcmp(scan->code + at - EXIT_NEW_SIZE, exit_new_head, sizeof(exit_new_head)) == 0;
}

static bool exit_legacy_before(const struct exit_scan *scan, size_t at)
{
	const uint8_t *start = scan->code + at - EXIT_LEGACY_SIZE;

	return at >= EXIT_LEGACY_SIZE &&
	       memcmp(start, exit_legacy_head, sizeof(exit_legacy_head)) == 0 &&
	       memcmp(scan->code + at - sizeof(exit_legacy_tail), exit_legacy_tail,
		      sizeof(exit_legacy_tail)) == 0;
}

/* Reads the window of code around the anchor, within the segment that holds it. */
static int window_read(struct exit_scan *scan, const struct elf_symbol_location *anchor)
{
	uint64_t low = anchor->address > EXIT_WINDOW ? anchor->address - EXIT_WINDOW : 0;
	uint64_t high = anchor->address + EXIT_WINDOW, offset;

	for (size_t i = 0; i < scan->file.load_count; i++) {
		const GElf_Phdr *load = &scan->file.loads[i];

		if (anchor->address < load->p_vaddr ||
		    anchor->address >= load->p_vaddr + load->p_filesz)
			continue;
		if (low < load->p_vaddr)
			low = load->p_vaddr;
		if (high > load->p_vaddr + load->p_filesz)
			high = load->p_vaddr + load->p_filesz;
		break;
	}
	if (high <= low || !elf_file_offset_of(&scan->file, low, &offset))
		return -ENOENT;
	scan->code_size = high - low;
	scan->code_address = low;
	scan->code = malloc(scan->code_size);
	if (!scan->code)
		return -ENOMEM;
	if (pread(scan->file.file.fd, scan->code, scan->code_size, (off_t)offset) !=
	    (ssize_t)scan->code_size)
		return -EIO;
	return 0;
}

/* Fills a site at the jump at window position 'at'. */
static int exit_site_set(const struct exit_scan *scan, size_t at, const char *name,
			 struct torch_probe_site *site)
{
	struct elf_symbol_location location = { .address = scan->code_address + at };

	if (!elf_file_offset_of(&scan->file, location.address, &location.file_offset))
		return -ENOENT;
	return torch_probe_site_set(site, name, false, &location);
}

/* The one jump of each form; -EMLINK when a form has several. */
static int exit_jumps_find(struct exit_scan *scan, struct torch_scope_probes *scopes)
{
	size_t new_count = 0, legacy_count = 0, new_at = 0, legacy_at = 0;
	int err = 0;

	for (size_t at = 0; at + JMP_SIZE <= scan->code_size; at++) {
		bool is_new, is_legacy;

		if (scan->code[at] != JMP_REL32)
			continue;
		is_new = exit_new_before(scan, at);
		is_legacy = exit_legacy_before(scan, at);
		if ((!is_new && !is_legacy) || !jumps_to_end(scan, at))
			continue;
		if (is_new && new_count++ == 0)
			new_at = at;
		if (is_legacy && legacy_count++ == 0)
			legacy_at = at;
	}
	if (new_count > 1 || legacy_count > 1)
		return -EMLINK;
	if (new_count == 1)
		err = exit_site_set(scan, new_at,
				    "torch::autograd::profiler::record_function_exit_new, its tail "
				    "jump to at::RecordFunction::end (internal)",
				    &scopes->exit_operator);
	if (!err && new_count == 1)
		err = torch_probe_site_set_reading(
			&scopes->exit_operator,
			"rdi -> the at::RecordFunction ending (the PythonRecordFunction's, at "
			"+%u), equal to its enter's key; reached only when record_function's "
			"exit operator ends a scope",
			(unsigned)scan->code[new_at - 1]);
	if (!err && legacy_count == 1)
		err = exit_site_set(scan, legacy_at,
				    "torch::autograd::profiler::record_function_exit_legacy, its "
				    "tail jump to at::RecordFunction::end (internal)",
				    &scopes->exit_handle_operator);
	if (!err && legacy_count == 1)
		err = torch_probe_site_set_reading(
			&scopes->exit_handle_operator,
			"rdi -> the at::RecordFunction ending, read from the tensor handle; "
			"reached only when the tensor-handle exit operator ends a scope");
	return err;
}

int torch_scope_exit_operators_resolve(struct torch_probes *probes)
{
	struct torch_scope_probes *scopes = &probes->scopes;
	struct torch_name_list names = { 0 };
	struct elf_symbol_location anchor = { 0 }, end = { 0 }, stub = { 0 };
	struct exit_scan scan = { 0 };
	const char *anchor_symbol;
	char error[512];
	int err;

	err = torch_dynamic_names_with_prefix(probes->host_path, CALL_END_ON_FUT_PREFIX, &names,
					      error, sizeof(error));
	if (!err)
		err = torch_single_defined_symbol(probes->host_path, &names, &anchor_symbol,
						  &anchor);
	torch_name_list_free(&names);
	if (!err)
		err = elf_symbol_find(probes->host_path, RECORD_FUNCTION_END, &end, error,
				      sizeof(error));
	if (err)
		return err;
	scan.end_address = end.address;
	err = elf_file_open(probes->host_path, &scan.file, error, sizeof(error));
	if (err)
		return err;
	if (!elf_plt_stub_in(&scan.file, probes->host_path, RECORD_FUNCTION_END, &stub, error,
			     sizeof(error)))
		scan.end_stub = stub.address;
	err = window_read(&scan, &anchor);
	if (!err)
		err = exit_jumps_find(&scan, scopes);
	free(scan.code);
	elf_file_close(&scan.file);
	return err;
}
