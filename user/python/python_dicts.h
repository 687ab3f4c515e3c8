/* SPDX-License-Identifier: MIT */
/*
 * Dicts of a traced process read from its memory: the entries of a
 * PyDictObject, and the value of one str key. Module paths walk the
 * `_modules` dicts with them; the train() overrides of module classes are
 * looked up in class dictionaries. CPython 3.11 to 3.14, builds with the
 * GIL, x86-64. Needs no kernel.
 */
#ifndef TCHECK_PYTHON_DICTS_H
#define TCHECK_PYTHON_DICTS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "python/python_layout.h"

/* Entries read of one dict at most, for a look-up. */
#define PYTHON_DICT_LOOKUP_ENTRIES 1024

struct python_dict_entry {
	uint64_t key;
	uint64_t value;
};

/* Whether the dict layout of the process's CPython is known (3.11 to 3.14). */
bool python_dict_layout_known(const struct python_layout *layout);

/*
 * The live entries of the dict at dict, in insertion order, at most max;
 * their count, or -1 when the dict cannot be read.
 */
int python_dict_entries_read(pid_t pid, const struct python_layout *layout, uint64_t dict,
			     struct python_dict_entry *entries, int max);

/*
 * Looks up the str key 'name' in the dict at dict: 1 with its value in
 * *value, 0 when the dict has no such key, -1 when it cannot be read.
 * Keys of attribute dicts are interned: '*known_key' (NULL: none kept)
 * holds the address of the str 'name' once met (0 before), and entries are
 * compared by it before any str is read.
 */
int python_dict_lookup(pid_t pid, const struct python_layout *layout, uint64_t dict,
		       const char *name, uint64_t *known_key, uint64_t *value);

#endif /* TCHECK_PYTHON_DICTS_H */
