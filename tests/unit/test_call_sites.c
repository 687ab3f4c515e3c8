// SPDX-License-Identifier: MIT
/*
 * A file's calls of an imported function: in code where a call's bytes also
 * hide inside another instruction, and in Debian's libtorch_python.so
 * against objdump's own list of its calls of set_tls_state@plt.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "library_tools.h"
#include "probe/call_sites.h"
#include "unit.h"

#define SET_TLS_STATE "_ZN3c1013AutogradState13set_tls_stateES0_"
#define DEBIAN_TORCH_PYTHON "/usr/lib/x86_64-linux-gnu/libtorch_python.so.1.13"

/* A call rel32 (0xe8) or jmp rel32 (0xe9) at code[at] to target, code being at address. */
static void put_branch(uint8_t *code, size_t at, uint8_t opcode, uint64_t address, uint64_t target)
{
	int32_t displacement = (int32_t)(target - (address + at + 5));

	code[at] = opcode;
	memcpy(code + at + 1, &displacement, sizeof(displacement));
}

/*
 * push %rbp; mov %edi,%eax; call target; then "mov $imm64, %rax" whose
 * immediate holds a jump's bytes reaching target too; pop %rbp; jmp target
 * (a tail call).
 */
static size_t fake_function(uint8_t *code, uint64_t address, uint64_t target)
{
	static const uint8_t head[] = { 0x55, 0x89, 0xf8 };
	size_t at = 0;

	memcpy(code, head, sizeof(head));
	at += sizeof(head);
	put_branch(code, at, 0xe8, address, target); /* the call, at +3 */
	at += 5;
	code[at++] = 0x48; /* rex.w */
	code[at++] = 0xb8; /* mov $imm64, %rax: 8 bytes of immediate follow */
	put_branch(code, at, 0xe9, address, target); /* at +10, inside the mov */
	code[at + 5] = code[at + 6] = code[at + 7] = 0;
	at += 8;
	code[at++] = 0x5d;			     /* pop %rbp */
	put_branch(code, at, 0xe9, address, target); /* the tail call, at +19 */
	return at + 5;
}

UNIT_TEST(call_sites, a_branch_hidden_in_an_immediate_is_no_site)
{
	const uint64_t address = 0x401000, target = 0x400500;
	uint64_t found[4];
	uint8_t code[64];
	size_t size = fake_function(code, address, target);

	/* The bytes alone give all three. */
	CU_ASSERT_EQUAL(call_sites_scan(code, size, address, target, found, 4), 3);
	CU_ASSERT_EQUAL(found[0], address + 3);
	CU_ASSERT_EQUAL(found[1], address + 10);
	CU_ASSERT_EQUAL(found[2], address + 19);
	/* Decoding from the function's start keeps the call and the tail call only. */
	CU_ASSERT_TRUE(call_sites_is_instruction(code, size, address, address + 3, target));
	CU_ASSERT_FALSE(call_sites_is_instruction(code, size, address, address + 10, target));
	CU_ASSERT_TRUE(call_sites_is_instruction(code, size, address, address + 19, target));
	/* A call of another function, and a site outside the code, are not. */
	CU_ASSERT_FALSE(call_sites_is_instruction(code, size, address, address + 3, target + 16));
	CU_ASSERT_FALSE(call_sites_is_instruction(code, size, address, address + size, target));
	/* More candidates than room: all counted, the first max kept. */
	CU_ASSERT_EQUAL(call_sites_scan(code, size, address, target, found, 1), 3);
	CU_ASSERT_EQUAL(found[0], address + 3);
	/* A call whose last bytes the code cuts off is not read past it. */
	CU_ASSERT_EQUAL(call_sites_scan(code, 7, address, target, found, 4), 0);
}

UNIT_TEST(call_sites, debian_torch_pythons_calls_are_objdumps)
{
	uint64_t expected[CALL_SITES_MAX];
	struct call_sites sites;
	size_t count;
	char error[512];

	if (access(DEBIAN_TORCH_PYTHON, R_OK) != 0)
		return; /* python3-torch is not installed */
	count = objdump_plt_calls(DEBIAN_TORCH_PYTHON, SET_TLS_STATE, expected, CALL_SITES_MAX);
	CU_ASSERT_TRUE(count > 0);
	CU_ASSERT_EQUAL_FATAL(
		call_sites_find(DEBIAN_TORCH_PYTHON, SET_TLS_STATE, &sites, error, sizeof(error)),
		0);
	CU_ASSERT_EQUAL_FATAL(sites.count, count);
	for (size_t i = 0; i < count; i++) {
		CU_ASSERT_EQUAL(sites.addresses[i], expected[i]);
		/* Its text is mapped at file offset = address: a call's offset is its address. */
		CU_ASSERT_EQUAL(sites.file_offsets[i], expected[i]);
	}
	/* A function it imports through a PLT and never calls directly, or does not import. */
	CU_ASSERT_EQUAL(call_sites_find(DEBIAN_TORCH_PYTHON, "no_such_function", &sites, error,
					sizeof(error)),
			-ENOENT);
	CU_ASSERT_EQUAL(sites.count, 0);
}
