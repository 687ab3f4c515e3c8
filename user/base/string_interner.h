/* SPDX-License-Identifier: MIT */
/*
 * Strings kept once: interning a text gives back one stable copy for all
 * equal texts, alive until the interner is freed, so records and tables can
 * hold names without owning them and compare them by pointer. Each text
 * also gets a number, 0, 1, 2... in the order texts were first seen (the
 * trace writer's string ids). Open addressing on FNV-1a; texts whose hashes
 * collide are told apart by comparing them, never lost.
 */
#ifndef TCHECK_STRING_INTERNER_H
#define TCHECK_STRING_INTERNER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct interned_text {
	char *bytes; /* NUL-terminated; NULL: an empty slot */
	size_t length;
	uint64_t hash;
	uint32_t number; /* in the order first seen */
};

struct string_interner {
	struct interned_text *slots;
	size_t capacity; /* a power of two, or 0 before the first text */
	size_t count;
};

void string_interner_init(struct string_interner *interner);
/* Frees every kept copy: pointers handed out end here. */
void string_interner_destroy(struct string_interner *interner);
/* The kept copy of 'text' (NULL: ""), or NULL when out of memory. */
const char *string_interner_intern(struct string_interner *interner, const char *text);
/*
 * The kept copy of the 'length' bytes at 'bytes' (no NUL among them), its
 * number, and whether this call added it; NULL when out of memory. The
 * entry is valid until the next call; its bytes until the interner is freed.
 */
const struct interned_text *string_interner_intern_bytes(struct string_interner *interner,
							 const void *bytes, size_t length,
							 bool *added);

#endif /* TCHECK_STRING_INTERNER_H */
