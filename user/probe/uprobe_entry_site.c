// SPDX-License-Identifier: MIT
/* Chooses an emulated instruction near a function's start for its entry uprobe. */
#include "probe/uprobe_entry_site.h"

#include "probe/library_file.h"

#define REX_B 0x41
#define MODRM_MOD(byte) ((byte) >> 6)
#define MODRM_REG(byte) (((byte) >> 3) & 7)
#define MODRM_RM(byte) ((byte)&7)
#define CMP_EXTENSION 7
#define RM_SIB 4
#define RM_RIP_RELATIVE 5

bool uprobe_instruction_is_emulated(const uint8_t *code, size_t size)
{
	if (size == 0)
		return false;
	/* push of a general register, with or without the REX.B prefix of r8-r15 */
	if (code[0] >= 0x50 && code[0] <= 0x57)
		return true;
	if (code[0] == REX_B && size > 1 && code[1] >= 0x50 && code[1] <= 0x57)
		return true;
	/* nop, call rel32, jmp rel32 and rel8, short conditional jumps */
	if (code[0] == 0x90 || code[0] == 0xe8 || code[0] == 0xe9 || code[0] == 0xeb ||
	    (code[0] >= 0x70 && code[0] <= 0x7f))
		return true;
	/* near conditional jumps */
	return code[0] == 0x0f && size > 1 && code[1] >= 0x80 && code[1] <= 0x8f;
}

/*
 * The length of "cmp $imm8, memory" (opcodes 0x80 and 0x83 with the /7
 * extension, an optional REX prefix), 0 for anything else. The addressing
 * forms with a SIB byte or RIP-relative are left out: they are not the
 * short guards this looks for.
 */
static size_t compare_length(const uint8_t *code, size_t size)
{
	size_t prefix = 0, displacement;
	uint8_t modrm;

	if (size > 0 && (code[0] & 0xf0) == 0x40)
		prefix = 1;
	if (size < prefix + 3 || (code[prefix] != 0x80 && code[prefix] != 0x83))
		return 0;
	modrm = code[prefix + 1];
	if (MODRM_REG(modrm) != CMP_EXTENSION || MODRM_RM(modrm) == RM_SIB)
		return 0;
	switch (MODRM_MOD(modrm)) {
	case 0:
		if (MODRM_RM(modrm) == RM_RIP_RELATIVE)
			return 0;
		displacement = 0;
		break;
	case 1:
		displacement = 1;
		break;
	case 2:
		displacement = 4;
		break;
	default:
		displacement = 0; /* a register operand */
		break;
	}
	return prefix + 2 + displacement + 1;
}

bool uprobe_is_branch_landing_pad(const uint8_t *code, size_t size)
{
	return size >= UPROBE_BRANCH_LANDING_PAD_SIZE && code[0] == 0xf3 && code[1] == 0x0f &&
	       code[2] == 0x1e && code[3] == 0xfa;
}

int uprobe_cheap_entry_offset(const uint8_t *code, size_t size)
{
	size_t length;
	int after_pad;

	/* The pad changes no register: what follows it sees the entry's registers. */
	if (uprobe_is_branch_landing_pad(code, size)) {
		after_pad = uprobe_cheap_entry_offset(code + UPROBE_BRANCH_LANDING_PAD_SIZE,
						      size - UPROBE_BRANCH_LANDING_PAD_SIZE);
		return after_pad < 0 ? -1 : after_pad + UPROBE_BRANCH_LANDING_PAD_SIZE;
	}
	if (uprobe_instruction_is_emulated(code, size))
		return 0;
	length = compare_length(code, size);
	if (length == 0 || length >= size)
		return -1;
	if (code[length] >= 0x70 && code[length] <= 0x7f)
		return (int)length;
	if (code[length] == 0x0f && length + 1 < size && code[length + 1] >= 0x80 &&
	    code[length + 1] <= 0x8f)
		return (int)length;
	return -1;
}

uint64_t uprobe_cheap_entry_file_offset(const char *path, uint64_t file_offset)
{
	uint8_t code[16];
	int offset;

	if (library_file_read_at(path, file_offset, code, sizeof(code), NULL, 0))
		return file_offset;
	offset = uprobe_cheap_entry_offset(code, sizeof(code));
	return offset > 0 ? file_offset + (uint64_t)offset : file_offset;
}
