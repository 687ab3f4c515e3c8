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
		free(interner->slots[i].bytes);
	free(interner->slots);
	memset(interner, 0, sizeof(*interner));
}

/* Where the text is kept, or the empty slot it would take. */
static struct interned_text *slot_of(struct interned_text *slots, size_t capacity,
				     const void *bytes, size_t length, uint64_t hash)
{
	size_t mask = capacity - 1;

	for (size_t at = hash & mask;; at = (at + 1) & mask) {
		struct interned_text *slot = &slots[at];

		if (!slot->bytes || (slot->hash == hash && slot->length == length &&
				     memcmp(slot->bytes, bytes, length) == 0))
			return slot;
	}
}

static int grow(struct string_interner *interner)
{
	size_t capacity = interner->capacity ? interner->capacity * 2 : FIRST_CAPACITY;
	struct interned_text *slots = calloc(capacity, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < interner->capacity; i++) {
		const struct interned_text *old = &interner->slots[i];

		if (old->bytes)
			*slot_of(slots, capacity, old->bytes, old->length, old->hash) = *old;
	}
	free(interner->slots);
	interner->slots = slots;
	interner->capacity = capacity;
	return 0;
}

const struct interned_text *string_interner_intern_bytes(struct string_interner *interner,
							 const void *bytes, size_t length,
							 bool *added)
{
	uint64_t hash = fnv1a_bytes(bytes, length);
	struct interned_text *slot;
	char *copy;

	*added = false;
	if (interner->capacity) {
		slot = slot_of(interner->slots, interner->capacity, bytes, length, hash);
		if (slot->bytes)
			return slot;
	}
	/* At most half full: probes stay short. */
	if ((interner->count + 1) * 2 > interner->capacity && grow(interner))
		return NULL;
	copy = malloc(length + 1);
	if (!copy)
		return NULL;
	memcpy(copy, bytes, length);
	copy[length] = '\0';
	slot = slot_of(interner->slots, interner->capacity, bytes, length, hash);
	*slot = (struct interned_text){
		.bytes = copy, .length = length, .hash = hash, .number = (uint32_t)interner->count
	};
	interner->count++;
	*added = true;
	return slot;
}

const char *string_interner_intern(struct string_interner *interner, const char *text)
{
	const struct interned_text *kept;
	bool added;

	if (!text)
		text = "";
	kept = string_interner_intern_bytes(interner, text, strlen(text), &added);
	return kept ? kept->bytes : NULL;
}
