// SPDX-License-Identifier: MIT
/* Class names of the modules Module._call_impl runs, read from their type objects. */
#include "python/python_module_classes.h"

#include <stdlib.h>
#include <string.h>

#include "base/remote_memory.h"

/*
 * PyTypeObject opens with PyObject_VAR_HEAD (ob_refcnt, ob_type, ob_size),
 * then tp_name: offset 24 on every supported CPython (3.11, 3.13, 3.14,
 * builds without free threading).
 */
#define TYPE_NAME_OFFSET 24
/* Bytes of tp_name read; a longer name is cut there. */
#define TYPE_NAME_BYTES 96
#define PAGE_BYTES 4096U

/* The C string at address, cut to size - 1 bytes; a read never crosses into a page not needed. */
static int read_text(pid_t pid, uint64_t address, char *text, size_t size)
{
	size_t to_page_end = PAGE_BYTES - (size_t)(address % PAGE_BYTES);
	size_t want = size - 1;
	char error[128];

	/* The first read stops at the page end: the string may end before an unmapped page. */
	if (want > to_page_end)
		want = to_page_end;
	if (remote_memory_read(pid, address, text, want, error, sizeof(error)))
		return -1;
	text[want] = '\0';
	if (strlen(text) == want && want < size - 1 &&
	    remote_memory_read(pid, address + want, text + want, size - 1 - want, error,
			       sizeof(error)) == 0)
		text[size - 1] = '\0';
	return 0;
}

const char *python_module_class_name(struct u64_map *classes, pid_t pid, uint64_t type)
{
	char text[TYPE_NAME_BYTES + 1];
	const char *name, *last_dot;
	char *kept = u64_map_get(classes, type);
	uint64_t name_address = 0;

	if (kept)
		return kept;
	if (!type || remote_memory_read_u64(pid, type + TYPE_NAME_OFFSET, &name_address) ||
	    !name_address || read_text(pid, name_address, text, sizeof(text)) || !text[0])
		return NULL;
	/* Built-in and extension types are named "module.Class": keep what __name__ says. */
	last_dot = strrchr(text, '.');
	name = last_dot && last_dot[1] ? last_dot + 1 : text;
	kept = strdup(name);
	if (!kept || u64_map_put(classes, type, kept)) {
		free(kept);
		return NULL;
	}
	return kept;
}

int python_module_class_add(struct u64_map *classes, pid_t pid, uint64_t type,
			    struct trace_python_call *call)
{
	const char *name = python_module_class_name(classes, pid, type);

	if (!name || call->arg_count >= TRACE_PY_ARGS_MAX)
		return -1;
	call->args[call->arg_count++] = (struct trace_python_arg){ .name = TRACE_MODULE_CLASS_ARG,
								   .type = TRACE_VALUE_STR,
								   .text = name };
	return 0;
}

void python_module_classes_free(struct u64_map *classes)
{
	u64_map_free_with_values(classes);
}
