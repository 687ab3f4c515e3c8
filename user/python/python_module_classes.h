/* SPDX-License-Identifier: MIT */
/*
 * The class of the module a Module._call_impl call runs ("Linear", "ReLU"),
 * read out of the traced process from the type of its self argument: the
 * type object's tp_name. Cached per type address, per process.
 */
#ifndef TCHECK_PYTHON_MODULE_CLASSES_H
#define TCHECK_PYTHON_MODULE_CLASSES_H

#include <stdint.h>
#include <sys/types.h>

#include "base/u64_map.h"
#include "model/trace_records.h"

/*
 * The class name of the type object at type in process pid, the part after
 * the last dot of its tp_name; NULL when it cannot be read. The text lives
 * in classes (type address -> name) until python_module_classes_free.
 */
const char *python_module_class_name(struct u64_map *classes, pid_t pid, uint64_t type);

/*
 * Adds the class of the module at type to a Module._call_impl call, as the
 * argument TRACE_MODULE_CLASS_ARG (its text kept in classes). Returns 0, or
 * -1 when the class cannot be read (the call is left as it is).
 */
int python_module_class_add(struct u64_map *classes, pid_t pid, uint64_t type,
			    struct trace_python_call *call);

/* Frees the names kept in classes, and the map. */
void python_module_classes_free(struct u64_map *classes);

#endif /* TCHECK_PYTHON_MODULE_CLASSES_H */
