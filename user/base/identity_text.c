// SPDX-License-Identifier: MIT
/* Identities as text: "0x" and 16 hexadecimal digits everywhere (identity_text.h). */
#include "base/identity_text.h"

#include <inttypes.h>
#include <stdio.h>

const char *identity_text(uint64_t identity, char text[IDENTITY_TEXT_SIZE])
{
	snprintf(text, IDENTITY_TEXT_SIZE, "0x%016" PRIx64, identity);
	return text;
}
