/* SPDX-License-Identifier: MIT */
/*
 * An ELF file opened for its symbol tables: its identity on disk (for
 * caches), its loadable segments (to turn a symbol's address into the file
 * offset a uprobe attaches at) and its .dynsym and .symtab, walked without
 * a lookup per name. The NCCL scan (elf_symbols.c) and the lookups by name
 * (elf_symbol_lookup.c) read files through this. Functions return 0 or a
 * negative errno and fill error with a sentence.
 */
#ifndef TCHECK_ELF_TABLES_H
#define TCHECK_ELF_TABLES_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "probe/library_file.h"

/* A file is the same file while its device, inode, size and mtime are. */
struct elf_file_identity {
	dev_t device;
	ino_t inode;
	off_t size;
	struct timespec mtime;
};

/* An open ELF file and the parts every lookup needs. */
struct elf_file {
	struct library_elf file;
	GElf_Phdr *loads; /* PT_LOAD headers */
	size_t load_count;
	Elf_Scn *dynsym;
	Elf_Scn *symtab;
};

/* A symbol table with its string table. */
struct symbol_table {
	Elf_Data *symbols;
	size_t count;
	const char *strings;
	size_t strings_size;
};

/* Whether two identities name the same file, unchanged. */
bool elf_file_identity_same(const struct elf_file_identity *a, const struct elf_file_identity *b);
/* The identity of a regular file; -ENOEXEC for anything else. */
int elf_file_stat(const char *path, struct elf_file_identity *identity, char *error,
		  size_t error_size);
/* Opens path as an ELF file (-ENOEXEC: it is not one). */
int elf_file_open(const char *path, struct elf_file *file, char *error, size_t error_size);
/*
 * Opens a file that has a symbol table (-ENODATA: stripped); 'wanted' names
 * what was looked for, for the sentence.
 */
int elf_file_open_with_symbols(const char *path, struct elf_file *file, const char *wanted,
			       char *error, size_t error_size);
void elf_file_close(struct elf_file *file);
/* The file offset of the bytes at a virtual address, from the PT_LOAD holding them. */
bool elf_file_offset_of(const struct elf_file *file, uint64_t address, uint64_t *file_offset);

/* False when the section is absent or not a readable symbol table. */
bool symbol_table_open(struct elf_file *file, Elf_Scn *section, struct symbol_table *table);
/* The symbol's name, or NULL when its offset leaves the string table. */
const char *symbol_table_name(const struct symbol_table *table, const GElf_Sym *symbol);

#endif /* TCHECK_ELF_TABLES_H */
