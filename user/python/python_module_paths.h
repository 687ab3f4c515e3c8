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

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/u64_map.h"
#include "tcheck/probe_abi.h"
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
	struct u64_map placed;	 /* (module, top module) -> its path, type and walk */
	struct u64_map unplaced; /* (module, top module) -> non-NULL: not found under it */
	struct u64_map tops;	 /* top module address -> non-NULL: known to be outermost */
	uint64_t modules_key; /* the address of the str "_modules" once met: keys compare by it */
	uint32_t walks;	      /* tree walks done */
	struct placed_module *retired; /* paths later walks replaced, freed at the end */
};

void python_module_paths_init(struct python_module_paths *paths);

/*
 * The path of the module at self, of type type, whose outermost module call
 * on the thread runs the module at root (self itself for a top module);
 * NULL when it cannot be placed. root_is_top: the call's own callers show
 * no module call above root's (a call entered before the probes were
 * attached would make an inner module look outermost); paths are given only
 * under a root once some call showed it to be a top. The text lives in
 * paths; the top module's class is read through classes
 * (python_module_classes.h).
 */
const char *python_module_path(struct python_module_paths *paths, struct u64_map *classes,
			       pid_t pid, const struct python_layout *layout, uint64_t self,
			       uint64_t type, uint64_t root, bool root_is_top);

/* The object a call's probe kept as its self (its first parameter), or NULL. */
const struct tcheck_python_arg *python_record_self(const struct tcheck_python_record *record);

/* A module call's module and top module, as its probe kept them. */
struct python_module_call {
	uint64_t module; /* self's address */
	uint64_t type;	 /* self's type */
	uint64_t top;	 /* the self of the outermost module call on the thread */
	/*
	 * The callers hold as many module calls as the probe saw open above
	 * it, uncut: no call entered before the probes were attached makes an
	 * inner module look outermost.
	 */
	bool top_known;
};

/*
 * Reads a Module._call_impl record (its named callers in call); false when
 * the probe kept no self.
 */
bool python_module_call_of(const struct tcheck_python_record *record,
			   const struct trace_python_call *call, struct python_module_call *out);

/*
 * Adds the path of a module call's module (record: the probe's record of
 * Module._call_impl, its self a TCHECK_PYTHON_ARG_OBJECT) to call, which
 * already holds its class (TRACE_MODULE_CLASS_ARG) and its named callers,
 * as the argument TRACE_MODULE_PATH_ARG. Its top module is known to be one
 * when the callers hold as many module calls as the probe saw open above it
 * (a call entered before the probes were attached is in the callers only)
 * and the probe did not cut them (TCHECK_PYTHON_CALLERS_CUT). Returns 0; 1
 * when the call has no self or class; -1 when the module cannot be placed
 * (the call is left as it is).
 */
int python_module_path_add(struct python_module_paths *paths, struct u64_map *classes,
			   const struct python_layout *layout,
			   const struct tcheck_python_record *record,
			   struct trace_python_call *call);

/* Frees the paths kept. */
void python_module_paths_free(struct python_module_paths *paths);

#endif /* TCHECK_PYTHON_MODULE_PATHS_H */
