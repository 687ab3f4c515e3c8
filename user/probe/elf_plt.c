// SPDX-License-Identifier: MIT
/* Finds the PLT stub through which a file calls an imported function. */
#include "probe/elf_plt.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "probe/elf_tables.h"
#include "probe/library_file.h"
#include "probe/uprobe_entry_site.h"

#define PLT_ENTRY_BYTES 16

long elf_plt_entry_for_slot(const uint8_t *code, size_t size, uint64_t address, uint64_t slot)
{
	for (size_t entry = 0; entry + PLT_ENTRY_BYTES <= size; entry += PLT_ENTRY_BYTES) {
		const uint8_t *bytes = code + entry;
		size_t at = 0;
		int32_t displacement;

		if (uprobe_is_branch_landing_pad(bytes, PLT_ENTRY_BYTES))
			at = UPROBE_BRANCH_LANDING_PAD_SIZE;
		if (bytes[at] == 0xf2)
			at++;					/* bnd */
		if (bytes[at] != 0xff || bytes[at + 1] != 0x25) /* jmp *disp32(%rip) */
			continue;
		memcpy(&displacement, bytes + at + 2, sizeof(displacement));
		if (address + entry + at + 6 + (uint64_t)(int64_t)displacement == slot)
			return (long)entry;
	}
	return -ENOENT;
}

/* The GOT slot of symbol's JUMP_SLOT relocation in the section 'relocations' (SHT_RELA). */
static int jump_slot_of(struct elf_file *file, Elf_Scn *relocations, const char *symbol,
			uint64_t *slot)
{
	GElf_Shdr header;
	struct symbol_table table;
	Elf_Data *data = elf_getdata(relocations, NULL);

	if (!data || !gelf_getshdr(relocations, &header) || header.sh_entsize == 0 ||
	    !symbol_table_open(file, elf_getscn(file->file.elf, header.sh_link), &table))
		return -ENOENT;
	for (size_t i = 0; i < header.sh_size / header.sh_entsize; i++) {
		GElf_Rela relocation;
		GElf_Sym entry;
		const char *name;

		if (!gelf_getrela(data, (int)i, &relocation) ||
		    GELF_R_TYPE(relocation.r_info) != R_X86_64_JUMP_SLOT ||
		    !gelf_getsym(table.symbols, (int)GELF_R_SYM(relocation.r_info), &entry))
			continue;
		name = symbol_table_name(&table, &entry);
		if (name && strcmp(name, symbol) == 0) {
			*slot = relocation.r_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/*
 * The PLT section's entry that jumps through slot, into location. The
 * stubs are read from the file, not its mapping, which shows other
 * tracers' breakpoints (library_file_read_new).
 */
static int find_in_plt(const struct elf_file *file, const char *path, Elf_Scn *plt, uint64_t slot,
		       struct elf_symbol_location *location)
{
	char error[256];
	GElf_Shdr header;
	uint8_t *code;
	long entry;

	if (!plt || !gelf_getshdr(plt, &header) || header.sh_type != SHT_PROGBITS ||
	    library_file_read_new(file->file.fd, path, header.sh_offset, header.sh_size, &code,
				  error, sizeof(error)))
		return -ENOENT;
	entry = elf_plt_entry_for_slot(code, header.sh_size, header.sh_addr, slot);
	free(code);
	if (entry < 0)
		return -ENOENT;
	location->address = header.sh_addr + (uint64_t)entry;
	location->size = PLT_ENTRY_BYTES;
	location->file_offset = header.sh_offset + (uint64_t)entry;
	return 0;
}

int elf_plt_stub_in(struct elf_file *file, const char *path, const char *symbol,
		    struct elf_symbol_location *location, char *error, size_t error_size)
{
	Elf_Scn *plt = NULL, *plt_sec = NULL, *rela_plt = NULL;
	size_t names;
	uint64_t slot = 0;
	int err;

	if (elf_getshdrstrndx(file->file.elf, &names) != 0)
		return error_fail(error, error_size, ENOEXEC, "%s is a damaged ELF file: %s", path,
				  elf_errmsg(-1));
	for (Elf_Scn *section = elf_nextscn(file->file.elf, NULL); section;
	     section = elf_nextscn(file->file.elf, section)) {
		GElf_Shdr header;
		const char *name;

		if (!gelf_getshdr(section, &header))
			continue;
		name = elf_strptr(file->file.elf, names, header.sh_name);
		if (!name)
			continue;
		if (strcmp(name, ".plt") == 0)
			plt = section;
		else if (strcmp(name, ".plt.sec") == 0)
			plt_sec = section;
		else if (strcmp(name, ".rela.plt") == 0 && header.sh_type == SHT_RELA)
			rela_plt = section;
	}
	err = rela_plt ? jump_slot_of(file, rela_plt, symbol, &slot) : -ENOENT;
	if (!err)
		err = find_in_plt(file, path, plt_sec ? plt_sec : plt, slot, location);
	if (err)
		return error_fail(error, error_size, ENOENT, "%s calls %s through no PLT stub",
				  path, symbol);
	return 0;
}

int elf_plt_stub_find(const char *path, const char *symbol, struct elf_symbol_location *location,
		      char *error, size_t error_size)
{
	struct elf_file file;
	int err;

	err = elf_file_open(path, &file, error, error_size);
	if (err)
		return err;
	err = elf_plt_stub_in(&file, path, symbol, location, error, error_size);
	elf_file_close(&file);
	return err;
}
