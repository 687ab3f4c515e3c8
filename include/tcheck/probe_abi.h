/* SPDX-License-Identifier: MIT */
/*
 * The records and settings the BPF programs and the daemon exchange.
 * Included by both sides, so it holds only fixed-width plain C types.
 */
#ifndef TCHECK_PROBE_ABI_H
#define TCHECK_PROBE_ABI_H

#ifdef __bpf__
typedef __u8 tcheck_u8;
typedef __u16 tcheck_u16;
typedef __u32 tcheck_u32;
typedef __s32 tcheck_s32;
typedef __u64 tcheck_u64;
typedef __s64 tcheck_s64;
#else
#include <stdint.h>
typedef uint8_t tcheck_u8;
typedef uint16_t tcheck_u16;
typedef uint32_t tcheck_u32;
typedef int32_t tcheck_s32;
typedef uint64_t tcheck_u64;
typedef int64_t tcheck_s64;
#endif

/* Integer arguments captured per call: six registers plus four stack slots. */
#define TCHECK_REGISTER_ARGS 6
#define TCHECK_STACK_ARGS 4
#define TCHECK_CALL_ARGS (TCHECK_REGISTER_ARGS + TCHECK_STACK_ARGS)

/* Bytes of an opaque blob (an ncclUniqueId, or an array of pointers). */
#define TCHECK_BLOB_BYTES 128

/* Calls into the library that may be open on one thread at once. */
#define TCHECK_MAX_NESTING 4
/* Communicators per thread whose operation counter is known to user space (a power of 2). */
#define TCHECK_COUNTED_COMMS 4

/*
 * The attach cookie tells the one generic program what to capture for
 * the function it is attached to, so the BPF side needs no per-function
 * code. Bits 0-15: function index in the daemon's probe table.
 */
#define TCHECK_COOKIE_FUNCTION_MASK 0xffffULL
/* Bits 16-19: 1 + index of a pointer argument to read at return. */
#define TCHECK_COOKIE_OUT_ARG_SHIFT 16
#define TCHECK_COOKIE_OUT_ARG_MASK 0xfULL
/* Bit 20: the value behind that pointer is 4 bytes (else 8). */
#define TCHECK_COOKIE_OUT_IS_32BIT (1ULL << 20)
/* Bit 21: copy the blob from the caller's stack at entry (by-value id). */
#define TCHECK_COOKIE_BLOB_FROM_STACK (1ULL << 21)
/* Bits 22-25: 1 + index of a pointer argument whose blob is read at return. */
#define TCHECK_COOKIE_BLOB_ARG_SHIFT 22
#define TCHECK_COOKIE_BLOB_ARG_MASK 0xfULL
/* Either source of a blob. */
#define TCHECK_COOKIE_BLOB_ANY           \
	(TCHECK_COOKIE_BLOB_FROM_STACK | \
	 (TCHECK_COOKIE_BLOB_ARG_MASK << TCHECK_COOKIE_BLOB_ARG_SHIFT))
/* Bit 26: emit only when the return code or the out value is non-zero. */
#define TCHECK_COOKIE_ONLY_FAILURES (1ULL << 26)
/* Bit 27: the probe marks a change of the loaded-library list (r_brk). */
#define TCHECK_COOKIE_LIBRARY_CHANGE (1ULL << 27)
/*
 * Bits 28-31: 1 + the slot in comm_layouts describing the library's
 * struct ncclComm, so a communicator written through the out pointer is
 * read at once (rank, size, commHash), while its process still exists.
 */
#define TCHECK_COOKIE_LAYOUT_SHIFT 28
#define TCHECK_COOKIE_LAYOUT_MASK 0xfULL
#define TCHECK_MAX_COMM_LAYOUTS 15
/*
 * Bit 32: read the arguments passed on the stack (beyond the sixth). Set
 * only where one of them is more than the CUDA stream: a read of the traced
 * process's memory costs a probe as much as the rest of its entry.
 */
#define TCHECK_COOKIE_STACK_ARGS (1ULL << 32)
/*
 * Bits 33-36: 1 + the argument slot (register or stack word) holding the
 * communicator a call works on: its operation counter is read at entry,
 * before the call can move it, with the layout named by bits 28-31.
 */
#define TCHECK_COOKIE_COMM_ARG_SHIFT 33
#define TCHECK_COOKIE_COMM_ARG_MASK 0xfULL

/* Where a library keeps a communicator's identity; -1 for a member it lacks. */
struct tcheck_comm_layout {
	tcheck_s32 comm_hash_offset;
	tcheck_s32 rank_offset;
	tcheck_s32 nranks_offset;
	tcheck_s32 op_count_offset; /* a 64-bit count of the operations issued on it */
};

enum tcheck_record_type {
	TCHECK_RECORD_CALL = 1,		     /* a library call, entry and return paired */
	TCHECK_RECORD_PROCESS_FORK = 2,	     /* a traced process started a child */
	TCHECK_RECORD_PROCESS_EXEC = 3,	     /* a traced process replaced its image */
	TCHECK_RECORD_PROCESS_EXIT = 4,	     /* a traced process ended */
	TCHECK_RECORD_LIBRARY_CHANGE = 5,    /* a traced process loaded a library */
	TCHECK_RECORD_PYTHON_CALL = 6,	     /* a Python frame evaluated from C, paired */
	TCHECK_RECORD_TORCH_SCOPE = 7,	     /* a torch record_function scope, paired */
	TCHECK_RECORD_TORCH_OP = 8,	     /* a selected torch operator call, paired */
	TCHECK_RECORD_VERBS_CONTEXT = 9,     /* a traced process opened a verbs device */
	TCHECK_RECORD_PROCESS_GROUP = 10,    /* a traced process built a c10d process group */
	TCHECK_RECORD_C10D_CALL = 11,	     /* a traced process called a c10d collective */
	TCHECK_RECORD_PYTHON_EXCEPTION = 12, /* an uncaught Python exception is being printed */
	TCHECK_RECORD_STORE_PREFIX = 13,     /* a traced process built a c10d PrefixStore */
	TCHECK_RECORD_C10D_WORK = 14,	     /* a c10d work was built or ended */
};

/* Flags of a call record. */
#define TCHECK_CALL_HAS_BLOB (1U << 0)
#define TCHECK_CALL_HAS_OUT_VALUE (1U << 1)
#define TCHECK_CALL_OUT_READ_FAILED (1U << 2)
#define TCHECK_CALL_BLOB_READ_FAILED (1U << 3)
#define TCHECK_CALL_HAS_COMM_HASH (1U << 4) /* comm_hash read from the new communicator */
#define TCHECK_CALL_HAS_COMM_RANK (1U << 5) /* comm_rank and comm_nranks read likewise */
/* The calling thread runs no Python: py_code holds the process's main thread's frames. */
#define TCHECK_CALL_PY_MAIN_THREAD (1U << 6)
/*
 * The call had not returned: its thread ended inside it (the record comes
 * from the exit probe), or the reader saw it in flight in open_calls.
 * return_ns and return_value mean nothing.
 */
#define TCHECK_CALL_OPEN (1U << 7)
/* comm_op_count holds the communicator's operation counter as the call was entered. */
#define TCHECK_CALL_HAS_OP_COUNT (1U << 8)
/* args[] beyond the sixth were read from the stack (TCHECK_COOKIE_STACK_ARGS). */
#define TCHECK_CALL_HAS_STACK_ARGS (1U << 9)

/*
 * Python frames kept with an event, innermost first: the callers of a Python
 * call, the Python context of an NCCL call. The trace keeps as many.
 */
#define TCHECK_PY_STACK_MAX 8

/*
 * CPython 3.14 frames hold tagged references (_PyStackRef: the low bit set
 * for a reference not counted) in f_executable and localsplus. Objects are
 * 8-byte aligned, so clearing these bits gives the object in every version.
 */
#define TCHECK_PYTHON_REFERENCE_TAG_BITS 7ULL

/* Header common to every ring-buffer record. */
struct tcheck_record_header {
	tcheck_u32 type; /* enum tcheck_record_type */
	tcheck_u32 pid;	 /* thread group id */
	tcheck_u32 tid;
	tcheck_u32 reserved;
	tcheck_u64 timestamp_ns; /* CLOCK_MONOTONIC */
};

/* A paired entry and return of one probed function. */
struct tcheck_call_record {
	struct tcheck_record_header header; /* timestamp = entry time */
	tcheck_u64 return_ns;
	tcheck_u64 args[TCHECK_CALL_ARGS];
	tcheck_s64 return_value;
	tcheck_u64 out_value;
	tcheck_u32 function_index;
	tcheck_u32 depth; /* calls of the library already open on the thread */
	tcheck_u32 flags; /* TCHECK_CALL_* */
	tcheck_u32 reserved;
	tcheck_u64 comm_hash; /* of the communicator created, when flagged */
	tcheck_s32 comm_rank;
	tcheck_s32 comm_nranks;
	tcheck_u64 comm_op_count; /* when flagged TCHECK_CALL_HAS_OP_COUNT */
	tcheck_u8 blob[TCHECK_BLOB_BYTES];
	/* The Python caller: code objects and their name objects (see tcheck_code_key). */
	tcheck_u32 py_depth; /* frames filled; 0 when the process's Python is not traced */
	tcheck_u32 py_reserved;
	tcheck_u64 py_code[TCHECK_PY_STACK_MAX];
	tcheck_u64 py_name[TCHECK_PY_STACK_MAX];
};

/*
 * A call with no blob and no Python caller is sent as a short record: the
 * fields before the blob only, 176 bytes in the ring buffer instead of 440.
 * The probe writes, and the reader reads, fewer cache lines a call. The
 * reader takes the missing fields as zero.
 */
#define TCHECK_CALL_RECORD_SHORT_BYTES __builtin_offsetof(struct tcheck_call_record, blob)

/*
 * An entered library call waiting for its return, kept per thread in the
 * open_calls map: user space reads it to see the calls in flight (a rank
 * blocked inside a collective) and those that never returned.
 */
struct tcheck_open_call {
	tcheck_u64 cookie; /* the attach cookie: function index and argument layout */
	tcheck_u64 entry_ns;
	tcheck_u64 args[TCHECK_CALL_ARGS];
	tcheck_u64 comm_op_count; /* the communicator's operation counter at entry */
	tcheck_u32 call_flags;	  /* TCHECK_CALL_HAS_OP_COUNT when comm_op_count was read */
	tcheck_u32 reserved;
	tcheck_u8 blob[TCHECK_BLOB_BYTES];
	/* The Python caller at entry (python_context.bpf.h). */
	tcheck_u32 py_depth;
	tcheck_u32 py_flags; /* TCHECK_CALL_PY_* */
	tcheck_u64 py_code[TCHECK_PY_STACK_MAX];
	tcheck_u64 py_name[TCHECK_PY_STACK_MAX];
};

/* The calls open on one thread, innermost last: the open_calls map's value, keyed by thread id. */
struct tcheck_thread_calls {
	tcheck_u32 depth;
	tcheck_u32 overflow; /* entries beyond TCHECK_MAX_NESTING, skipped */
	/*
	 * The communicators whose operation counter this thread has sent in a
	 * call record (the last TCHECK_COUNTED_COMMS, replaced in turn): user
	 * space needs a communicator's counter once, at its first traced call,
	 * and counts on from there, so the entry reads it only for a
	 * communicator not listed. A record lost on its way forgets the list.
	 */
	tcheck_u32 counted_next;
	tcheck_u32 reserved;
	tcheck_u64 counted_comms[TCHECK_COUNTED_COMMS];
	struct tcheck_open_call frames[TCHECK_MAX_NESTING];
};

/* Fork, exec, exit and library-change notices. */
/* Bytes of a new image's argument list an exec record carries. */
#define TCHECK_COMMAND_BYTES 256
/* The environment variables an exec record carries, in this order. */
enum tcheck_environment_value {
	TCHECK_ENVIRONMENT_RANK = 0,
	TCHECK_ENVIRONMENT_LOCAL_RANK,
	TCHECK_ENVIRONMENT_WORLD_SIZE,
	TCHECK_ENVIRONMENT_VALUES,
};
/* The most bytes of a new image's environment the exec probe looks through. */
#define TCHECK_ENVIRONMENT_BYTES 65536

struct tcheck_process_record {
	struct tcheck_record_header header;
	tcheck_u32 child_pid; /* fork: the new process */
	tcheck_s32 exit_code; /* exit: as wait() would report it */
	/*
	 * exec: the new image's arguments, NUL-separated, read as it starts (a
	 * process that ends at once is gone before /proc can be read); 0 none.
	 */
	tcheck_u32 command_length;
	tcheck_u32 command_cut; /* 1: the arguments went on past command[] */
	/*
	 * fork and exec: 1 when the probes follow its Python from its first
	 * instruction (the parent's, or an interpreter file already followed).
	 */
	tcheck_u32 python_from_start;
	tcheck_u32 reserved;
	char command[TCHECK_COMMAND_BYTES];
	/*
	 * exec: RANK, LOCAL_RANK and WORLD_SIZE of the new image's environment
	 * (TCHECK_ENVIRONMENT_*), read as it starts, so a rank that dies before
	 * /proc can be read keeps its job rank; -1 when unset or not a plain
	 * decimal, all -1 when environment_read is 0 (not read, or longer than
	 * TCHECK_ENVIRONMENT_BYTES).
	 */
	tcheck_s32 environment_values[TCHECK_ENVIRONMENT_VALUES];
	tcheck_u32 environment_read;
};

/* A file as the kernel knows it: its inode and its superblock's device (MKDEV encoding). */
struct tcheck_file_key {
	tcheck_u64 inode;
	tcheck_u32 device;
	tcheck_u32 reserved;
};

/* Where the frame passed to the evaluator keeps its code object, per process. */
struct tcheck_python_process {
	tcheck_s32 frame_code_offset;
	/* co_qualname (co_name on 3.10): with the code address, tells reused addresses apart */
	tcheck_s32 code_name_offset;
	/* Since primitive arguments and caller stacks: what the entry probe reads. */
	tcheck_s32 thread_frame_offset;	 /* tstate -> frame (3.10), current_frame (3.13) */
	tcheck_s32 thread_cframe_offset; /* tstate -> cframe (3.11, 3.12), -1 otherwise */
	tcheck_s32 cframe_current_frame_offset;
	tcheck_s32 frame_previous_offset;
	tcheck_s32 frame_localsplus_offset;
	tcheck_s32 frame_owner_offset; /* -1 in 3.10 */
	/* Owners from this value up are not a call's frames (3.12+ shims), -1 none. */
	tcheck_s32 frame_owner_c_stack;
	tcheck_s32 code_argument_count_offset;
	tcheck_s32 code_keyword_only_count_offset;
	tcheck_s32 float_value_offset;
	tcheck_s32 long_size_offset; /* ob_size, or lv_tag in 3.12+ */
	tcheck_s32 long_digits_offset;
	tcheck_s32 unicode_length_offset;
	tcheck_s32 unicode_state_offset;
	tcheck_s32 unicode_ascii_data_offset;
	tcheck_s32 unicode_compact_data_offset;
	tcheck_u64 long_type;
	tcheck_u64 float_type;
	tcheck_u64 bool_type;
	tcheck_u64 unicode_type;
	tcheck_u64 none;
	tcheck_u64 true_object;
};

/*
 * Moves the object addresses of a process's Python by 'delta' (unsigned
 * wrap-around: subtracting is adding the negation); 0 stays 0, unknown.
 */
static inline void tcheck_python_process_move(struct tcheck_python_process *process,
					      tcheck_u64 delta)
{
	tcheck_u64 *addresses[] = { &process->long_type, &process->float_type,
				    &process->bool_type, &process->unicode_type,
				    &process->none,	 &process->true_object };

	for (unsigned i = 0; i < sizeof(addresses) / sizeof(addresses[0]); i++)
		if (*addresses[i])
			*addresses[i] += delta;
}

/*
 * How a probe outside the frame evaluator finds a thread's Python frames,
 * per process: the thread-state list (every thread, GIL held or not),
 * then the frame chain. Offsets are -1 where the version lacks the member.
 */
struct tcheck_python_stack_layout {
	tcheck_u64 interpreters_head; /* address of _PyRuntime.interpreters.head */
	tcheck_s32 interpreter_threads_head;
	tcheck_s32 thread_next;
	tcheck_s32 thread_id;	  /* pthread_t: the thread pointer (fsbase) on x86-64 glibc */
	tcheck_s32 thread_frame;  /* 3.10 frame, 3.13 current_frame */
	tcheck_s32 thread_cframe; /* 3.11, 3.12 */
	tcheck_s32 cframe_current_frame;
	tcheck_s32 frame_code;
	tcheck_s32 frame_previous;
	tcheck_s32 frame_owner;		/* one byte */
	tcheck_s32 frame_owner_c_stack; /* owners from this value up: shim frames, skipped */
	tcheck_u64 none;		/* _Py_NoneStruct: 3.13's f_executable can be None */
	tcheck_s32 code_name_offset;	/* as in tcheck_python_process */
	/* Bytes of a frame read at once: its code, previous and owner members (at most 128). */
	tcheck_u32 frame_header_size;
	/* For uncaught exceptions (bpf/python_exceptions.bpf.c). */
	tcheck_u64 unicode_type;	/* &PyUnicode_Type: a message is an exact str */
	tcheck_s32 unicode_state;	/* PyASCIIObject.state: compact bit 5, ascii bit 6 */
	tcheck_s32 unicode_ascii_data;	/* sizeof(PyASCIIObject) */
	tcheck_s32 exception_args;	/* PyBaseExceptionObject.args */
	tcheck_s32 exception_traceback; /* PyBaseExceptionObject.traceback */
	tcheck_s32 frame_object_frame;	/* PyFrameObject.f_frame (3.11+), -1: the frame itself */
	tcheck_s32 tuple_items;		/* PyTupleObject.ob_item: 24, 32 from 3.14 (ob_hash) */
	tcheck_s32 long_digits;		/* PyLongObject's first digit (30 bits) */
	tcheck_s32 thread_exception_handled; /* tstate -> exc_info (3.11+), -1 unknown */
	tcheck_u64 long_type;		     /* &PyLong_Type: an exit status that is an int */
	tcheck_u64 system_exit_type;	     /* the variable PyExc_SystemExit (holds the type) */
};

/*
 * The exception that ends a process, read either as CPython's default
 * excepthook starts to print it (PyErr_Display(type, value, traceback)), or
 * as a handler of it calls sys.exit with a failure status
 * (PyErr_SetObject(SystemExit, status) while the thread handles it; flag
 * TCHECK_EXCEPTION_HANDLED_AT_EXIT). torch.multiprocessing.spawn's worker
 * wrapper catches the worker's exception that way and calls sys.exit(1). Carried: the exception's
 * type name, its first argument when that is an ASCII str (the message), and the code objects of
 * its traceback, innermost last; the last TCHECK_PY_STACK_MAX of them are kept.
 */
#define TCHECK_EXCEPTION_TYPE_BYTES 64
#define TCHECK_EXCEPTION_MESSAGE_BYTES 192
#define TCHECK_EXCEPTION_TRACEBACK_MAX 64   /* traceback entries walked */
#define TCHECK_EXCEPTION_HANDLED_AT_EXIT 1U /* caught, then sys.exit(failure) */

struct tcheck_python_exception_record {
	struct tcheck_record_header header;	     /* timestamp = the probe's hit */
	tcheck_u32 frame_count;			     /* traceback entries seen (kept: the last 8) */
	tcheck_u32 flags;			     /* TCHECK_EXCEPTION_* */
	char type_name[TCHECK_EXCEPTION_TYPE_BYTES]; /* NUL-terminated, cut to fit */
	char message[TCHECK_EXCEPTION_MESSAGE_BYTES]; /* "" when not an ASCII str */
	tcheck_u64 codes[TCHECK_PY_STACK_MAX];	      /* ring: entry i at i % 8 */
};

/* What the daemon decided about a code object; absent means not decided yet. */
enum tcheck_code_verdict {
	TCHECK_CODE_SELECTED = 1,
	TCHECK_CODE_IGNORED = 2,
};

/*
 * A code object, as the probes know it. Its address alone is not enough:
 * a freed code object's address is reused by the next, so the address of
 * its name object is part of the key.
 */
struct tcheck_code_key {
	tcheck_u32 pid;
	tcheck_u32 reserved;
	tcheck_u64 code; /* address of the code object */
	tcheck_u64 name; /* address of its name object */
};

/* Flags of a Python call record. */
#define TCHECK_PYTHON_RAISED (1U << 0) /* the evaluator returned NULL */
/* Frames were left beyond the callers kept in stack (the walk's limits). */
#define TCHECK_PYTHON_CALLERS_CUT (1U << 1)

#define TCHECK_PYTHON_ARGS_MAX 8   /* arguments looked at per call */
#define TCHECK_PYTHON_ARG_BYTES 16 /* raw bytes of an int's digits or a str's characters */

/* Types of a primitive argument as the probe saw it; 0: not primitive, skipped. */
enum tcheck_python_arg_type {
	TCHECK_PYTHON_ARG_NONE = 1,
	TCHECK_PYTHON_ARG_BOOL = 2,
	TCHECK_PYTHON_ARG_INT = 3,
	TCHECK_PYTHON_ARG_FLOAT = 4,
	TCHECK_PYTHON_ARG_STR = 5,
	/*
	 * The first parameter (self) when it is no primitive: value is its
	 * ob_type; bytes hold its address, then the self of the outermost open
	 * call of the same code object on the thread (its own when none); state
	 * the number of such open calls.
	 */
	TCHECK_PYTHON_ARG_OBJECT = 6,
};

/*
 * One argument, raw: the probe copies, the daemon decodes. BOOL: value 0 or
 * 1. FLOAT: value holds the double's bits. INT: value is ob_size (3.10,
 * 3.11) or lv_tag (3.12+), bytes the first 32-bit digits. STR: value is
 * the length in characters, state the state word, bytes the first
 * characters (kind bytes each) of a compact string.
 */
struct tcheck_python_arg {
	tcheck_u8 type;	    /* enum tcheck_python_arg_type */
	tcheck_u8 position; /* parameter index */
	tcheck_u16 reserved;
	tcheck_u32 state;
	tcheck_u64 value;
	tcheck_u8 bytes[TCHECK_PYTHON_ARG_BYTES];
};

/* A Python frame evaluated from C: entry and return paired. */
struct tcheck_python_record {
	struct tcheck_record_header header; /* timestamp = entry time */
	tcheck_u64 return_ns;
	tcheck_u64 code;
	tcheck_u64 code_name; /* address of its name object (see tcheck_code_key) */
	tcheck_u32 depth;     /* traced frames already open on the thread */
	tcheck_u32 flags;     /* TCHECK_PYTHON_* */
	/* Since primitive arguments and caller stacks. */
	tcheck_u32 arg_count;	/* primitive ones kept in args */
	tcheck_u32 stack_depth; /* callers kept in stack */
	struct tcheck_python_arg args[TCHECK_PYTHON_ARGS_MAX];
	tcheck_u64 stack[TCHECK_PY_STACK_MAX]; /* callers' code objects, innermost first */
};

/* Torch scopes: the cookie says which argument register holds what (1 rdi, 2 rsi, 3 rdx). */
#define TCHECK_TORCH_NAME_REGISTER_SHIFT 0
#define TCHECK_TORCH_KEY_REGISTER_SHIFT 2
#define TCHECK_TORCH_REGISTER_MASK 0x3ULL
#define TCHECK_TORCH_SCOPE_NAME_BYTES 64
/*
 * The backward pass (torch::autograd::Engine::execute) as a scope record of
 * this name: one at its entry and, where probes sit on the function's
 * return instructions, one at each return (flagged), which the daemon
 * pairs per thread, innermost first.
 */
#define TCHECK_BACKWARD_SCOPE_NAME "Autograd.backward#Engine.execute"
/* The entry probe's cookie: its returns are probed too. */
#define TCHECK_BACKWARD_ENDS_PROBED 1ULL
/*
 * Flags of a scope record: an entry whose end record will follow, and that
 * end; a user scope's opening (its paired record still comes at its end).
 */
#define TCHECK_TORCH_SCOPE_END_FOLLOWS (1U << 0)
#define TCHECK_TORCH_SCOPE_BACKWARD_END (1U << 1)
#define TCHECK_TORCH_SCOPE_OPENS (1U << 2)

/* A torch record_function scope (Optimizer.step#SGD.step): entry and end paired. */
struct tcheck_torch_scope_record {
	struct tcheck_record_header header; /* timestamp = entry time */
	tcheck_u64 return_ns;
	tcheck_u32 depth;			  /* scopes already open on the thread */
	tcheck_u32 flags;			  /* TCHECK_TORCH_SCOPE_* */
	char name[TCHECK_TORCH_SCOPE_NAME_BYTES]; /* NUL-terminated, cut to fit */
};

/*
 * A torch operator probe's attach cookie: the operator's number in the low
 * bits, and which argument registers hold, at entry, a pointer to the
 * at::Tensor whose TensorImpl the record names (an in-place operator's self,
 * linear's weight) and a pointer to the c10::Scalar it reports (add_'s
 * alpha): 1 rdi, 2 rsi, 3 rdx, 4 rcx, 5 r8, 0 none; and the size of the
 * header a TensorImpl and a StorageImpl start with in this torch, which
 * the Storage pointer and the data pointer follow (0: contents not read).
 */
#define TCHECK_TORCH_OP_INDEX_MASK 0xffffULL
#define TCHECK_TORCH_OP_TENSOR_SHIFT 16
#define TCHECK_TORCH_OP_SCALAR_SHIFT 20
#define TCHECK_TORCH_OP_REGISTER_MASK 0xfULL
#define TCHECK_TORCH_OP_HEADER_SHIFT 24
#define TCHECK_TORCH_OP_HEADER_MASK 0xffULL
/*
 * And where this torch keeps a TensorImpl's element count (0: shape not
 * read): its c10::ScalarType is 8 bytes on, its SizesAndStrides (the
 * dimension count, then up to 5 sizes held inline) 96 bytes before.
 */
#define TCHECK_TORCH_OP_NUMEL_SHIFT 32
#define TCHECK_TORCH_OP_NUMEL_MASK 0xfffULL
#define TCHECK_TORCH_OP_SIZES_BEFORE_NUMEL 96
#define TCHECK_TORCH_OP_DIMS_MAX 4
/*
 * And where an AutogradMeta keeps requires_grad_ (0: not read); the
 * TensorImpl's AutogradMeta pointer follows its Storage pointer.
 */
#define TCHECK_TORCH_OP_REQUIRES_GRAD_SHIFT 44
#define TCHECK_TORCH_OP_REQUIRES_GRAD_MASK 0xffULL
/* tcheck_torch_op_record.requires_grad */
#define TCHECK_REQUIRES_GRAD_NO 0
#define TCHECK_REQUIRES_GRAD_YES 1
#define TCHECK_REQUIRES_GRAD_UNKNOWN 2
/*
 * requires_grad_ clear but grad_fn_ set: a tensor autograd computes from
 * others that require grad (MAML's fast weights, a reparametrised weight),
 * not a leaf of its own. Read where the cookie gives grad_fn_'s offset.
 */
#define TCHECK_REQUIRES_GRAD_COMPUTED 3
/* And where an AutogradMeta keeps grad_fn_'s pointer (0: not read). */
#define TCHECK_TORCH_OP_GRAD_FN_SHIFT 55
#define TCHECK_TORCH_OP_GRAD_FN_MASK 0xffULL
/*
 * tcheck_torch_op_record.grad_mode: whether autograd was on for the thread
 * when the operator ran (c10::GradMode, which torch.no_grad() turns off),
 * as the probes on GradMode::set_enabled and AutogradState::set_tls_state
 * (torch.inference_mode()) last saw it set: unknown until they have seen a
 * change on that thread.
 */
#define TCHECK_GRAD_MODE_UNKNOWN 0
#define TCHECK_GRAD_MODE_ON 1
#define TCHECK_GRAD_MODE_OFF 2
/*
 * grad_mode_set's attach cookie: where the thread's new grad mode is at the
 * probed entry. GradMode::set_enabled(bool): the bool in dil (no_grad(),
 * enable_grad()). AutogradState::set_tls_state(AutogradState), which
 * InferenceMode's guard calls instead: bit 0 of the state, passed in dil
 * while the state is that byte alone (torch 1.13 to 2.6), or read from the
 * byte at rdi + (cookie >> TCHECK_GRAD_MODE_STATE_OFFSET_SHIFT) once the
 * state holds more and is passed by reference (torch 2.14).
 */
#define TCHECK_GRAD_MODE_FROM_BOOL 0
#define TCHECK_GRAD_MODE_FROM_STATE_VALUE 1
#define TCHECK_GRAD_MODE_FROM_STATE_REFERENCE 2
#define TCHECK_GRAD_MODE_FROM_MASK 0xffULL
#define TCHECK_GRAD_MODE_STATE_OFFSET_SHIFT 8
/*
 * Whether the probe reads the tensor's contents (a digest): only for an
 * in-place update's self whose old value matters (not zero_'s, not a
 * weight the forward reads), so other operators pay no reads for them.
 */
#define TCHECK_TORCH_OP_READ_CONTENTS (1ULL << 52)
/*
 * Whether the scalar register holds a bool by value (dropout's train), not
 * a pointer to a c10::Scalar: reported with the tag TCHECK_SCALAR_BOOL.
 * With it the scalar's number may also be TCHECK_TORCH_OP_FIRST_STACK_ARGUMENT:
 * the bool is the first argument passed on the stack (batch_norm's
 * training, its sixth integer argument after the return slot's five).
 */
#define TCHECK_TORCH_OP_BOOL_BY_VALUE (1ULL << 53)
#define TCHECK_TORCH_OP_FIRST_STACK_ARGUMENT 7
/*
 * Whether the probe looks whether the tensor's storage holds bytes (for a
 * weight the forward reads): torch.compile traces a model with fake tensors,
 * whose storage has none (TCHECK_TENSOR_CONTENTS_NO_DATA).
 */
#define TCHECK_TORCH_OP_CHECK_DATA (1ULL << 54)
/*
 * Whether the probe reads the Python frames the operator was called from
 * into the record's py_ members: where its tensor is a leaf that requires
 * grad (a parameter set under no_grad: an initialiser's zero_ or fill_), or
 * one that does not while no torch scope is open on the thread (a
 * parameter's .data, as transformers' _init_weights sets it; not a
 * gradient cleared by zero_grad). Only those calls pay the walk; other
 * records are sent short.
 */
#define TCHECK_TORCH_OP_READ_CALLER (1ULL << 63)
/*
 * c10::Scalar's tag values read: HAS_d and HAS_i are 0 and 1 in torch 1.13
 * and 2.x (2.x inserts HAS_u after them); anything else is not read.
 */
#define TCHECK_SCALAR_DOUBLE 0
#define TCHECK_SCALAR_INT 1
#define TCHECK_SCALAR_NONE 0xffffffffU
/* Not a c10::Scalar tag: a bool argument passed by value, 'scalar' 0 or 1. */
#define TCHECK_SCALAR_BOOL 0x100U

/*
 * The tensor's contents at the operator's entry: a digest of the first and
 * the last 64 bytes of its storage (at most its size), read only where the
 * storage is in host memory.
 */
#define TCHECK_TENSOR_CONTENTS_NONE 0	/* no tensor argument, or not asked */
#define TCHECK_TENSOR_CONTENTS_READ 1	/* 'digest' holds them */
#define TCHECK_TENSOR_CONTENTS_DEVICE 2 /* in device memory: not read */
#define TCHECK_TENSOR_CONTENTS_UNREADABLE 3
/* Asked with TCHECK_TORCH_OP_CHECK_DATA: the storage holds no bytes (a fake or meta tensor). */
#define TCHECK_TENSOR_CONTENTS_NO_DATA 4

/* A call of a selected torch operator (at::_ops::NAME::call): entry and return paired. */
struct tcheck_torch_op_record {
	struct tcheck_record_header header; /* timestamp = entry time */
	tcheck_u64 return_ns;
	tcheck_u32 depth;      /* selected operator calls already open on the thread */
	tcheck_u32 operator;   /* the cookie's operator number, as the daemon numbered them */
	tcheck_u64 tensor;     /* the TensorImpl * of the cookie's tensor argument; 0 none */
	tcheck_u64 scalar;     /* the c10::Scalar's value bits (a double or an int64) */
	tcheck_u32 scalar_tag; /* TCHECK_SCALAR_DOUBLE, _INT, or _NONE */
	tcheck_u32 contents;   /* TCHECK_TENSOR_CONTENTS_*: whether 'digest' was read */
	tcheck_u64 digest;     /* a hash of sampled bytes of the tensor's storage, at entry */
	tcheck_u64 numel;      /* its element count; 0 with dims 0: shape not read */
	tcheck_u32 dims;  /* its dimensions; more than TCHECK_TORCH_OP_DIMS_MAX: sizes unread */
	tcheck_u32 dtype; /* its c10::ScalarType */
	tcheck_u64 sizes[TCHECK_TORCH_OP_DIMS_MAX];
	tcheck_u32 requires_grad; /* TCHECK_REQUIRES_GRAD_* */
	tcheck_u32 grad_mode;	  /* TCHECK_GRAD_MODE_* */
	/*
	 * The tensor's StorageImpl *, where the probe read it (contents, a
	 * weight's data check, a caller): shared by a parameter and its .data
	 * alias, whose TensorImpls differ; 0 not read.
	 */
	tcheck_u64 storage;
	/* The Python caller, where TCHECK_TORCH_OP_READ_CALLER read it (as a call record's). */
	tcheck_u32 py_depth;
	tcheck_u32 py_flags; /* TCHECK_CALL_PY_* */
	tcheck_u64 py_code[TCHECK_PY_STACK_MAX];
	tcheck_u64 py_name[TCHECK_PY_STACK_MAX];
};

/*
 * An operator record without a Python caller is sent short: the members
 * before py_depth. The reader takes the missing ones as zero.
 */
#define TCHECK_TORCH_OP_RECORD_SHORT_BYTES \
	__builtin_offsetof(struct tcheck_torch_op_record, py_depth)

/*
 * A c10d process group (gloo, NCCL, any backend) being built: the rank and
 * size its constructor takes. The first one a process builds is its world
 * group, which gives the job rank where the environment has none.
 */
#define TCHECK_PROCESS_GROUP_SITES_MAX 4

struct tcheck_process_group_record {
	struct tcheck_record_header header; /* timestamp = the constructor's entry */
	tcheck_s32 rank;
	tcheck_s32 size;
	tcheck_u64 group; /* the object being built: a collective's 'this' names it */
};

/*
 * A c10d PrefixStore being built (c10d::PrefixStore::PrefixStore(prefix,
 * store)): torch names each process group's keys with one, the group's
 * name ("1", "2/" then "cpu/" ...), the same on every rank, and builds the
 * group right after it on the same thread. The prefix's first bytes.
 */
#define TCHECK_STORE_PREFIX_BYTES 64

struct tcheck_store_prefix_record {
	struct tcheck_record_header header; /* timestamp = the constructor's entry */
	tcheck_u64 store;		    /* the PrefixStore being built */
	tcheck_u64 parent;		    /* the store it prefixes (a PrefixStore too, or not) */
	tcheck_u32 length;		    /* the prefix's length, in full */
	tcheck_u32 reserved;
	char prefix[TCHECK_STORE_PREFIX_BYTES]; /* its first 63 bytes at most, not terminated */
};

/*
 * A c10d collective's attach cookie (ProcessGroupGloo::allreduce, ProcessGroupNCCL's ...): the
 * operation's number in the low byte; which argument register holds its
 * tensors at entry (1 rdi ... 5 r8, 0 none), as a std::vector<at::Tensor> &
 * or, with TCHECK_C10D_TENSOR_IS_REFERENCE, one at::Tensor &; the register
 * of a point-to-point call's peer rank; and where this torch keeps a
 * TensorImpl's element count (0: not read) and, 8 bytes on, its dtype;
 * and the register of the object called.
 */
#define TCHECK_C10D_OPERATION_MASK 0xffULL
#define TCHECK_C10D_TENSOR_SHIFT 8
#define TCHECK_C10D_PEER_SHIFT 12
#define TCHECK_C10D_REGISTER_MASK 0x7ULL
#define TCHECK_C10D_TENSOR_IS_REFERENCE (1ULL << 15)
#define TCHECK_C10D_NUMEL_OFFSET_SHIFT 16
#define TCHECK_C10D_NUMEL_OFFSET_MASK 0xfffULL
#define TCHECK_C10D_GROUP_SHIFT 28 /* the register of 'this' (rsi under a hidden return slot) */
/* Its work's completion is probed (TCHECK_RECORD_C10D_WORK): the call's record says so. */
#define TCHECK_C10D_AWAITS_WORK (1ULL << 31)
#define TCHECK_C10D_SITES_MAX 32

/* tcheck_c10d_call_record.flags */
#define TCHECK_C10D_CALL_AWAITS_WORK 1U /* a work record follows: built, then finished */

/*
 * A c10d collective entered: it queues work and returns. Awaited
 * (TCHECK_C10D_CALL_AWAITS_WORK), the work it builds on the same thread,
 * and its end on a worker thread, follow as TCHECK_RECORD_C10D_WORK.
 */
struct tcheck_c10d_call_record {
	struct tcheck_record_header header; /* timestamp = the entry */
	tcheck_u64 group;		    /* the backend object ('this'): which process group */
	tcheck_u16 operation;		    /* the cookie's operation number */
	tcheck_u16 flags;		    /* TCHECK_C10D_CALL_* */
	tcheck_u32 tensor_count;	    /* tensors in the vector (1 for a reference) */
	tcheck_u64 numel;		    /* elements of the first tensor; 0 not read */
	tcheck_s32 peer;		    /* point-to-point: the other rank; -1 none */
	tcheck_s32 dtype;		    /* c10::ScalarType of the first tensor; -1 not read */
	/*
	 * The calling thread's time so far runnable but waiting for a CPU (the
	 * scheduler's run_delay); 0 where the kernel does not keep it.
	 */
	tcheck_u64 cpu_wait_ns;
};

/* What befell a c10d work (tcheck_c10d_work_record.event; the probe's cookie). */
enum tcheck_c10d_work_event {
	TCHECK_C10D_WORK_BUILT = 1,    /* constructed, inside the collective, on its thread */
	TCHECK_C10D_WORK_FINISHED = 2, /* completed: every rank took part */
	TCHECK_C10D_WORK_FAILED = 3,   /* ended with an error */
};

/* A gloo work (ProcessGroupGloo::AsyncWork) built or ended. */
struct tcheck_c10d_work_record {
	struct tcheck_record_header header; /* timestamp = the event */
	tcheck_u64 work;		    /* the AsyncWork object */
	tcheck_u32 event;		    /* enum tcheck_c10d_work_event */
	tcheck_u32 reserved;
};

/*
 * Counters the BPF side keeps, one slot each in a per-CPU array: what was
 * lost or left out. What was sent the daemon counts as it reads it, so a
 * probe that sends pays no counter.
 */
enum tcheck_counter {
	TCHECK_COUNTER_RINGBUF_DROPS = 0, /* records lost: ring buffer full */
	TCHECK_COUNTER_UNMATCHED_RETURNS, /* returns whose entry was not seen */
	TCHECK_COUNTER_NESTING_OVERFLOWS, /* calls deeper than TCHECK_MAX_NESTING */
	TCHECK_COUNTER_FILTERED,	  /* calls suppressed by ONLY_FAILURES */
	TCHECK_COUNTER_PROCESS_DROPS,	  /* process notices lost: ring buffer full */
	TCHECK_COUNTER_PYTHON_DROPS,	  /* Python events lost: ring buffer full */
	/* Python calls and torch scopes not followed: nested deeper than the probes' stacks. */
	TCHECK_COUNTER_PYTHON_TOO_DEEP,
	TCHECK_COUNTER_COUNT,
};

#endif /* TCHECK_PROBE_ABI_H */
