// SPDX-License-Identifier: MIT
/* Dicts of a traced process, read from its memory (python_dicts.h). */
#include "python/python_dicts.h"

#include <stdlib.h>
#include <string.h>

#include "base/remote_memory.h"

/*
 * CPython 3.11 to 3.14 (GIL builds, x86-64), the same in each.
 * PyDictObject: ma_keys at 32, ma_values at 40. PyDictKeysObject:
 * dk_log2_index_bytes at 9, dk_kind at 10 (0 general, 1 str keys, 2 split),
 * dk_nentries at 24, the index table at 32, then the entries: hash, key,
 * value (general) or key, value. A split dict's values are in ma_values:
 * from its start (3.11, 3.12) or after 8 bytes of sizes and flags (3.13+).
 */
#define DICT_KEYS 32
#define DICT_VALUES 40
#define DICT_HEAD_BYTES 48
#define KEYS_LOG2_INDEX_BYTES 9
#define KEYS_KIND 10
#define KEYS_ENTRY_COUNT 24
#define KEYS_INDICES 32
#define KEYS_HEAD_BYTES 32
#define KEYS_KIND_GENERAL 0
#define KEYS_KIND_SPLIT 2
#define KEYS_INDEX_BYTES_LOG2_MAX 24
/* Longer keys are not the names looked up (attribute names). */
#define NAME_BYTES 128

bool python_dict_layout_known(const struct python_layout *layout)
{
	return layout->major == 3 && layout->minor >= 11 && layout->minor <= 14;
}

int python_dict_entries_read(pid_t pid, const struct python_layout *layout, uint64_t dict,
			     struct python_dict_entry *entries, int max)
{
	unsigned char head[DICT_HEAD_BYTES], keys_head[KEYS_HEAD_BYTES];
	uint64_t keys, values, table, *split_values = NULL;
	int64_t entry_count;
	unsigned kind, index_bytes_log2;
	size_t entry_size, key_at, value_at;
	unsigned char *raw;
	char error[256];
	int kept = 0;

	if (!dict || remote_memory_read(pid, dict, head, sizeof(head), error, sizeof(error)))
		return -1;
	memcpy(&keys, head + DICT_KEYS, sizeof(keys));
	memcpy(&values, head + DICT_VALUES, sizeof(values));
	if (!keys ||
	    remote_memory_read(pid, keys, keys_head, sizeof(keys_head), error, sizeof(error)))
		return -1;
	index_bytes_log2 = keys_head[KEYS_LOG2_INDEX_BYTES];
	kind = keys_head[KEYS_KIND];
	memcpy(&entry_count, keys_head + KEYS_ENTRY_COUNT, sizeof(entry_count));
	if (kind > KEYS_KIND_SPLIT || index_bytes_log2 > KEYS_INDEX_BYTES_LOG2_MAX ||
	    entry_count < 0 || (kind == KEYS_KIND_SPLIT) != (values != 0))
		return -1;
	if (entry_count > max)
		entry_count = max;
	if (entry_count == 0)
		return 0;
	entry_size = kind == KEYS_KIND_GENERAL ? 24 : 16;
	key_at = kind == KEYS_KIND_GENERAL ? 8 : 0;
	value_at = key_at + 8;
	table = keys + KEYS_INDICES + (1ULL << index_bytes_log2);
	raw = malloc((size_t)entry_count * entry_size);
	if (values)
		split_values = malloc((size_t)entry_count * sizeof(*split_values));
	if (!raw || (values && !split_values) ||
	    remote_memory_read(pid, table, raw, (size_t)entry_count * entry_size, error,
			       sizeof(error)) ||
	    (values && remote_memory_read(pid, values + (layout->minor >= 13 ? 8 : 0), split_values,
					  (size_t)entry_count * sizeof(*split_values), error,
					  sizeof(error)))) {
		free(raw);
		free(split_values);
		return -1;
	}
	for (int64_t i = 0; i < entry_count; i++) {
		struct python_dict_entry entry;

		memcpy(&entry.key, raw + i * entry_size + key_at, sizeof(entry.key));
		if (values)
			entry.value = split_values[i];
		else
			memcpy(&entry.value, raw + i * entry_size + value_at, sizeof(entry.value));
		/* A deleted entry has no key; a split dict's slot no value. */
		if (entry.key && entry.value)
			entries[kept++] = entry;
	}
	free(raw);
	free(split_values);
	return kept;
}

int python_dict_lookup(pid_t pid, const struct python_layout *layout, uint64_t dict,
		       const char *name, uint64_t *known_key, uint64_t *value)
{
	struct python_dict_entry *entries;
	char text[NAME_BYTES], error[256];
	int count, found = 0;

	if (!python_dict_layout_known(layout))
		return -1;
	entries = malloc(PYTHON_DICT_LOOKUP_ENTRIES * sizeof(*entries));
	if (!entries)
		return -1;
	count = python_dict_entries_read(pid, layout, dict, entries, PYTHON_DICT_LOOKUP_ENTRIES);
	if (count < 0)
		found = -1;
	for (int i = 0; known_key && *known_key && i < count && !found; i++)
		if (entries[i].key == *known_key) {
			*value = entries[i].value;
			found = 1;
		}
	for (int i = 0; i < count && !found; i++)
		if (python_string_read(pid, layout, entries[i].key, text, sizeof(text), error,
				       sizeof(error)) == 0 &&
		    strcmp(text, name) == 0) {
			if (known_key)
				*known_key = entries[i].key;
			*value = entries[i].value;
			found = 1;
		}
	free(entries);
	return found;
}
