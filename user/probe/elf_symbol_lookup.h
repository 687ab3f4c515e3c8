/* SPDX-License-Identifier: MIT */
/*
 * Symbols of any ELF file found by name: one symbol by its exact name (the
 * loader's _dl_debug_state, CPython's _PyRuntime, libtorch's entry points),
 * or every function whose name starts with one of a few prefixes. Nothing
 * is cached. Functions return 0 or a negative errno and fill error with a
 * sentence.
 */
#ifndef TCHECK_ELF_SYMBOL_LOOKUP_H
#define TCHECK_ELF_SYMBOL_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

/* A defined symbol found by its exact name. */
struct elf_symbol_location {
	uint64_t address; /* virtual address in the file */
	uint64_t size;
	uint64_t file_offset; /* of the bytes at address; for a uprobe on a function */
};

/*
 * Looks a defined symbol up by exact name in .dynsym, then .symtab
 * ("_dl_debug_state" in the dynamic loader). -ENOENT when it is absent,
 * -ERANGE when its address has no bytes in the file (.bss).
 */
int elf_symbol_find(const char *path, const char *name, struct elf_symbol_location *location,
		    char *error, size_t error_size);
int elf_symbol_file_offset(const char *path, const char *name, uint64_t *file_offset, char *error,
			   size_t error_size);

/*
 * Calls visit for every defined function symbol of .dynsym and .symtab
 * whose name starts with one of prefixes, with its place in the file; a
 * function named in both tables is visited twice. A non-zero return from
 * visit stops the walk and is returned. -ENODATA when the file has no
 * symbol table.
 */
typedef int (*elf_function_visit_fn)(void *context, const char *name,
				     const struct elf_symbol_location *location);
int elf_functions_with_prefixes(const char *path, const char *const *prefixes, size_t prefix_count,
				elf_function_visit_fn visit, void *context, char *error,
				size_t error_size);

#endif /* TCHECK_ELF_SYMBOL_LOOKUP_H */
