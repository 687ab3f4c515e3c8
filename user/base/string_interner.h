/* SPDX-License-Identifier: MIT */
/*
 * Strings kept once: interning a text gives back one stable copy for all
 * equal texts, alive until the interner is freed, so records and tables can
 * hold names without owning them and compare them by pointer. Open
 * addressing on FNV-1a; texts whose hashes collide are told apart by
 * comparing them, never lost.
 */
#ifndef TCHECK_STRING_INTERNER_H
#define TCHECK_STRING_INTERNER_H

#include <stddef.h>

struct string_interner {
	char **slots;	 /* NULL: empty */
	size_t capacity; /* a power of two, or 0 before the first text */
	size_t count;
};

void string_interner_init(struct string_interner *interner);
/* Frees every kept copy: pointers handed out end here. */
void string_interner_destroy(struct string_interner *interner);
/* The kept copy of 'text' (NULL: ""), or NULL when out of memory. */
const char *string_interner_intern(struct string_interner *interner, const char *text);

#endif /* TCHECK_STRING_INTERNER_H */
