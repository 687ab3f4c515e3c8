/* SPDX-License-Identifier: MIT */
/*
 * The PLT stub through which an x86-64 ELF file calls a function of
 * another library: a uprobe there fires only for that file's calls to it,
 * not for the defining library's own calls.
 */
#ifndef TCHECK_ELF_PLT_H
#define TCHECK_ELF_PLT_H

#include <stddef.h>
#include <stdint.h>

#include "probe/elf_symbol_lookup.h"
#include "probe/elf_tables.h"

/*
 * The stub of 'path' that jumps through the GOT slot its R_X86_64_JUMP_SLOT
 * relocation of 'symbol' fills (in .plt.sec when the file has one, else in
 * .plt): where it starts, its 16 bytes and file offset. 0; -ENOENT when the
 * file does not call the symbol through a PLT; another negative errno with
 * a sentence when the file cannot be read.
 */
int elf_plt_stub_find(const char *path, const char *symbol, struct elf_symbol_location *location,
		      char *error, size_t error_size);

/* The same in a file already open (path names it in sentences). */
int elf_plt_stub_in(struct elf_file *file, const char *path, const char *symbol,
		    struct elf_symbol_location *location, char *error, size_t error_size);

/*
 * Which of 'size' bytes of PLT code at 'address' is the 16-byte entry that
 * jumps through the GOT slot at 'slot' (an indirect jmp through rip, after
 * an endbr64, a bnd prefix, both or neither): its offset in the code, or -ENOENT.
 */
long elf_plt_entry_for_slot(const uint8_t *code, size_t size, uint64_t address, uint64_t slot);

#endif /* TCHECK_ELF_PLT_H */
