// SPDX-License-Identifier: MIT
/* Attribute paths of modules, from walks of their top module's _modules dicts. */
#include "python/python_module_paths.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/remote_memory.h"
#include "python/python_dicts.h"
#include "python/python_module_classes.h"

/*
 * An object whose type has a managed dict keeps the dict's address three
 * words before the object (CPython 3.11 to 3.14; 3.12 tags it with bit 0
 * when only inline values exist).
 */
#define MANAGED_DICT_BEFORE_OBJECT 24
#define NAME_BYTES 128

/* Where one module was found. */
struct placed_module {
	uint64_t module, root; /* placed under that top module (placement_key) */
	uint64_t type;	       /* its ob_type then: an address reused by another object misses */
	uint32_t walk; /* the walk that placed it: a module met twice keeps its first path */
	/* Replaced by a later walk: kept, for records emitted with its text, until the end. */
	struct placed_module *next_retired;
	char path[];
};

/* One walk of a top module's tree. */
struct module_walk {
	struct python_module_paths *paths;
	pid_t pid;
	const struct python_layout *layout;
	uint64_t root;
	uint32_t walk;
	uint32_t nodes;
};

void python_module_paths_init(struct python_module_paths *paths)
{
	memset(paths, 0, sizeof(*paths));
	u64_map_init(&paths->placed);
	u64_map_init(&paths->unplaced);
	u64_map_init(&paths->tops);
}

/*
 * A module is placed under each top module it is called under (a submodule
 * called on its own is its own top): the key of the pair. Entries hold both
 * addresses, so a collision reads as a miss.
 */
static uint64_t placement_key(uint64_t module, uint64_t root)
{
	return module * 0x9E3779B97F4A7C15ULL ^ root;
}

static struct placed_module *placed_get(const struct python_module_paths *paths, uint64_t module,
					uint64_t root)
{
	struct placed_module *placed = u64_map_get(&paths->placed, placement_key(module, root));

	return placed && placed->module == module && placed->root == root ? placed : NULL;
}

/* The value of the module at module's attribute "_modules", 0 when it cannot be read. */
static uint64_t submodules_dict(struct module_walk *walk, uint64_t module)
{
	uint64_t dict = 0, submodules = 0;

	if (remote_memory_read_u64(walk->pid, module - MANAGED_DICT_BEFORE_OBJECT, &dict) ||
	    !dict || (dict & 1))
		return 0;
	/* Keys are interned: every module's "_modules" is one str, compared by address. */
	return python_dict_lookup(walk->pid, walk->layout, dict, "_modules",
				  &walk->paths->modules_key, &submodules) == 1
		       ? submodules
		       : 0;
}

/* Keeps path for the module at module; false when it was placed in this walk already. */
static bool place(struct module_walk *walk, uint64_t module, const char *path)
{
	struct placed_module *placed = placed_get(walk->paths, module, walk->root);
	struct placed_module *earlier =
		u64_map_get(&walk->paths->placed, placement_key(module, walk->root));
	size_t length = strlen(path);
	uint64_t type = 0;

	if (placed && placed->walk == walk->walk)
		return false;
	if (remote_memory_read_u64(walk->pid, module + (uint64_t)walk->layout->object_type, &type))
		return false;
	if (placed && placed->type == type && strcmp(placed->path, path) == 0) {
		placed->walk = walk->walk;
		return true;
	}
	placed = malloc(sizeof(*placed) + length + 1);
	if (!placed)
		return false;
	placed->module = module;
	placed->root = walk->root;
	placed->type = type;
	placed->walk = walk->walk;
	placed->next_retired = NULL;
	memcpy(placed->path, path, length + 1);
	if (u64_map_put(&walk->paths->placed, placement_key(module, walk->root), placed)) {
		free(placed);
		return false;
	}
	if (earlier) {
		earlier->next_retired = walk->paths->retired;
		walk->paths->retired = earlier;
	}
	u64_map_remove(&walk->paths->unplaced, placement_key(module, walk->root));
	return true;
}

/* Places module at path, then its submodules below it, in named_modules() order. */
static void walk_tree(struct module_walk *walk, uint64_t module, const char *path, int depth)
{
	struct python_dict_entry *children;
	uint64_t submodules;
	char name[NAME_BYTES], child_path[1024], error[256];
	int count;

	if (walk->nodes >= PYTHON_MODULE_WALK_NODES || !place(walk, module, path))
		return;
	walk->nodes++;
	if (depth >= PYTHON_MODULE_WALK_DEPTH)
		return;
	submodules = submodules_dict(walk, module);
	if (!submodules)
		return;
	children = malloc(PYTHON_MODULE_DICT_ENTRIES * sizeof(*children));
	if (!children)
		return;
	count = python_dict_entries_read(walk->pid, walk->layout, submodules, children,
					 PYTHON_MODULE_DICT_ENTRIES);
	for (int i = 0; i < count; i++) {
		/* A submodule set to None has no tree. */
		if (children[i].value == walk->layout->addresses.none ||
		    python_string_read(walk->pid, walk->layout, children[i].key, name, sizeof(name),
				       error, sizeof(error)) ||
		    snprintf(child_path, sizeof(child_path), "%s.%s", path, name) >=
			    (int)sizeof(child_path))
			continue;
		walk_tree(walk, children[i].value, child_path, depth + 1);
	}
	free(children);
}

/* The class of the module at root, of type type when it is self. */
static const char *root_class(struct u64_map *classes, pid_t pid,
			      const struct python_layout *layout, uint64_t root, uint64_t self,
			      uint64_t type)
{
	uint64_t root_type = type;

	if (root != self &&
	    remote_memory_read_u64(pid, root + (uint64_t)layout->object_type, &root_type))
		return NULL;
	return python_module_class_name(classes, pid, root_type);
}

static const char *placed_path(const struct python_module_paths *paths, uint64_t self,
			       uint64_t type, uint64_t root)
{
	const struct placed_module *placed = placed_get(paths, self, root);

	return placed && placed->type == type ? placed->path : NULL;
}

const char *python_module_path(struct python_module_paths *paths, struct u64_map *classes,
			       pid_t pid, const struct python_layout *layout, uint64_t self,
			       uint64_t type, uint64_t root, bool root_is_top)
{
	const char *path, *top_class;
	struct module_walk walk = { .paths = paths, .pid = pid, .layout = layout, .root = root };

	if (!self || !root || !python_dict_layout_known(layout))
		return NULL;
	if (root_is_top && !u64_map_get(&paths->tops, root) &&
	    u64_map_put(&paths->tops, root, (void *)paths))
		return NULL;
	/* A top module not known to be one may be an inner module entered before the probes. */
	if (!u64_map_get(&paths->tops, root))
		return NULL;
	path = placed_path(paths, self, type, root);
	/* Looked for under this top module already: no walk for each of its calls. */
	if (path || u64_map_get(&paths->unplaced, placement_key(self, root)) ||
	    paths->walks >= PYTHON_MODULE_WALKS_MAX)
		return path;
	top_class = root_class(classes, pid, layout, root, self, type);
	if (!top_class)
		return NULL;
	walk.walk = ++paths->walks;
	walk_tree(&walk, root, top_class, 0);
	path = placed_path(paths, self, type, root);
	if (!path)
		u64_map_put(&paths->unplaced, placement_key(self, root), (void *)paths);
	return path;
}

const struct tcheck_python_arg *python_record_self(const struct tcheck_python_record *record)
{
	for (uint32_t i = 0; i < record->arg_count && i < TCHECK_PYTHON_ARGS_MAX; i++)
		if (record->args[i].type == TCHECK_PYTHON_ARG_OBJECT &&
		    record->args[i].position == 0)
			return &record->args[i];
	return NULL;
}

bool python_module_call_of(const struct tcheck_python_record *record,
			   const struct trace_python_call *call, struct python_module_call *out)
{
	const struct tcheck_python_arg *self = python_record_self(record);
	uint32_t module_callers = 0;

	if (!self)
		return false;
	for (uint32_t i = 0; i < call->py_stack.depth && i < TRACE_PY_STACK_MAX; i++)
		module_callers += strcmp(call->py_stack.frames[i], TRACE_MODULE_CALL_NAME) == 0;
	memcpy(&out->module, self->bytes, sizeof(out->module));
	memcpy(&out->top, self->bytes + sizeof(out->module), sizeof(out->top));
	out->type = self->value;
	/* Callers cut by the probe's walk may not show every module call. */
	out->top_known =
		!(record->flags & TCHECK_PYTHON_CALLERS_CUT) && module_callers == self->state;
	return true;
}

int python_module_path_add(struct python_module_paths *paths, struct u64_map *classes,
			   const struct python_layout *layout,
			   const struct tcheck_python_record *record,
			   struct trace_python_call *call)
{
	struct python_module_call module;
	bool has_class = false;
	const char *path;

	for (uint32_t i = 0; i < call->arg_count && i < TRACE_PY_ARGS_MAX; i++)
		has_class |= strcmp(call->args[i].name, TRACE_MODULE_CLASS_ARG) == 0;
	if (!has_class || !python_module_call_of(record, call, &module))
		return 1;
	path = python_module_path(paths, classes, (pid_t)record->header.pid, layout, module.module,
				  module.type, module.top, module.top_known);
	if (!path || call->arg_count >= TRACE_PY_ARGS_MAX)
		return -1;
	call->args[call->arg_count++] = (struct trace_python_arg){ .name = TRACE_MODULE_PATH_ARG,
								   .type = TRACE_VALUE_STR,
								   .text = path };
	return 0;
}

void python_module_paths_free(struct python_module_paths *paths)
{
	u64_map_free_with_values(&paths->placed);
	u64_map_free(&paths->unplaced);
	u64_map_free(&paths->tops);
	while (paths->retired) {
		struct placed_module *next = paths->retired->next_retired;

		free(paths->retired);
		paths->retired = next;
	}
}
