/* SPDX-License-Identifier: MIT */
/*
 * Primitive arguments of Python calls, decoded from the raw bytes the entry
 * probe copied (struct tcheck_python_arg): int digits, float bits, str
 * characters of any kind. Needs no kernel and no process.
 */
#ifndef TCHECK_PYTHON_ARGUMENTS_H
#define TCHECK_PYTHON_ARGUMENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcheck/probe_abi.h"

/* Marks a str argument cut to the characters the probe copied. */
#define PYTHON_TEXT_CUT_MARK "..."
/* Longest decoded text: 16 characters of 4 UTF-8 bytes, the mark, the NUL. */
#define PYTHON_ARGUMENT_TEXT_MAX (TCHECK_PYTHON_ARG_BYTES * 4 + sizeof(PYTHON_TEXT_CUT_MARK))

struct python_argument_value {
	uint32_t type; /* enum trace_value_type */
	int64_t integer;
	double real;
	char text[PYTHON_ARGUMENT_TEXT_MAX];
	bool cut; /* text holds the first characters only */
};

/*
 * Decodes one raw argument. long_tagged: 3.12+ ints (lv_tag) rather than
 * a signed ob_size. Returns 0, or -ERANGE for an int beyond 64 bits and
 * -EINVAL for a raw value no CPython writes (the argument is then left out).
 */
int python_argument_decode(const struct tcheck_python_arg *raw, bool long_tagged,
			   struct python_argument_value *value);

#endif /* TCHECK_PYTHON_ARGUMENTS_H */
