/* SPDX-License-Identifier: MIT */
/* Arrays that grow by doubling as elements are appended. */
#ifndef TCHECK_GROWABLE_ARRAY_H
#define TCHECK_GROWABLE_ARRAY_H

#include <stddef.h>

/*
 * Room in '*array' (of '*capacity' elements of 'element_size' bytes, 'count'
 * used) for 'more' elements past 'count': the capacity doubled (8 at first)
 * until they fit. 0 or -ENOMEM (the array unchanged; also when the size
 * would not fit in a size_t, or for elements of no size).
 */
int growable_array_reserve(void **array, size_t count, size_t *capacity, size_t more,
			   size_t element_size);

/* Room for one more element: growable_array_reserve(array, count, capacity, 1, element_size). */
int growable_array_room_for_one(void **array, size_t count, size_t *capacity, size_t element_size);

#endif /* TCHECK_GROWABLE_ARRAY_H */
