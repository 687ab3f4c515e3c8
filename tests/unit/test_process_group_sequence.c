// SPDX-License-Identifier: MIT
/*
 * Tests of finding where a c10d process group keeps its sequence number
 * from the machine code of getSequenceNumberForGroup (the bytes of Debian's
 * torch 1.13, 2.6 and 2.14 and of a CUDA torch 2.6, as objdump shows them),
 * and of reading a stack that ends at a guard region.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/remote_memory.h"
#include "record/process_group_sequence.h"
#include "unit.h"

UNIT_TEST(process_group_sequence, reads_a_member_loaded_by_torch_2)
{
	/* ProcessGroupGloo 2.6: endbr64; mov 0x1c0(%rdi),%rax; ret */
	static const uint8_t gloo_2_6[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x87,
					    0xc0, 0x01, 0x00, 0x00, 0xc3, 0x0f, 0x1f };
	/* ProcessGroupGloo 2.14: mov 0x1e8(%rdi),%rax */
	static const uint8_t gloo_2_14[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b,
					     0x87, 0xe8, 0x01, 0x00, 0x00, 0xc3 };
	/* ProcessGroupNCCL 2.6 (CUDA build): mov 0x448(%rdi),%rax */
	static const uint8_t nccl_2_6[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b,
					    0x87, 0x48, 0x04, 0x00, 0x00, 0xc3 };
	/* A short displacement, without endbr64: mov 0x40(%rdi),%rax; ret */
	static const uint8_t short_form[] = { 0x48, 0x8b, 0x47, 0x40, 0xc3 };
	struct c10d_sequence_layout layout;

	CU_ASSERT_EQUAL_FATAL(c10d_sequence_layout_decode(gloo_2_6, sizeof(gloo_2_6), &layout), 0);
	CU_ASSERT_EQUAL(layout.value_offset, 0x1c0);
	CU_ASSERT_EQUAL(layout.set_flag_offsets[0], 0);
	CU_ASSERT_EQUAL_FATAL(c10d_sequence_layout_decode(gloo_2_14, sizeof(gloo_2_14), &layout),
			      0);
	CU_ASSERT_EQUAL(layout.value_offset, 0x1e8);
	CU_ASSERT_EQUAL_FATAL(c10d_sequence_layout_decode(nccl_2_6, sizeof(nccl_2_6), &layout), 0);
	CU_ASSERT_EQUAL(layout.value_offset, 0x448);
	CU_ASSERT_EQUAL_FATAL(c10d_sequence_layout_decode(short_form, sizeof(short_form), &layout),
			      0);
	CU_ASSERT_EQUAL(layout.value_offset, 0x40);
}

UNIT_TEST(process_group_sequence, reads_torch_1_13s_optional_sequence_number)
{
	/*
	 * cmpb $0x0,0x20(%rdi); jne +10; xor %eax,%eax; ret; nopl 0x0(%rax);
	 * add $0x28,%rdi; jmp SequenceNum::get
	 */
	static const uint8_t gloo_1_13[] = { 0x80, 0x7f, 0x20, 0x00, 0x75, 0x0a, 0x31, 0xc0,
					     0xc3, 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00,
					     0x48, 0x83, 0xc7, 0x28, 0xe9, 0x17, 0x18, 0x3d };
	struct c10d_sequence_layout layout;

	CU_ASSERT_EQUAL_FATAL(c10d_sequence_layout_decode(gloo_1_13, sizeof(gloo_1_13), &layout),
			      0);
	CU_ASSERT_EQUAL(layout.set_flag_offsets[0], 0x20);
	CU_ASSERT_EQUAL(layout.set_flag_offsets[1], 0x28);
	CU_ASSERT_EQUAL(layout.value_offset, 0x30);
	/* Cut short before the jump: not a form known here. */
	CU_ASSERT_EQUAL(c10d_sequence_layout_decode(gloo_1_13, 18, &layout), -ENOENT);
}

UNIT_TEST(process_group_sequence, refuses_code_of_another_form)
{
	/* ProcessGroupGloo 2.14's nextTag: push %rbx first, a call, then the load. */
	static const uint8_t other[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0x48, 0x89, 0xfb, 0xe8 };
	/* A load into another register, or one not followed by ret. */
	static const uint8_t other_register[] = { 0x48, 0x8b, 0x97, 0xc0, 0x01, 0x00, 0x00, 0xc3 };
	static const uint8_t no_return[] = { 0x48, 0x8b, 0x87, 0xc0, 0x01, 0x00, 0x00, 0x90 };
	struct c10d_sequence_layout layout;

	CU_ASSERT_EQUAL(c10d_sequence_layout_decode(other, sizeof(other), &layout), -ENOENT);
	CU_ASSERT_EQUAL(
		c10d_sequence_layout_decode(other_register, sizeof(other_register), &layout),
		-ENOENT);
	CU_ASSERT_EQUAL(c10d_sequence_layout_decode(no_return, sizeof(no_return), &layout),
			-ENOENT);
	CU_ASSERT_EQUAL(c10d_sequence_layout_decode(other, 0, &layout), -ENOENT);
}

/* A stack whose top meets a page that cannot be read: the bytes before it are the stack. */
UNIT_TEST(process_group_sequence, finds_the_rank_a_base_constructor_stores)
{
	/* c10d::Backend::Backend(int, int), torch 2.14: mov %esi,0x10(%rdi); mov %edx,0x14(%rdi) */
	static const uint8_t backend_2_14[] = {
		0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x83, 0xec, 0x48, 0x48, 0x8b, 0x05, 0xf1, 0x39,
		0x8c, 0x0a, 0x48, 0x89, 0x5c, 0x24, 0x38, 0x48, 0x83, 0xc0, 0x10, 0x64, 0x48,
		0x8b, 0x1c, 0x25, 0x28, 0x00, 0x00, 0x00, 0x48, 0x89, 0x5c, 0x24, 0x28, 0x48,
		0x89, 0xfb, 0x48, 0xc7, 0x47, 0x08, 0x00, 0x00, 0x00, 0x00, 0x48, 0x89, 0x07,
		0x89, 0x77, 0x10, 0x89, 0x57, 0x14, 0xe8, 0x71, 0x52, 0xce, 0xf9,
	};
	/* c10d::ProcessGroup::ProcessGroup(int, int), torch 1.13: 0x18 and 0x1c */
	static const uint8_t process_group_1_13[] = {
		0x41, 0x54, 0x66, 0x0f, 0xef, 0xc0, 0x55, 0x53, 0x48, 0x89, 0xfb, 0x48,
		0x83, 0xec, 0x40, 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00,
		0x48, 0x89, 0x44, 0x24, 0x38, 0x31, 0xc0, 0x48, 0x8b, 0x05, 0x7a, 0x85,
		0xdf, 0x02, 0x89, 0x77, 0x18, 0x89, 0x57, 0x1c, 0x48, 0x83, 0xc0, 0x10,
	};
	/* c10d::Backend::Backend(int, int), torch 1.13: the size stored after another store */
	static const uint8_t backend_1_13[] = {
		0xc6, 0x47, 0x18, 0x00, 0xc6, 0x47, 0x20, 0x00, 0x48, 0x83, 0xc0, 0x10, 0x89,
		0x77, 0x58, 0x48, 0x89, 0x07, 0x89, 0x57, 0x5c, 0x0f, 0x11, 0x47, 0x08,
	};
	/* torch 2.14's ProcessGroup(int, int) stores the rank but not the size beside it. */
	static const uint8_t process_group_2_14[] = {
		0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b, 0x05, 0x1d, 0x24, 0x86, 0x0a, 0x89, 0x77,
		0x18, 0x48, 0xc7, 0x47, 0x08, 0x00, 0x00, 0x00, 0x00, 0x48, 0x89, 0x07,
	};

	CU_ASSERT_EQUAL(c10d_rank_offset_decode(backend_2_14, sizeof(backend_2_14)), 0x10);
	CU_ASSERT_EQUAL(c10d_rank_offset_decode(process_group_1_13, sizeof(process_group_1_13)),
			0x18);
	CU_ASSERT_EQUAL(c10d_rank_offset_decode(backend_1_13, sizeof(backend_1_13)), 0x58);
	CU_ASSERT_EQUAL(c10d_rank_offset_decode(process_group_2_14, sizeof(process_group_2_14)),
			-ENOENT);
	CU_ASSERT_EQUAL(c10d_rank_offset_decode(backend_2_14, 0), -ENOENT);
}

UNIT_TEST(process_group_sequence, a_read_stops_at_a_guard_page_and_keeps_what_came_before)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), got = 0;
	uint8_t *pages =
		mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t buffer[4096 * 2];

	CU_ASSERT_NOT_EQUAL_FATAL(pages, MAP_FAILED);
	CU_ASSERT_TRUE_FATAL(page <= 4096);
	memset(pages, 0x5a, page);
	CU_ASSERT_EQUAL_FATAL(mprotect(pages + page, page, PROT_NONE), 0);
	CU_ASSERT_EQUAL(remote_memory_read_prefix(getpid(), (uint64_t)(uintptr_t)(pages + 64),
						  buffer, page, &got, NULL, 0),
			0);
	CU_ASSERT_EQUAL(got, page - 64);
	CU_ASSERT_EQUAL(buffer[0], 0x5a);
	CU_ASSERT_EQUAL(buffer[page - 65], 0x5a);
	/* Nothing readable at all is an error. */
	CU_ASSERT_NOT_EQUAL(remote_memory_read_prefix(getpid(), (uint64_t)(uintptr_t)(pages + page),
						      buffer, 16, &got, NULL, 0),
			    0);
	munmap(pages, 2 * page);
}
