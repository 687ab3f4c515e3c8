/* SPDX-License-Identifier: MIT */
/* Arrays that grow by doubling as elements are appended. */
#ifndef TCHECK_GROWABLE_ARRAY_H
#define TCHECK_GROWABLE_ARRAY_H

#include <stddef.h>

/*
 * Room in '*array' (of '*capacity' elements of 'element_size' bytes, 'count'
 * used) for one more: doubled when full, 8 at first. 0 or -ENOMEM (the
 * array unchanged).
 */
int growable_array_room_for_one(void **array, size_t count, size_t *capacity, size_t element_size);

#endif /* TCHECK_GROWABLE_ARRAY_H */
