// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Generic entry/return probes for library API functions (NCCL today).
 * One program pair serves every function: the attach cookie says which
 * function it is and what to capture, so adding a function needs no BPF.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "tcheck/probe_abi.h"
#include "thread_stack.bpf.h"
#include "tracer_maps.bpf.h"
#include "python_context.bpf.h"

#ifndef PT_REGS_PARM6
/* libbpf before 1.2 names five argument registers; x86-64 passes a sixth. */
#define PT_REGS_PARM6(regs) ((regs)->r9)
#endif

char LICENSE[] SEC("license") = "Dual MIT/GPL";

/* open_calls lives in tracer_maps.bpf.h: the process-exit program reads a thread's last calls. */

static __always_inline void notify_library_change(__u32 pid, __u32 tid)
{
	struct tcheck_process_record *record;

	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PROCESS_DROPS);
		return;
	}
	fill_header(&record->header, TCHECK_RECORD_LIBRARY_CHANGE, pid, tid, bpf_ktime_get_ns());
	record->child_pid = 0;
	record->exit_code = 0;
	record->command_length = 0;
	record->command_cut = 0;
	/* New libraries need probes at once: wake the reader now. */
	bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
}

/*
 * The operation counter of the communicator the call works on, read before
 * the call moves it: the number of operations the rank issued there before
 * this one, which places a call the same on every rank even when the
 * tracing started mid-run. User space needs it at a communicator's first
 * top-level call and counts on from there, so it is read once per thread
 * and communicator (calls->counted_comms), not at every call.
 */
static __always_inline void read_op_count(struct tcheck_thread_calls *calls,
					  struct tcheck_open_call *frame, __u32 depth)
{
	__u32 arg = (frame->cookie >> TCHECK_COOKIE_COMM_ARG_SHIFT) & TCHECK_COOKIE_COMM_ARG_MASK;
	__u32 slot = (frame->cookie >> TCHECK_COOKIE_LAYOUT_SHIFT) & TCHECK_COOKIE_LAYOUT_MASK;
	const struct tcheck_comm_layout *layout;
	__u64 comm;

	frame->comm_op_count = 0;
	if (!arg || !slot || depth)
		return;
	/* Masked and compared where the verifier sees the index. */
	arg = (arg - 1) & 0xf;
	if (arg >= TCHECK_CALL_ARGS)
		return;
	comm = frame->args[arg];
	if (!comm)
		return;
	for (int i = 0; i < TCHECK_COUNTED_COMMS; i++)
		if (calls->counted_comms[i] == comm)
			return;
	slot -= 1;
	layout = bpf_map_lookup_elem(&comm_layouts, &slot);
	if (!layout || layout->op_count_offset < 0)
		return;
	if (bpf_probe_read_user(&frame->comm_op_count, sizeof(frame->comm_op_count),
				(void *)(comm + layout->op_count_offset)))
		return;
	frame->call_flags |= TCHECK_CALL_HAS_OP_COUNT;
	calls->counted_comms[calls->counted_next++ & (TCHECK_COUNTED_COMMS - 1)] = comm;
}

/* A record that carried a communicator's counter was lost: read the counters again. */
static __always_inline void forget_counted_comms(struct tcheck_thread_calls *calls,
						 const struct tcheck_open_call *frame)
{
	if (frame->call_flags & TCHECK_CALL_HAS_OP_COUNT)
		__builtin_memset(calls->counted_comms, 0, sizeof(calls->counted_comms));
}

/*
 * The arguments passed on the stack, when the cookie asks for them: one
 * read, into the program's stack first (the kernel checks the destination
 * of a user read; a map value costs it more).
 */
static __always_inline void read_stack_words(struct tcheck_open_call *frame, __u64 cookie,
					     __u64 stack)
{
	__u64 words[TCHECK_STACK_ARGS] = {};

	if ((cookie & TCHECK_COOKIE_STACK_ARGS) &&
	    !bpf_probe_read_user(words, sizeof(words), (void *)stack))
		frame->call_flags |= TCHECK_CALL_HAS_STACK_ARGS;
	__builtin_memcpy(&frame->args[TCHECK_REGISTER_ARGS], words, sizeof(words));
}

SEC("uprobe")
int library_call_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct tcheck_thread_calls *calls;
	struct tcheck_open_call *frame;
	__u64 stack;
	__u32 depth;

	if (cookie & TCHECK_COOKIE_LIBRARY_CHANGE) {
		if (is_traced(pid))
			notify_library_change(pid, tid);
		return 0;
	}
	/*
	 * A thread gets its stack at its first call, only in a traced process,
	 * and loses it as it ends (process_events.bpf.c): a stack found is a
	 * traced thread's, and the set of traced processes is asked only once.
	 */
	calls = bpf_task_storage_get(&open_calls, bpf_get_current_task_btf(), 0, 0);
	if (!calls) {
		if (!is_traced(pid))
			return 0;
		calls = bpf_task_storage_get(&open_calls, bpf_get_current_task_btf(), 0,
					     BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!calls)
			return 0;
	}
	depth = calls->depth;
	if (depth >= TCHECK_MAX_NESTING) {
		calls->overflow++;
		count(TCHECK_COUNTER_NESTING_OVERFLOWS);
		return 0;
	}
	frame = &calls->frames[depth & (TCHECK_MAX_NESTING - 1)];
	frame->cookie = cookie;
	frame->entry_ns = bpf_ktime_get_ns();
	frame->args[0] = PT_REGS_PARM1(ctx);
	frame->args[1] = PT_REGS_PARM2(ctx);
	frame->args[2] = PT_REGS_PARM3(ctx);
	frame->args[3] = PT_REGS_PARM4(ctx);
	frame->args[4] = PT_REGS_PARM5(ctx);
	frame->args[5] = PT_REGS_PARM6(ctx);
	frame->call_flags = 0;
	/* At entry [sp] is the return address; stack arguments follow it. */
	stack = PT_REGS_SP(ctx) + 8;
	read_stack_words(frame, cookie, stack);
	if (cookie & TCHECK_COOKIE_BLOB_FROM_STACK) {
		if (bpf_probe_read_user(frame->blob, TCHECK_BLOB_BYTES, (void *)stack))
			frame->cookie &= ~TCHECK_COOKIE_BLOB_FROM_STACK;
	}
	read_op_count(calls, frame, depth);
	python_context_read(pid, frame);
	calls->depth = depth + 1;
	return 0;
}

/* 1 + the index of an argument named by a cookie field, or 0. */
static __always_inline __u32 cookie_arg(__u64 cookie, int shift)
{
	return (cookie >> shift) & 0xf;
}

static __always_inline void read_out_value(struct tcheck_call_record *record,
					   const struct tcheck_open_call *frame)
{
	__u32 arg = cookie_arg(frame->cookie, TCHECK_COOKIE_OUT_ARG_SHIFT);
	void *pointer;

	record->out_value = 0;
	if (!arg || arg > TCHECK_REGISTER_ARGS)
		return;
	pointer = (void *)frame->args[(arg - 1) & 7];
	if (frame->cookie & TCHECK_COOKIE_OUT_IS_32BIT) {
		__u32 value = 0;

		if (bpf_probe_read_user(&value, sizeof(value), pointer)) {
			record->flags |= TCHECK_CALL_OUT_READ_FAILED;
			return;
		}
		record->out_value = value;
	} else if (bpf_probe_read_user(&record->out_value, sizeof(__u64), pointer)) {
		record->flags |= TCHECK_CALL_OUT_READ_FAILED;
		return;
	}
	record->flags |= TCHECK_CALL_HAS_OUT_VALUE;
}

/* A communicator just created: read who it is before the process can end. */
static __always_inline void read_created_communicator(struct tcheck_call_record *record,
						      const struct tcheck_open_call *frame,
						      __u32 return_code)
{
	__u32 slot = (frame->cookie >> TCHECK_COOKIE_LAYOUT_SHIFT) & TCHECK_COOKIE_LAYOUT_MASK;
	const struct tcheck_comm_layout *layout;
	__u64 comm = record->out_value;

	record->comm_hash = 0;
	record->comm_rank = -1;
	record->comm_nranks = -1;
	/* 7 is ncclInProgress: a non-blocking init has filled these already. */
	if (!slot || !comm || !(record->flags & TCHECK_CALL_HAS_OUT_VALUE) ||
	    (frame->cookie & TCHECK_COOKIE_OUT_IS_32BIT) || (return_code != 0 && return_code != 7))
		return;
	slot -= 1;
	layout = bpf_map_lookup_elem(&comm_layouts, &slot);
	if (!layout)
		return;
	if (layout->comm_hash_offset >= 0 &&
	    !bpf_probe_read_user(&record->comm_hash, sizeof(record->comm_hash),
				 (void *)(comm + layout->comm_hash_offset)))
		record->flags |= TCHECK_CALL_HAS_COMM_HASH;
	if (layout->rank_offset >= 0 && layout->nranks_offset >= 0 &&
	    !bpf_probe_read_user(&record->comm_rank, sizeof(record->comm_rank),
				 (void *)(comm + layout->rank_offset)) &&
	    !bpf_probe_read_user(&record->comm_nranks, sizeof(record->comm_nranks),
				 (void *)(comm + layout->nranks_offset)))
		record->flags |= TCHECK_CALL_HAS_COMM_RANK;
}

static __always_inline void read_blob(struct tcheck_call_record *record,
				      const struct tcheck_open_call *frame)
{
	__u32 arg = cookie_arg(frame->cookie, TCHECK_COOKIE_BLOB_ARG_SHIFT);

	if (frame->cookie & TCHECK_COOKIE_BLOB_FROM_STACK) {
		__builtin_memcpy(record->blob, frame->blob, TCHECK_BLOB_BYTES);
		record->flags |= TCHECK_CALL_HAS_BLOB;
		return;
	}
	if (!arg || arg > TCHECK_REGISTER_ARGS)
		return;
	if (bpf_probe_read_user(record->blob, TCHECK_BLOB_BYTES,
				(void *)frame->args[(arg - 1) & 7]))
		record->flags |= TCHECK_CALL_BLOB_READ_FAILED;
	else
		record->flags |= TCHECK_CALL_HAS_BLOB;
}

/*
 * The fields of a call record before its blob (all a short record has).
 * Non-zero when the call is filtered out: a poll of ncclCommGetAsyncError
 * that found no error (it is polled constantly).
 */
static __always_inline int fill_call_record(struct tcheck_call_record *record,
					    const struct tcheck_open_call *frame,
					    __u64 return_value, __u32 depth, __u32 pid, __u32 tid)
{
	record->flags = 0;
	read_out_value(record, frame);
	if ((frame->cookie & TCHECK_COOKIE_ONLY_FAILURES) && (__u32)return_value == 0 &&
	    record->out_value == 0)
		return 1;
	fill_header(&record->header, TCHECK_RECORD_CALL, pid, tid, frame->entry_ns);
	record->return_ns = bpf_ktime_get_ns();
	__builtin_memcpy(record->args, frame->args, sizeof(record->args));
	record->return_value = return_value;
	record->function_index = frame->cookie & TCHECK_COOKIE_FUNCTION_MASK;
	record->depth = depth;
	record->reserved = 0;
	read_created_communicator(record, frame, (__u32)return_value);
	record->flags |= frame->py_flags | frame->call_flags;
	record->comm_op_count = frame->comm_op_count;
	return 0;
}

/*
 * A call record of 'size' bytes (a constant: the whole record or a short
 * one) reserved and filled up to its blob. NULL when the ring buffer is full
 * (counted) or the call is filtered out (discarded: the reader steps over it
 * on its next timed poll).
 */
static __always_inline struct tcheck_call_record *
begin_call_record(__u64 size, struct tcheck_thread_calls *calls,
		  const struct tcheck_open_call *frame, __u64 return_value, __u32 depth, __u32 pid,
		  __u32 tid)
{
	struct tcheck_call_record *record = bpf_ringbuf_reserve(&events, size, 0);

	if (!record) {
		count(TCHECK_COUNTER_RINGBUF_DROPS);
		forget_counted_comms(calls, frame);
		return NULL;
	}
	if (fill_call_record(record, frame, return_value, depth, pid, tid)) {
		bpf_ringbuf_discard(record, BPF_RB_NO_WAKEUP);
		forget_counted_comms(calls, frame);
		count(TCHECK_COUNTER_FILTERED);
		return NULL;
	}
	return record;
}

SEC("uretprobe")
int library_call_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct tcheck_call_record *record;
	struct tcheck_thread_calls *calls;
	struct tcheck_open_call *frame;
	__u64 return_value;
	__u32 depth;

	/* Only a traced thread has a stack (see the entry). */
	calls = bpf_task_storage_get(&open_calls, bpf_get_current_task_btf(), 0, 0);
	if (!calls) {
		/* A traced thread's first call entered before the probes were attached. */
		if (is_traced(pid))
			count(TCHECK_COUNTER_UNMATCHED_RETURNS);
		return 0;
	}
	if (calls->overflow) {
		calls->overflow--;
		return 0;
	}
	/* Entered before the entry probe was attached: nothing to pair with. */
	if (calls->depth == 0) {
		count(TCHECK_COUNTER_UNMATCHED_RETURNS);
		return 0;
	}
	depth = (calls->depth - 1) & (TCHECK_MAX_NESTING - 1);
	calls->depth = depth;
	frame = &calls->frames[depth];
	if ((frame->cookie ^ bpf_get_attach_cookie(ctx)) & TCHECK_COOKIE_FUNCTION_MASK) {
		count(TCHECK_COUNTER_UNMATCHED_RETURNS);
		return 0;
	}
	return_value = PT_REGS_RC(ctx);
	/* Most calls have no blob and no Python caller: their record stops before the blob. */
	if (!frame->py_depth && !(frame->cookie & TCHECK_COOKIE_BLOB_ANY)) {
		record = begin_call_record(TCHECK_CALL_RECORD_SHORT_BYTES, calls, frame,
					   return_value, depth, pid, tid);
		if (record)
			bpf_ringbuf_submit(record,
					   ringbuf_wakeup_flags(TCHECK_CALL_RECORD_SHORT_BYTES));
		return 0;
	}
	record = begin_call_record(sizeof(*record), calls, frame, return_value, depth, pid, tid);
	if (!record)
		return 0;
	read_blob(record, frame);
	record->py_depth = frame->py_depth;
	record->py_reserved = 0;
	if (frame->py_depth) {
		__builtin_memcpy(record->py_code, frame->py_code, sizeof(record->py_code));
		__builtin_memcpy(record->py_name, frame->py_name, sizeof(record->py_name));
	}
	bpf_ringbuf_submit(record, frame->py_depth && !python_context_named(pid, frame)
					   ? BPF_RB_FORCE_WAKEUP
					   : call_wakeup_flags(record));
	return 0;
}

/*
 * The calls open on each traced thread, for user space (a task storage map
 * cannot be walked from there): per thread with calls open, its process and
 * thread ids, then its struct tcheck_thread_calls.
 */
SEC("iter/task")
int open_calls_of_threads(struct bpf_iter__task *ctx)
{
	struct task_struct *task = ctx->task;
	struct tcheck_thread_calls *calls;
	__u32 ids[2];

	if (!task)
		return 0;
	calls = bpf_task_storage_get(&open_calls, task, 0, 0);
	if (!calls || calls->depth == 0)
		return 0;
	ids[0] = task->tgid;
	ids[1] = task->pid;
	bpf_seq_write(ctx->meta->seq, ids, sizeof(ids));
	bpf_seq_write(ctx->meta->seq, calls, sizeof(*calls));
	return 0;
}
