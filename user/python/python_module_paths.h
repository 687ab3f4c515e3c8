/* SPDX-License-Identifier: MIT */
/*
 * Where a module sits in its model: the attribute path of the module a
 * Module._call_impl call runs ("Net.layers.3.attn"), as named_modules()
 * names it, behind the class of its top module (the outermost module call
 * on the thread; the name the program holds it by is not in the process).
 * Found by walking the top module's tree through each module's _modules
 * dict, read out of the traced process (CPython 3.11 to 3.14, dicts
 * materialised in the module's managed dict slot, as nn.Module's own
 * __setattr__ leaves them); the process is never written to. Paths are
 * cached per module address; a module not met yet walks its top module's
 * tree again, at most PYTHON_MODULE_WALKS_MAX times per process.
 */
#ifndef TCHECK_PYTHON_MODULE_PATHS_H
#define TCHECK_PYTHON_MODULE_PATHS_H

#include <stdint.h>
#include <sys/types.h>

#include "base/u64_map.h"
#include "model/trace_records.h"
#include "python/python_layout.h"

struct placed_module;

/* Tree walks per process; each reads at most PYTHON_MODULE_WALK_NODES modules. */
#define PYTHON_MODULE_WALKS_MAX 256
#define PYTHON_MODULE_WALK_NODES 4096
/* Nesting followed below a top module, and entries read from one dict. */
#define PYTHON_MODULE_WALK_DEPTH 32
#define PYTHON_MODULE_DICT_ENTRIES 1024

struct python_module_paths {
	struct u64_map placed;	 /* module address -> its path, type and walk */
	struct u64_map unplaced; /* module address -> the top module it was not found under */
	uint64_t modules_key; /* the address of the str "_modules" once met: keys compare by it */
	uint32_t walks;	      /* tree walks done */
	struct placed_module *retired; /* paths later walks replaced, freed at the end */
};

void python_module_paths_init(struct python_module_paths *paths);

/*
 * The path of the module at self, of type type, whose outermost module call
 * on the thread runs the module at root (self itself for a top module);
 * NULL when it cannot be placed. The text lives in paths; the top module's
 * class is read through classes (python_module_classes.h).
 */
const char *python_module_path(struct python_module_paths *paths, struct u64_map *classes,
			       pid_t pid, const struct python_layout *layout, uint64_t self,
			       uint64_t type, uint64_t root);

/*
 * Adds the path of the module at self to a module call, as the argument
 * TRACE_MODULE_PATH_ARG. Returns 0, or -1 when it cannot be placed (the
 * call is left as it is).
 */
int python_module_path_add(struct python_module_paths *paths, struct u64_map *classes, pid_t pid,
			   const struct python_layout *layout, uint64_t self, uint64_t type,
			   uint64_t root, struct trace_python_call *call);

/* Frees the paths kept. */
void python_module_paths_free(struct python_module_paths *paths);

#endif /* TCHECK_PYTHON_MODULE_PATHS_H */
