// SPDX-License-Identifier: MIT
/* Finds a running CPython's interpreter file, version, structure offsets and object addresses. */
#include "python/python_layout.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/remote_memory.h"
#include "probe/elf_symbols.h"
#include "probe/process_maps.h"

#define EVAL_FRAME_SYMBOL "_PyEval_EvalFrameDefault"
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

/* A version as people write it: "3.13.0rc2", "3.9.18", or "3.9" when the micro is unknown. */
static void version_text(char *text, size_t size, int major, int minor, int micro,
			 uint32_t hex_version)
{
	static const char *const levels[16] = { [0xA] = "a", [0xB] = "b", [0xC] = "rc" };
	unsigned int level = (hex_version >> 4) & 0xF;
	unsigned int serial = hex_version & 0xF;

	if (micro < 0)
		snprintf(text, size, "%d.%d", major, minor);
	else if (hex_version && levels[level])
		snprintf(text, size, "%d.%d.%d%s%u", major, minor, micro, levels[level], serial);
	else
		snprintf(text, size, "%d.%d.%d", major, minor, micro);
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

/* An open ELF file, for what the symbol helpers do not give: headers, sections, bytes. */
struct elf_view {
	int fd;
	Elf *elf;
	GElf_Ehdr header;
};

static void elf_view_close(struct elf_view *view)
{
	if (view->elf)
		elf_end(view->elf);
	if (view->fd >= 0)
		close(view->fd);
	view->elf = NULL;
	view->fd = -1;
}

static int elf_view_open(const char *path, struct elf_view *view, char *error, size_t error_size)
{
	memset(view, 0, sizeof(*view));
	view->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (view->fd < 0) {
		int err = errno;

		return error_fail(error, error_size, err, "cannot open %s: %s", path,
				  strerror(err));
	}
	elf_version(EV_CURRENT);
	view->elf = elf_begin(view->fd, ELF_C_READ_MMAP, NULL);
	if (!view->elf || elf_kind(view->elf) != ELF_K_ELF ||
	    !gelf_getehdr(view->elf, &view->header)) {
		elf_view_close(view);
		return error_fail(error, error_size, ENOEXEC, "%s is not an ELF file", path);
	}
	return 0;
}

/* The first program header of a type, through its index. */
static bool elf_view_program_header(struct elf_view *view, uint32_t type, size_t *index,
				    GElf_Phdr *header)
{
	size_t count;

	if (elf_getphdrnum(view->elf, &count) != 0)
		return false;
	for (size_t i = *index; i < count; i++) {
		if (gelf_getphdr(view->elf, (int)i, header) && header->p_type == type) {
			*index = i + 1;
			return true;
		}
	}
	return false;
}

/* The file offset of a virtual address whose bytes lie in the file. */
static bool elf_view_file_offset(struct elf_view *view, uint64_t address, uint64_t *offset)
{
	GElf_Phdr load;
	size_t index = 0;

	while (elf_view_program_header(view, PT_LOAD, &index, &load)) {
		if (address >= load.p_vaddr && address < load.p_vaddr + load.p_filesz) {
			*offset = address - load.p_vaddr + load.p_offset;
			return true;
		}
	}
	return false;
}

static bool read_exact(int fd, uint64_t offset, void *buffer, size_t size)
{
	return pread(fd, buffer, size, (off_t)offset) == (ssize_t)size;
}

/*
 * The load bias of a mapped file: its lowest region maps file offset O at
 * address A, and the PT_LOAD holding O puts that byte at p_vaddr + O -
 * p_offset, so bias = A - O - p_vaddr + p_offset.
 */
static int load_bias_of(struct elf_view *view, const struct mapped_file *file, uint64_t *bias,
			char *error, size_t error_size)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	const struct mapped_region *region = &file->regions[0];
	GElf_Phdr load;
	size_t index = 0;

	while (elf_view_program_header(view, PT_LOAD, &index, &load)) {
		uint64_t first_page = load.p_offset & ~(page - 1);

		if (region->offset >= first_page &&
		    region->offset < load.p_offset + load.p_filesz) {
			*bias = region->start - region->offset - load.p_vaddr + load.p_offset;
			return 0;
		}
	}
	return error_fail(error, error_size, ENOEXEC,
			  "%s is mapped at 0x%llx from file offset 0x%llx, which no PT_LOAD "
			  "segment of the file holds: the file on disk is not the one the "
			  "process loaded (was it replaced?)",
			  file->path, (unsigned long long)region->start,
			  (unsigned long long)region->offset);
}

/*
 * "python3.10", "3.13t", "dm" out of "libpython3.13t.so.1.0" or
 * "python3.10": false when the name carries no version.
 */
static bool version_from_file_name(const char *path, int *major, int *minor, char *abi_flags,
				   size_t abi_flags_size)
{
	const char *base = strrchr(path, '/');
	const char *cursor;
	char *end;
	size_t length = 0;
	long value;

	base = base ? base + 1 : path;
	cursor = strstr(base, "python");
	if (!cursor)
		return false;
	cursor += strlen("python");
	if (!isdigit((unsigned char)cursor[0]))
		return false;
	value = strtol(cursor, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return false;
	*major = (int)value;
	cursor = end + 1;
	*minor = (int)strtol(cursor, &end, 10);
	while (islower((unsigned char)end[length]) && length + 1 < abi_flags_size)
		length++;
	memcpy(abi_flags, end, length);
	abi_flags[length] = '\0';
	return true;
}

/*
 * The micro version of files without Py_Version (3.10 and older): their
 * .rodata holds PY_VERSION, "3.10.13", as the tail of some NUL-ended string
 * (the linker merges it into the install prefix). -1 when it is not there.
 */
static int micro_from_read_only_data(struct elf_view *view, int major, int minor)
{
	char prefix[16];
	size_t prefix_length, section_index;
	Elf_Scn *section = NULL;
	Elf_Data *data;

	if (elf_getshdrstrndx(view->elf, &section_index) != 0)
		return -1;
	while ((section = elf_nextscn(view->elf, section))) {
		GElf_Shdr header;
		const char *name;

		if (!gelf_getshdr(section, &header))
			continue;
		name = elf_strptr(view->elf, section_index, header.sh_name);
		if (name && strcmp(name, ".rodata") == 0 && header.sh_type == SHT_PROGBITS)
			break;
	}
	data = section ? elf_getdata(section, NULL) : NULL;
	if (!data || !data->d_buf)
		return -1;
	prefix_length = (size_t)snprintf(prefix, sizeof(prefix), "%d.%d.", major, minor);
	for (const char *text = data->d_buf, *end = text + data->d_size, *found;
	     (found = memmem(text, (size_t)(end - text), prefix, prefix_length));
	     text = found + 1) {
		const char *digits = found + prefix_length;
		const char *cursor = digits;

		/* "3.10.13\0" after a '/' or '-', never inside a longer number. */
		if (found > (const char *)data->d_buf &&
		    (isdigit((unsigned char)found[-1]) || found[-1] == '.'))
			continue;
		while (cursor < end && isdigit((unsigned char)*cursor))
			cursor++;
		if (cursor > digits && cursor < end && *cursor == '\0' && cursor - digits < 4)
			return atoi(digits);
	}
	return -1;
}

/*
 * The GOT slot the dynamic loader fills with this module's TLS module id:
 * the target of an R_X86_64_DTPMOD64 relocation against the module itself
 * (symbol 0), preferring the pair whose offset half is _Py_tss_tstate's.
 */
static uint64_t module_id_slot_of(struct elf_view *view, uint64_t variable_offset)
{
	uint64_t any_slot = 0;
	Elf_Scn *section = NULL;

	while ((section = elf_nextscn(view->elf, section))) {
		GElf_Shdr header;
		Elf_Data *data;

		if (!gelf_getshdr(section, &header) || header.sh_type != SHT_RELA ||
		    header.sh_entsize == 0)
			continue;
		data = elf_getdata(section, NULL);
		if (!data)
			continue;
		for (size_t i = 0; i < header.sh_size / header.sh_entsize; i++) {
			uint64_t offset_slot, offset_value = 0;
			GElf_Rela relocation;

			if (!gelf_getrela(data, (int)i, &relocation) ||
			    GELF_R_TYPE(relocation.r_info) != R_X86_64_DTPMOD64 ||
			    GELF_R_SYM(relocation.r_info) != 0)
				continue;
			if (!any_slot)
				any_slot = relocation.r_offset;
			if (elf_view_file_offset(view, relocation.r_offset + 8, &offset_slot) &&
			    read_exact(view->fd, offset_slot, &offset_value,
				       sizeof(offset_value)) &&
			    offset_value == variable_offset)
				return relocation.r_offset;
		}
	}
	return any_slot;
}

/*
 * The value of a defined STT_TLS symbol: its offset in the module's TLS
 * block. elf_symbol_find leaves TLS symbols out on purpose (their values
 * are no addresses), so this one kind is looked up here.
 */
static bool thread_local_symbol(struct elf_view *view, const char *name, uint64_t *offset)
{
	Elf_Scn *section = NULL;

	while ((section = elf_nextscn(view->elf, section))) {
		GElf_Shdr header;
		Elf_Data *data;

		if (!gelf_getshdr(section, &header) ||
		    (header.sh_type != SHT_SYMTAB && header.sh_type != SHT_DYNSYM) ||
		    header.sh_entsize == 0 || !(data = elf_getdata(section, NULL)))
			continue;
		for (size_t i = 0; i < header.sh_size / header.sh_entsize; i++) {
			const char *symbol_name;
			GElf_Sym symbol;

			if (!gelf_getsym(data, (int)i, &symbol) ||
			    GELF_ST_TYPE(symbol.st_info) != STT_TLS || symbol.st_shndx == SHN_UNDEF)
				continue;
			symbol_name = elf_strptr(view->elf, header.sh_link, symbol.st_name);
			if (symbol_name && strcmp(symbol_name, name) == 0) {
				*offset = symbol.st_value;
				return true;
			}
		}
	}
	return false;
}

static void thread_local_find(struct elf_view *view, struct python_runtime *runtime)
{
	struct python_thread_local *thread_local = &runtime->thread_local;
	uint64_t slot;
	GElf_Phdr block;
	size_t index = 0;

	memset(thread_local, 0, sizeof(*thread_local));
	if (!thread_local_symbol(view, "_Py_tss_tstate", &thread_local->variable_offset) ||
	    !elf_view_program_header(view, PT_TLS, &index, &block))
		return;
	thread_local->known = true;
	thread_local->block_size = block.p_memsz;
	thread_local->block_align = block.p_align;
	/* A program (it names its loader) owns module 1 and needs no GOT slot to find it. */
	index = 0;
	thread_local->in_executable = view->header.e_type == ET_EXEC ||
				      elf_view_program_header(view, PT_INTERP, &index, &block);
	if (thread_local->in_executable) {
		thread_local->module_id = 1;
		return;
	}
	slot = module_id_slot_of(view, thread_local->variable_offset);
	if (!slot)
		return;
	thread_local->module_id_address = slot + runtime->load_bias;
	if (remote_memory_read(runtime->pid, thread_local->module_id_address,
			       &thread_local->module_id, sizeof(thread_local->module_id), NULL,
			       0) != 0)
		thread_local->module_id = 0;
}

/* The runtime address of a symbol, 0 when the file lacks it. */
static uint64_t symbol_address(const struct python_runtime *runtime, const char *name)
{
	struct elf_symbol_location location;
	int err = elf_symbol_find(runtime->host_path, name, &location, NULL, 0);

	/* Data in .bss (-ERANGE) has no file offset, but elf_symbol_find gives its address. */
	if (err != 0 && err != -ERANGE)
		return 0;
	return location.address + runtime->load_bias;
}

static int version_find(struct elf_view *view, struct python_runtime *runtime, char *error,
			size_t error_size)
{
	struct elf_symbol_location location;
	uint64_t value = 0;
	int major = 0, minor = 0;
	bool named;

	named = version_from_file_name(runtime->path, &major, &minor, runtime->abi_flags,
				       sizeof(runtime->abi_flags));
	/* const unsigned long Py_Version: 8 bytes of read-only data on x86-64, 3.11+. */
	if (elf_symbol_find(runtime->host_path, "Py_Version", &location, NULL, 0) == 0 &&
	    location.size >= 4 && location.size <= sizeof(value) &&
	    read_exact(view->fd, location.file_offset, &value, location.size)) {
		runtime->hex_version = (uint32_t)value;
		runtime->major = (int)((value >> 24) & 0xFF);
		runtime->minor = (int)((value >> 16) & 0xFF);
		runtime->micro = (int)((value >> 8) & 0xFF);
		runtime->version_source = PYTHON_VERSION_FROM_SYMBOL;
	} else if (named) {
		runtime->hex_version = 0;
		runtime->major = major;
		runtime->minor = minor;
		runtime->micro = micro_from_read_only_data(view, major, minor);
		runtime->version_source = PYTHON_VERSION_FROM_FILE_NAME;
	} else {
		return error_fail(error, error_size, ENOMSG,
				  "cannot tell which Python version %s is: it has no Py_Version "
				  "symbol (Python 3.10 and older lack it) and its name does not "
				  "say (libpython3.X.so, python3.X)",
				  runtime->path);
	}
	version_text(runtime->version, sizeof(runtime->version), runtime->major, runtime->minor,
		     runtime->micro, runtime->hex_version);
	return 0;
}

/* Fills runtime from a mapped file that defines _PyEval_EvalFrameDefault. */
static int runtime_describe(pid_t pid, const struct mapped_file *file,
			    const struct elf_symbol_location *eval_frame,
			    struct python_runtime *runtime, char *error, size_t error_size)
{
	struct python_addresses *addresses = &runtime->addresses;
	struct elf_symbol_location location;
	struct elf_view view;
	int err;

	memset(runtime, 0, sizeof(*runtime));
	runtime->pid = pid;
	snprintf(runtime->path, sizeof(runtime->path), "%s", file->path);
	snprintf(runtime->host_path, sizeof(runtime->host_path), "%s", file->host_path);
	runtime->eval_frame_file_offset = eval_frame->file_offset;
	err = elf_view_open(file->host_path, &view, error, error_size);
	if (err)
		return err;
	runtime->x86_64 = view.header.e_machine == EM_X86_64;
	err = load_bias_of(&view, file, &runtime->load_bias, error, error_size);
	if (!err)
		err = version_find(&view, runtime, error, error_size);
	if (err) {
		elf_view_close(&view);
		return err;
	}
	addresses->eval_frame = eval_frame->address + runtime->load_bias;
	addresses->runtime_state = symbol_address(runtime, "_PyRuntime");
	addresses->long_type = symbol_address(runtime, "PyLong_Type");
	addresses->float_type = symbol_address(runtime, "PyFloat_Type");
	addresses->bool_type = symbol_address(runtime, "PyBool_Type");
	addresses->unicode_type = symbol_address(runtime, "PyUnicode_Type");
	addresses->code_type = symbol_address(runtime, "PyCode_Type");
	addresses->none = symbol_address(runtime, "_Py_NoneStruct");
	addresses->true_object = symbol_address(runtime, "_Py_TrueStruct");
	addresses->false_object = symbol_address(runtime, "_Py_FalseStruct");
	if (elf_symbol_find(runtime->host_path, "_PyRuntime", &location, NULL, 0) == 0)
		runtime->runtime_state_file_offset = location.file_offset;
	if (runtime->major == 3 && runtime->minor >= 12)
		thread_local_find(&view, runtime);
	elf_view_close(&view);
	return 0;
}

/* Interpreter files first: they are few, and big libraries (libtorch) are slow to scan. */
static bool looks_like_python(const struct mapped_file *file)
{
	const char *base = strrchr(file->path, '/');

	base = base ? base + 1 : file->path;
	return strncmp(base, "libpython", 9) == 0 || strncmp(base, "python", 6) == 0;
}

int python_runtime_find(pid_t pid, struct python_runtime *runtime, char *error, size_t error_size)
{
	const struct mapped_file *unreadable = NULL;
	struct mapped_file_list list;
	int err;

	err = process_maps_read(pid, &list, error, error_size);
	if (err)
		return err;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < list.count; i++) {
			const struct mapped_file *file = &list.files[i];
			struct elf_symbol_location eval_frame;

			if (looks_like_python(file) != (pass == 0) ||
			    !strchr(file->permissions, 'x') || file->region_count == 0)
				continue;
			if (pass == 0 && !unreadable && access(file->host_path, R_OK) != 0)
				unreadable = file;
			if (elf_symbol_find(file->host_path, EVAL_FRAME_SYMBOL, &eval_frame, NULL,
					    0) != 0)
				continue;
			err = runtime_describe(pid, file, &eval_frame, runtime, error, error_size);
			mapped_file_list_free(&list);
			return err;
		}
	}
	/* An interpreter by its name that cannot be opened is not "no interpreter". */
	if (unreadable)
		err = error_fail(error, error_size, EACCES,
				 "pid %d maps %s, a Python interpreter by its name, but no path "
				 "from here opens it (tried %s): its Python calls are not followed",
				 (int)pid, unreadable->path, unreadable->host_path);
	else
		err = error_fail(
			error, error_size, ENOENT,
			"pid %d runs no CPython interpreter: none of its %zu mapped files "
			"defines %s; check the pid (a launcher's workers are its children)",
			(int)pid, list.count, EVAL_FRAME_SYMBOL);
	mapped_file_list_free(&list);
	return err;
}

/* The 3.13 _Py_DebugOffsets: the file's initial _PyRuntime, else the live one. */
static int debug_offsets_read(const struct python_runtime *runtime, unsigned char *bytes,
			      enum python_layout_source *source, char *error, size_t error_size)
{
	int fd;
	bool read;

	if (runtime->runtime_state_file_offset) {
		fd = open(runtime->host_path, O_RDONLY | O_CLOEXEC);
		read = fd >= 0 && read_exact(fd, runtime->runtime_state_file_offset, bytes,
					     PYTHON_DEBUG_OFFSETS_SIZE);
		if (fd >= 0)
			close(fd);
		if (read) {
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

/* Appends one code point as UTF-8; false when it does not fit with the final NUL. */
static bool utf8_append(char *text, size_t size, size_t *used, uint32_t code_point)
{
	unsigned char encoded[4];
	size_t length;

	if (code_point < 0x80) {
		encoded[0] = (unsigned char)code_point;
		length = 1;
	} else if (code_point < 0x800) {
		encoded[0] = (unsigned char)(0xC0 | (code_point >> 6));
		encoded[1] = (unsigned char)(0x80 | (code_point & 0x3F));
		length = 2;
	} else if (code_point < 0x10000) {
		encoded[0] = (unsigned char)(0xE0 | (code_point >> 12));
		encoded[1] = (unsigned char)(0x80 | ((code_point >> 6) & 0x3F));
		encoded[2] = (unsigned char)(0x80 | (code_point & 0x3F));
		length = 3;
	} else {
		encoded[0] = (unsigned char)(0xF0 | (code_point >> 18));
		encoded[1] = (unsigned char)(0x80 | ((code_point >> 12) & 0x3F));
		encoded[2] = (unsigned char)(0x80 | ((code_point >> 6) & 0x3F));
		encoded[3] = (unsigned char)(0x80 | (code_point & 0x3F));
		length = 4;
	}
	if (*used + length >= size)
		return false;
	memcpy(text + *used, encoded, length);
	*used += length;
	return true;
}

/* Longer names are not names: a bound that keeps a wrong pointer from reading megabytes. */
#define STRING_LENGTH_MAX 65536

int python_string_read(pid_t pid, const struct python_layout *layout, uint64_t address, char *text,
		       size_t size, char *error, size_t error_size)
{
	unsigned char header[128];
	uint64_t type, data_address = 0, state_word;
	uint32_t state, kind;
	int64_t length;
	unsigned char *characters;
	size_t used = 0;
	int err;

	if (size == 0)
		return error_fail(error, error_size, EINVAL, "no room to read a string into");
	text[0] = '\0';
	/* Every str is at least a PyASCIIObject: read no further, it may end a mapping. */
	err = remote_memory_read(pid, address, header, (size_t)layout->unicode_ascii_data, error,
				 error_size);
	if (err)
		return err;
	memcpy(&type, header + layout->object_type, sizeof(type));
	if (layout->addresses.unicode_type && type != layout->addresses.unicode_type)
		return error_fail(error, error_size, EINVAL,
				  "the object at 0x%llx in pid %d is not a str (its type is at "
				  "0x%llx): the pointer is stale or the layout is wrong",
				  (unsigned long long)address, (int)pid, (unsigned long long)type);
	memcpy(&length, header + layout->unicode_length, sizeof(length));
	memcpy(&state_word, header + layout->unicode_state, sizeof(state_word));
	state = (uint32_t)state_word;
	kind = (state >> 2) & 7;
	if (length < 0 || length > STRING_LENGTH_MAX || (kind != 1 && kind != 2 && kind != 4))
		return error_fail(error, error_size, EINVAL,
				  "the str at 0x%llx in pid %d has length %lld and kind %u, which "
				  "no str has: the pointer is stale or the layout is wrong",
				  (unsigned long long)address, (int)pid, (long long)length, kind);
	if (!(state & (1u << 5))) {
		/* Not compact: the characters are in a separate block it points to. */
		err = remote_memory_read(pid, address + (uint64_t)layout->unicode_compact_data,
					 &data_address, sizeof(data_address), error, error_size);
		if (err)
			return err;
	} else if (state & (1u << 6)) {
		data_address = address + (uint64_t)layout->unicode_ascii_data;
	} else {
		data_address = address + (uint64_t)layout->unicode_compact_data;
	}
	if (length == 0)
		return 0;
	characters = calloc((size_t)length, kind);
	if (!characters)
		return error_fail(error, error_size, ENOMEM, "out of memory reading a str");
	err = remote_memory_read(pid, data_address, characters, (size_t)length * kind, error,
				 error_size);
	for (int64_t i = 0; !err && i < length; i++) {
		uint32_t code_point;

		if (kind == 1) {
			code_point = characters[i];
		} else if (kind == 2) {
			uint16_t unit;

			memcpy(&unit, characters + i * 2, sizeof(unit));
			code_point = unit;
		} else {
			memcpy(&code_point, characters + i * 4, sizeof(code_point));
		}
		if (!utf8_append(text, size, &used, code_point))
			err = error_fail(error, error_size, ENAMETOOLONG,
					 "the str at 0x%llx in pid %d has %lld characters, more "
					 "than fit in %zu bytes",
					 (unsigned long long)address, (int)pid, (long long)length,
					 size);
	}
	free(characters);
	text[used] = '\0';
	return err;
}

static int int_member(const unsigned char *object, int offset)
{
	int32_t value;

	memcpy(&value, object + offset, sizeof(value));
	return value;
}

static uint64_t pointer_member(const unsigned char *object, int offset)
{
	uint64_t value;

	memcpy(&value, object + offset, sizeof(value));
	return value;
}

/* The argument names: the first entries of the names tuple. */
static int argument_names_read(pid_t pid, const struct python_layout *layout, uint64_t tuple,
			       struct python_code *code, char *error, size_t error_size)
{
	uint64_t items[PYTHON_ARGUMENTS_MAX] = { 0 };
	int64_t tuple_size = 0;
	int count = code->parameter_count < PYTHON_ARGUMENTS_MAX ? code->parameter_count
								 : PYTHON_ARGUMENTS_MAX;
	int err;

	if (count <= 0)
		return 0;
	err = remote_memory_read(pid, tuple + (uint64_t)layout->tuple_size, &tuple_size,
				 sizeof(tuple_size), error, error_size);
	if (err)
		return err;
	if (tuple_size < count)
		return error_fail(error, error_size, EINVAL,
				  "the code object of %s in pid %d names %lld locals but has %d "
				  "parameters: the layout is wrong",
				  code->qualified_name, (int)pid, (long long)tuple_size, count);
	err = remote_memory_read(pid, tuple + (uint64_t)layout->tuple_items, items,
				 sizeof(items[0]) * (size_t)count, error, error_size);
	for (int i = 0; !err && i < count; i++)
		err = python_string_read(pid, layout, items[i], code->argument_names[i],
					 sizeof(code->argument_names[i]), error, error_size);
	if (!err)
		code->argument_name_count = count;
	return err;
}

int python_code_read(pid_t pid, const struct python_layout *layout, uint64_t address,
		     struct python_code *code, char *error, size_t error_size)
{
	const int members[] = {
		layout->object_type,
		layout->code_first_line,
		layout->code_argument_count,
		layout->code_positional_only_count,
		layout->code_keyword_only_count,
		layout->code_flags,
		layout->code_name,
		layout->code_qualified_name,
		layout->code_filename,
		layout->code_argument_names,
	};
	/* Every member the layouts name lies in the first 256 bytes of a code object. */
	unsigned char object[256];
	size_t wanted = 0;
	uint64_t type;
	int err;

	memset(code, 0, sizeof(*code));
	/* No further than the last member: the object may end where its mapping does. */
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		if (members[i] != PYTHON_FIELD_ABSENT && (size_t)members[i] + 8 > wanted)
			wanted = (size_t)members[i] + 8;
	}
	if (wanted > sizeof(object))
		return error_fail(error, error_size, EINVAL,
				  "the layout puts code object members past byte %zu: it is wrong",
				  sizeof(object));
	err = remote_memory_read(pid, address, object, wanted, error, error_size);
	if (err)
		return err;
	type = pointer_member(object, layout->object_type);
	if (layout->addresses.code_type && type != layout->addresses.code_type)
		return error_fail(error, error_size, EINVAL,
				  "the object at 0x%llx in pid %d is not a code object (its type "
				  "is at 0x%llx): the pointer is stale or the layout is wrong",
				  (unsigned long long)address, (int)pid, (unsigned long long)type);
	code->name_object =
		pointer_member(object, layout->code_qualified_name != PYTHON_FIELD_ABSENT
					       ? layout->code_qualified_name
					       : layout->code_name);
	code->first_line = int_member(object, layout->code_first_line);
	code->argument_count = int_member(object, layout->code_argument_count);
	code->positional_only_count = int_member(object, layout->code_positional_only_count);
	code->keyword_only_count = int_member(object, layout->code_keyword_only_count);
	code->flags = int_member(object, layout->code_flags);
	code->parameter_count = code->argument_count + code->keyword_only_count +
				!!(code->flags & PYTHON_CODE_VARARGS) +
				!!(code->flags & PYTHON_CODE_VARKEYWORDS);
	err = python_string_read(pid, layout, pointer_member(object, layout->code_name), code->name,
				 sizeof(code->name), error, error_size);
	if (!err && layout->code_qualified_name != PYTHON_FIELD_ABSENT)
		err = python_string_read(
			pid, layout, pointer_member(object, layout->code_qualified_name),
			code->qualified_name, sizeof(code->qualified_name), error, error_size);
	else if (!err)
		snprintf(code->qualified_name, sizeof(code->qualified_name), "%s", code->name);
	if (!err)
		err = python_string_read(pid, layout, pointer_member(object, layout->code_filename),
					 code->filename, sizeof(code->filename), error, error_size);
	if (!err)
		err = argument_names_read(pid, layout,
					  pointer_member(object, layout->code_argument_names), code,
					  error, error_size);
	return err;
}
