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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct torch_op_stack);
} torch_op_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct torch_op_stack);
} empty_torch_op_stack SEC(".maps");

SEC("uprobe")
int torch_op_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid, zero = 0;
	__u64 stack_pointer = PT_REGS_SP(ctx);
	struct torch_op_stack *stack;
	struct torch_op_call *call;
	__u32 depth;

	if (!is_traced(pid))
		return 0;
	stack = bpf_map_lookup_elem(&torch_op_stacks, &tid);
	if (!stack) {
		stack = bpf_map_lookup_elem(&empty_torch_op_stack, &zero);
		if (!stack)
			return 0;
		bpf_map_update_elem(&torch_op_stacks, &tid, stack, BPF_NOEXIST);
		stack = bpf_map_lookup_elem(&torch_op_stacks, &tid);
		if (!stack)
			return 0;
	}
	/* Calls at or below a stack position in use again have ended unreported. */
	for (int i = 0; i < TORCH_OP_DEPTH; i++) {
		depth = stack->depth;
		if (depth == 0 || depth > TORCH_OP_DEPTH ||
		    stack->calls[(depth - 1) & (TORCH_OP_DEPTH - 1)].stack > stack_pointer)
			break;
		stack->depth = depth - 1;
	}
	depth = stack->depth;
	if (depth >= TORCH_OP_DEPTH) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	asm volatile("" : "+r"(depth));
	call = &stack->calls[depth & (TORCH_OP_DEPTH - 1)];
	call->entry_ns = bpf_ktime_get_ns();
	call->stack = stack_pointer;
	call->operator=(__u32) bpf_get_attach_cookie(ctx);
	stack->depth = depth + 1;
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
	__u32 depth;

	if (!is_traced(pid))
		return 0;
	stack = bpf_map_lookup_elem(&torch_op_stacks, &tid);
	if (!stack)
		return 0;
	depth = stack->depth;
	if (depth == 0 || depth > TORCH_OP_DEPTH)
		return 0;
	asm volatile("" : "+r"(depth));
	call = &stack->calls[(depth - 1) & (TORCH_OP_DEPTH - 1)];
	/* A call that began before the probes did: its entry was never seen. */
	if (call->stack != entry_stack)
		return 0;
	stack->depth = depth - 1;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	record->header.type = TCHECK_RECORD_TORCH_OP;
	record->header.pid = pid;
	record->header.tid = tid;
	record->header.reserved = 0;
	record->header.timestamp_ns = call->entry_ns;
	record->return_ns = bpf_ktime_get_ns();
	record->depth = depth - 1;
	record->operator= call->operator;
	bpf_ringbuf_submit(record, call_wakeup_flags());
	count(TCHECK_COUNTER_PYTHON_CALLS);
	return 0;
}
