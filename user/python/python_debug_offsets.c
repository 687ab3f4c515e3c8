// SPDX-License-Identifier: MIT
/*
 * CPython's _Py_DebugOffsets (3.13 and later): the table of structure
 * offsets the interpreter keeps at the start of _PyRuntime for readers
 * outside the process. Its own layout grows with each version, so the byte
 * position of every field read is listed per version here.
 */
#include "python/python_layout.h"

#include <errno.h>
#include <string.h>

#include "base/error_message.h"

#define DEBUG_OFFSETS_COOKIE "xdebugpy"

/* Byte positions in _Py_DebugOffsets of the fields read; every field is a uint64_t. */
struct debug_offsets_positions {
	int minor;
	size_t size; /* of the whole struct */
	size_t runtime_size, runtime_interpreters_head;
	size_t interpreter_size, interpreter_next, interpreter_threads_head;
	size_t thread_size, thread_next, thread_interpreter, thread_current_frame, thread_id,
		thread_native_id;
	size_t frame_size, frame_previous, frame_executable, frame_localsplus, frame_owner;
	size_t code_size, code_filename, code_name, code_qualified_name, code_first_line,
		code_argument_count, code_localsplus_names;
	size_t object_type;
	size_t tuple_size_of_struct, tuple_items, tuple_size;
	size_t float_value;
	size_t long_tag, long_digits;
	size_t unicode_state, unicode_length, unicode_ascii_size;
};

/*
 * From the struct's definition in each version's
 * Include/internal/pycore_debug_offsets.h, checked against the bytes of a
 * build (3.13.0 from pyenv; 3.14.10 from Debian sid: each offset is the
 * value the struct members the sources name have there). 3.14 added
 * interpreter_state.threads_main, code_object_generation and
 * tlbc_generation, interpreter_frame.stackpointer and tlbc_index,
 * code_object.co_tlbc, set_object, gc.frame, gen_object, llist_node and
 * debugger_support.
 */
static const struct debug_offsets_positions positions_3_13 = {
	.minor = 13,
	.size = 584,
	.runtime_size = 24,
	.runtime_interpreters_head = 40,
	.interpreter_size = 48,
	.interpreter_next = 64,
	.interpreter_threads_head = 72,
	.thread_size = 152,
	.thread_next = 168,
	.thread_interpreter = 176,
	.thread_current_frame = 184,
	.thread_id = 192,
	.thread_native_id = 200,
	.frame_size = 224,
	.frame_previous = 232,
	.frame_executable = 240,
	.frame_localsplus = 256,
	.frame_owner = 264,
	.code_size = 272,
	.code_filename = 280,
	.code_name = 288,
	.code_qualified_name = 296,
	.code_first_line = 312,
	.code_argument_count = 320,
	.code_localsplus_names = 328,
	.object_type = 360,
	.tuple_size_of_struct = 400,
	.tuple_items = 408,
	.tuple_size = 416,
	.float_value = 480,
	.long_tag = 496,
	.long_digits = 504,
	.unicode_state = 544,
	.unicode_length = 552,
	.unicode_ascii_size = 560,
};

static const struct debug_offsets_positions positions_3_14 = {
	.minor = 14,
	.size = 760,
	.runtime_size = 24,
	.runtime_interpreters_head = 40,
	.interpreter_size = 48,
	.interpreter_next = 64,
	.interpreter_threads_head = 72,
	.thread_size = 176,
	.thread_next = 192,
	.thread_interpreter = 200,
	.thread_current_frame = 208,
	.thread_id = 216,
	.thread_native_id = 224,
	.frame_size = 248,
	.frame_previous = 256,
	.frame_executable = 264,
	.frame_localsplus = 280,
	.frame_owner = 288,
	.code_size = 312,
	.code_filename = 320,
	.code_name = 328,
	.code_qualified_name = 336,
	.code_first_line = 352,
	.code_argument_count = 360,
	.code_localsplus_names = 368,
	.object_type = 408,
	.tuple_size_of_struct = 448,
	.tuple_items = 456,
	.tuple_size = 464,
	.float_value = 560,
	.long_tag = 576,
	.long_digits = 584,
	.unicode_state = 624,
	.unicode_length = 632,
	.unicode_ascii_size = 640,
};

static const struct debug_offsets_positions *const known_positions[] = {
	&positions_3_13,
	&positions_3_14,
};

static uint64_t debug_value(const unsigned char *bytes, size_t position)
{
	uint64_t value;

	memcpy(&value, bytes + position, sizeof(value));
	return value;
}

/* An offset of the table as an int, when it lies inside the struct it describes. */
static bool offset_within(const unsigned char *bytes, size_t position, size_t struct_size,
			  int *offset)
{
	uint64_t value = debug_value(bytes, position);

	if (value >= debug_value(bytes, struct_size) || value > INT32_MAX)
		return false;
	*offset = (int)value;
	return true;
}

/* The structures' members, each checked against its structure's size. */
static bool structure_offsets_read(const unsigned char *bytes,
				   const struct debug_offsets_positions *at,
				   struct python_layout *parsed)
{
	return offset_within(bytes, at->runtime_interpreters_head, at->runtime_size,
			     &parsed->runtime_interpreters_head) &&
	       offset_within(bytes, at->interpreter_next, at->interpreter_size,
			     &parsed->interpreter_next) &&
	       offset_within(bytes, at->interpreter_threads_head, at->interpreter_size,
			     &parsed->interpreter_threads_head) &&
	       offset_within(bytes, at->thread_next, at->thread_size, &parsed->thread_next) &&
	       offset_within(bytes, at->thread_interpreter, at->thread_size,
			     &parsed->thread_interpreter) &&
	       offset_within(bytes, at->thread_current_frame, at->thread_size,
			     &parsed->thread_frame) &&
	       offset_within(bytes, at->thread_id, at->thread_size, &parsed->thread_id) &&
	       offset_within(bytes, at->thread_native_id, at->thread_size,
			     &parsed->thread_native_id) &&
	       offset_within(bytes, at->frame_previous, at->frame_size, &parsed->frame_previous) &&
	       offset_within(bytes, at->frame_executable, at->frame_size, &parsed->frame_code) &&
	       offset_within(bytes, at->frame_localsplus, at->frame_size,
			     &parsed->frame_localsplus) &&
	       offset_within(bytes, at->frame_owner, at->frame_size, &parsed->frame_owner) &&
	       offset_within(bytes, at->code_filename, at->code_size, &parsed->code_filename) &&
	       offset_within(bytes, at->code_name, at->code_size, &parsed->code_name) &&
	       offset_within(bytes, at->code_qualified_name, at->code_size,
			     &parsed->code_qualified_name) &&
	       offset_within(bytes, at->code_first_line, at->code_size, &parsed->code_first_line) &&
	       offset_within(bytes, at->code_argument_count, at->code_size,
			     &parsed->code_argument_count) &&
	       offset_within(bytes, at->code_localsplus_names, at->code_size,
			     &parsed->code_argument_names) &&
	       offset_within(bytes, at->tuple_items, at->tuple_size_of_struct,
			     &parsed->tuple_items) &&
	       offset_within(bytes, at->tuple_size, at->tuple_size_of_struct, &parsed->tuple_size);
}

/* Members of small fixed objects: their offsets are known to be tiny. */
static bool object_offsets_read(const unsigned char *bytes,
				const struct debug_offsets_positions *at,
				struct python_layout *parsed)
{
	uint64_t ascii_size = debug_value(bytes, at->unicode_ascii_size);

	if (debug_value(bytes, at->object_type) != 8 || debug_value(bytes, at->float_value) >= 64 ||
	    debug_value(bytes, at->long_tag) >= 64 || debug_value(bytes, at->long_digits) >= 64 ||
	    debug_value(bytes, at->unicode_state) >= 64 ||
	    debug_value(bytes, at->unicode_length) >= 64 || ascii_size < 24 || ascii_size >= 128)
		return false;
	parsed->object_type = (int)debug_value(bytes, at->object_type);
	parsed->float_value = (int)debug_value(bytes, at->float_value);
	parsed->long_size = (int)debug_value(bytes, at->long_tag);
	parsed->long_digits = (int)debug_value(bytes, at->long_digits);
	parsed->unicode_state = (int)debug_value(bytes, at->unicode_state);
	parsed->unicode_length = (int)debug_value(bytes, at->unicode_length);
	parsed->unicode_ascii_data = (int)ascii_size;
	return true;
}

int python_layout_from_debug_offsets(const void *bytes_in, size_t size,
				     struct python_layout *layout, char *error, size_t error_size)
{
	const struct debug_offsets_positions *at = NULL;
	const unsigned char *bytes = bytes_in;
	struct python_layout parsed;
	uint64_t version;
	int major, minor, err;

	if (size < sizeof(uint64_t) * 3 || memcmp(bytes, DEBUG_OFFSETS_COOKIE, 8) != 0)
		return error_fail(error, error_size, EINVAL,
				  "the interpreter's _PyRuntime does not start with the "
				  "_Py_DebugOffsets cookie \"%s\": the file is not a CPython 3.13 "
				  "or later runtime, or it is damaged",
				  DEBUG_OFFSETS_COOKIE);
	version = debug_value(bytes, 8);
	major = (int)((version >> 24) & 0xFF);
	minor = (int)((version >> 16) & 0xFF);
	/* The struct grows with each version: only the layouts of it listed above are known. */
	for (size_t i = 0; i < sizeof(known_positions) / sizeof(known_positions[0]); i++)
		if (major == 3 && known_positions[i]->minor == minor)
			at = known_positions[i];
	/* The table gives what the struct does not: co_flags, co_kwonlyargcount, sizes. */
	err = python_layout_from_table(major, minor, &parsed, error, error_size);
	if (err)
		return err;
	if (!at || size < at->size)
		return error_fail(error, error_size, EINVAL,
				  "%zu bytes of _Py_DebugOffsets are too few for CPython %d.%d's",
				  size, major, minor);
	if (debug_value(bytes, 16) != 0)
		return error_fail(error, error_size, ENOTSUP,
				  "this CPython %d.%d is a free-threaded build (no GIL), whose "
				  "objects are laid out differently: tcheck-bpf supports the "
				  "default builds of CPython %s only",
				  major, minor, PYTHON_SUPPORTED_VERSIONS);
	if (!structure_offsets_read(bytes, at, &parsed) || !object_offsets_read(bytes, at, &parsed))
		return error_fail(error, error_size, EINVAL,
				  "the _Py_DebugOffsets of this CPython %d.%d hold offsets outside "
				  "the structures they describe: the runtime is damaged or not a "
				  "release build of %d.%d",
				  major, minor, major, minor);
	parsed.source = PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_FILE;
	*layout = parsed;
	return 0;
}
