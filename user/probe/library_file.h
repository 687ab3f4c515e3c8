/* SPDX-License-Identifier: MIT */
/*
 * The one way the tracer opens a library or executable to read it (symbols,
 * DWARF, code bytes, the interpreter's tables): read-only, close-on-exec, and
 * one sentence per failure that says what to do ("run tcheck-bpf as root").
 */
#ifndef TCHECK_LIBRARY_FILE_H
#define TCHECK_LIBRARY_FILE_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* A file opened for its ELF tables (mapped: only the pages touched are read). */
struct library_elf {
	int fd;
	Elf *elf;
};

/* Opens path for reading. Returns the descriptor, or a negative errno with a sentence. */
int library_file_open(const char *path, char *error, size_t error_size);

/* Reads size bytes at offset. Returns 0, or a negative errno with a sentence. */
int library_file_read_at(const char *path, uint64_t offset, void *buffer, size_t size, char *error,
			 size_t error_size);

/*
 * size bytes at offset of the open file fd (path names it in sentences),
 * into a new buffer the caller frees. 0, or a negative errno with a
 * sentence. Machine code is read so, never through a file's ELF mapping:
 * the kernel writes every uprobe's breakpoint into each mapping of the file
 * that may become executable, a read-only one included, so mapped code
 * shows int3 wherever another tracer probes it.
 */
int library_file_read_new(int fd, const char *path, uint64_t offset, size_t size, uint8_t **buffer,
			  char *error, size_t error_size);

/* Opens path as an ELF file. Returns 0, or a negative errno (-ENOEXEC: not ELF). */
int library_file_open_elf(const char *path, struct library_elf *file, char *error,
			  size_t error_size);
void library_file_close_elf(struct library_elf *file);

#endif /* TCHECK_LIBRARY_FILE_H */
