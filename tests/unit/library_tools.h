/* SPDX-License-Identifier: MIT */
/*
 * What binutils (nm, objdump) read in a real library, apart from the code
 * under test: the independent truth the probe-site tests compare with.
 */
#ifndef TCHECK_TESTS_LIBRARY_TOOLS_H
#define TCHECK_TESTS_LIBRARY_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An exported symbol's address and size as nm reads them (0 when absent). */
uint64_t nm_symbol(const char *library, const char *symbol, uint64_t *size);

/* Whether objdump reads the instruction at 'address' as 'mnemonic'. */
bool objdump_instruction_is(const char *library, uint64_t address, const char *mnemonic);

/* Whether the instruction at address is a jmp to symbol or to its PLT stub. */
bool objdump_instruction_jumps_to(const char *library, uint64_t address, const char *symbol);

/*
 * Whether the function at [address, address + size) calls 'symbol', directly
 * or through its PLT entry, as objdump names the call's target.
 */
bool objdump_function_calls(const char *library, uint64_t address, uint64_t size,
			    const char *symbol);

/* The address of the stub objdump names symbol@plt (0 when objdump or the stub is missing). */
uint64_t objdump_plt_stub(const char *library, const char *symbol);

/* The addresses of the calls of symbol@plt in the whole library, at most max; how many. */
size_t objdump_plt_calls(const char *library, const char *symbol, uint64_t *found, size_t max);

#endif /* TCHECK_TESTS_LIBRARY_TOOLS_H */
