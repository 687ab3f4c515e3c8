// SPDX-License-Identifier: MIT
/* Finds the return instructions of a function by decoding it (Capstone, x86-64). */
#include "probe/function_returns.h"

#include <capstone/capstone.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "probe/library_file.h"

/* The largest function read: a backward pass's entry point is a few kilobytes. */
#define FUNCTION_BYTES_MAX (1u << 20)

static bool is_return(unsigned id)
{
	return id == X86_INS_RET || id == X86_INS_RETF || id == X86_INS_RETFQ;
}

/* Whether a jump (any kind) has a target known and inside [address, address + size). */
static bool jumps_inside(const cs_insn *instruction, uint64_t address, size_t size)
{
	const cs_x86 *x86 = &instruction->detail->x86;

	if (x86->op_count != 1 || x86->operands[0].type != X86_OP_IMM)
		return false;
	return (uint64_t)x86->operands[0].imm >= address &&
	       (uint64_t)x86->operands[0].imm < address + size;
}

/* Whether an instruction can transfer control anywhere but the next one or a ret. */
static bool is_jump(const cs_insn *instruction)
{
	for (uint8_t i = 0; i < instruction->detail->groups_count; i++)
		if (instruction->detail->groups[i] == CS_GRP_JUMP)
			return true;
	return false;
}

int function_returns_decode(const uint8_t *code, size_t size, uint64_t address,
			    struct function_returns *returns, char *error, size_t error_size)
{
	const uint8_t *next = code;
	uint64_t at = address;
	size_t left = size;
	cs_insn *instruction;
	int result = 0;
	csh handle;

	returns->count = 0;
	returns->jumps_out = 0;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &handle) != CS_ERR_OK)
		return error_fail(error, error_size, EINVAL, "the x86-64 decoder could not start");
	cs_option(handle, CS_OPT_DETAIL, CS_OPT_ON);
	instruction = cs_malloc(handle);
	if (!instruction) {
		cs_close(&handle);
		return error_fail(error, error_size, ENOMEM, "out of memory");
	}
	while (left > 0 && !result) {
		uint64_t offset = at - address;

		if (!cs_disasm_iter(handle, &next, &left, &at, instruction)) {
			result = error_fail(error, error_size, EINVAL,
					    "the code at +0x%llx does not decode",
					    (unsigned long long)offset);
			break;
		}
		if (is_return(instruction->id)) {
			if (returns->count == FUNCTION_RETURNS_MAX)
				result = error_fail(error, error_size, E2BIG,
						    "it returns in more than %d places",
						    FUNCTION_RETURNS_MAX);
			else
				returns->offsets[returns->count++] = offset;
		} else if (is_jump(instruction) && !jumps_inside(instruction, address, size)) {
			returns->jumps_out++;
		}
	}
	if (!result && returns->count == 0)
		result = error_fail(error, error_size, ENOENT, "it has no return instruction");
	cs_free(instruction, 1);
	cs_close(&handle);
	return result;
}

int function_returns_find(const char *path, uint64_t file_offset, uint64_t address, uint64_t size,
			  struct function_returns *returns, char *error, size_t error_size)
{
	uint8_t *code;
	int result;

	returns->count = 0;
	if (size == 0 || size > FUNCTION_BYTES_MAX)
		return error_fail(error, error_size, EINVAL, "its size (%llu bytes) is not usable",
				  (unsigned long long)size);
	code = malloc(size);
	if (!code)
		return error_fail(error, error_size, ENOMEM,
				  "out of memory for the %llu bytes of a function of %s",
				  (unsigned long long)size, path);
	result = library_file_read_at(path, file_offset, code, size, error, error_size);
	if (result == 0)
		result = function_returns_decode(code, size, address, returns, error, error_size);
	free(code);
	return result;
}
