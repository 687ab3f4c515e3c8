// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Selected torch operators (at::_ops::add__Tensor::call, ...): an entry
 * probe on each operator's entry point. The attach cookie numbers the
 * operator and names the registers of the tensor and scalar arguments read
 * at entry.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "entry_registers.bpf.h"
#include "tcheck/probe_abi.h"
#include "tracer_maps.bpf.h"

#define TORCH_OP_DEPTH 8

struct torch_op_call {
	__u64 entry_ns;
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

/*
 * No return probe: a uretprobe replaces the operator's return address, and a
 * C++ exception thrown through it (an operator refusing its arguments,
 * caught by the program) then finds no unwind information and aborts the
 * process. An operator is recorded at its entry, without a duration.
 */
SEC("uprobe")
int torch_op_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct tcheck_torch_op_record *record;
	struct torch_op_call call;
	__u64 cookie;

	if (!is_traced(pid))
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
	call.entry_ns = bpf_ktime_get_ns();
	call.operator=(__u32)(cookie & TCHECK_TORCH_OP_INDEX_MASK);
	read_arguments(ctx, cookie, &call);
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_TORCH_OP, pid, tid, call.entry_ns);
	record->return_ns = call.entry_ns;
	record->depth = 0;
	record->operator= call.operator;
	record->tensor = call.tensor;
	record->scalar = call.scalar;
	record->scalar_tag = call.scalar_tag;
	record->reserved = 0;
	bpf_ringbuf_submit(record, call_wakeup_flags());
	count(TCHECK_COUNTER_PYTHON_CALLS);
	return 0;
}
