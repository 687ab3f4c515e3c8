// SPDX-License-Identifier: MIT
/* Primitive Python arguments decoded from the probe's raw copies. */
#include "python/python_arguments.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "model/trace_records.h"

#define LONG_DIGIT_BITS 30
#define LONG_DIGIT_MASK ((1U << LONG_DIGIT_BITS) - 1)
/* Digits the probe copies; 64 bits need at most 3 of them. */
#define LONG_DIGITS_COPIED (TCHECK_PYTHON_ARG_BYTES / 4)

/* str state word: characters of 1, 2 or 4 bytes; compact; ASCII. */
#define UNICODE_KIND(state) (((state) >> 2) & 0x7U)
#define UNICODE_COMPACT(state) (((state) >> 5) & 0x1U)

static int decode_int(const struct tcheck_python_arg *raw, bool long_tagged,
		      struct python_argument_value *value)
{
	uint64_t digit_count, magnitude = 0;
	bool negative;

	if (long_tagged) {
		uint64_t sign = raw->value & 0x3;

		if (sign == 3)
			return -EINVAL;
		digit_count = raw->value >> 3;
		negative = sign == 2;
		if (sign == 1)
			digit_count = 0;
	} else {
		int64_t size = (int64_t)raw->value;

		negative = size < 0;
		digit_count = negative ? (uint64_t)0 - (uint64_t)size : (uint64_t)size;
	}
	if (digit_count > 3)
		return -ERANGE;
	for (uint64_t i = digit_count; i-- > 0;) {
		uint32_t digit;

		memcpy(&digit, raw->bytes + i * 4, sizeof(digit));
		if (digit > LONG_DIGIT_MASK)
			return -EINVAL;
		/* The third digit holds bits 60-89: more than 3 of them overflow 63 bits. */
		if (i == 2 && digit >= (1U << 3))
			return -ERANGE;
		magnitude = magnitude << LONG_DIGIT_BITS | digit;
	}
	value->type = TRACE_VALUE_INT;
	value->integer = negative ? -(int64_t)magnitude : (int64_t)magnitude;
	return 0;
}

/* One code point as UTF-8; returns the bytes written (0 when it does not fit). */
static size_t put_utf8(uint32_t code_point, char *out, size_t room)
{
	if (code_point < 0x80 && room >= 1) {
		out[0] = (char)code_point;
		return 1;
	}
	if (code_point < 0x800 && room >= 2) {
		out[0] = (char)(0xc0 | code_point >> 6);
		out[1] = (char)(0x80 | (code_point & 0x3f));
		return 2;
	}
	if (code_point < 0x10000 && room >= 3) {
		out[0] = (char)(0xe0 | code_point >> 12);
		out[1] = (char)(0x80 | (code_point >> 6 & 0x3f));
		out[2] = (char)(0x80 | (code_point & 0x3f));
		return 3;
	}
	if (code_point < 0x110000 && room >= 4) {
		out[0] = (char)(0xf0 | code_point >> 18);
		out[1] = (char)(0x80 | (code_point >> 12 & 0x3f));
		out[2] = (char)(0x80 | (code_point >> 6 & 0x3f));
		out[3] = (char)(0x80 | (code_point & 0x3f));
		return 4;
	}
	return 0;
}

static int decode_str(const struct tcheck_python_arg *raw, struct python_argument_value *value)
{
	uint32_t kind = UNICODE_KIND(raw->state);
	uint64_t length = raw->value, available = 0;
	size_t used = 0;

	if (kind != 1 && kind != 2 && kind != 4)
		return -EINVAL;
	/* Not compact: the characters live elsewhere and were not copied. */
	if (UNICODE_COMPACT(raw->state))
		available = TCHECK_PYTHON_ARG_BYTES / kind;
	if (available > length)
		available = length;
	for (uint64_t i = 0; i < available; i++) {
		uint32_t code_point = 0;
		size_t written;

		if (kind == 1) {
			code_point = raw->bytes[i];
		} else if (kind == 2) {
			uint16_t unit;

			memcpy(&unit, raw->bytes + i * 2, sizeof(unit));
			code_point = unit;
		} else {
			memcpy(&code_point, raw->bytes + i * 4, sizeof(code_point));
		}
		written = put_utf8(code_point, value->text + used,
				   sizeof(value->text) - sizeof(PYTHON_TEXT_CUT_MARK) - used);
		if (!written)
			return -EINVAL;
		used += written;
	}
	value->text[used] = '\0';
	value->cut = available < length;
	if (value->cut)
		strcat(value->text, PYTHON_TEXT_CUT_MARK);
	value->type = TRACE_VALUE_STR;
	return 0;
}

int python_argument_decode(const struct tcheck_python_arg *raw, bool long_tagged,
			   struct python_argument_value *value)
{
	memset(value, 0, sizeof(*value));
	switch (raw->type) {
	case TCHECK_PYTHON_ARG_NONE:
		value->type = TRACE_VALUE_NONE;
		return 0;
	case TCHECK_PYTHON_ARG_BOOL:
		if (raw->value > 1)
			return -EINVAL;
		value->type = TRACE_VALUE_BOOL;
		value->integer = (int64_t)raw->value;
		return 0;
	case TCHECK_PYTHON_ARG_FLOAT:
		value->type = TRACE_VALUE_FLOAT;
		memcpy(&value->real, &raw->value, sizeof(value->real));
		return 0;
	case TCHECK_PYTHON_ARG_INT:
		return decode_int(raw, long_tagged, value);
	case TCHECK_PYTHON_ARG_STR:
		return decode_str(raw, value);
	default:
		return -EINVAL;
	}
}
