/* SPDX-License-Identifier: MIT */
/*
 * Where the NCCL API lives in an ELF file: which functions of the table in
 * nccl_api.c it defines, at which file offsets a uprobe attaches to them,
 * whether it is libnccl itself or a library NCCL is linked into. Results
 * are cached per (device, inode, mtime), so eight ranks mapping the same
 * library cost one parse. Functions return 0 or a negative errno and fill
 * error with a sentence.
 */
#ifndef TCHECK_ELF_SYMBOLS_H
#define TCHECK_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#define NCCL_SYMBOL_MAX_NAMES 4

/*
 * One probe site: every NCCL symbol at one address. "ncclX" is a weak
 * alias of the strong "pncclX", so both names share one entry and one
 * uprobe.
 */
struct nccl_symbol {
	int function_index;   /* into nccl_api.c's table (nccl_function_at) */
	uint64_t file_offset; /* what a uprobe attaches at */
	uint64_t address;     /* the symbol's virtual address in the file */
	uint64_t size;
	size_t name_count;
	char *names[NCCL_SYMBOL_MAX_NAMES]; /* every table name seen at this address */
};

struct nccl_library {
	char *path;
	char build_id[129];	     /* hex of the NT_GNU_BUILD_ID note, "" when there is none */
	struct nccl_symbol *symbols; /* in address order */
	size_t symbol_count;
};

/*
 * Finds every NCCL API function an ELF file defines, in .dynsym and
 * .symtab. Fails with -ENOENT (no such file), -ENOEXEC (not ELF),
 * -ENODATA (no symbol table: stripped) or -ENOMSG (no NCCL function);
 * free the result with nccl_library_free.
 */
int nccl_library_scan(const char *path, struct nccl_library **library, char *error,
		      size_t error_size);
void nccl_library_free(struct nccl_library *library);

/* The probe site of a table function, or NULL when the file lacks it. */
const struct nccl_symbol *nccl_library_find(const struct nccl_library *library,
					    size_t function_index);

/*
 * Writes the table functions the library lacks ("ncclAlltoAll, ncclGather")
 * into buffer; returns how many there are.
 */
size_t nccl_library_missing(const struct nccl_library *library, char *buffer, size_t size);

/*
 * Whether an ELF file defines any NCCL API function: 1 yes, 0 no (files
 * that are not ELF included), negative when it cannot be read. Reads only
 * the symbol tables, the dynamic one first, and is cached like the scan.
 */
int elf_file_has_nccl(const char *path, char *error, size_t error_size);

/* Drops every cached result (for tests and for long-running daemons). */
void elf_symbols_cache_clear(void);

#endif /* TCHECK_ELF_SYMBOLS_H */
