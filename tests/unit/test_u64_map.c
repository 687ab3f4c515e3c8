// SPDX-License-Identifier: MIT
/* The hash map: against a plain array as the reference, through growth and removals. */
#include <stdlib.h>

#include "base/u64_map.h"
#include "unit.h"

#define KEYS 5000

UNIT_TEST(u64_map, agrees_with_a_reference_array_through_removals)
{
	static int present[KEYS];
	static int values[KEYS];
	struct u64_map map;
	size_t count = 0;
	uint64_t key;
	void *value;

	u64_map_init(&map);
	srand(7);
	for (int round = 0; round < 40000; round++) {
		int k = rand() % KEYS;
		/* Keys spaced like pointers, so clustering is exercised. */
		uint64_t map_key = 0x7f0000000000ULL + (uint64_t)k * 64;

		if (rand() % 3 == 0) {
			void *removed = u64_map_remove(&map, map_key);

			CU_ASSERT_EQUAL(removed != NULL, present[k]);
			present[k] = 0;
		} else {
			CU_ASSERT_EQUAL(u64_map_put(&map, map_key, &values[k]), 0);
			present[k] = 1;
		}
	}
	for (int k = 0; k < KEYS; k++) {
		void *found = u64_map_get(&map, 0x7f0000000000ULL + (uint64_t)k * 64);

		CU_ASSERT_EQUAL(found != NULL, present[k]);
		if (found)
			CU_ASSERT_PTR_EQUAL(found, &values[k]);
		count += (size_t)present[k];
	}
	CU_ASSERT_EQUAL(map.count, count);
	{
		size_t position = 0, seen = 0;

		while (u64_map_next(&map, &position, &key, &value))
			seen++;
		CU_ASSERT_EQUAL(seen, count);
	}
	u64_map_free(&map);
}

/* Values freed with the table (make sanitize reports any left); the map is usable after. */
UNIT_TEST(u64_map, frees_its_values_with_the_table)
{
	struct u64_map map;

	u64_map_init(&map);
	for (uint64_t key = 1; key <= 100; key++) {
		uint64_t *value = malloc(sizeof(*value));

		CU_ASSERT_PTR_NOT_NULL_FATAL(value);
		*value = key;
		CU_ASSERT_EQUAL(u64_map_put(&map, key, value), 0);
	}
	u64_map_free_with_values(&map);
	CU_ASSERT_EQUAL(map.count, 0);
	CU_ASSERT_PTR_NULL(u64_map_get(&map, 7));
	CU_ASSERT_EQUAL(u64_map_put(&map, 7, &map), 0);
	CU_ASSERT_PTR_EQUAL(u64_map_get(&map, 7), &map);
	u64_map_free(&map);
}

/* A key's value made once, zeroed, and found again; other keys get values of their own. */
/*
 * Through a cache: the first call finds (or makes) the value and keeps it;
 * later calls return it without a look-up, even once the map was given
 * another value under the key; no cache is the map alone.
 */
UNIT_TEST(u64_map, get_or_add_cached_looks_up_once)
{
	struct u64_map map;
	void *cached = NULL, *replacement = malloc(sizeof(uint64_t));
	uint64_t *value;
	int added = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(replacement);
	u64_map_init(&map);
	value = u64_map_get_or_add_cached(&map, 5, sizeof(*value), &added, &cached);
	CU_ASSERT_PTR_NOT_NULL_FATAL(value);
	CU_ASSERT_EQUAL(added, 1);
	CU_ASSERT_PTR_EQUAL(cached, value);
	/* The map changes under the key; the cache still answers with what it kept. */
	CU_ASSERT_EQUAL(u64_map_put(&map, 5, replacement), 0);
	CU_ASSERT_PTR_EQUAL(u64_map_get_or_add_cached(&map, 5, sizeof(*value), &added, &cached),
			    value);
	CU_ASSERT_EQUAL(added, 0);
	CU_ASSERT_PTR_EQUAL(u64_map_get_or_add_cached(&map, 5, sizeof(*value), &added, NULL),
			    replacement);
	CU_ASSERT_EQUAL(added, 0);
	free(value);
	u64_map_free_with_values(&map);
}

UNIT_TEST(u64_map, get_or_add_makes_a_zeroed_value_once)
{
	struct u64_map map;
	uint64_t *first, *again, *other;
	int added = -1;

	u64_map_init(&map);
	first = u64_map_get_or_add(&map, 42, sizeof(*first), &added);
	CU_ASSERT_PTR_NOT_NULL_FATAL(first);
	CU_ASSERT_EQUAL(added, 1);
	CU_ASSERT_EQUAL(*first, 0);
	*first = 7;
	again = u64_map_get_or_add(&map, 42, sizeof(*again), &added);
	CU_ASSERT_PTR_EQUAL(again, first);
	CU_ASSERT_EQUAL(added, 0);
	CU_ASSERT_EQUAL(*again, 7);
	other = u64_map_get_or_add(&map, 43, sizeof(*other), NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(other);
	CU_ASSERT_PTR_NOT_EQUAL(other, first);
	CU_ASSERT_EQUAL(*other, 0);
	CU_ASSERT_PTR_EQUAL(u64_map_get(&map, 42), first);
	CU_ASSERT_EQUAL(map.count, 2);
	u64_map_free_with_values(&map);
}
