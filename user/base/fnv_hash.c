// SPDX-License-Identifier: MIT
/* FNV-1a, 64 bits (http://www.isthe.com/chongo/tech/comp/fnv/). */
#include <string.h>

#include "base/fnv_hash.h"

uint64_t fnv1a_add_bytes(uint64_t hash, const void *bytes, size_t length)
{
	const unsigned char *byte = bytes;

	for (size_t i = 0; i < length; i++)
		hash = (hash ^ byte[i]) * FNV1A_PRIME;
	return hash;
}

uint64_t fnv1a_add_u64(uint64_t hash, uint64_t value)
{
	for (int i = 0; i < 8; i++)
		hash = (hash ^ ((value >> (8 * i)) & 0xff)) * FNV1A_PRIME;
	return hash;
}

uint64_t fnv1a_bytes(const void *bytes, size_t length)
{
	return fnv1a_add_bytes(FNV1A_OFFSET_BASIS, bytes, length);
}

uint64_t fnv1a_string(const char *text)
{
	return fnv1a_bytes(text, strlen(text));
}
