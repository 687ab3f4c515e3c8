// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Selected torch operators (at::_ops::add__Tensor::call, ...): a probe pair
 * on each operator's entry point. The attach cookie numbers the operator and
 * names the registers of the tensor and scalar arguments read at entry;
 * a per-thread stack pairs each return with its call by the stack pointer,
 * so returns the kernel did not report never pair with the wrong call.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "entry_registers.bpf.h"
#include "tcheck/probe_abi.h"
#include "thread_stack.bpf.h"
#include "tracer_maps.bpf.h"

#define TORCH_OP_DEPTH 8

struct torch_op_call {
	__u64 entry_ns;
	__u64 stack; /* the stack pointer at entry */
	__u32 operator;
	__u32 scalar_tag;
	__u64 tensor;
	__u64 scalar;
};

/*
 * c10::Scalar: the tag (an int-sized enum), then the value union at offset
 * 16 (it holds a 16-byte-aligned complex<double>): Scalar::log of Debian's
 * torch 1.13 and 2.6 libc10 reads a double there for tag 0.
 */
struct scalar_layout {
	__u32 tag;
	__u32 padding;
	__u64 padding_to_value;
	__u64 value;
};

/* The tensor and scalar arguments the cookie names: two reads of the caller's memory. */
static __always_inline void read_arguments(struct pt_regs *ctx, __u64 cookie,
					   struct torch_op_call *call)
{
	__u64 registers[ENTRY_REGISTERS], tensor_slot, scalar_at;
	struct scalar_layout scalar = { .tag = TCHECK_SCALAR_NONE };

	entry_registers_read(ctx, registers);
	tensor_slot = entry_register(registers, (cookie >> TCHECK_TORCH_OP_TENSOR_SHIFT) &
							TCHECK_TORCH_OP_REGISTER_MASK);
	scalar_at = entry_register(registers, (cookie >> TCHECK_TORCH_OP_SCALAR_SHIFT) &
						      TCHECK_TORCH_OP_REGISTER_MASK);

	call->tensor = 0;
	call->scalar = 0;
	call->scalar_tag = TCHECK_SCALAR_NONE;
	/* An at::Tensor is one pointer, its TensorImpl: the tensor's identity. */
	if (tensor_slot &&
	    bpf_probe_read_user(&call->tensor, sizeof(call->tensor), (const void *)tensor_slot))
		call->tensor = 0;
	if (scalar_at && !bpf_probe_read_user(&scalar, sizeof(scalar), (const void *)scalar_at) &&
	    (scalar.tag == TCHECK_SCALAR_DOUBLE || scalar.tag == TCHECK_SCALAR_INT)) {
		call->scalar = scalar.value;
		call->scalar_tag = scalar.tag;
	}
}

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
	__u64 cookie;

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
	cookie = bpf_get_attach_cookie(ctx);
	call->entry_ns = bpf_ktime_get_ns();
	call->stack = stack_pointer;
	call->operator=(__u32)(cookie & TCHECK_TORCH_OP_INDEX_MASK);
	read_arguments(ctx, cookie, call);
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
	record->tensor = call->tensor;
	record->scalar = call->scalar;
	record->scalar_tag = call->scalar_tag;
	record->reserved = 0;
	bpf_ringbuf_submit(record, call_wakeup_flags());
	count(TCHECK_COUNTER_PYTHON_CALLS);
	return 0;
}
