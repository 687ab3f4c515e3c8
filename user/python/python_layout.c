// SPDX-License-Identifier: MIT
/*
 * The structure offsets of a CPython version: the per-version tables, the
 * 3.13 _Py_DebugOffsets, and the choice between them for a found runtime.
 */
#include "python/python_layout.h"

#include <errno.h>
#include <string.h>

#include "base/error_message.h"
#include "base/remote_memory.h"
#include "probe/library_file.h"

#define SUPPORTED_VERSIONS "3.10, 3.11, 3.12 and 3.13"
#define DEBUG_OFFSETS_COOKIE "xdebugpy"

/*
 * The tables. Offsets were read from the DWARF of CPython 3.10.13, 3.11.7,
 * 3.12.1 and 3.13.0 (x86-64, GIL, release builds) and checked against the
 * struct definitions of each version's headers; the unit tests read live
 * interpreters with them. Members are named "struct.member".
 */
static const struct python_layout layout_3_10 = {
	.major = 3,
	.minor = 10,
	.source = PYTHON_LAYOUT_FROM_TABLE,
	.thread_state_source = PYTHON_THREAD_STATE_RUNTIME_FIELD,
	.runtime_interpreters_head = 32,     /* _PyRuntimeState.interpreters.head */
	.runtime_thread_state_current = 568, /* _PyRuntimeState.gilstate.tstate_current */
	.interpreter_next = 0,		     /* PyInterpreterState.next */
	.interpreter_threads_head = 8,	     /* PyInterpreterState.tstate_head */
	.thread_next = 8,		     /* PyThreadState.next */
	.thread_interpreter = 16,	     /* PyThreadState.interp */
	.thread_id = 176,		     /* PyThreadState.thread_id */
	.thread_native_id = PYTHON_FIELD_ABSENT,
	.thread_frame = 24, /* PyThreadState.frame */
	.thread_cframe = PYTHON_FIELD_ABSENT,
	.cframe_current_frame = PYTHON_FIELD_ABSENT,
	.frame_code = 32,	 /* PyFrameObject.f_code */
	.frame_previous = 24,	 /* PyFrameObject.f_back */
	.frame_localsplus = 352, /* PyFrameObject.f_localsplus */
	.frame_owner = PYTHON_FIELD_ABSENT,
	.frame_owner_c_stack = PYTHON_FIELD_ABSENT,
	.code_argument_count = 16,	  /* PyCodeObject.co_argcount */
	.code_positional_only_count = 20, /* PyCodeObject.co_posonlyargcount */
	.code_keyword_only_count = 24,	  /* PyCodeObject.co_kwonlyargcount */
	.code_flags = 36,		  /* PyCodeObject.co_flags */
	.code_first_line = 40,		  /* PyCodeObject.co_firstlineno */
	.code_filename = 104,		  /* PyCodeObject.co_filename */
	.code_name = 112,		  /* PyCodeObject.co_name */
	.code_qualified_name = PYTHON_FIELD_ABSENT,
	.code_argument_names = 72,  /* PyCodeObject.co_varnames */
	.object_type = 8,	    /* PyObject.ob_type */
	.tuple_size = 16,	    /* PyVarObject.ob_size */
	.tuple_items = 24,	    /* PyTupleObject.ob_item */
	.unicode_length = 16,	    /* PyASCIIObject.length */
	.unicode_state = 32,	    /* PyASCIIObject.state */
	.unicode_ascii_data = 48,   /* sizeof(PyASCIIObject) */
	.unicode_compact_data = 72, /* sizeof(PyCompactUnicodeObject) */
	.float_value = 16,	    /* PyFloatObject.ob_fval */
	.long_size = 16,	    /* PyVarObject.ob_size */
	.long_tagged = false,
	.long_digits = 24, /* PyLongObject.ob_digit */
	.long_digit_bits = 30,
};

static const struct python_layout layout_3_11 = {
	.major = 3,
	.minor = 11,
	.source = PYTHON_LAYOUT_FROM_TABLE,
	.thread_state_source = PYTHON_THREAD_STATE_RUNTIME_FIELD,
	.runtime_interpreters_head = 40,     /* _PyRuntimeState.interpreters.head */
	.runtime_thread_state_current = 576, /* _PyRuntimeState.gilstate.tstate_current */
	.interpreter_next = 0,		     /* PyInterpreterState.next */
	.interpreter_threads_head = 16,	     /* PyInterpreterState.threads.head */
	.thread_next = 8,		     /* PyThreadState.next */
	.thread_interpreter = 16,	     /* PyThreadState.interp */
	.thread_id = 152,		     /* PyThreadState.thread_id */
	.thread_native_id = 160,	     /* PyThreadState.native_thread_id */
	.thread_frame = PYTHON_FIELD_ABSENT,
	.thread_cframe = 56,	   /* PyThreadState.cframe */
	.cframe_current_frame = 8, /* _PyCFrame.current_frame */
	.frame_code = 32,	   /* _PyInterpreterFrame.f_code */
	.frame_previous = 48,	   /* _PyInterpreterFrame.previous */
	.frame_localsplus = 72,	   /* _PyInterpreterFrame.localsplus */
	.frame_owner = 69,	   /* _PyInterpreterFrame.owner */
	.frame_owner_c_stack = PYTHON_FIELD_ABSENT,
	.code_argument_count = 56,	  /* PyCodeObject.co_argcount */
	.code_positional_only_count = 60, /* PyCodeObject.co_posonlyargcount */
	.code_keyword_only_count = 64,	  /* PyCodeObject.co_kwonlyargcount */
	.code_flags = 48,		  /* PyCodeObject.co_flags */
	.code_first_line = 72,		  /* PyCodeObject.co_firstlineno */
	.code_filename = 112,		  /* PyCodeObject.co_filename */
	.code_name = 120,		  /* PyCodeObject.co_name */
	.code_qualified_name = 128,	  /* PyCodeObject.co_qualname */
	.code_argument_names = 96,	  /* PyCodeObject.co_localsplusnames */
	.object_type = 8,		  /* PyObject.ob_type */
	.tuple_size = 16,		  /* PyVarObject.ob_size */
	.tuple_items = 24,		  /* PyTupleObject.ob_item */
	.unicode_length = 16,		  /* PyASCIIObject.length */
	.unicode_state = 32,		  /* PyASCIIObject.state */
	.unicode_ascii_data = 48,	  /* sizeof(PyASCIIObject) */
	.unicode_compact_data = 72,	  /* sizeof(PyCompactUnicodeObject) */
	.float_value = 16,		  /* PyFloatObject.ob_fval */
	.long_size = 16,		  /* PyVarObject.ob_size */
	.long_tagged = false,
	.long_digits = 24, /* PyLongObject.ob_digit */
	.long_digit_bits = 30,
};

static const struct python_layout layout_3_12 = {
	.major = 3,
	.minor = 12,
	.source = PYTHON_LAYOUT_FROM_TABLE,
	.thread_state_source = PYTHON_THREAD_STATE_THREAD_LOCAL,
	.runtime_interpreters_head = 40, /* _PyRuntimeState.interpreters.head */
	.runtime_thread_state_current = PYTHON_FIELD_ABSENT,
	.interpreter_next = 0,		/* PyInterpreterState.next */
	.interpreter_threads_head = 72, /* PyInterpreterState.threads.head */
	.thread_next = 8,		/* PyThreadState.next */
	.thread_interpreter = 16,	/* PyThreadState.interp */
	.thread_id = 136,		/* PyThreadState.thread_id */
	.thread_native_id = 144,	/* PyThreadState.native_thread_id */
	.thread_frame = PYTHON_FIELD_ABSENT,
	.thread_cframe = 56,		  /* PyThreadState.cframe */
	.cframe_current_frame = 0,	  /* _PyCFrame.current_frame */
	.frame_code = 0,		  /* _PyInterpreterFrame.f_code */
	.frame_previous = 8,		  /* _PyInterpreterFrame.previous */
	.frame_localsplus = 72,		  /* _PyInterpreterFrame.localsplus */
	.frame_owner = 70,		  /* _PyInterpreterFrame.owner */
	.frame_owner_c_stack = 3,	  /* FRAME_OWNED_BY_CSTACK */
	.code_argument_count = 52,	  /* PyCodeObject.co_argcount */
	.code_positional_only_count = 56, /* PyCodeObject.co_posonlyargcount */
	.code_keyword_only_count = 60,	  /* PyCodeObject.co_kwonlyargcount */
	.code_flags = 48,		  /* PyCodeObject.co_flags */
	.code_first_line = 68,		  /* PyCodeObject.co_firstlineno */
	.code_filename = 112,		  /* PyCodeObject.co_filename */
	.code_name = 120,		  /* PyCodeObject.co_name */
	.code_qualified_name = 128,	  /* PyCodeObject.co_qualname */
	.code_argument_names = 96,	  /* PyCodeObject.co_localsplusnames */
	.object_type = 8,		  /* PyObject.ob_type */
	.tuple_size = 16,		  /* PyVarObject.ob_size */
	.tuple_items = 24,		  /* PyTupleObject.ob_item */
	.unicode_length = 16,		  /* PyASCIIObject.length */
	.unicode_state = 32,		  /* PyASCIIObject.state */
	.unicode_ascii_data = 40,	  /* sizeof(PyASCIIObject) */
	.unicode_compact_data = 56,	  /* sizeof(PyCompactUnicodeObject) */
	.float_value = 16,		  /* PyFloatObject.ob_fval */
	.long_size = 16,		  /* PyLongObject.long_value.lv_tag */
	.long_tagged = true,
	.long_digits = 24, /* PyLongObject.long_value.ob_digit */
	.long_digit_bits = 30,
};

static const struct python_layout layout_3_13 = {
	.major = 3,
	.minor = 13,
	.source = PYTHON_LAYOUT_FROM_TABLE,
	.thread_state_source = PYTHON_THREAD_STATE_THREAD_LOCAL,
	.runtime_interpreters_head = 632, /* _PyRuntimeState.interpreters.head */
	.runtime_thread_state_current = PYTHON_FIELD_ABSENT,
	.interpreter_next = 7264,	  /* PyInterpreterState.next */
	.interpreter_threads_head = 7344, /* PyInterpreterState.threads.head */
	.thread_next = 8,		  /* PyThreadState.next */
	.thread_interpreter = 16,	  /* PyThreadState.interp */
	.thread_id = 152,		  /* PyThreadState.thread_id */
	.thread_native_id = 160,	  /* PyThreadState.native_thread_id */
	.thread_frame = 72,		  /* PyThreadState.current_frame */
	.thread_cframe = PYTHON_FIELD_ABSENT,
	.cframe_current_frame = PYTHON_FIELD_ABSENT,
	.frame_code = 0,		  /* _PyInterpreterFrame.f_executable */
	.frame_previous = 8,		  /* _PyInterpreterFrame.previous */
	.frame_localsplus = 72,		  /* _PyInterpreterFrame.localsplus */
	.frame_owner = 70,		  /* _PyInterpreterFrame.owner */
	.frame_owner_c_stack = 3,	  /* FRAME_OWNED_BY_CSTACK */
	.code_argument_count = 52,	  /* PyCodeObject.co_argcount */
	.code_positional_only_count = 56, /* PyCodeObject.co_posonlyargcount */
	.code_keyword_only_count = 60,	  /* PyCodeObject.co_kwonlyargcount */
	.code_flags = 48,		  /* PyCodeObject.co_flags */
	.code_first_line = 68,		  /* PyCodeObject.co_firstlineno */
	.code_filename = 112,		  /* PyCodeObject.co_filename */
	.code_name = 120,		  /* PyCodeObject.co_name */
	.code_qualified_name = 128,	  /* PyCodeObject.co_qualname */
	.code_argument_names = 96,	  /* PyCodeObject.co_localsplusnames */
	.object_type = 8,		  /* PyObject.ob_type */
	.tuple_size = 16,		  /* PyVarObject.ob_size */
	.tuple_items = 24,		  /* PyTupleObject.ob_item */
	.unicode_length = 16,		  /* PyASCIIObject.length */
	.unicode_state = 32,		  /* PyASCIIObject.state */
	.unicode_ascii_data = 40,	  /* sizeof(PyASCIIObject) */
	.unicode_compact_data = 56,	  /* sizeof(PyCompactUnicodeObject) */
	.float_value = 16,		  /* PyFloatObject.ob_fval */
	.long_size = 16,		  /* PyLongObject.long_value.lv_tag */
	.long_tagged = true,
	.long_digits = 24, /* PyLongObject.long_value.ob_digit */
	.long_digit_bits = 30,
};

static const struct python_layout *const layout_tables[] = {
	&layout_3_10,
	&layout_3_11,
	&layout_3_12,
	&layout_3_13,
};

/*
 * Where the 3.13 _Py_DebugOffsets keeps each offset: byte positions in the
 * struct (64-bit members), from its definition in CPython 3.13.0.
 */
enum debug_offsets_position {
	DEBUG_COOKIE = 0,		      /* cookie[8] */
	DEBUG_VERSION = 8,		      /* version: PY_VERSION_HEX */
	DEBUG_FREE_THREADED = 16,	      /* free_threaded */
	DEBUG_RUNTIME_SIZE = 24,	      /* runtime_state.size */
	DEBUG_RUNTIME_INTERPRETERS_HEAD = 40, /* runtime_state.interpreters_head */
	DEBUG_INTERPRETER_SIZE = 48,	      /* interpreter_state.size */
	DEBUG_INTERPRETER_NEXT = 64,	      /* interpreter_state.next */
	DEBUG_INTERPRETER_THREADS_HEAD = 72,  /* interpreter_state.threads_head */
	DEBUG_THREAD_SIZE = 152,	      /* thread_state.size */
	DEBUG_THREAD_NEXT = 168,	      /* thread_state.next */
	DEBUG_THREAD_INTERPRETER = 176,	      /* thread_state.interp */
	DEBUG_THREAD_CURRENT_FRAME = 184,     /* thread_state.current_frame */
	DEBUG_THREAD_ID = 192,		      /* thread_state.thread_id */
	DEBUG_THREAD_NATIVE_ID = 200,	      /* thread_state.native_thread_id */
	DEBUG_FRAME_SIZE = 224,		      /* interpreter_frame.size */
	DEBUG_FRAME_PREVIOUS = 232,	      /* interpreter_frame.previous */
	DEBUG_FRAME_EXECUTABLE = 240,	      /* interpreter_frame.executable */
	DEBUG_FRAME_LOCALSPLUS = 256,	      /* interpreter_frame.localsplus */
	DEBUG_FRAME_OWNER = 264,	      /* interpreter_frame.owner */
	DEBUG_CODE_SIZE = 272,		      /* code_object.size */
	DEBUG_CODE_FILENAME = 280,	      /* code_object.filename */
	DEBUG_CODE_NAME = 288,		      /* code_object.name */
	DEBUG_CODE_QUALIFIED_NAME = 296,      /* code_object.qualname */
	DEBUG_CODE_FIRST_LINE = 312,	      /* code_object.firstlineno */
	DEBUG_CODE_ARGUMENT_COUNT = 320,      /* code_object.argcount */
	DEBUG_CODE_LOCALSPLUS_NAMES = 328,    /* code_object.localsplusnames */
	DEBUG_OBJECT_TYPE = 360,	      /* pyobject.ob_type */
	DEBUG_TUPLE_SIZE_OF_STRUCT = 400,     /* tuple_object.size */
	DEBUG_TUPLE_ITEMS = 408,	      /* tuple_object.ob_item */
	DEBUG_TUPLE_SIZE = 416,		      /* tuple_object.ob_size */
	DEBUG_FLOAT_VALUE = 480,	      /* float_object.ob_fval */
	DEBUG_LONG_TAG = 496,		      /* long_object.lv_tag */
	DEBUG_LONG_DIGITS = 504,	      /* long_object.ob_digit */
	DEBUG_UNICODE_STATE = 544,	      /* unicode_object.state */
	DEBUG_UNICODE_LENGTH = 552,	      /* unicode_object.length */
	DEBUG_UNICODE_ASCII_SIZE = 560,	      /* unicode_object.asciiobject_size */
};

static uint64_t debug_value(const unsigned char *bytes, enum debug_offsets_position position)
{
	uint64_t value;

	memcpy(&value, bytes + position, sizeof(value));
	return value;
}

static int refuse_version(char *error, size_t error_size, int major, int minor)
{
	return error_fail(error, error_size, ENOTSUP,
			  "Python %d.%d is not supported: tcheck-bpf knows the interpreter "
			  "layout of CPython %s only; trace a process running one of those",
			  major, minor, SUPPORTED_VERSIONS);
}

int python_layout_from_table(int major, int minor, struct python_layout *layout, char *error,
			     size_t error_size)
{
	for (size_t i = 0; i < sizeof(layout_tables) / sizeof(layout_tables[0]); i++) {
		if (layout_tables[i]->major == major && layout_tables[i]->minor == minor) {
			*layout = *layout_tables[i];
			return 0;
		}
	}
	return refuse_version(error, error_size, major, minor);
}

/* An offset of the debug table as an int, when it lies inside the struct it describes. */
static bool debug_offset_within(const unsigned char *bytes, enum debug_offsets_position position,
				enum debug_offsets_position struct_size, int *offset)
{
	uint64_t value = debug_value(bytes, position);

	if (value >= debug_value(bytes, struct_size) || value > INT32_MAX)
		return false;
	*offset = (int)value;
	return true;
}

int python_layout_from_debug_offsets(const void *bytes_in, size_t size,
				     struct python_layout *layout, char *error, size_t error_size)
{
	const unsigned char *bytes = bytes_in;
	struct python_layout parsed = layout_3_13;
	uint64_t version, ascii_size;
	int major, minor;
	bool valid;

	if (size < PYTHON_DEBUG_OFFSETS_SIZE ||
	    memcmp(bytes + DEBUG_COOKIE, DEBUG_OFFSETS_COOKIE, 8) != 0)
		return error_fail(error, error_size, EINVAL,
				  "the interpreter's _PyRuntime does not start with the "
				  "_Py_DebugOffsets cookie \"%s\": the file is not a CPython 3.13 "
				  "runtime or it is damaged",
				  DEBUG_OFFSETS_COOKIE);
	version = debug_value(bytes, DEBUG_VERSION);
	major = (int)((version >> 24) & 0xFF);
	minor = (int)((version >> 16) & 0xFF);
	/* The struct grows with each version: only the 3.13 layout of it is known. */
	if (major != 3 || minor != 13)
		return refuse_version(error, error_size, major, minor);
	if (debug_value(bytes, DEBUG_FREE_THREADED) != 0)
		return error_fail(error, error_size, ENOTSUP,
				  "this CPython 3.13 is a free-threaded build (no GIL), whose "
				  "objects are laid out differently: tcheck-bpf supports the "
				  "default builds of CPython %s only",
				  SUPPORTED_VERSIONS);
	valid = debug_offset_within(bytes, DEBUG_RUNTIME_INTERPRETERS_HEAD, DEBUG_RUNTIME_SIZE,
				    &parsed.runtime_interpreters_head) &&
		debug_offset_within(bytes, DEBUG_INTERPRETER_NEXT, DEBUG_INTERPRETER_SIZE,
				    &parsed.interpreter_next) &&
		debug_offset_within(bytes, DEBUG_INTERPRETER_THREADS_HEAD, DEBUG_INTERPRETER_SIZE,
				    &parsed.interpreter_threads_head) &&
		debug_offset_within(bytes, DEBUG_THREAD_NEXT, DEBUG_THREAD_SIZE,
				    &parsed.thread_next) &&
		debug_offset_within(bytes, DEBUG_THREAD_INTERPRETER, DEBUG_THREAD_SIZE,
				    &parsed.thread_interpreter) &&
		debug_offset_within(bytes, DEBUG_THREAD_CURRENT_FRAME, DEBUG_THREAD_SIZE,
				    &parsed.thread_frame) &&
		debug_offset_within(bytes, DEBUG_THREAD_ID, DEBUG_THREAD_SIZE, &parsed.thread_id) &&
		debug_offset_within(bytes, DEBUG_THREAD_NATIVE_ID, DEBUG_THREAD_SIZE,
				    &parsed.thread_native_id) &&
		debug_offset_within(bytes, DEBUG_FRAME_PREVIOUS, DEBUG_FRAME_SIZE,
				    &parsed.frame_previous) &&
		debug_offset_within(bytes, DEBUG_FRAME_EXECUTABLE, DEBUG_FRAME_SIZE,
				    &parsed.frame_code) &&
		debug_offset_within(bytes, DEBUG_FRAME_LOCALSPLUS, DEBUG_FRAME_SIZE,
				    &parsed.frame_localsplus) &&
		debug_offset_within(bytes, DEBUG_FRAME_OWNER, DEBUG_FRAME_SIZE,
				    &parsed.frame_owner) &&
		debug_offset_within(bytes, DEBUG_CODE_FILENAME, DEBUG_CODE_SIZE,
				    &parsed.code_filename) &&
		debug_offset_within(bytes, DEBUG_CODE_NAME, DEBUG_CODE_SIZE, &parsed.code_name) &&
		debug_offset_within(bytes, DEBUG_CODE_QUALIFIED_NAME, DEBUG_CODE_SIZE,
				    &parsed.code_qualified_name) &&
		debug_offset_within(bytes, DEBUG_CODE_FIRST_LINE, DEBUG_CODE_SIZE,
				    &parsed.code_first_line) &&
		debug_offset_within(bytes, DEBUG_CODE_ARGUMENT_COUNT, DEBUG_CODE_SIZE,
				    &parsed.code_argument_count) &&
		debug_offset_within(bytes, DEBUG_CODE_LOCALSPLUS_NAMES, DEBUG_CODE_SIZE,
				    &parsed.code_argument_names) &&
		debug_offset_within(bytes, DEBUG_TUPLE_ITEMS, DEBUG_TUPLE_SIZE_OF_STRUCT,
				    &parsed.tuple_items) &&
		debug_offset_within(bytes, DEBUG_TUPLE_SIZE, DEBUG_TUPLE_SIZE_OF_STRUCT,
				    &parsed.tuple_size);
	/* Members of small fixed objects: their offsets are known to be tiny. */
	ascii_size = debug_value(bytes, DEBUG_UNICODE_ASCII_SIZE);
	valid = valid && debug_value(bytes, DEBUG_OBJECT_TYPE) == 8 &&
		debug_value(bytes, DEBUG_FLOAT_VALUE) < 64 &&
		debug_value(bytes, DEBUG_LONG_TAG) < 64 &&
		debug_value(bytes, DEBUG_LONG_DIGITS) < 64 &&
		debug_value(bytes, DEBUG_UNICODE_STATE) < 64 &&
		debug_value(bytes, DEBUG_UNICODE_LENGTH) < 64 && ascii_size >= 24 &&
		ascii_size < 128;
	if (!valid)
		return error_fail(error, error_size, EINVAL,
				  "the _Py_DebugOffsets of this CPython 3.13 hold offsets outside "
				  "the structures they describe: the runtime is damaged or not a "
				  "release build of 3.13");
	parsed.object_type = (int)debug_value(bytes, DEBUG_OBJECT_TYPE);
	parsed.float_value = (int)debug_value(bytes, DEBUG_FLOAT_VALUE);
	parsed.long_size = (int)debug_value(bytes, DEBUG_LONG_TAG);
	parsed.long_digits = (int)debug_value(bytes, DEBUG_LONG_DIGITS);
	parsed.unicode_state = (int)debug_value(bytes, DEBUG_UNICODE_STATE);
	parsed.unicode_length = (int)debug_value(bytes, DEBUG_UNICODE_LENGTH);
	parsed.unicode_ascii_data = (int)ascii_size;
	/* The table gives the rest: co_flags, co_kwonlyargcount, the compact string size. */
	parsed.source = PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_FILE;
	*layout = parsed;
	return 0;
}

/* The 3.13 _Py_DebugOffsets: the file's initial _PyRuntime, else the live one. */
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
	if (runtime->major != 3 || runtime->minor < 10 || runtime->minor > 13)
		return error_fail(error, error_size, ENOTSUP,
				  "Python %s (%s) is not supported: tcheck-bpf knows the "
				  "interpreter layout of CPython %s only; trace a process running "
				  "one of those",
				  runtime->version, runtime->path, SUPPORTED_VERSIONS);
	if (strchr(runtime->abi_flags, 't'))
		return error_fail(error, error_size, ENOTSUP,
				  "%s is a free-threaded build of Python %s (no GIL), whose "
				  "objects are laid out differently: tcheck-bpf supports the "
				  "default builds of CPython %s only",
				  runtime->path, runtime->version, SUPPORTED_VERSIONS);
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
	if (runtime->minor == 13 && debug_offsets_read(runtime, bytes, &source, NULL, 0) == 0 &&
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
