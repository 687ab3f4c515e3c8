/* SPDX-License-Identifier: MIT */
/*
 * What a class of the traced process defines, read from its type object:
 * the class dictionaries along its method resolution order. Used to tell a
 * module class that overrides nn.Module.train() (mmpretrain's backbones
 * freeze their stages there) from one that inherits it. Needs no kernel;
 * reads the process's memory only.
 */
#ifndef TCHECK_PYTHON_TYPE_ATTRIBUTES_H
#define TCHECK_PYTHON_TYPE_ATTRIBUTES_H

#include <stdint.h>
#include <sys/types.h>

#include "base/u64_map.h"
#include "python/python_layout.h"

/*
 * PyTypeObject's tp_dict and tp_mro: the same offsets on every CPython
 * from 3.8 on, x86_64 (checked on 3.11, 3.13 and 3.14 against
 * type.__dict__ and type.__mro__).
 */
#define PYTHON_TYPE_DICT_OFFSET 264
#define PYTHON_TYPE_MRO_OFFSET 344

enum python_type_answer {
	PYTHON_TYPE_UNKNOWN = -1, /* unreadable, or a CPython whose dict layout is not known */
	PYTHON_TYPE_NO = 0,
	PYTHON_TYPE_YES = 1,
};

/*
 * Whether the attribute 'attribute' of the class at 'type' comes from a
 * class of its method resolution order other than the one named
 * 'base_name' (its __name__, read through 'class_names' as
 * python_module_class_name keeps them): the class, or a class between it
 * and that base, defines its own. NO where the first class defining it is
 * the base, or was defined in a module whose name starts with
 * 'exempt_module_prefix' (torch's own classes: DistributedDataParallel's
 * train() is torch's plumbing, not the program's), or none does. The dictionary layout is
 * CPython 3.11's, 3.12's, 3.13's and 3.14's (without free threading); UNKNOWN on 3.10.
 */
enum python_type_answer python_type_overrides(struct u64_map *class_names, pid_t pid,
					      const struct python_layout *layout, uint64_t type,
					      const char *attribute, const char *base_name,
					      const char *exempt_module_prefix);

/*
 * The same, answered once per class: 'answers' keeps type address ->
 * answer for the process. An UNKNOWN is kept too (a class read once).
 */
enum python_type_answer python_type_overrides_cached(struct u64_map *answers,
						     struct u64_map *class_names, pid_t pid,
						     const struct python_layout *layout,
						     uint64_t type, const char *attribute,
						     const char *base_name,
						     const char *exempt_module_prefix);

#endif /* TCHECK_PYTHON_TYPE_ATTRIBUTES_H */
