// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Selected torch operators (at::_ops::add__Tensor::call, ...): a probe pair
 * on each operator's entry point. The attach cookie numbers the operator;
 * a per-thread stack pairs each return with its call by the stack pointer,
 * so returns the kernel did not report never pair with the wrong call.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tcheck/probe_abi.h"
#include "thread_stack.bpf.h"
#include "tracer_maps.bpf.h"

#define TORCH_OP_DEPTH 8

struct torch_op_call {
	__u64 entry_ns;
	__u64 stack; /* the stack pointer at entry */
	__u32 operator;
	__u32 reserved;
};

struct torch_op_stack {
	__u32 depth;
	__u32 reserved;
	struct torch_op_call calls[TORCH_OP_DEPTH];
};

THREAD_STACKS(torch_op_stacks, torch_op_stack_of, struct torch_op_stack, 0)

SEC("uprobe")
int torch_op_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u64 stack_pointer = PT_REGS_SP(ctx);
	struct torch_op_stack *stack;
	struct torch_op_call *call;

	if (!is_traced(pid))
		return 0;
	stack = torch_op_stack_of(tid, true);
	if (!stack)
		return 0;
	/* Calls at or below a stack position in use again have ended unreported. */
	THREAD_STACK_DROP_ENDED(stack, calls, TORCH_OP_DEPTH, TORCH_OP_DEPTH, stack_pointer);
	call = THREAD_STACK_SLOT(stack, calls, TORCH_OP_DEPTH);
	if (!call) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	call->entry_ns = bpf_ktime_get_ns();
	call->stack = stack_pointer;
	call->operator=(__u32) bpf_get_attach_cookie(ctx);
	stack->depth++;
	return 0;
}

SEC("uretprobe")
int torch_op_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	/* The return address has been popped: the call's stack pointer is 8 bytes down. */
	__u64 entry_stack = PT_REGS_SP(ctx) - 8;
	struct tcheck_torch_op_record *record;
	struct torch_op_stack *stack;
	struct torch_op_call *call;

	if (!is_traced(pid))
		return 0;
	stack = torch_op_stack_of(tid, false);
	if (!stack)
		return 0;
	call = THREAD_STACK_TOP(stack, calls, TORCH_OP_DEPTH);
	/* A call that began before the probes did: its entry was never seen. */
	if (!call || call->stack != entry_stack)
		return 0;
	stack->depth--;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_TORCH_OP, pid, tid, call->entry_ns);
	record->return_ns = bpf_ktime_get_ns();
	record->depth = stack->depth;
	record->operator= call->operator;
	bpf_ringbuf_submit(record, call_wakeup_flags());
	count(TCHECK_COUNTER_PYTHON_CALLS);
	return 0;
}
