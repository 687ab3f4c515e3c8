// SPDX-License-Identifier: MIT
/* Arrays that grow by doubling; see growable_array.h. */
#include "base/growable_array.h"

#include <errno.h>
#include <stdlib.h>

int growable_array_room_for_one(void **array, size_t count, size_t *capacity, size_t element_size)
{
	size_t grown_capacity = *capacity ? *capacity * 2 : 8;
	void *grown;

	if (count < *capacity)
		return 0;
	grown = realloc(*array, grown_capacity * element_size);
	if (!grown)
		return -ENOMEM;
	*array = grown;
	*capacity = grown_capacity;
	return 0;
}
