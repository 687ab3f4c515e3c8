// SPDX-License-Identifier: MIT
/* Arrays that grow by doubling; see growable_array.h. */
#include "base/growable_array.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* The first capacity of an array that had none. */
#define GROWABLE_ARRAY_FIRST_CAPACITY 8

int growable_array_reserve(void **array, size_t count, size_t *capacity, size_t more,
			   size_t element_size)
{
	size_t wanted, grown_capacity = *capacity ? *capacity : GROWABLE_ARRAY_FIRST_CAPACITY;
	void *grown;

	if (more > SIZE_MAX - count)
		return -ENOMEM;
	wanted = count + more;
	if (wanted <= *capacity)
		return 0;
	while (grown_capacity < wanted)
		grown_capacity = grown_capacity > SIZE_MAX / 2 ? wanted : grown_capacity * 2;
	if (!element_size || grown_capacity > SIZE_MAX / element_size)
		return -ENOMEM;
	grown = realloc(*array, grown_capacity * element_size);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*capacity = grown_capacity;
	return 0;
}

int growable_array_room_for_one(void **array, size_t count, size_t *capacity, size_t element_size)
{
	return growable_array_reserve(array, count, capacity, 1, element_size);
}
