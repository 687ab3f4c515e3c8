// SPDX-License-Identifier: MIT
/* Finds a file's direct calls of an imported function's PLT stub (call_sites.h). */
#include "probe/call_sites.h"

#include <capstone/capstone.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "probe/elf_plt.h"
#include "probe/elf_tables.h"
#include "probe/library_file.h"

#define CALL_REL32 0xe8
#define JMP_REL32 0xe9 /* a tail call */
#define BRANCH_REL32_BYTES 5

size_t call_sites_scan(const uint8_t *code, size_t size, uint64_t address, uint64_t target,
		       uint64_t *found, size_t max)
{
	size_t count = 0;

	for (size_t at = 0; at + BRANCH_REL32_BYTES <= size; at++) {
		int32_t displacement;

		if (code[at] != CALL_REL32 && code[at] != JMP_REL32)
			continue;
		memcpy(&displacement, code + at + 1, sizeof(displacement));
		if (address + at + BRANCH_REL32_BYTES + (uint64_t)(int64_t)displacement != target)
			continue;
		if (count < max)
			found[count] = address + at;
		count++;
	}
	return count;
}

bool call_sites_is_instruction(const uint8_t *code, size_t size, uint64_t address, uint64_t site,
			       uint64_t target)
{
	const uint8_t *next = code;
	uint64_t at = address;
	size_t left = size;
	cs_insn *instruction;
	bool found = false;
	csh handle;

	if (site < address || site >= address + size ||
	    cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK)
		return false;
	instruction = cs_malloc(handle);
	while (instruction && at < site && cs_disasm_iter(handle, &next, &left, &at, instruction))
		;
	if (instruction && at == site && cs_disasm_iter(handle, &next, &left, &at, instruction))
		found = (instruction->id == X86_INS_CALL || instruction->id == X86_INS_JMP) &&
			instruction->size == BRANCH_REL32_BYTES &&
			(code[site - address] == CALL_REL32 || code[site - address] == JMP_REL32) &&
			at == site + BRANCH_REL32_BYTES &&
			strtoull(instruction->op_str, NULL, 0) == target;
	if (instruction)
		cs_free(instruction, 1);
	cs_close(&handle);
	return found;
}

/* The start and end of the function holding address, from its .eh_frame entry. */
static bool function_bounds(Dwarf_CFI *frames, uint64_t address, uint64_t *start, uint64_t *end)
{
	Dwarf_Frame *frame = NULL;
	Dwarf_Addr low, high;
	bool found;

	if (!frames || dwarf_cfi_addrframe(frames, address, &frame) != 0)
		return false;
	found = dwarf_frame_info(frame, &low, &high, NULL) >= 0 && low <= address && address < high;
	free(frame);
	*start = low;
	*end = high;
	return found;
}

/* Checks each candidate of one section and adds it to sites. */
static int keep_instructions(const struct elf_file *file, const char *path, Dwarf_CFI *frames,
			     const GElf_Shdr *text, const uint8_t *code, const uint64_t *candidates,
			     size_t count, uint64_t target, struct call_sites *sites, char *error,
			     size_t error_size)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t start, end, offset;

		if (!function_bounds(frames, candidates[i], &start, &end) ||
		    start < text->sh_addr || end > text->sh_addr + text->sh_size ||
		    !call_sites_is_instruction(code + (start - text->sh_addr), end - start, start,
					       candidates[i], target))
			return error_fail(error, error_size, EILSEQ,
					  "the bytes at 0x%llx of %s read as a call of 0x%llx but "
					  "were not found to start an instruction of a function",
					  (unsigned long long)candidates[i], path,
					  (unsigned long long)target);
		if (!elf_file_offset_of(file, candidates[i], &offset))
			return error_fail(error, error_size, ENOEXEC,
					  "the call at 0x%llx of %s is in no loaded segment",
					  (unsigned long long)candidates[i], path);
		sites->addresses[sites->count] = candidates[i];
		sites->file_offsets[sites->count++] = offset;
	}
	return 0;
}

static int scan_file(const struct elf_file *file, const char *path, const char *symbol,
		     uint64_t target, struct call_sites *sites, char *error, size_t error_size)
{
	Dwarf_CFI *frames = dwarf_getcfi_elf(file->file.elf);
	int err = 0;

	for (Elf_Scn *section = elf_nextscn(file->file.elf, NULL); section && !err;
	     section = elf_nextscn(file->file.elf, section)) {
		uint64_t candidates[CALL_SITES_MAX];
		GElf_Shdr header;
		uint8_t *code;
		size_t count;

		if (!gelf_getshdr(section, &header) || header.sh_type != SHT_PROGBITS ||
		    !(header.sh_flags & SHF_EXECINSTR) || header.sh_size == 0)
			continue;
		/* Not elf_getdata: the file's mapping shows other tracers' breakpoints. */
		err = library_file_read_new(file->file.fd, path, header.sh_offset, header.sh_size,
					    &code, error, error_size);
		if (err)
			break;
		count = call_sites_scan(code, header.sh_size, header.sh_addr, target, candidates,
					CALL_SITES_MAX);
		if (sites->count + count > CALL_SITES_MAX)
			err = error_fail(error, error_size, E2BIG,
					 "%s calls %s in more than %d places", path, symbol,
					 CALL_SITES_MAX);
		else
			err = keep_instructions(file, path, frames, &header, code, candidates,
						count, target, sites, error, error_size);
		free(code);
	}
	if (frames)
		dwarf_cfi_end(frames);
	return err;
}

int call_sites_find(const char *path, const char *symbol, struct call_sites *sites, char *error,
		    size_t error_size)
{
	struct elf_symbol_location stub;
	struct elf_file file;
	int err;

	sites->count = 0;
	err = elf_file_open(path, &file, error, error_size);
	if (err)
		return err;
	err = elf_plt_stub_in(&file, path, symbol, &stub, error, error_size);
	if (!err)
		err = scan_file(&file, path, symbol, stub.address, sites, error, error_size);
	elf_file_close(&file);
	if (!err && sites->count == 0)
		err = error_fail(error, error_size, ENOENT, "%s never calls %s directly", path,
				 symbol);
	if (err)
		sites->count = 0;
	return err;
}
