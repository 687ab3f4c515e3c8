// SPDX-License-Identifier: MIT
/* Tests of choosing an emulated instruction for a function's entry uprobe. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe/uprobe_entry_site.h"
#include "python/python_tracer.h"
#include "scratch_files.h"
#include "unit.h"

UNIT_TEST(uprobe_entry_site, emulated_first_instructions_stay_at_the_start)
{
	static const uint8_t push_rbp[] = { 0x55, 0x48, 0x89, 0xe5 };
	static const uint8_t push_r15[] = { 0x41, 0x57, 0x41, 0x56 };
	static const uint8_t short_jump[] = { 0xeb, 0x10 };

	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(push_rbp, sizeof(push_rbp)), 0);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(push_r15, sizeof(push_r15)), 0);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(short_jump, sizeof(short_jump)), 0);
}

/* at::RecordFunction::end in Debian's torch 1.13: cmpb $0x0,0x68(%rdi); je ... */
UNIT_TEST(uprobe_entry_site, leading_compare_moves_to_the_jump)
{
	static const uint8_t record_function_end[] = { 0x80, 0x7f, 0x68, 0x00, 0x74,
						       0x5a, 0x41, 0x56, 0x41, 0x55 };
	/* cmpl $0x1,0x100(%rdi) (disp32) then a near je */
	static const uint8_t far_compare[] = { 0x83, 0xbf, 0x00, 0x01, 0x00, 0x00, 0x01,
					       0x0f, 0x84, 0x10, 0x00, 0x00, 0x00 };

	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(record_function_end, sizeof(record_function_end)),
			4);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(far_compare, sizeof(far_compare)), 7);
}

/* Debian trixie's torch 2.6 (built with CET): endbr64, then the function's first push. */
UNIT_TEST(uprobe_entry_site, landing_pad_is_stepped_over)
{
	/* at::RecordFunction::end in libtorch_cpu.so.2.6.0: endbr64; push %r15 */
	static const uint8_t end_2_6[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56 };
	/* endbr64, then a guard compare and its jump */
	static const uint8_t pad_then_guard[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x80,
						  0x7f, 0x68, 0x00, 0x74, 0x5a };
	/* endbr64, then a RIP-relative load: nothing cheap */
	static const uint8_t pad_then_load[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x48, 0x8b,
						 0x05, 0x10, 0x00, 0x00, 0x00 };

	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(end_2_6, sizeof(end_2_6)), 4);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(pad_then_guard, sizeof(pad_then_guard)), 8);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(pad_then_load, sizeof(pad_then_load)), -1);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(end_2_6, 4), -1);
}

UNIT_TEST(uprobe_entry_site, other_starts_are_left_single_stepped)
{
	/* mov 0x10(%rip),%rax: RIP-relative, single-stepped, no compare to skip */
	static const uint8_t rip_load[] = { 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00 };
	/* a compare followed by a mov, not a jump */
	static const uint8_t compare_then_move[] = { 0x80, 0x7f, 0x68, 0x00, 0x48, 0x89, 0xfd };
	/* a RIP-relative compare is not taken for a guard */
	static const uint8_t rip_compare[] = {
		0x80, 0x3d, 0x10, 0x00, 0x00, 0x00, 0x00, 0x74, 0x02
	};
	/* cut short */
	static const uint8_t cut[] = { 0x80, 0x7f };

	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(rip_load, sizeof(rip_load)), -1);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(compare_then_move, sizeof(compare_then_move)),
			-1);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(rip_compare, sizeof(rip_compare)), -1);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(cut, sizeof(cut)), -1);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_offset(cut, 0), -1);
}

/* Functions laid out in a file as a library holds them, probed where the kernel emulates. */
UNIT_TEST(uprobe_entry_site, file_offsets_move_past_what_is_single_stepped)
{
	/* _PyEval_EvalFrameDefault in Debian trixie's python3.13, at 0x10: endbr64; push %r15 */
	static const uint8_t evaluator_3_13[] = { 0xf3, 0x0f, 0x1e, 0xfa, 0x41, 0x57, 0x41, 0x56 };
	/* the same in Debian 12's python3.11, at 0x30: push %r15 first */
	static const uint8_t evaluator_3_11[] = { 0x41, 0x57, 0x41, 0x56, 0x41, 0x55 };
	/* a RIP-relative load at 0x50: nothing cheaper near */
	static const uint8_t rip_load[] = { 0x48, 0x8b, 0x05, 0x10, 0x00, 0x00, 0x00 };
	const char *path = scratch_path("entry-sites.so");
	uint8_t image[0x80] = { 0 };
	FILE *file = fopen(path, "wb");

	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	memcpy(image + 0x10, evaluator_3_13, sizeof(evaluator_3_13));
	memcpy(image + 0x30, evaluator_3_11, sizeof(evaluator_3_11));
	memcpy(image + 0x50, rip_load, sizeof(rip_load));
	CU_ASSERT_EQUAL_FATAL(fwrite(image, 1, sizeof(image), file), sizeof(image));
	fclose(file);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_file_offset(path, 0x10), 0x14);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_file_offset(path, 0x30), 0x30);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_file_offset(path, 0x50), 0x50);
	/* Past the end, or no file: where it was asked. */
	CU_ASSERT_EQUAL(uprobe_cheap_entry_file_offset(path, 0x1000), 0x1000);
	unlink(path);
	CU_ASSERT_EQUAL(uprobe_cheap_entry_file_offset(path, 0x10), 0x10);
}

UNIT_TEST(uprobe_entry_site, operator_names_read_as_pytorch_schemas)
{
	char name[64];

	torch_operator_display_name("add_", "add__Tensor", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "aten::add_.Tensor");
	torch_operator_display_name("zero_", "zero_", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "aten::zero_");
	torch_operator_display_name("add_.Scalar", "add__Scalar", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "aten::add_.Scalar");
	torch_operator_display_name("_foreach_add_", "_foreach_add__List", name, sizeof(name));
	CU_ASSERT_STRING_EQUAL(name, "aten::_foreach_add_.List");
}
