// SPDX-License-Identifier: MIT
/* The string interner: one copy per text, numbers in first-seen order, through growth. */
#include <stdio.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/string_interner.h"
#include "unit.h"

#define TEXTS 5000

UNIT_TEST(string_interner, keeps_one_copy_of_each_text_through_growth)
{
	static const char *first[TEXTS];
	struct string_interner interner;
	char text[32];

	string_interner_init(&interner);
	for (int i = 0; i < TEXTS; i++) {
		snprintf(text, sizeof(text), "name.%d", i);
		first[i] = string_interner_intern(&interner, text);
		if (!first[i]) {
			CU_FAIL("out of memory interning");
			break;
		}
		CU_ASSERT_STRING_EQUAL(first[i], text);
		CU_ASSERT_PTR_NOT_EQUAL(first[i], text);
	}
	CU_ASSERT_EQUAL(interner.count, TEXTS);
	/* Asked again after the table grew many times: the same copies. */
	for (int i = TEXTS - 1; i >= 0; i--) {
		snprintf(text, sizeof(text), "name.%d", i);
		CU_ASSERT_PTR_EQUAL(string_interner_intern(&interner, text), first[i]);
	}
	CU_ASSERT_EQUAL(interner.count, TEXTS);
	CU_ASSERT_STRING_EQUAL(string_interner_intern(&interner, NULL), "");
	string_interner_destroy(&interner);
}

UNIT_TEST(string_interner, tells_apart_texts_that_share_a_slot)
{
	struct string_interner interner;
	char texts[2][32];
	const char *kept[2];
	uint64_t wanted;
	int found = 0;

	/* Two texts whose hashes agree in the low bits that pick the slot of a new table. */
	snprintf(texts[0], sizeof(texts[0]), "scope#0");
	wanted = fnv1a_string(texts[0]) & 63;
	for (int i = 1; i < 10000 && !found; i++) {
		snprintf(texts[1], sizeof(texts[1]), "scope#%d", i);
		found = (fnv1a_string(texts[1]) & 63) == wanted;
	}
	CU_ASSERT_FATAL(found);
	string_interner_init(&interner);
	kept[0] = string_interner_intern(&interner, texts[0]);
	kept[1] = string_interner_intern(&interner, texts[1]);
	CU_ASSERT_PTR_NOT_EQUAL(kept[0], kept[1]);
	CU_ASSERT_STRING_EQUAL(kept[0], texts[0]);
	CU_ASSERT_STRING_EQUAL(kept[1], texts[1]);
	CU_ASSERT_PTR_EQUAL(string_interner_intern(&interner, texts[1]), kept[1]);
	CU_ASSERT_PTR_EQUAL(string_interner_intern(&interner, texts[0]), kept[0]);
	string_interner_destroy(&interner);
}

UNIT_TEST(string_interner, numbers_texts_in_the_order_first_seen)
{
	struct string_interner interner;
	const struct interned_text *kept;
	bool added;

	string_interner_init(&interner);
	kept = string_interner_intern_bytes(&interner, "allreduce", 9, &added);
	CU_ASSERT_TRUE(added);
	CU_ASSERT_EQUAL(kept->number, 0);
	/* A prefix of a longer buffer: only 'length' bytes count. */
	kept = string_interner_intern_bytes(&interner, "broadcast_", 9, &added);
	CU_ASSERT_TRUE(added);
	CU_ASSERT_EQUAL(kept->number, 1);
	CU_ASSERT_STRING_EQUAL(kept->bytes, "broadcast");
	kept = string_interner_intern_bytes(&interner, "allreduce", 9, &added);
	CU_ASSERT_FALSE(added);
	CU_ASSERT_EQUAL(kept->number, 0);
	CU_ASSERT_EQUAL(interner.count, 2);
	string_interner_destroy(&interner);
}
