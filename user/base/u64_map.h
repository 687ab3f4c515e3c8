/* SPDX-License-Identifier: MIT */
/*
 * A hash map from 64-bit keys to pointers, for the daemon's per-pid,
 * per-thread and per-handle tables. Open addressing, grows by doubling.
 */
#ifndef TCHECK_U64_MAP_H
#define TCHECK_U64_MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64_map {
	uint64_t *keys;
	void **values;	 /* NULL marks an empty slot: values must not be NULL */
	size_t capacity; /* a power of two, or 0 before the first insert */
	size_t count;
};

void u64_map_init(struct u64_map *map);
/* Frees the table, not the values. */
void u64_map_free(struct u64_map *map);
/* Frees each value with free(), then the table. */
void u64_map_free_with_values(struct u64_map *map);
void *u64_map_get(const struct u64_map *map, uint64_t key);
/* Inserts or replaces. Returns 0, or -ENOMEM. */
int u64_map_put(struct u64_map *map, uint64_t key, void *value);
/*
 * The value under key; where there is none, a new zeroed value of size bytes
 * put there, and *added set (added may be NULL). NULL when out of memory.
 */
void *u64_map_get_or_add(struct u64_map *map, uint64_t key, size_t size, int *added);
/*
 * The same through a caller's cache of it ('cached' may be NULL: the map
 * alone): *cached when set, without a look-up; else the map's value, kept in
 * *cached. A value stays where it is until it is removed, so a caller with a
 * table of its own (a slot per stage for one process) looks its key up once
 * there, and not again in each stage's map. A cached value must not be
 * removed from the map while the cache holds it.
 */
void *u64_map_get_or_add_cached(struct u64_map *map, uint64_t key, size_t size, int *added,
				void **cached);
/* Removes and returns the value, or NULL. */
void *u64_map_remove(struct u64_map *map, uint64_t key);

/* Iteration: for (size_t i = 0; u64_map_next(map, &i, &key, &value);) */
int u64_map_next(const struct u64_map *map, size_t *position, uint64_t *key, void **value);

#endif /* TCHECK_U64_MAP_H */
