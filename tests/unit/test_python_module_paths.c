// SPDX-License-Identifier: MIT
/*
 * Module attribute paths, walked over a model laid out in this test's own
 * memory the way CPython 3.11 to 3.14 lay one out (managed dict three words
 * before each module, its "_modules" dict, str keys) and read back through
 * the same remote reads as a traced process. The truth is the tree built
 * here, named as named_modules() would name it.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "python/python_module_classes.h"
#include "python/python_module_paths.h"
#include "unit.h"

#define ENTRIES_MAX 8

struct fake_type {
	uint64_t head[3]; /* ob_refcnt, ob_type, ob_size */
	const char *tp_name;
};

/* A compact ASCII str of 3.12+ (data at 40), or 3.11 (data at 48). */
struct fake_str {
	uint64_t refcnt, type;
	int64_t length;
	uint64_t hash, state, padding;
	char data[24];
};

/* PyDictKeysObject with 8 one-byte indices, then the entries (key, value or hash, key, value). */
struct fake_keys {
	uint64_t refcnt;
	uint8_t log2_size, log2_index_bytes, kind, reserved[5];
	int64_t usable, entry_count;
	uint8_t indices[8];
	uint64_t entries[ENTRIES_MAX * 3];
};

struct fake_dict {
	uint64_t refcnt, type, used, version, keys, values;
};

/* A module: its managed dict pointer and the GC words before it, then the object. */
struct fake_module {
	uint64_t managed_dict, gc_next, gc_prev;
	uint64_t refcnt, type;
	struct fake_dict dict, modules;
	struct fake_keys dict_keys, modules_keys;
	uint64_t split_values[ENTRIES_MAX + 1];
};

static struct python_layout layout;
static struct fake_type module_list_type = { .tp_name = "ModuleList" },
			net_type = { .tp_name = "__main__.Net" },
			block_type = { .tp_name = "Block" }, linear_type = { .tp_name = "Linear" };
static uint64_t none_object[2];
/* What a model was built of, freed after it. */
static void *allocations[128];
static size_t allocation_count;

static void *fake_new(size_t size)
{
	void *object = calloc(1, size);

	CU_ASSERT_PTR_NOT_NULL_FATAL(object);
	CU_ASSERT_FATAL(allocation_count < sizeof(allocations) / sizeof(allocations[0]));
	allocations[allocation_count++] = object;
	return object;
}

static uint64_t address_of(const void *pointer)
{
	return (uint64_t)(uintptr_t)pointer;
}

static uint64_t text(const char *characters)
{
	struct fake_str *str = fake_new(sizeof(*str));
	size_t data_offset = (size_t)layout.unicode_ascii_data;

	str->length = (int64_t)strlen(characters);
	str->state = (1U << 2) | (1U << 5) | (1U << 6); /* kind 1, compact, ASCII */
	memcpy((char *)str + data_offset, characters, strlen(characters));
	return address_of(str);
}

/* Adds key -> value to keys (kind 1: key, value; kind 0: hash, key, value). */
static void keys_add(struct fake_keys *keys, uint64_t key, uint64_t value)
{
	size_t width = keys->kind == 0 ? 3 : 2, at = (size_t)keys->entry_count * width;

	if (keys->kind == 0)
		keys->entries[at++] = 0x5eed;
	keys->entries[at] = key;
	keys->entries[at + 1] = value;
	keys->entry_count++;
}

static struct fake_module *module_new(struct fake_type *type, uint8_t modules_kind)
{
	struct fake_module *module = fake_new(sizeof(*module));

	module->type = address_of(type);
	module->managed_dict = address_of(&module->dict);
	module->dict.keys = address_of(&module->dict_keys);
	module->dict_keys.log2_size = 3;
	module->dict_keys.log2_index_bytes = 3;
	module->dict_keys.kind = 1;
	keys_add(&module->dict_keys, text("training"), address_of(none_object));
	keys_add(&module->dict_keys, text("_modules"), address_of(&module->modules));
	module->modules.keys = address_of(&module->modules_keys);
	module->modules_keys.log2_size = 3;
	module->modules_keys.log2_index_bytes = 3;
	module->modules_keys.kind = modules_kind;
	return module;
}

static uint64_t self_of(const struct fake_module *module)
{
	return address_of(&module->refcnt);
}

static const char *path_of(struct python_module_paths *paths, struct u64_map *classes,
			   const struct fake_module *module, struct fake_type *type,
			   const struct fake_module *root, bool root_is_top)
{
	return python_module_path(paths, classes, getpid(), &layout, self_of(module),
				  address_of(type), self_of(root), root_is_top);
}

static void child_add(struct fake_module *parent, const char *name, uint64_t child)
{
	keys_add(&parent->modules_keys, text(name), child);
}

/* The instance dict turned split, its values beside it, laid out as the version has them. */
static void dict_split(struct fake_module *module, int minor)
{
	size_t skip = minor >= 13 ? 1 : 0;

	module->dict_keys.kind = 2;
	for (int64_t i = 0; i < module->dict_keys.entry_count; i++) {
		module->split_values[skip + (size_t)i] = module->dict_keys.entries[i * 2 + 1];
		module->dict_keys.entries[i * 2 + 1] = 0;
	}
	module->dict.values = address_of(module->split_values);
}

static void run_model(int minor)
{
	char error[256];
	struct fake_module *net, *layers, *blocks[2], *linears[2], *shared, *stranger, *late;
	struct python_module_paths paths;
	struct u64_map classes;
	const char *path;
	uint32_t walks;

	CU_ASSERT_EQUAL_FATAL(python_layout_from_table(3, minor, &layout, error, sizeof(error)), 0);
	layout.addresses.none = address_of(none_object);
	net = module_new(&net_type, 1);
	layers = module_new(&module_list_type, 0); /* a general dict: OrderedDict in torch 1.x */
	shared = module_new(&linear_type, 1);
	stranger = module_new(&linear_type, 1);
	child_add(net, "layers", self_of(layers));
	child_add(net, "head", address_of(none_object));
	child_add(net, "tied", self_of(shared));
	for (int i = 0; i < 2; i++) {
		char name[2] = { (char)('0' + i), 0 };

		blocks[i] = module_new(&block_type, 1);
		linears[i] = module_new(&linear_type, 1);
		child_add(layers, name, self_of(blocks[i]));
		child_add(blocks[i], "attn", self_of(linears[i]));
		/* The same module under two names: named_modules() gives it its first. */
		child_add(blocks[i], "shared", self_of(shared));
	}
	dict_split(blocks[1], minor);

	python_module_paths_init(&paths);
	u64_map_init(&classes);
	/* Entered before the probes: an inner module looks outermost, and is not taken for a top.
	 */
	CU_ASSERT_PTR_NULL(path_of(&paths, &classes, linears[1], &linear_type, blocks[1], false));
	CU_ASSERT_EQUAL(paths.walks, 0);
	path = path_of(&paths, &classes, linears[1], &linear_type, net, true);
	CU_ASSERT_PTR_NOT_NULL_FATAL(path);
	CU_ASSERT_STRING_EQUAL(path, "Net.layers.1.attn");
	/* Once the top is known, calls whose callers were cut are placed under it too. */
	CU_ASSERT_STRING_EQUAL(path_of(&paths, &classes, blocks[0], &block_type, net, false),
			       "Net.layers.0");
	CU_ASSERT_STRING_EQUAL(path_of(&paths, &classes, net, &net_type, net, true), "Net");
	CU_ASSERT_STRING_EQUAL(path_of(&paths, &classes, shared, &linear_type, net, true),
			       "Net.layers.0.shared");
	CU_ASSERT_EQUAL(paths.walks, 1);
	/* A submodule called on its own is its own top: placed under it, and still under net. */
	CU_ASSERT_STRING_EQUAL(path_of(&paths, &classes, linears[1], &linear_type, blocks[1], true),
			       "Block.attn");
	CU_ASSERT_STRING_EQUAL(path_of(&paths, &classes, linears[1], &linear_type, net, false),
			       "Net.layers.1.attn");
	/* Another type at a known address is another object: not the module placed there. */
	CU_ASSERT_PTR_NULL(path_of(&paths, &classes, blocks[0], &linear_type, net, true));
	/* Not under its top module: no path, and one walk for it, not one per call. */
	CU_ASSERT_PTR_NULL(path_of(&paths, &classes, stranger, &linear_type, net, true));
	walks = paths.walks;
	CU_ASSERT_PTR_NULL(path_of(&paths, &classes, stranger, &linear_type, net, true));
	CU_ASSERT_EQUAL(paths.walks, walks);
	/* A module added to the model later is met at a new address: walked again, placed. */
	late = module_new(&block_type, 1);
	child_add(linears[0], "late", self_of(late));
	CU_ASSERT_STRING_EQUAL(path_of(&paths, &classes, late, &block_type, net, true),
			       "Net.layers.0.attn.late");
	CU_ASSERT_EQUAL(paths.walks, walks + 1);
	/* A top module whose dict cannot be read places nothing below it. */
	stranger->managed_dict = 0;
	child_add(stranger, "inner", self_of(late));
	CU_ASSERT_PTR_NULL(path_of(&paths, &classes, blocks[1], &linear_type, stranger, true));
	python_module_paths_free(&paths);
	python_module_classes_free(&classes);
	while (allocation_count)
		free(allocations[--allocation_count]);
}

UNIT_TEST(python_module_paths, paths_as_named_modules_names_them_on_3_11)
{
	run_model(11);
}

UNIT_TEST(python_module_paths, paths_as_named_modules_names_them_on_3_13)
{
	run_model(13);
}

UNIT_TEST(python_module_paths, paths_as_named_modules_names_them_on_3_14)
{
	run_model(14);
}

/* A module call as the probe sends it: self, its top module, the module calls open above it. */
static struct tcheck_python_record module_record(const struct fake_module *module,
						 const struct fake_module *root,
						 uint32_t open_above, uint32_t caller_count)
{
	struct tcheck_python_record record = { .arg_count = 1, .stack_depth = caller_count };

	if (caller_count == TCHECK_PY_STACK_MAX)
		record.flags = TCHECK_PYTHON_CALLERS_CUT;
	uint64_t self = self_of(module), top = self_of(root);

	record.header.pid = (uint32_t)getpid();
	record.args[0].type = TCHECK_PYTHON_ARG_OBJECT;
	record.args[0].value = module->type;
	record.args[0].state = open_above;
	memcpy(record.args[0].bytes, &self, sizeof(self));
	memcpy(record.args[0].bytes + sizeof(self), &top, sizeof(top));
	return record;
}

UNIT_TEST(python_module_paths, a_top_is_known_by_the_module_calls_among_its_callers)
{
	char error[256];
	struct fake_module *net, *linear;
	struct python_module_paths paths;
	struct u64_map classes;
	struct tcheck_python_record record;
	struct trace_python_call call = {
		.arg_count = 1,
		.args = { { .name = TRACE_MODULE_CLASS_ARG,
			    .type = TRACE_VALUE_STR,
			    .text = "Linear" } },
		.py_stack = { .depth = 2,
			      .frames = { "__main__.Net.forward", TRACE_MODULE_CALL_NAME } },
	};

	CU_ASSERT_EQUAL_FATAL(python_layout_from_table(3, 13, &layout, error, sizeof(error)), 0);
	net = module_new(&net_type, 1);
	linear = module_new(&linear_type, 1);
	child_add(net, "fc", self_of(linear));
	python_module_paths_init(&paths);
	u64_map_init(&classes);
	/* The callers hold a module call the probe did not see open: entered before it. */
	record = module_record(linear, linear, 0, 2);
	CU_ASSERT_EQUAL(python_module_path_add(&paths, &classes, &layout, &record, &call), -1);
	/* Callers the probe cut prove nothing. */
	record = module_record(linear, net, 1, TCHECK_PY_STACK_MAX);
	CU_ASSERT_EQUAL(python_module_path_add(&paths, &classes, &layout, &record, &call), -1);
	CU_ASSERT_EQUAL(call.arg_count, 1);
	record = module_record(linear, net, 1, 2);
	CU_ASSERT_EQUAL(python_module_path_add(&paths, &classes, &layout, &record, &call), 0);
	CU_ASSERT_EQUAL_FATAL(call.arg_count, 2);
	CU_ASSERT_STRING_EQUAL(call.args[1].name, TRACE_MODULE_PATH_ARG);
	CU_ASSERT_STRING_EQUAL(call.args[1].text, "Net.fc");
	/* Without its class, a call gets no path either. */
	call.arg_count = 0;
	CU_ASSERT_EQUAL(python_module_path_add(&paths, &classes, &layout, &record, &call), 1);
	python_module_paths_free(&paths);
	python_module_classes_free(&classes);
	while (allocation_count)
		free(allocations[--allocation_count]);
}
