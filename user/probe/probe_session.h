/* SPDX-License-Identifier: MIT */
/*
 * The loaded BPF programs and their attachments: load once, attach entry
 * and return probes to library functions, choose the traced processes,
 * poll the ring buffer, read the loss counters, detach everything.
 */
#ifndef TCHECK_PROBE_SESSION_H
#define TCHECK_PROBE_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/ring_reader.h"
#include "tcheck/probe_abi.h"

struct probe_session;

/* Called for every ring-buffer record. Non-zero stops the poll. */
typedef ring_record_fn probe_record_fn;

/* The kernel-to-daemon ring buffer: a power of two, at least a page, its size a u32. */
#define PROBE_RING_BUFFER_MIN_BYTES 4096UL
#define PROBE_RING_BUFFER_MAX_BYTES (2048UL * 1024 * 1024)

struct probe_session_config {
	size_t ring_buffer_bytes; /* a power of two, at least a page */
	bool python;		  /* load the Python frame probes too */
	bool torch_ops;		  /* load the torch operator probes too */
	/* Stop a process whose uncaught Python exception is being printed (SIGSTOP). */
	bool freeze_on_crash;
};

/*
 * Loads the programs. Checks what the kernel needs first (root, BTF) so
 * that the error says what to do.
 */
struct probe_session *probe_session_new(const struct probe_session_config *config,
					probe_record_fn on_record, void *context, char *error,
					size_t error_size);
void probe_session_free(struct probe_session *session);

/* Tells 'on_failure' of every probe attachment the kernel refuses (the library's path). */
void probe_session_on_attach_failure(struct probe_session *session,
				     void (*on_failure)(void *context, const char *path),
				     void *context);

/* Adds a process to the traced set; its children join it when they fork. */
int probe_session_trace_process(struct probe_session *session, uint32_t pid);
/* Whether pid is in the traced set (its own or a traced ancestor's fork put it there). */
bool probe_session_is_traced(struct probe_session *session, uint32_t pid);

/*
 * Attaches the return probes, then the entry probes, at file offsets of a
 * library (each with its cookie), for every process that maps it (the
 * traced set filters). Return probes go first so that no entry is left
 * waiting for a return that is never probed.
 */
int probe_session_attach_calls(struct probe_session *session, const char *path,
			       const uint64_t *offsets, const uint64_t *cookies, size_t count,
			       char *error, size_t error_size);
/*
 * Attaches an entry probe only (a notice, such as the loader's r_brk) in
 * one process: every process maps the loader, and a breakpoint there must
 * not reach processes nobody asked to trace.
 */
int probe_session_attach_notice(struct probe_session *session, const char *path, uint64_t offset,
				uint64_t cookie, int pid, char *error, size_t error_size);

/*
 * The benchmark's floor: what any uprobe pair costs. Attaches the two
 * empty programs (return first, then entry) at a file offset of a library,
 * for one process; they record nothing. Used by tools/bench/probe-floor.
 */
/* Detaches the probes attached for one process (its loader notice); returns how many links. */
size_t probe_session_detach_process(struct probe_session *session, int pid);

int probe_session_attach_floor(struct probe_session *session, const char *path, uint64_t offset,
			       int pid, char *error, size_t error_size);

/*
 * Tells the probes where a library's struct ncclComm keeps its identity;
 * slot is the one given in the cookie's TCHECK_COOKIE_LAYOUT bits, less one.
 */
int probe_session_set_comm_layout(struct probe_session *session, uint32_t slot,
				  const struct tcheck_comm_layout *layout);

/* Python: the evaluator's probe pair, at a file offset, in every process mapping it. */
/*
 * The entry probes on PyErr_Display (uncaught exceptions as they are
 * printed) and PyErr_SetObject (an exception handled when sys.exit fails)
 * at those offsets of path; a 0 offset is skipped.
 */
int probe_session_attach_python_exceptions(struct probe_session *session, const char *path,
					   uint64_t display_offset, uint64_t set_object_offset,
					   char *error, size_t error_size);
int probe_session_attach_python(struct probe_session *session, const char *path, uint64_t offset,
				char *error, size_t error_size);
/*
 * torch scopes: the probe where a scope opens (cookie: which registers hold
 * the name and the key, TCHECK_TORCH_*) and the ones where it ends (one or
 * two sites, the key in rdi). A key_offset other than 0 is the
 * RecordFunction constructor: the enter site then gives the name only, and
 * the next user-scope constructor the key.
 */
int probe_session_attach_torch_scopes(struct probe_session *session, const char *path,
				      uint64_t enter_offset, uint64_t enter_cookie,
				      uint64_t key_offset, const uint64_t *exit_offsets,
				      size_t exit_count, char *error, size_t error_size);
/*
 * The backward pass: an entry probe on the autograd engine's execute() at
 * 'offset' of path, a scope named TCHECK_BACKWARD_SCOPE_NAME, and probes on
 * its return instructions at 'return_offsets' (none: recorded at its entry
 * only). When the return probes cannot be attached, the entry still is;
 * *ends_probed says which, and error why not.
 */
int probe_session_attach_backward(struct probe_session *session, const char *path, uint64_t offset,
				  const uint64_t *return_offsets, size_t return_count,
				  bool *ends_probed, char *error, size_t error_size);
/* The entry probe on c10d process-group constructors (rank, size) at offsets of path. */
int probe_session_attach_process_groups(struct probe_session *session, const char *path,
					const uint64_t *offsets, size_t count, char *error,
					size_t error_size);
/* The entry probe on c10d's PrefixStore constructor at offset of path (the group's name). */
int probe_session_attach_store_prefix(struct probe_session *session, const char *path,
				      uint64_t offset, char *error, size_t error_size);
/* The entry probe on c10d collectives at offsets of path; cookies as TCHECK_C10D_* say. */
int probe_session_attach_c10d_collectives(struct probe_session *session, const char *path,
					  const uint64_t *offsets, const uint64_t *cookies,
					  size_t count, char *error, size_t error_size);
/*
 * The entry probe on where gloo works are built and end, at offsets of
 * path; each cookie is its enum tcheck_c10d_work_event.
 */
int probe_session_attach_c10d_work(struct probe_session *session, const char *path,
				   const uint64_t *offsets, const uint64_t *cookies, size_t count,
				   char *error, size_t error_size);
/* Attaches the torch operator entry probes at offsets of path; each cookie numbers its operator. */
int probe_session_attach_torch_ops(struct probe_session *session, const char *path,
				   const uint64_t *offsets, const uint64_t *cookies, size_t count,
				   char *error, size_t error_size);

/*
 * Where the library at 'path' sets a thread's grad mode, at 'count'
 * offsets (libc10's GradMode::set_enabled, libtorch_python's calls of
 * AutogradState::set_tls_state), 'cookie' a TCHECK_GRAD_MODE_FROM_* for
 * all: the operator records then say whether autograd was on (load with
 * torch_ops).
 */
int probe_session_attach_grad_mode(struct probe_session *session, const char *path,
				   const uint64_t *offsets, size_t count, uint64_t cookie,
				   char *error, size_t error_size);
/* Tells the Python probes where a process's frames keep their code object; NULL: forget it. */
int probe_session_set_python_process(struct probe_session *session, uint32_t pid,
				     const struct tcheck_python_process *process);
/*
 * Tells the process probes an interpreter executable's Python (object
 * addresses relative to the image's start_code), so a process that execs it
 * is followed from its first instruction.
 */
int probe_session_set_python_exec_layout(struct probe_session *session,
					 const struct tcheck_file_key *file,
					 const struct tcheck_python_process *process);
/* Tells the NCCL probes how to find a process's Python frames (the caller of each call);
 * NULL forgets the process. */
int probe_session_set_python_stack_layout(struct probe_session *session, uint32_t pid,
					  const struct tcheck_python_stack_layout *layout);
/* Records the daemon's verdict on a code object (enum tcheck_code_verdict). */
int probe_session_set_code_verdict(struct probe_session *session, uint32_t pid, uint64_t code,
				   uint64_t code_name, uint8_t verdict);

/* Polls the ring buffer up to timeout_ms; returns records handled or -errno. */
int probe_session_poll(struct probe_session *session, int timeout_ms);
/* Handles everything already in the ring buffer without waiting. */
int probe_session_drain(struct probe_session *session);

/* Sums the per-CPU loss counters into counters[TCHECK_COUNTER_COUNT]. */
void probe_session_counters(struct probe_session *session, uint64_t *counters);

/* Number of probes attached (entry and return count separately). */
size_t probe_session_probe_count(const struct probe_session *session);

/* The work-request programs (bpf/work_requests.bpf.c), which network/ attaches. */
enum probe_network_program {
	PROBE_NETWORK_NONE, /* no program: "entry only" in a table of probes */
	PROBE_VERBS_OPEN_DEVICE_RETURN,
	PROBE_VERBS_POST_SEND,
	PROBE_VERBS_POST_RECV,
	PROBE_VERBS_POLL_CQ_ENTRY,
	PROBE_VERBS_POLL_CQ_RETURN,
	PROBE_NCCL_IB_ENTRY,
	PROBE_NCCL_IB_TEST_RETURN,
};

/*
 * Attaches a work-request program (a uprobe, or a uretprobe for the _RETURN
 * ones) at offsets of path, in every process mapping it; the traced set
 * filters in BPF.
 */
int probe_session_attach_network(struct probe_session *session, enum probe_network_program program,
				 const char *path, const uint64_t *offsets, const uint64_t *cookies,
				 size_t count, char *error, size_t error_size);

/* The file descriptor of the per-process network counters map. */
int probe_session_network_counters_fd(struct probe_session *session);

/*
 * The link of the open-calls iterator: each reading of a bpf_iter_create()
 * of it gives, per traced thread with calls open, its process and thread
 * ids and its struct tcheck_thread_calls, the library calls it has entered
 * and not left (user/record/open_calls.h reads it).
 */
int probe_session_open_calls_fd(struct probe_session *session);

#endif /* TCHECK_PROBE_SESSION_H */
