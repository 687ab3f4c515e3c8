// SPDX-License-Identifier: MIT
/* The growable array: room for one or for many, the elements kept, overflow refused. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/growable_array.h"
#include "unit.h"

UNIT_TEST(growable_array, appends_keep_every_element_and_double_the_capacity)
{
	uint32_t *values = NULL;
	size_t count = 0, capacity = 0;

	for (uint32_t i = 0; i < 1000; i++) {
		CU_ASSERT_EQUAL_FATAL(growable_array_room_for_one((void **)&values, count,
								  &capacity, sizeof(*values)),
				      0);
		CU_ASSERT_TRUE(count < capacity);
		values[count++] = i * 7;
	}
	/* 8, 16, ... 1024: doubled, never grown one element at a time. */
	CU_ASSERT_EQUAL(capacity, 1024);
	for (uint32_t i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL(values[i], i * 7);
	free(values);
}

UNIT_TEST(growable_array, room_for_many_fits_them_at_once)
{
	char *bytes = NULL;
	size_t capacity = 0;

	/* Room already there: nothing moves. */
	CU_ASSERT_EQUAL(growable_array_reserve((void **)&bytes, 0, &capacity, 0, 1), 0);
	CU_ASSERT_PTR_NULL(bytes);
	CU_ASSERT_EQUAL(growable_array_reserve((void **)&bytes, 0, &capacity, 5, 1), 0);
	CU_ASSERT_EQUAL(capacity, 8);
	/* 8 used and 100 more: doubled until 108 fit. */
	CU_ASSERT_EQUAL(growable_array_reserve((void **)&bytes, 8, &capacity, 100, 1), 0);
	CU_ASSERT_EQUAL(capacity, 128);
	bytes[107] = 'x';
	CU_ASSERT_EQUAL(growable_array_reserve((void **)&bytes, 100, &capacity, 28, 1), 0);
	CU_ASSERT_EQUAL(capacity, 128);
	free(bytes);
}

UNIT_TEST(growable_array, a_size_past_size_max_is_refused_and_the_array_kept)
{
	uint64_t *values = malloc(8 * sizeof(*values));
	uint64_t *before = values;
	size_t capacity = 8;

	CU_ASSERT_PTR_NOT_NULL_FATAL(values);
	if (!values)
		return;
	values[0] = 42;
	CU_ASSERT_EQUAL(growable_array_reserve((void **)&values, 8, &capacity, SIZE_MAX, 8),
			-ENOMEM);
	CU_ASSERT_EQUAL(growable_array_reserve((void **)&values, 8, &capacity, SIZE_MAX / 8, 8),
			-ENOMEM);
	CU_ASSERT_PTR_EQUAL(values, before);
	CU_ASSERT_EQUAL(capacity, 8);
	CU_ASSERT_EQUAL(values[0], 42);
	free(values);
}
