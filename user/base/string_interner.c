// SPDX-License-Identifier: MIT
/* Strings kept once, for every stage that holds names it does not own. */
#include "base/string_interner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"

#define FIRST_CAPACITY 64

void string_interner_init(struct string_interner *interner)
{
	memset(interner, 0, sizeof(*interner));
}

void string_interner_destroy(struct string_interner *interner)
{
	for (size_t i = 0; i < interner->capacity; i++)
		free(interner->slots[i]);
	free(interner->slots);
	memset(interner, 0, sizeof(*interner));
}

/* Where 'text' is kept, or the empty slot it would take. */
static size_t slot_of(char *const *slots, size_t capacity, const char *text)
{
	size_t at = fnv1a_string(text) & (capacity - 1);

	while (slots[at] && strcmp(slots[at], text) != 0)
		at = (at + 1) & (capacity - 1);
	return at;
}

static int grow(struct string_interner *interner)
{
	size_t capacity = interner->capacity ? interner->capacity * 2 : FIRST_CAPACITY;
	char **slots = calloc(capacity, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < interner->capacity; i++)
		if (interner->slots[i])
			slots[slot_of(slots, capacity, interner->slots[i])] = interner->slots[i];
	free(interner->slots);
	interner->slots = slots;
	interner->capacity = capacity;
	return 0;
}

const char *string_interner_intern(struct string_interner *interner, const char *text)
{
	size_t at;

	if (!text)
		text = "";
	/* At most half full: probes stay short. */
	if ((interner->count + 1) * 2 > interner->capacity && grow(interner))
		return NULL;
	at = slot_of(interner->slots, interner->capacity, text);
	if (interner->slots[at])
		return interner->slots[at];
	interner->slots[at] = strdup(text);
	if (!interner->slots[at])
		return NULL;
	interner->count++;
	return interner->slots[at];
}
