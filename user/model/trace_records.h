/* SPDX-License-Identifier: MIT */
/*
 * What a trace holds, as the daemon builds it and as readers get it back:
 * reconstructed calls, the processes and communicators they belong to,
 * the libraries probed, and the loss counters. Strings are owned by the
 * producer (a reader keeps them alive until it is closed).
 */
#ifndef TCHECK_TRACE_RECORDS_H
#define TCHECK_TRACE_RECORDS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/nccl_api.h"
#include "tcheck/probe_abi.h"

enum trace_record_kind {
	TRACE_RECORD_NCCL_CALL = 1,
	TRACE_RECORD_PROCESS = 2,
	TRACE_RECORD_COMMUNICATOR = 3,
	TRACE_RECORD_LIBRARY = 4,
	TRACE_RECORD_STATS = 5,
	TRACE_RECORD_PYTHON_CALL = 6,
	TRACE_RECORD_NETWORK = 7,
	TRACE_RECORD_ACTIVITY = 8,
	TRACE_RECORD_ARRIVAL = 9,
};

/* How many of the innermost Python frames an event keeps: what the probes send. */
#define TRACE_PY_STACK_MAX TCHECK_PY_STACK_MAX
/* How many arguments of a Python call are kept: what the probes read. */
#define TRACE_PY_ARGS_MAX TCHECK_PYTHON_ARGS_MAX

/* Innermost Python frames at an event, innermost first: qualified names. */
struct trace_python_stack {
	uint32_t depth;
	const char *frames[TRACE_PY_STACK_MAX];
};

/* The Python side of a process when it made an NCCL call: given to the call builder. */
struct trace_python_context {
	int32_t step;	/* training step (meta variable), -1 unknown */
	uint32_t stage; /* enum trace_stage */
	struct trace_python_stack py_stack;
};

/* Training stage (meta variable), from Module.train() and Module.eval(). */
enum trace_stage {
	TRACE_STAGE_UNKNOWN = 0,
	TRACE_STAGE_TRAIN = 1,
	TRACE_STAGE_EVAL = 2,
};

/* Flags of a call. */
#define TRACE_CALL_OUT_VALUE_VALID (1U << 0) /* out_value was read at return */
#define TRACE_CALL_UNIQUE_ID_VALID (1U << 1) /* unique_id_hash was read */
#define TRACE_CALL_COMM_UNRESOLVED (1U << 2) /* comm identity could not be found */
/*
 * Entered and not returned when last seen: the thread is blocked inside it
 * or ended inside it. duration_ns is how long it had been open then; result
 * means nothing. A communication call's seq is the one it will have.
 */
#define TRACE_CALL_OPEN (1U << 3)
/*
 * A c10d call whose work's end was probed: its duration runs from its
 * entry to the end of its work (every rank took part), or, with
 * TRACE_CALL_OPEN, to when it was last seen unfinished. Without it a c10d
 * call is seen entered only.
 */
#define TRACE_CALL_WORK_AWAITED (1U << 4)
#define TRACE_CALL_WORK_FAILED (1U << 5) /* its work ended with an error */
/*
 * seq counts from the library's own count of the operations issued on a
 * communicator made before the tracing started (read as the rank entered
 * its first traced call there), not from that first call: every rank
 * numbers the same operation alike, wherever the attach found it.
 */
#define TRACE_CALL_SEQ_FROM_LIBRARY (1U << 6)
/*
 * The arguments passed on the stack were not read (a collective's stream,
 * its seventh argument: nccl_function_reads_stack): params[] holds 0 there.
 */
#define TRACE_CALL_STACK_ARGS_UNREAD (1U << 7)
/*
 * seq counts from 0 at the communicator's creation, which the tracing saw,
 * but the trace holding the call does not begin there: a later piece of a
 * recording cut by --max-size. Every rank numbers the same operation alike.
 */
#define TRACE_CALL_SEQ_FROM_CREATION (1U << 8)

/* One NCCL API call: entry and return paired. */
struct trace_nccl_call {
	uint64_t entry_ns; /* CLOCK_MONOTONIC of the traced host */
	uint64_t duration_ns;
	uint32_t pid;
	uint32_t tid;
	const char *function; /* public name, "ncclAllReduce" */
	/* Its nccl.h table entry, set where the call is built or read; NULL: not in the table. */
	const struct nccl_function *api;
	int32_t result;	      /* ncclResult_t */
	uint32_t depth;	      /* NCCL calls already open on the thread (0: from the application) */
	uint32_t group_depth; /* ncclGroupStart calls open on the thread */
	uint32_t flags;	      /* TRACE_CALL_* */
	uint32_t param_count;
	/* Raw values in nccl.h order; a unique id passed by value holds its hash. */
	uint64_t params[NCCL_MAX_PARAMS];
	uint64_t out_value;	 /* written through an out pointer: new comm, async error */
	uint64_t unique_id_hash; /* ncclGetUniqueId and the init calls */
	uint64_t comm;		 /* communicator handle used or created, 0 for none */
	uint64_t comm_id;	 /* identity shared by all ranks of the communicator, 0 unknown */
	int32_t rank;		 /* of this process in comm, -1 unknown */
	int32_t nranks;		 /* -1 unknown */
	int64_t seq; /* per-communicator number of this rank's communication calls, -1 none */
	/* Since format 1.2: the Python side of the process when the call was made. */
	int32_t step;	/* training step (meta variable), -1 unknown */
	uint32_t stage; /* enum trace_stage */
	struct trace_python_stack py_stack;
};

/* Flags of a Python call. */
#define TRACE_PYTHON_RAISED (1U << 0)	   /* left by an exception */
#define TRACE_PYTHON_TORCH_SCOPE (1U << 1) /* a torch record_function scope, not a frame */
#define TRACE_PYTHON_TORCH_OP (1U << 2)	   /* a torch C++ operator (at::_ops), not a frame */
/* A module or class body: code run once, at import (no CO_NEWLOCALS). */
#define TRACE_PYTHON_RUNS_ONCE (1U << 3)
/*
 * Not a call: an exception no code caught, as the interpreter prints it
 * before exiting (or one a launcher caught, below); the name is its type,
 * the argument "message" its message, py_stack the functions it went
 * through, innermost first.
 */
#define TRACE_PYTHON_UNCAUGHT (1U << 4)
/*
 * With TRACE_PYTHON_UNCAUGHT: the exception was caught by a handler that
 * then raised SystemExit with a failure status (torch.multiprocessing's
 * worker wrapper queues the text and calls sys.exit(1)): still the
 * exception that ended the process.
 */
#define TRACE_PYTHON_HANDLED_AT_EXIT (1U << 5)

/* Types of a primitive argument value. */
enum trace_value_type {
	TRACE_VALUE_NONE = 1,
	TRACE_VALUE_BOOL = 2,
	TRACE_VALUE_INT = 3,
	TRACE_VALUE_FLOAT = 4,
	TRACE_VALUE_STR = 5,
};

/* nn.Module.__call__'s body: entered from C for every module call. */
#define TRACE_MODULE_CALL_NAME "torch.nn.modules.module.Module._call_impl"
/*
 * The argument a module call carries its module's class in ("Linear"):
 * read from self, not a parameter of its own (Module._call_impl takes self,
 * *args, **kwargs), so no real argument of that call has this name.
 */
#define TRACE_MODULE_CLASS_ARG "module"
/*
 * The argument a module call carries its module's attribute path in, as
 * named_modules() names it behind its top module's class
 * ("Net.layers.3.attn"; "Net" for the top module itself), where it could
 * be read. Not a parameter of Module._call_impl either.
 */
#define TRACE_MODULE_PATH_ARG "module_path"
/*
 * The argument a module call carries its module's own mode in (a bool,
 * True: training), where the module was put in a mode other than its
 * model's by a train() or eval() of its own since the model's last one
 * (python_module_modes.h): Monte Carlo dropout's dropout modules back in
 * train() inside a model in eval(), a batch norm frozen by hand. Left out
 * where the module has its model's mode.
 */
#define TRACE_MODULE_TRAINING_ARG "module_training"
/*
 * The argument (a bool, True) a module call carries where its class
 * overrides nn.Module.train() (a class of the program's or a library's,
 * not torch's own) and no train() or eval() has reached the module since
 * the tracer saw it built: what the override does (mmpretrain's frozen
 * stages, a batch norm kept in eval) has not happened. Left out otherwise.
 */
#define TRACE_MODULE_TRAIN_NOT_RUN_ARG "module_train_not_run"

/* A primitive argument of a Python call, at entry. */
struct trace_python_arg {
	const char *name; /* parameter name */
	uint32_t type;	  /* enum trace_value_type */
	int64_t integer;  /* BOOL (0 or 1), INT */
	double real;	  /* FLOAT */
	const char *text; /* STR, possibly cut */
};

/* One Python call entered from C (or a torch scope): entry and exit paired. */
struct trace_python_call {
	uint64_t entry_ns; /* CLOCK_MONOTONIC of the traced host */
	uint64_t duration_ns;
	uint32_t pid;
	uint32_t tid;
	uint32_t depth;		    /* traced Python calls already open on the thread */
	uint32_t flags;		    /* TRACE_PYTHON_* */
	int32_t first_line;	    /* of the function, -1 for a scope */
	int32_t step;		    /* training step (meta variable), -1 unknown */
	const char *qualified_name; /* "torch.optim.sgd.SGD.step", or the scope's name */
	const char *file;	    /* "" for a scope */
	/* Since format 1.2. */
	uint32_t stage;			    /* enum trace_stage */
	int32_t rank;			    /* of the process (RANK), -1 unknown */
	int32_t world_size;		    /* WORLD_SIZE, -1 unknown */
	struct trace_python_stack py_stack; /* the callers, innermost first */
	uint32_t arg_count;
	struct trace_python_arg args[TRACE_PY_ARGS_MAX];
	/* The value returned, type 0 when not known (TrainCheck traces carry it; probes do not). */
	struct trace_python_arg return_value;
};

/* Work requests of one process, cumulative since the probes were attached (kind 7). */
struct trace_network_sample {
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC */
	uint32_t pid;
	uint32_t source; /* 1: NCCL's IB transport functions, 2: verbs provider functions */
	uint64_t requests_posted;    /* send and receive work requests posted */
	uint64_t requests_signalled; /* of those, the ones that produce a completion */
	uint64_t completions;	     /* work completions polled */
	uint64_t completion_errors;  /* completions with a non-success status */
	uint64_t bytes_posted;
	uint64_t bytes_completed;
	uint64_t last_post_ns;	     /* 0: none yet */
	uint64_t last_completion_ns; /* 0: none yet */
};

/*
 * What one process was doing, read from /proc with no help from it (kind
 * 8): its CPU time and I/O counters, cumulative since it started, and its
 * threads' states at that moment. The detectors tell a rank that pauses
 * (writing a checkpoint, computing) from one that is stuck with it.
 */
struct trace_activity_sample {
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC */
	uint32_t pid;
	uint32_t threads;	  /* threads of the process */
	uint32_t threads_running; /* in state R */
	uint32_t threads_io_wait; /* in state D (uninterruptible, I/O) */
	uint64_t cpu_ns;	  /* user and system time of all its threads */
	uint64_t read_bytes;	  /* /proc/PID/io: read from storage */
	uint64_t write_bytes;	  /* /proc/PID/io: written to storage (page-dirtying time) */
	uint64_t read_chars;	  /* /proc/PID/io rchar: read by system calls, sockets too */
	uint64_t write_chars;	  /* /proc/PID/io wchar: written by system calls, sockets too */
};

/* Flags of an arrival state. */
#define TRACE_ARRIVAL_LAGGING (1U << 0)	  /* the state names it as the rank the others wait for */
#define TRACE_ARRIVAL_RANK (1U << 1)	  /* it maps NCCL or libtorch: a rank, not a launcher */
#define TRACE_ARRIVAL_NO_PYTHON (1U << 2) /* its Python stack could not be read */

/*
 * Where one process stood when the tracer arrived (kind 9), read from its
 * memory without waiting for a call (record/job_snapshot.h): the
 * collective it is blocked in, its place in it, and its Python stack. All
 * processes read at once share timestamp_ns; the one the state names as
 * lagging (TRACE_ARRIVAL_LAGGING) comes after the others, once for each
 * communicator it is behind on, and its collective, seq and waiting are
 * those of the collective the others wait in. The detectors report each as
 * a hang, live and offline alike.
 */
struct trace_arrival_state {
	uint64_t timestamp_ns; /* CLOCK_MONOTONIC when the reading began */
	uint32_t pid;
	int32_t rank;		/* job rank, -1 unknown */
	uint32_t flags;		/* TRACE_ARRIVAL_* */
	int32_t nranks;		/* size of the communicator concerned, 0 unknown */
	int64_t seq;		/* sequence number of its collective, -1 unknown */
	uint64_t comm_hash;	/* NCCL's commHash of its communicator, 0 unknown (c10d) */
	const char *collective; /* the collective it is inside (or never joined), "" none */
	const char *blocked_in; /* the innermost NCCL, c10d or gloo function it is blocked in */
	const char *waiting;	/* lagging: the ranks waiting for it, "0, 2, 3" */
	const char *doing;	/* where it is: its innermost Python frame, or its native call */
	/* The first call its own pattern says it did not make, "" unknown. */
	const char *missed;
	struct trace_python_stack py_stack; /* its main thread's, innermost first */
};

/* A traced process, with the rank its launcher gave it. */
struct trace_process {
	uint32_t pid;
	uint32_t parent_pid; /* 0 when not traced from its start */
	int32_t rank;	     /* RANK, -1 when not set */
	int32_t local_rank;  /* LOCAL_RANK, -1 when not set */
	int32_t world_size;  /* WORLD_SIZE, -1 when not set */
	int32_t exit_code;   /* as wait() reports it; -1 while running */
	uint64_t start_ns;   /* first seen */
	uint64_t end_ns;     /* 0 while running */
	const char *command; /* argv joined by spaces */
	/*
	 * CLOCK_MONOTONIC window in which it ran Python its probes did not see
	 * (from its fork or exec until they followed it); both 0: none known.
	 */
	uint64_t python_unseen_from_ns;
	uint64_t python_unseen_to_ns;
};

enum trace_comm_origin {
	TRACE_COMM_CREATED = 1,	  /* seen being created from a unique id */
	TRACE_COMM_SPLIT = 2,	  /* seen being split or shrunk from a parent */
	TRACE_COMM_RECOVERED = 3, /* existed before attach, read from the library's memory */
	TRACE_COMM_UNKNOWN = 4,	  /* existed before attach and could not be read */
};

/* A communicator of one process. */
struct trace_communicator {
	uint32_t pid;
	uint32_t origin;	 /* enum trace_comm_origin */
	uint64_t handle;	 /* ncclComm_t value in that process */
	uint64_t comm_id;	 /* identity shared by all its ranks, 0 unknown */
	uint64_t parent_comm_id; /* for splits, 0 otherwise */
	int32_t rank;		 /* -1 unknown */
	int32_t nranks;		 /* -1 unknown */
	int32_t color;		 /* for splits */
	uint32_t split_index;	 /* the parent's n-th split on this rank, for splits */
	uint64_t nccl_comm_hash; /* NCCL's own commHash when it could be read, else 0 */
	int64_t seq_base;	 /* collectives issued before the first one traced */
	uint64_t seen_ns;
	const char *note; /* why identity is missing, or "" */
};

/* A library the probes were attached to. */
struct trace_library {
	uint32_t pid; /* the process it was found in, 0 for a path given by the user */
	uint32_t functions_attached;
	uint64_t attached_ns;
	const char *path;
	const char *build_id; /* hex, "" when the file has none */
};

/* Loss counters, cumulative since the recording started. */
struct trace_stats {
	uint64_t timestamp_ns;
	uint64_t calls;
	uint64_t ringbuf_drops;
	uint64_t unmatched_returns;
	uint64_t nesting_overflows;
	uint64_t filtered;
	uint64_t process_drops;
	uint64_t python_events_lost; /* 0 in traces older than format 1.3 */
};

/* The header of a trace: where and when it was recorded. */
struct trace_header {
	uint32_t format_version;
	char hostname[256];
	char boot_id[64];
	uint64_t anchor_monotonic_ns; /* CLOCK_MONOTONIC ... */
	uint64_t anchor_realtime_ns;  /* ... and CLOCK_REALTIME read at the same moment */
	char command_line[1024];      /* the tcheck-bpf invocation */
};

/* A record of any kind, as a reader hands it out. */
struct trace_record {
	enum trace_record_kind kind;
	union {
		struct trace_nccl_call call;
		struct trace_process process;
		struct trace_communicator communicator;
		struct trace_library library;
		struct trace_stats stats;
		struct trace_python_call python_call;
		struct trace_network_sample network;
		struct trace_activity_sample activity;
		struct trace_arrival_state arrival;
	};
};

/*
 * Whether a Python call's argument describes a torch operator's tensor, not
 * a value the program chose: its identity ("tensor:self", its TensorImpl
 * address), which differs from run to run and is compared only as
 * identity, as is its storage's ("storage:self"); a digest of its contents ("digest:self"), which
 * changes with every update and is compared only across replicas; its dtype and sizes
 * ("shape:self") and whether it requires grad ("requires_grad:self"), which
 * are the model's own (a fine-tuning program freezes layers on purpose) and
 * only describe the tensor, as does whether autograd computes it
 * ("grad_fn:weight"); and whether a weight was read with autograd off
 * ("grad_mode:weight"), which describes how it was read.
 */
bool trace_arg_describes_tensor(const char *name);

/*
 * The calling thread's time waiting for a CPU when the call was entered
 * (its NCCL_PARAM_THREAD_CPU_WAIT parameter, c10d calls); 0 unknown.
 */
uint64_t trace_call_cpu_wait(const struct trace_nccl_call *call);

/*
 * The time a record stands for: a call's or Python call's entry, a process's
 * start, a communicator's or library's first sight, a stats or network
 * sample's time; 0 for a record with none.
 */
uint64_t trace_record_time(const struct trace_record *record);

/*
 * A process's end as wait() reports it (trace_process.exit_code): the fatal
 * signal (0 none), whether it dumped core, the exit status (without a
 * signal).
 */
int trace_exit_signal(int32_t wait_status);
bool trace_exit_core_dumped(int32_t wait_status);
int trace_exit_status(int32_t wait_status);

/*
 * Whether a process's end is a crash of the job: a fatal signal always; a
 * non-zero exit status only for a process of the job's own work
 * ('job_work': it has a rank, the tracer followed calls of it, or it is
 * the command the tracer started or attached to). A helper the job ran (a
 * shell's test, `mountpoint -q`, a probe of the GPUs) may fail by design:
 * the job reads its status, and a failure that matters ends a process of
 * the job with it.
 */
bool trace_exit_crashed(int32_t wait_status, bool job_work);

#endif /* TCHECK_TRACE_RECORDS_H */
