// SPDX-License-Identifier: MIT
/*
 * Where a torch's autograd state keeps the grad mode, read from the code of
 * c10::GradMode::set_enabled as Debian's torch builds compile it.
 */
#include <errno.h>
#include <stdint.h>

#include "python/torch_grad_mode.h"
#include "unit.h"

/* torch 1.13 (bookworm): the state is its flags' byte, at the pointer itself. */
static const uint8_t set_enabled_1_13[] = {
	0x53,			      /* push %rbx */
	0x89, 0xfb,		      /* mov %edi,%ebx */
	0x83, 0xe3, 0x01,	      /* and $0x1,%ebx */
	0xe8, 0x15, 0x29, 0xff, 0xff, /* call get_tls_state */
	0x0f, 0xb6, 0x38,	      /* movzbl (%rax),%edi */
	0x83, 0xe7, 0xfe,	      /* and $0xfffffffe,%edi */
	0x09, 0xdf,		      /* or %ebx,%edi */
	0x40, 0x88, 0x38,	      /* mov %dil,(%rax) */
	0x5b, 0xc3,		      /* pop %rbx; ret */
};

/* torch 2.14 (sid): the flags' byte after 0x18 bytes of other state. */
static const uint8_t set_enabled_2_14[] = {
	0xf3, 0x0f, 0x1e, 0xfa,	      /* endbr64 */
	0x53,			      /* push %rbx */
	0x89, 0xfb,		      /* mov %edi,%ebx */
	0x83, 0xe3, 0x01,	      /* and $0x1,%ebx */
	0xe8, 0xa1, 0xcd, 0xfb, 0xff, /* call get_tls_state */
	0x0f, 0xb6, 0x78, 0x18,	      /* movzbl 0x18(%rax),%edi */
	0x83, 0xe7, 0xfe,	      /* and $0xfffffffe,%edi */
	0x09, 0xdf,		      /* or %ebx,%edi */
	0x40, 0x88, 0x78, 0x18,	      /* mov %dil,0x18(%rax) */
	0x5b, 0xc3,		      /* pop %rbx; ret */
};

UNIT_TEST(torch_grad_mode, the_flags_byte_is_found_at_its_offset)
{
	uint32_t offset = 99;

	CU_ASSERT_EQUAL(
		torch_grad_mode_state_offset(set_enabled_1_13, sizeof(set_enabled_1_13), &offset),
		0);
	CU_ASSERT_EQUAL(offset, 0);
	CU_ASSERT_EQUAL(
		torch_grad_mode_state_offset(set_enabled_2_14, sizeof(set_enabled_2_14), &offset),
		0);
	CU_ASSERT_EQUAL(offset, 0x18);
}

UNIT_TEST(torch_grad_mode, a_32_bit_displacement_is_read_whole)
{
	uint8_t code[] = { 0xe8, 0,    0,    0,	   0,	       /* call */
			   0x0f, 0xb6, 0xb8, 0x20, 0x01, 0, 0, /* movzbl 0x120(%rax),%edi */
			   0x83, 0xe7, 0xfe };
	uint32_t offset = 0;

	CU_ASSERT_EQUAL(torch_grad_mode_state_offset(code, sizeof(code), &offset), 0);
	CU_ASSERT_EQUAL(offset, 0x120);
}

UNIT_TEST(torch_grad_mode, code_of_another_form_says_so)
{
	/* The mode in another bit than bit 0: not the layout known. */
	uint8_t other_bit[sizeof(set_enabled_2_14)];
	/* The byte loaded before the state's look-up: not from its pointer. */
	const uint8_t before_call[] = { 0x0f, 0xb6, 0x38, 0x83, 0xe7, 0xfe, 0xe8, 0, 0, 0, 0 };
	uint32_t offset = 7;

	for (size_t i = 0; i < sizeof(other_bit); i++)
		other_bit[i] = set_enabled_2_14[i];
	other_bit[21] = 0xfd; /* and $0xfffffffd */
	CU_ASSERT_EQUAL(torch_grad_mode_state_offset(other_bit, sizeof(other_bit), &offset),
			-ENOENT);
	CU_ASSERT_EQUAL(torch_grad_mode_state_offset(before_call, sizeof(before_call), &offset),
			-ENOENT);
	/* Cut before the and: not known either. */
	CU_ASSERT_EQUAL(torch_grad_mode_state_offset(set_enabled_1_13, 15, &offset), -ENOENT);
	CU_ASSERT_EQUAL(offset, 7);
}
