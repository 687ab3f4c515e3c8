// SPDX-License-Identifier: MIT
/*
 * The structure offsets of a found CPython runtime: the choice between the
 * per-version tables (python_layout_tables.c) and the interpreter's own
 * _Py_DebugOffsets (3.13 and later, python_debug_offsets.c).
 */
#include "python/python_layout.h"

#include <errno.h>
#include <string.h>

#include "base/error_message.h"
#include "base/remote_memory.h"
#include "probe/library_file.h"

#define DEBUG_OFFSETS_COOKIE "xdebugpy"

/* The _Py_DebugOffsets (3.13+): the file's initial _PyRuntime, else the live one. */
static int debug_offsets_read(const struct python_runtime *runtime, unsigned char *bytes,
			      enum python_layout_source *source, char *error, size_t error_size)
{
	if (runtime->runtime_state_file_offset) {
		/* Unreadable in the file: read from the process's memory instead. */
		if (library_file_read_at(runtime->host_path, runtime->runtime_state_file_offset,
					 bytes, PYTHON_DEBUG_OFFSETS_SIZE, error,
					 error_size) == 0) {
			*source = PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_FILE;
			return 0;
		}
	}
	*source = PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_MEMORY;
	return remote_memory_read(runtime->pid, runtime->addresses.runtime_state, bytes,
				  PYTHON_DEBUG_OFFSETS_SIZE, error, error_size);
}

/* What a supported build must be before any table applies to it. */
static int build_check(const struct python_runtime *runtime, char *error, size_t error_size)
{
	unsigned int level = (runtime->hex_version >> 4) & 0xF;

	if (!runtime->x86_64)
		return error_fail(error, error_size, ENOTSUP,
				  "%s is not an x86-64 build: tcheck-bpf knows the CPython "
				  "layouts of x86-64 only",
				  runtime->path);
	if (runtime->major != 3 || runtime->minor < 10 || runtime->minor > 14)
		return error_fail(error, error_size, ENOTSUP,
				  "Python %s (%s) is not supported: tcheck-bpf knows the "
				  "interpreter layout of CPython %s only; trace a process running "
				  "one of those",
				  runtime->version, runtime->path, PYTHON_SUPPORTED_VERSIONS);
	if (strchr(runtime->abi_flags, 't'))
		return error_fail(error, error_size, ENOTSUP,
				  "%s is a free-threaded build of Python %s (no GIL), whose "
				  "objects are laid out differently: tcheck-bpf supports the "
				  "default builds of CPython %s only",
				  runtime->path, runtime->version, PYTHON_SUPPORTED_VERSIONS);
	if (strchr(runtime->abi_flags, 'd'))
		return error_fail(error, error_size, ENOTSUP,
				  "%s is a debug build of Python %s, whose structures differ from "
				  "the release builds tcheck-bpf knows; trace a release build",
				  runtime->path, runtime->version);
	/* Layouts settle at the first release candidate. */
	if (runtime->hex_version && level < 0xC)
		return error_fail(error, error_size, ENOTSUP,
				  "Python %s is an alpha or beta release, whose structures may "
				  "differ from the final %d.%d: trace a release candidate or final "
				  "release",
				  runtime->version, runtime->major, runtime->minor);
	if (!runtime->addresses.runtime_state)
		return error_fail(error, error_size, ENOENT,
				  "%s does not define _PyRuntime: it is not a complete CPython %s "
				  "interpreter",
				  runtime->path, runtime->version);
	return 0;
}

int python_layout_for(const struct python_runtime *runtime, struct python_layout *layout,
		      char *error, size_t error_size)
{
	unsigned char bytes[PYTHON_DEBUG_OFFSETS_SIZE];
	enum python_layout_source source;
	int err;

	err = build_check(runtime, error, error_size);
	if (err)
		return err;
	if (runtime->minor >= 13 && debug_offsets_read(runtime, bytes, &source, NULL, 0) == 0 &&
	    memcmp(bytes, DEBUG_OFFSETS_COOKIE, 8) == 0) {
		err = python_layout_from_debug_offsets(bytes, sizeof(bytes), layout, error,
						       error_size);
		if (err)
			return err;
		layout->source = source;
	} else {
		err = python_layout_from_table(runtime->major, runtime->minor, layout, error,
					       error_size);
		if (err)
			return err;
	}
	layout->addresses = runtime->addresses;
	layout->thread_local = runtime->thread_local;
	layout->thread_state_current_address = 0;
	if (layout->runtime_thread_state_current != PYTHON_FIELD_ABSENT)
		layout->thread_state_current_address =
			runtime->addresses.runtime_state +
			(uint64_t)layout->runtime_thread_state_current;
	return 0;
}
