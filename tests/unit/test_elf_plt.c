// SPDX-License-Identifier: MIT
/*
 * The PLT stub through which a file calls an imported function: in PLT
 * code of each form, and in Debian's libtorch_python.so against objdump's
 * own naming of its stubs.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "library_tools.h"
#include "probe/elf_plt.h"
#include "unit.h"

#define SET_TLS_STATE "_ZN3c1013AutogradState13set_tls_stateES0_"
#define DEBIAN_TORCH_PYTHON "/usr/lib/x86_64-linux-gnu/libtorch_python.so.1.13"

/* A jmp *disp32(%rip) at code[at] whose target is slot, code being at address. */
static void put_jump(uint8_t *code, size_t at, uint64_t address, uint64_t slot)
{
	int32_t displacement = (int32_t)(slot - (address + at + 6));

	code[at] = 0xff;
	code[at + 1] = 0x25;
	memcpy(code + at + 2, &displacement, sizeof(displacement));
}

UNIT_TEST(elf_plt, the_entry_jumping_through_the_slot_is_found)
{
	uint8_t code[64] = { 0 };
	const uint64_t address = 0x1000;

	/* Classic .plt: PLT0, then entries that start with the jump. */
	put_jump(code, 16, address, 0x5000);
	put_jump(code, 32, address, 0x5008);
	put_jump(code, 48, address, 0x5010);
	CU_ASSERT_EQUAL(elf_plt_entry_for_slot(code, sizeof(code), address, 0x5008), 32);
	CU_ASSERT_EQUAL(elf_plt_entry_for_slot(code, sizeof(code), address, 0x5018), -ENOENT);
	/* .plt.sec: endbr64, bnd, then the jump. */
	memset(code, 0, sizeof(code));
	for (size_t entry = 0; entry < sizeof(code); entry += 16) {
		memcpy(code + entry, "\xf3\x0f\x1e\xfa\xf2", 5);
		put_jump(code, entry + 5, address, 0x6000 + entry / 2);
	}
	CU_ASSERT_EQUAL(elf_plt_entry_for_slot(code, sizeof(code), address, 0x6010), 32);
	/* An entry cut short is not read past the code. */
	CU_ASSERT_EQUAL(elf_plt_entry_for_slot(code, 40, address, 0x6010), -ENOENT);
}

UNIT_TEST(elf_plt, debian_torch_pythons_stub_is_objdumps)
{
	struct elf_symbol_location location;
	uint64_t expected;
	char error[256];

	if (access(DEBIAN_TORCH_PYTHON, R_OK) != 0)
		return; /* python3-torch is not installed */
	expected = objdump_plt_stub(DEBIAN_TORCH_PYTHON, SET_TLS_STATE);
	CU_ASSERT_NOT_EQUAL(expected, 0);
	CU_ASSERT_EQUAL(elf_plt_stub_find(DEBIAN_TORCH_PYTHON, SET_TLS_STATE, &location, error,
					  sizeof(error)),
			0);
	CU_ASSERT_EQUAL(location.address, expected);
	/* An ELF file without the PLT relocation (a library that defines it) says so. */
	CU_ASSERT_EQUAL(elf_plt_stub_find(DEBIAN_TORCH_PYTHON, "no_such_function", &location, error,
					  sizeof(error)),
			-ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "through no PLT stub"));
}
