/* SPDX-License-Identifier: MIT */
/*
 * Where an x86-64 ELF file calls a function of another library: its direct
 * calls (call rel32, or jmp rel32 for a tail call) of the function's PLT
 * stub. A uprobe on such a call fires for that file's calls only, before
 * the call, with the arguments already in their registers, and the kernel
 * emulates the call (or jump) instead of single-stepping it. Each call
 * found in the code's bytes is checked to be an instruction of the function
 * holding it (decoded from the function's start, which .eh_frame gives),
 * since a probe inside an instruction would corrupt the process.
 */
#ifndef TCHECK_CALL_SITES_H
#define TCHECK_CALL_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* More calls of one function than this are not a guard's few: refused (-E2BIG). */
#define CALL_SITES_MAX 32

struct call_sites {
	uint64_t addresses[CALL_SITES_MAX];
	uint64_t file_offsets[CALL_SITES_MAX]; /* where a uprobe attaches */
	size_t count;
};

/*
 * Every call of symbol's PLT stub in path's executable sections. 0 with at
 * least one call; -ENOENT when the file calls it through no PLT stub or
 * nowhere directly; -E2BIG over CALL_SITES_MAX; -EILSEQ when a call's
 * bytes are not found to start an instruction; another negative errno when
 * the file cannot be read. Each failure fills error with a sentence.
 */
int call_sites_find(const char *path, const char *symbol, struct call_sites *sites, char *error,
		    size_t error_size);

/*
 * The candidates for call rel32 and jmp rel32 instructions to target in size
 * bytes of code at address: every byte 0xe8 or 0xe9 whose next four bytes
 * reach it.
 * Fills found with at most max addresses; returns how many there are.
 */
size_t call_sites_scan(const uint8_t *code, size_t size, uint64_t address, uint64_t target,
		       uint64_t *found, size_t max);

/*
 * Whether decoding the code at address (a function's start, its bytes in
 * code) instruction by instruction reaches site exactly, and the
 * instruction there is a call of target or a jump to it.
 */
bool call_sites_is_instruction(const uint8_t *code, size_t size, uint64_t address, uint64_t site,
			       uint64_t target);

#endif /* TCHECK_CALL_SITES_H */
