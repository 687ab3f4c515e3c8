// SPDX-License-Identifier: MIT
/*
 * The attach cookie of a torch operator probe, against the layouts of the
 * torch versions known: every field the probe reads back (operator number,
 * registers, header size, numel, requires_grad_ and grad_fn_ offsets, flags)
 * is what was packed, none spilling into another.
 */
#include "python/torch_op_readings.h"
#include "python/torch_probes.h"
#include "python/torch_tensor_layout.h"
#include "tcheck/probe_abi.h"
#include "unit.h"

/* The field of 'cookie' at 'shift', 'mask' wide, as the probe reads it back. */
static uint64_t field(uint64_t cookie, unsigned shift, uint64_t mask)
{
	return (cookie >> shift) & mask;
}

UNIT_TEST(torch_op_cookie, every_field_reads_back_for_each_known_torch)
{
	static const int versions[][2] = { { 1, 13 }, { 2, 6 }, { 2, 14 } };
	struct torch_op_reading reading = torch_op_reading_of("linear");

	CU_ASSERT_PTR_NOT_NULL_FATAL(reading.tensor_field);
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		struct torch_version version = { .major = versions[i][0], .minor = versions[i][1] };
		struct torch_tensor_layout layout;
		uint64_t cookie;

		CU_ASSERT_TRUE_FATAL(torch_tensor_layout_of(&version, &layout));
		CU_ASSERT_NOT_EQUAL(layout.grad_fn_offset, 0);
		CU_ASSERT_NOT_EQUAL(layout.grad_fn_offset, layout.requires_grad_offset);
		cookie = torch_op_cookie(0xbeef, &reading, &layout);
		CU_ASSERT_EQUAL(cookie & TCHECK_TORCH_OP_INDEX_MASK, 0xbeef);
		CU_ASSERT_EQUAL(
			field(cookie, TCHECK_TORCH_OP_TENSOR_SHIFT, TCHECK_TORCH_OP_REGISTER_MASK),
			(uint64_t)reading.tensor_register);
		CU_ASSERT_EQUAL(
			field(cookie, TCHECK_TORCH_OP_HEADER_SHIFT, TCHECK_TORCH_OP_HEADER_MASK),
			layout.object_header);
		CU_ASSERT_EQUAL(
			field(cookie, TCHECK_TORCH_OP_NUMEL_SHIFT, TCHECK_TORCH_OP_NUMEL_MASK),
			layout.numel_offset);
		CU_ASSERT_EQUAL(field(cookie, TCHECK_TORCH_OP_REQUIRES_GRAD_SHIFT,
				      TCHECK_TORCH_OP_REQUIRES_GRAD_MASK),
				layout.requires_grad_offset);
		CU_ASSERT_EQUAL(
			field(cookie, TCHECK_TORCH_OP_GRAD_FN_SHIFT, TCHECK_TORCH_OP_GRAD_FN_MASK),
			layout.grad_fn_offset);
		/* A weight read: its data checked, its contents not read, no bool by value. */
		CU_ASSERT_TRUE((cookie & TCHECK_TORCH_OP_CHECK_DATA) != 0);
		CU_ASSERT_FALSE((cookie & TCHECK_TORCH_OP_READ_CONTENTS) != 0);
		CU_ASSERT_FALSE((cookie & TCHECK_TORCH_OP_BOOL_BY_VALUE) != 0);
	}
	/* A version not checked on live tensors reads nothing of the tensor's autograd. */
	struct torch_version unknown = { .major = 2, .minor = 99 };
	struct torch_tensor_layout none;

	CU_ASSERT_FALSE(torch_tensor_layout_of(&unknown, &none));
	CU_ASSERT_EQUAL(torch_op_cookie(3, &reading, &none) >> TCHECK_TORCH_OP_GRAD_FN_SHIFT, 0);
}
