// SPDX-License-Identifier: MIT
/* Primitive Python arguments decoded from raw probe copies, against values worked out by hand. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "model/trace_records.h"
#include "python/python_arguments.h"
#include "unit.h"

/* str state words: kind in bits 2-4, compact bit 5, ascii bit 6; interned bits 0-1 ignored. */
#define STATE_ASCII (1U << 2 | 1U << 5 | 1U << 6 | 1U)
#define STATE_LATIN1 (1U << 2 | 1U << 5)
#define STATE_UCS2 (2U << 2 | 1U << 5)
#define STATE_UCS4 (4U << 2 | 1U << 5)
#define STATE_NOT_COMPACT (1U << 2)

static struct tcheck_python_arg raw_int(uint64_t size_or_tag, uint32_t d0, uint32_t d1, uint32_t d2,
					uint32_t d3)
{
	struct tcheck_python_arg raw = { .type = TCHECK_PYTHON_ARG_INT, .value = size_or_tag };
	uint32_t digits[4] = { d0, d1, d2, d3 };

	memcpy(raw.bytes, digits, sizeof(digits));
	return raw;
}

static int64_t decoded_int(struct tcheck_python_arg raw, bool tagged, int *result)
{
	struct python_argument_value value;

	*result = python_argument_decode(&raw, tagged, &value);
	if (*result == 0)
		CU_ASSERT_EQUAL(value.type, TRACE_VALUE_INT);
	return value.integer;
}

/* lv_tag of 3.12+: digit count << 3 | sign (0 positive, 1 zero, 2 negative). */
#define TAG(digits, sign) ((uint64_t)(digits) << 3 | (sign))

UNIT_TEST(python_arguments, ints_from_signed_size_and_from_tag)
{
	int result;

	/* 123456789012345678 = 114978094 << 30 | 640742222 */
	CU_ASSERT_EQUAL(decoded_int(raw_int(2, 640742222, 114978094, 0, 0), false, &result),
			123456789012345678LL);
	CU_ASSERT_EQUAL(result, 0);
	CU_ASSERT_EQUAL(decoded_int(raw_int(TAG(2, 0), 640742222, 114978094, 0, 0), true, &result),
			123456789012345678LL);
	CU_ASSERT_EQUAL(
		decoded_int(raw_int((uint64_t)-2, 640742222, 114978094, 0, 0), false, &result),
		-123456789012345678LL);
	CU_ASSERT_EQUAL(decoded_int(raw_int(TAG(2, 2), 640742222, 114978094, 0, 0), true, &result),
			-123456789012345678LL);
	CU_ASSERT_EQUAL(decoded_int(raw_int((uint64_t)-1, 1, 99, 99, 99), false, &result), -1);
	CU_ASSERT_EQUAL(decoded_int(raw_int(TAG(1, 2), 1, 99, 99, 99), true, &result), -1);
	/* Zero: no digits (3.10, 3.11), or the zero sign whatever the count says (3.12+). */
	CU_ASSERT_EQUAL(decoded_int(raw_int(0, 77, 0, 0, 0), false, &result), 0);
	CU_ASSERT_EQUAL(decoded_int(raw_int(TAG(1, 1), 0, 0, 0, 0), true, &result), 0);
	CU_ASSERT_EQUAL(result, 0);
	/* 2**63 - 1 needs three digits, the last 7; 2**63 has 8 there and does not fit. */
	CU_ASSERT_EQUAL(decoded_int(raw_int(3, 0x3fffffff, 0x3fffffff, 7, 0), false, &result),
			INT64_MAX);
	CU_ASSERT_EQUAL(result, 0);
	decoded_int(raw_int(3, 0, 0, 8, 0), false, &result);
	CU_ASSERT_EQUAL(result, -ERANGE);
	decoded_int(raw_int(TAG(4, 0), 1, 1, 1, 1), true, &result);
	CU_ASSERT_EQUAL(result, -ERANGE);
	/* A digit above 30 bits or sign 3 is no CPython int. */
	decoded_int(raw_int(1, 1U << 30, 0, 0, 0), false, &result);
	CU_ASSERT_EQUAL(result, -EINVAL);
	decoded_int(raw_int(TAG(1, 3), 1, 0, 0, 0), true, &result);
	CU_ASSERT_EQUAL(result, -EINVAL);
}

static const char *decoded_text(uint32_t state, uint64_t length, const void *bytes, size_t size,
				struct python_argument_value *value, int *result)
{
	struct tcheck_python_arg raw = { .type = TCHECK_PYTHON_ARG_STR,
					 .state = state,
					 .value = length };

	memcpy(raw.bytes, bytes, size);
	*result = python_argument_decode(&raw, false, value);
	return value->text;
}

UNIT_TEST(python_arguments, strings_of_every_kind_cut_and_marked)
{
	static const uint16_t job[8] = { 'j', 'o', 'b', '-', 0xe9, 0x20ac, '-', '0' };
	static const uint32_t emoji[3] = { 0x1f600, 'a', 'b' };
	struct python_argument_value value;
	int result;

	CU_ASSERT_STRING_EQUAL(decoded_text(STATE_ASCII, 8, "training", 8, &value, &result),
			       "training");
	CU_ASSERT_EQUAL(result, 0);
	CU_ASSERT_EQUAL(value.type, TRACE_VALUE_STR);
	CU_ASSERT_FALSE(value.cut);
	CU_ASSERT_STRING_EQUAL(
		decoded_text(STATE_ASCII, 40, "0123456789abcdef", 16, &value, &result),
		"0123456789abcdef...");
	CU_ASSERT_TRUE(value.cut);
	CU_ASSERT_STRING_EQUAL(decoded_text(STATE_LATIN1, 4, "caf\xe9", 4, &value, &result),
			       "caf\xc3\xa9");
	/* "job-é€-0-long-enough-to-be-cut": two bytes a character, eight copied. */
	CU_ASSERT_STRING_EQUAL(decoded_text(STATE_UCS2, 30, job, sizeof(job), &value, &result),
			       "job-\xc3\xa9\xe2\x82\xac-0...");
	CU_ASSERT_EQUAL(result, 0);
	CU_ASSERT_STRING_EQUAL(decoded_text(STATE_UCS4, 3, emoji, sizeof(emoji), &value, &result),
			       "\xf0\x9f\x98\x80"
			       "ab");
	CU_ASSERT_FALSE(value.cut);
	CU_ASSERT_STRING_EQUAL(decoded_text(STATE_ASCII, 0, "", 0, &value, &result), "");
	/* Not compact: the characters were not copied, only the mark says there were some. */
	CU_ASSERT_STRING_EQUAL(decoded_text(STATE_NOT_COMPACT, 5, "hello", 5, &value, &result),
			       "...");
	CU_ASSERT_TRUE(value.cut);
	decoded_text(3U << 2 | 1U << 5, 1, "x", 1, &value, &result);
	CU_ASSERT_EQUAL(result, -EINVAL);
}

UNIT_TEST(python_arguments, none_bool_float)
{
	struct tcheck_python_arg raw = { .type = TCHECK_PYTHON_ARG_NONE };
	struct python_argument_value value;
	double lr = 0.05;

	CU_ASSERT_EQUAL(python_argument_decode(&raw, false, &value), 0);
	CU_ASSERT_EQUAL(value.type, TRACE_VALUE_NONE);
	raw.type = TCHECK_PYTHON_ARG_BOOL;
	raw.value = 1;
	CU_ASSERT_EQUAL(python_argument_decode(&raw, false, &value), 0);
	CU_ASSERT_EQUAL(value.type, TRACE_VALUE_BOOL);
	CU_ASSERT_EQUAL(value.integer, 1);
	raw.value = 2;
	CU_ASSERT_EQUAL(python_argument_decode(&raw, false, &value), -EINVAL);
	raw.type = TCHECK_PYTHON_ARG_FLOAT;
	memcpy(&raw.value, &lr, sizeof(lr));
	CU_ASSERT_EQUAL(python_argument_decode(&raw, false, &value), 0);
	CU_ASSERT_EQUAL(value.type, TRACE_VALUE_FLOAT);
	CU_ASSERT_DOUBLE_EQUAL(value.real, 0.05, 0.0);
	raw.type = 0;
	CU_ASSERT_EQUAL(python_argument_decode(&raw, false, &value), -EINVAL);
}
