// SPDX-License-Identifier: MIT
/*
 * The structure offsets of each CPython version tcheck-bpf knows, as tables
 * (python_layout_from_table in python_layout.h).
 */
#include <errno.h>

#include "base/error_message.h"
#include "python/python_layout.h"

/*
 * The tables. Offsets were read from the DWARF of CPython 3.10.13, 3.11.7,
 * 3.12.1 and 3.13.0 (x86-64, GIL, release builds) and checked against the
 * struct definitions of each version's headers; 3.14's from the
 * _Py_DebugOffsets of Debian's 3.14.10 and 3.14's headers for the members
 * that table does not describe. The unit tests read live interpreters with
 * them. Members are named "struct.member".
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
	.thread_exception_handled = PYTHON_FIELD_ABSENT, /* exc_info holds three pointers */
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
	.thread_cframe = 56,		 /* PyThreadState.cframe */
	.thread_exception_handled = 120, /* PyThreadState.exc_info, measured */
	.cframe_current_frame = 8,	 /* _PyCFrame.current_frame */
	.frame_code = 32,		 /* _PyInterpreterFrame.f_code */
	.frame_previous = 48,		 /* _PyInterpreterFrame.previous */
	.frame_localsplus = 72,		 /* _PyInterpreterFrame.localsplus */
	.frame_owner = 69,		 /* _PyInterpreterFrame.owner */
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
	.thread_exception_handled = 104,  /* PyThreadState.exc_info, measured */
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
	.thread_exception_handled = 120, /* PyThreadState.exc_info, measured */
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

static const struct python_layout layout_3_14 = {
	.major = 3,
	.minor = 14,
	.source = PYTHON_LAYOUT_FROM_TABLE,
	.thread_state_source = PYTHON_THREAD_STATE_THREAD_LOCAL,
	.runtime_interpreters_head = 808, /* _PyRuntimeState.interpreters.head */
	.runtime_thread_state_current = PYTHON_FIELD_ABSENT,
	.interpreter_next = 7272,	  /* PyInterpreterState.next */
	.interpreter_threads_head = 7344, /* PyInterpreterState.threads.head */
	.thread_next = 8,		  /* PyThreadState.next */
	.thread_interpreter = 16,	  /* PyThreadState.interp */
	.thread_id = 152,		  /* PyThreadState.thread_id */
	.thread_native_id = 160,	  /* PyThreadState.native_thread_id */
	.thread_frame = 72,		  /* PyThreadState.current_frame */
	.thread_cframe = PYTHON_FIELD_ABSENT,
	.thread_exception_handled = 120, /* PyThreadState.exc_info, measured */
	.cframe_current_frame = PYTHON_FIELD_ABSENT,
	.frame_code = 0,		  /* _PyInterpreterFrame.f_executable, tagged */
	.frame_previous = 8,		  /* _PyInterpreterFrame.previous */
	.frame_localsplus = 80,		  /* _PyInterpreterFrame.localsplus */
	.frame_owner = 74,		  /* _PyInterpreterFrame.owner */
	.frame_owner_c_stack = 3,	  /* FRAME_OWNED_BY_INTERPRETER; CSTACK is 4 */
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
	.tuple_items = 32,		  /* PyTupleObject.ob_item, after ob_hash */
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
	&layout_3_10, &layout_3_11, &layout_3_12, &layout_3_13, &layout_3_14,
};

static int refuse_version(char *error, size_t error_size, int major, int minor)
{
	return error_fail(error, error_size, ENOTSUP,
			  "Python %d.%d is not supported: tcheck-bpf knows the interpreter "
			  "layout of CPython %s only; trace a process running one of those",
			  major, minor, PYTHON_SUPPORTED_VERSIONS);
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
