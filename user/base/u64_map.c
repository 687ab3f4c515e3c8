// SPDX-License-Identifier: MIT
/* Open-addressing hash map from 64-bit keys to pointers. */
#include "base/u64_map.h"

#include <errno.h>
#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t capacity)
{
	/* Fibonacci hashing spreads pointer-like and sequential keys alike. */
	return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> 32) & (capacity - 1);
}

void u64_map_init(struct u64_map *map)
{
	map->keys = NULL;
	map->values = NULL;
	map->capacity = 0;
	map->count = 0;
}

void u64_map_free(struct u64_map *map)
{
	free(map->keys);
	free(map->values);
	u64_map_init(map);
}

void u64_map_free_with_values(struct u64_map *map)
{
	for (size_t slot = 0; slot < map->capacity; slot++)
		free(map->values[slot]);
	u64_map_free(map);
}

void *u64_map_get(const struct u64_map *map, uint64_t key)
{
	if (!map->capacity)
		return NULL;
	for (size_t slot = slot_of(key, map->capacity);; slot = (slot + 1) & (map->capacity - 1)) {
		if (!map->values[slot])
			return NULL;
		if (map->keys[slot] == key)
			return map->values[slot];
	}
}

static void place(struct u64_map *map, uint64_t key, void *value)
{
	size_t slot = slot_of(key, map->capacity);

	while (map->values[slot] && map->keys[slot] != key)
		slot = (slot + 1) & (map->capacity - 1);
	if (!map->values[slot])
		map->count++;
	map->keys[slot] = key;
	map->values[slot] = value;
}

static int grow(struct u64_map *map)
{
	struct u64_map bigger;

	bigger.capacity = map->capacity ? map->capacity * 2 : 16;
	bigger.count = 0;
	bigger.keys = calloc(bigger.capacity, sizeof(*bigger.keys));
	bigger.values = calloc(bigger.capacity, sizeof(*bigger.values));
	if (!bigger.keys || !bigger.values) {
		free(bigger.keys);
		free(bigger.values);
		return -ENOMEM;
	}
	for (size_t i = 0; i < map->capacity; i++)
		if (map->values[i])
			place(&bigger, map->keys[i], map->values[i]);
	free(map->keys);
	free(map->values);
	*map = bigger;
	return 0;
}

int u64_map_put(struct u64_map *map, uint64_t key, void *value)
{
	/* Keep the load under 3/4 so probes stay short. */
	if ((map->count + 1) * 4 > map->capacity * 3) {
		int error = grow(map);

		if (error)
			return error;
	}
	place(map, key, value);
	return 0;
}

void *u64_map_get_or_add(struct u64_map *map, uint64_t key, size_t size, int *added)
{
	void *value = u64_map_get(map, key);

	if (added)
		*added = !value;
	if (value)
		return value;
	value = calloc(1, size);
	if (!value || u64_map_put(map, key, value)) {
		free(value);
		return NULL;
	}
	return value;
}

void *u64_map_get_or_add_cached(struct u64_map *map, uint64_t key, size_t size, int *added,
				void **cached)
{
	void *value;

	if (cached && *cached) {
		if (added)
			*added = 0;
		return *cached;
	}
	value = u64_map_get_or_add(map, key, size, added);
	if (cached)
		*cached = value;
	return value;
}

void *u64_map_remove(struct u64_map *map, uint64_t key)
{
	size_t slot, next;
	void *removed;

	if (!map->capacity)
		return NULL;
	for (slot = slot_of(key, map->capacity); map->values[slot] && map->keys[slot] != key;
	     slot = (slot + 1) & (map->capacity - 1))
		;
	removed = map->values[slot];
	if (!removed)
		return NULL;
	map->values[slot] = NULL;
	map->count--;
	/* Re-place the rest of the cluster so later lookups still find it. */
	for (next = (slot + 1) & (map->capacity - 1); map->values[next];
	     next = (next + 1) & (map->capacity - 1)) {
		uint64_t moved_key = map->keys[next];
		void *moved_value = map->values[next];

		map->values[next] = NULL;
		map->count--;
		place(map, moved_key, moved_value);
	}
	return removed;
}

int u64_map_next(const struct u64_map *map, size_t *position, uint64_t *key, void **value)
{
	while (*position < map->capacity) {
		size_t slot = (*position)++;

		if (map->values[slot]) {
			*key = map->keys[slot];
			*value = map->values[slot];
			return 1;
		}
	}
	return 0;
}
