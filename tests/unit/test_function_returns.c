// SPDX-License-Identifier: MIT
/* The return instructions of a function, found by decoding hand-assembled x86-64. */
#include <errno.h>
#include <string.h>

#include "probe/function_returns.h"
#include "unit.h"

/*
 * push rbp; mov rbp, rsp; test edi, edi; je +2; pop rbp; ret; xor eax, eax;
 * pop rbp; ret: two returns (at 9 and 13), the branch stays inside.
 */
static const uint8_t two_returns[] = { 0x55, 0x48, 0x89, 0xe5, 0x85, 0xff, 0x74,
				       0x02, 0x5d, 0xc3, 0x31, 0xc0, 0x5d, 0xc3 };

UNIT_TEST(function_returns, every_ret_is_found_and_inner_branches_stay_inside)
{
	struct function_returns returns;
	char error[256];

	CU_ASSERT_EQUAL_FATAL(function_returns_decode(two_returns, sizeof(two_returns), 0x1000,
						      &returns, error, sizeof(error)),
			      0);
	CU_ASSERT_EQUAL_FATAL(returns.count, 2);
	CU_ASSERT_EQUAL(returns.offsets[0], 9);
	CU_ASSERT_EQUAL(returns.offsets[1], 13);
	CU_ASSERT_EQUAL(returns.jumps_out, 0);
}

/* push rbx; pop rbx; je far away (a cold path); ret; jmp rax: two ways out, one return. */
UNIT_TEST(function_returns, jumps_out_of_the_function_are_counted)
{
	static const uint8_t code[] = { 0x53, 0x5b, 0x0f, 0x84, 0x00, 0x01,
					0x00, 0x00, 0xc3, 0xff, 0xe0 };
	struct function_returns returns;
	char error[256];

	CU_ASSERT_EQUAL_FATAL(
		function_returns_decode(code, sizeof(code), 0x1000, &returns, error, sizeof(error)),
		0);
	CU_ASSERT_EQUAL_FATAL(returns.count, 1);
	CU_ASSERT_EQUAL(returns.offsets[0], 8);
	CU_ASSERT_EQUAL(returns.jumps_out, 2);
}

/* A tail call alone (push rbx; pop rbx; jmp rel32 outside): no return to probe. */
UNIT_TEST(function_returns, function_without_ret_is_refused)
{
	static const uint8_t code[] = { 0x53, 0x5b, 0xe9, 0x00, 0x10, 0x00, 0x00 };
	struct function_returns returns;
	char error[256] = "";

	CU_ASSERT_EQUAL(
		function_returns_decode(code, sizeof(code), 0x1000, &returns, error, sizeof(error)),
		-ENOENT);
	CU_ASSERT_EQUAL(returns.count, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no return instruction"));
}

/* 0x06 (push es) does not exist in 64-bit mode: refused, naming where. */
UNIT_TEST(function_returns, bytes_that_do_not_decode_are_refused)
{
	static const uint8_t code[] = { 0x55, 0x06, 0xc3 };
	struct function_returns returns;
	char error[256] = "";

	CU_ASSERT_EQUAL(
		function_returns_decode(code, sizeof(code), 0x1000, &returns, error, sizeof(error)),
		-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "+0x1 does not decode"));
}

/* A missing file or an absurd size: a sentence, not a crash. */
UNIT_TEST(function_returns, unreadable_function_is_said)
{
	struct function_returns returns;
	char error[256] = "";

	CU_ASSERT(function_returns_find("/nonexistent/libtorch_cpu.so", 0, 0x1000, 64, &returns,
					error, sizeof(error)) < 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "cannot open"));
	CU_ASSERT_EQUAL(function_returns_find("/proc/self/exe", 0, 0x1000, 0, &returns, error,
					      sizeof(error)),
			-EINVAL);
}
