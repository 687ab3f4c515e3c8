/* SPDX-License-Identifier: MIT */
/*
 * Where things are inside a running CPython, found from outside: the mapped
 * file that holds the interpreter, its version, the offsets of the
 * structures a probe on _PyEval_EvalFrameDefault(tstate, frame, throwflag)
 * walks, and the addresses of the objects it compares against. Everything
 * comes from the ELF file and process_vm_readv: the process is neither
 * stopped nor written to. Supported: CPython 3.10 to 3.14 on x86-64, builds
 * with the GIL; anything else is refused, never guessed.
 * Functions return 0 or a negative errno and fill error with a sentence.
 */
#ifndef TCHECK_PYTHON_LAYOUT_H
#define TCHECK_PYTHON_LAYOUT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PYTHON_SUPPORTED_VERSIONS "3.10, 3.11, 3.12, 3.13 and 3.14"

/* An offset of a member this version does not have. */
#define PYTHON_FIELD_ABSENT (-1)

/*
 * co_flags bits: a function's frame gets new locals (a module or class body's
 * does not); the *args and **kwargs parameters follow the named ones.
 */
#define PYTHON_CODE_NEW_LOCALS 0x02
#define PYTHON_CODE_VARARGS 0x04
#define PYTHON_CODE_VARKEYWORDS 0x08

enum python_version_source {
	PYTHON_VERSION_FROM_SYMBOL,    /* Py_Version (3.11 and later) */
	PYTHON_VERSION_FROM_FILE_NAME, /* "libpython3.10.so.1.0", "python3.10" */
};

/* Runtime addresses in the process; 0 when the file lacks the symbol. */
struct python_addresses {
	uint64_t eval_frame;	/* _PyEval_EvalFrameDefault */
	uint64_t runtime_state; /* _PyRuntime */
	uint64_t long_type;	/* PyLong_Type */
	uint64_t float_type;	/* PyFloat_Type */
	uint64_t bool_type;	/* PyBool_Type */
	uint64_t unicode_type;	/* PyUnicode_Type */
	uint64_t code_type;	/* PyCode_Type */
	uint64_t none;		/* _Py_NoneStruct */
	uint64_t true_object;	/* _Py_TrueStruct */
	uint64_t false_object;	/* _Py_FalseStruct */
	uint64_t system_exit;	/* the variable PyExc_SystemExit, which holds the type */
};

/*
 * The thread-local _Py_tss_tstate of 3.12 and later, as a BPF program
 * reaches it from the thread pointer (task->thread.fsbase on x86-64):
 * dtv = *(fsbase + 8); block = dtv[module_id].pointer (16-byte entries);
 * tstate = *(block + variable_offset). The variable is a local symbol, in
 * .symtab only: stripped files leave this unknown.
 */
struct python_thread_local {
	bool known;		    /* _Py_tss_tstate and the PT_TLS header were found */
	bool in_executable;	    /* the block is the program's own: module id 1 */
	uint64_t variable_offset;   /* st_value of _Py_tss_tstate: offset in the module's block */
	uint64_t block_size;	    /* PT_TLS p_memsz */
	uint64_t block_align;	    /* PT_TLS p_align */
	uint64_t module_id_address; /* GOT slot the loader filled with the module id, 0 if none */
	uint64_t module_id;	    /* read from that slot when the runtime was found; 0 unknown */
};

/* The file of a process that holds the interpreter, and what it is. */
struct python_runtime {
	pid_t pid;
	char path[PATH_MAX];		  /* as the process sees it */
	char host_path[PATH_MAX];	  /* openable from here, through /proc/PID/root */
	uint64_t load_bias;		  /* runtime address = ELF virtual address + load_bias */
	uint64_t eval_frame_file_offset;  /* where a uprobe on _PyEval_EvalFrameDefault attaches */
	uint64_t eval_frame_probe_skip;	  /* bytes past its first (an endbr64 before a push) */
	uint64_t err_display_file_offset; /* PyErr_Display: uncaught exceptions; 0 absent */
	/* PyErr_SetObject: sys.exit's SystemExit, for a handled exception; 0 absent */
	uint64_t set_object_file_offset;
	uint64_t runtime_state_file_offset; /* of _PyRuntime's initial bytes; 0 when in .bss */
	bool x86_64;			    /* the only machine the layouts are known for */
	int major;
	int minor;
	int micro;	      /* -1 when the file does not say */
	uint32_t hex_version; /* Py_Version: 0x030B07F0 is 3.11.7 final; 0 when absent */
	enum python_version_source version_source;
	char version[32];  /* "3.11.7", "3.13.0rc2", "3.10" */
	char abi_flags[8]; /* from the file name: "t" free-threaded, "d" debug build */
	struct python_addresses addresses;
	struct python_thread_local thread_local; /* 3.12 and later */
};

/*
 * Finds the mapped file of pid that defines _PyEval_EvalFrameDefault
 * (libpython3.X.so, or the python executable itself when it is linked
 * statically), its load bias, version and object addresses. An interpreter
 * of an unsupported version is found too: python_layout_for refuses it.
 * -ENOENT when no mapped file defines the function.
 */
int python_runtime_find(pid_t pid, struct python_runtime *runtime, char *error, size_t error_size);

/*
 * The same for an interpreter file no process runs yet (an exec held until
 * its probes are on): as the file lays itself out, at load bias 0 (pid 0).
 * -ENOENT when the file does not define _PyEval_EvalFrameDefault.
 */
int python_runtime_describe_file(const char *path, const char *host_path,
				 struct python_runtime *runtime, char *error, size_t error_size);

/* Where the kernel will say an image of the file starts its code, at load bias 0. */
int python_runtime_code_start(const char *host_path, uint64_t *start, char *error,
			      size_t error_size);

enum python_layout_source {
	PYTHON_LAYOUT_FROM_TABLE,
	PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_FILE,	 /* _Py_DebugOffsets read from the ELF file */
	PYTHON_LAYOUT_FROM_DEBUG_OFFSETS_MEMORY, /* the same read from the live process */
};

enum python_thread_state_source {
	PYTHON_THREAD_STATE_RUNTIME_FIELD, /* 3.10, 3.11: _PyRuntime.gilstate.tstate_current */
	PYTHON_THREAD_STATE_THREAD_LOCAL,  /* 3.12 and later: __thread _Py_tss_tstate */
};

/*
 * Byte offsets of members, PYTHON_FIELD_ABSENT where the version lacks the
 * member, and the addresses of one process. "frame" is PyFrameObject in
 * 3.10 and _PyInterpreterFrame from 3.11 on.
 */
struct python_layout {
	int major;
	int minor;
	enum python_layout_source source;

	/* The current thread state, when the thread holds the GIL (NULL otherwise). */
	enum python_thread_state_source thread_state_source;
	uint64_t thread_state_current_address; /* 3.10, 3.11: &_PyRuntime.gilstate.tstate_current */

	/* Every thread state, whether it holds the GIL or not. */
	int runtime_interpreters_head;	  /* _PyRuntimeState.interpreters.head */
	int runtime_thread_state_current; /* _PyRuntimeState.gilstate.tstate_current */
	int interpreter_next;
	int interpreter_threads_head;
	int thread_next;
	int thread_interpreter;
	int thread_id;	      /* pthread_t of the thread */
	int thread_native_id; /* its kernel tid; absent in 3.10 */

	/* The innermost frame of a thread: directly, or through a _PyCFrame. */
	int thread_frame;  /* 3.10 frame, 3.13+ current_frame */
	int thread_cframe; /* 3.11, 3.12 */
	/* The exception a handler is handling: exc_info's first member (3.11+). */
	int thread_exception_handled;
	int cframe_current_frame; /* 3.11, 3.12 */

	int frame_code; /* f_code; f_executable (3.13+: code or None; 3.14: a tagged reference) */
	int frame_previous;
	int frame_localsplus;	 /* the arguments come first */
	int frame_owner;	 /* one byte; absent in 3.10 */
	int frame_owner_c_stack; /* 3.12+: owners from this up are shim frames (C entries); skip */

	int code_argument_count; /* co_argcount: positional parameters, self included */
	int code_positional_only_count;
	int code_keyword_only_count;
	int code_flags;
	int code_first_line;
	int code_filename;
	int code_name;
	int code_qualified_name; /* absent in 3.10: its code objects have no qualname */
	int code_argument_names; /* tuple: co_varnames (3.10), co_localsplusnames (3.11+) */

	int object_type; /* ob_type */
	int tuple_size;
	int tuple_items;
	int unicode_length;
	int unicode_state;	  /* 32 bits: kind in bits 2-4, compact bit 5, ascii bit 6 */
	int unicode_ascii_data;	  /* compact ASCII characters: sizeof(PyASCIIObject) */
	int unicode_compact_data; /* other compact strings: sizeof(PyCompactUnicodeObject) */
	int float_value;
	int long_size;	  /* ob_size (3.10, 3.11: sign is the sign) or lv_tag (3.12+) */
	bool long_tagged; /* lv_tag: digits = tag >> 3, sign = tag & 3 (0 +, 1 zero, 2 -) */
	int long_digits;  /* 32-bit digits of long_digit_bits bits each */
	int long_digit_bits;

	struct python_addresses addresses;
	struct python_thread_local thread_local;
};

/*
 * The layout of the runtime's version with its addresses: a table for 3.10
 * to 3.12; for 3.13 and 3.14 _Py_DebugOffsets from the file (or the live
 * process), that version's table when neither can be read. Other versions, free-threaded,
 * debug, pre-release and non-x86-64 builds are refused with -ENOTSUP.
 */
int python_layout_for(const struct python_runtime *runtime, struct python_layout *layout,
		      char *error, size_t error_size);

/* The table for one version, without addresses; -ENOTSUP for an unknown version. */
int python_layout_from_table(int major, int minor, struct python_layout *layout, char *error,
			     size_t error_size);

/*
 * The bytes of _Py_DebugOffsets read: the size of the largest version's
 * (3.14: 760; 3.13: 584).
 */
#define PYTHON_DEBUG_OFFSETS_SIZE 760

/*
 * The layout from the bytes of a 3.13 or 3.14 _Py_DebugOffsets (the start of
 * _PyRuntime), that version's table filling the members it does not describe.
 * -EINVAL when the cookie is wrong or the offsets are out of range,
 * -ENOTSUP for another version or a free-threaded build.
 */
int python_layout_from_debug_offsets(const void *bytes, size_t size, struct python_layout *layout,
				     char *error, size_t error_size);

/*
 * Reads a str object of pid as UTF-8 into text. -EINVAL when it is not a
 * str, -ENAMETOOLONG when it does not fit.
 */
int python_string_read(pid_t pid, const struct python_layout *layout, uint64_t address, char *text,
		       size_t size, char *error, size_t error_size);

#define PYTHON_ARGUMENTS_MAX 16

/* What a code object says about its function. */
struct python_code {
	char qualified_name[512]; /* co_qualname; co_name on 3.10, which has no qualname */
	char name[256];
	char filename[PATH_MAX];
	int first_line;
	int argument_count; /* co_argcount, self included */
	int positional_only_count;
	int keyword_only_count;
	int flags;
	int parameter_count;	 /* every named parameter, *args and **kwargs included */
	int argument_name_count; /* names read: min(parameter_count, PYTHON_ARGUMENTS_MAX) */
	char argument_names[PYTHON_ARGUMENTS_MAX][64];
	/*
	 * The address of the name object the probes key a code object by
	 * (co_qualname; co_name on 3.10): a code object read later than its
	 * call, at an address freed and reused since, has another one.
	 */
	uint64_t name_object;
};

/* Reads a code object of pid. -EINVAL when the address holds no code object. */
int python_code_read(pid_t pid, const struct python_layout *layout, uint64_t address,
		     struct python_code *code, char *error, size_t error_size);

#endif /* TCHECK_PYTHON_LAYOUT_H */
