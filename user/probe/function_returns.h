/* SPDX-License-Identifier: MIT */
/*
 * The instructions a function returns by, for probes that see it end
 * without a return probe: a uretprobe replaces the return address on the
 * stack with the kernel's trampoline, and a C++ exception thrown through
 * that frame then finds no unwind information and aborts the process. A
 * probe on each "ret" of the function changes nothing on the stack.
 *
 * The function is decoded from its first byte to its last (x86-64, with
 * Capstone); compilers put no data among x86-64 code, so every instruction
 * found is one the function runs. It is refused, with the reason, when
 * bytes do not decode or it has no "ret". Jumps out of it are counted, not
 * followed: most go to the part of it the compiler moved away for unlikely
 * paths (throwing an exception, landing pads), and a tail call or a return
 * from such a part is an end the probes miss; the daemon counts the starts
 * it saw end, so such misses are reported, not hidden.
 */
#ifndef TCHECK_FUNCTION_RETURNS_H
#define TCHECK_FUNCTION_RETURNS_H

#include <stddef.h>
#include <stdint.h>

#define FUNCTION_RETURNS_MAX 16

struct function_returns {
	size_t count;
	uint64_t offsets[FUNCTION_RETURNS_MAX]; /* from the function's start */
	size_t jumps_out; /* jumps and branches to targets outside it, or not known */
};

/*
 * Decodes 'size' bytes of code (the function at 'address') and finds its
 * returns. 0 on success; -EINVAL (undecodable), -ENOENT (no ret), -E2BIG
 * (more returns than kept), with the reason in error.
 */
int function_returns_decode(const uint8_t *code, size_t size, uint64_t address,
			    struct function_returns *returns, char *error, size_t error_size);

/* The same for the function at file_offset in the ELF file at path (its bytes read there). */
int function_returns_find(const char *path, uint64_t file_offset, uint64_t address, uint64_t size,
			  struct function_returns *returns, char *error, size_t error_size);

#endif /* TCHECK_FUNCTION_RETURNS_H */
