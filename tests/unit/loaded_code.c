// SPDX-License-Identifier: MIT
/* Loaded code against file bytes, tolerant of breakpoints other tracers placed. */
#include <stdint.h>

#include "loaded_code.h"

#define INT3 0xcc

bool loaded_code_matches(const void *loaded, const void *from_file, size_t length)
{
	const uint8_t *memory = loaded, *file = from_file;

	for (size_t i = 0; i < length; i++)
		if (memory[i] != file[i] && memory[i] != INT3)
			return false;
	return true;
}
