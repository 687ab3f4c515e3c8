// SPDX-License-Identifier: MIT
/* Command lines joined into one text, for trace headers and process records. */
#include "base/command_text.h"

#include <stdio.h>

char *command_text_join(char *out, size_t size, int argc, char *const argv[])
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < argc && argv[i]; i++) {
		int written = snprintf(out + used, size - used, "%s%s", i ? " " : "", argv[i]);

		if (written < 0 || (size_t)written >= size - used) {
			out[used] = '\0';
			return out;
		}
		used += (size_t)written;
	}
	return out;
}
