// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * c10d process groups as they are built: an entry probe on the base
 * constructor every backend runs (c10d::Backend::Backend(int rank, int
 * size) in torch 1.13 and 2.x, and ProcessGroup::ProcessGroup(int, int)),
 * reporting the rank and size it is given. Rare: once per group. The
 * PrefixStore each group's keys go through, built just before it, whose
 * prefix names the group alike on every rank. And the collectives the
 * groups run (c10d_collective).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "entry_registers.bpf.h"
#include "tcheck/probe_abi.h"
#include "tracer_maps.bpf.h"

SEC("uprobe")
int process_group_init(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tcheck_process_group_record *record;
	__u32 pid = pid_tgid >> 32;

	if (!is_traced(pid))
		return 0;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_PROCESS_GROUP, pid, (__u32)pid_tgid,
		    bpf_ktime_get_ns());
	/* rdi is the object being built; rank and size follow it. */
	record->rank = (__s32)PT_REGS_PARM2(ctx);
	record->size = (__s32)PT_REGS_PARM3(ctx);
	record->group = PT_REGS_PARM1(ctx);
	bpf_ringbuf_submit(record, 0);
	return 0;
}

/*
 * A PrefixStore being built: rdi is the object, rsi the prefix (a
 * std::string, by reference or, passed by value, by invisible reference:
 * its data pointer, then its length), rdx the wrapped store (an
 * intrusive_ptr, by invisible reference: the Store *).
 */
SEC("uprobe")
int store_prefix_built(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tcheck_store_prefix_record *record;
	__u32 pid = pid_tgid >> 32;
	__u64 text[2] = { 0, 0 }, length;

	if (!is_traced(pid))
		return 0;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_STORE_PREFIX, pid, (__u32)pid_tgid,
		    bpf_ktime_get_ns());
	record->store = PT_REGS_PARM1(ctx);
	if (bpf_probe_read_user(&record->parent, sizeof(record->parent),
				(const void *)PT_REGS_PARM3(ctx)))
		record->parent = 0;
	if (bpf_probe_read_user(text, sizeof(text), (const void *)PT_REGS_PARM2(ctx)))
		text[1] = 0;
	record->length = (__u32)text[1];
	/* At most the first 63 bytes: the mask bounds the read for the verifier. */
	length = text[1] < TCHECK_STORE_PREFIX_BYTES ? text[1] : TCHECK_STORE_PREFIX_BYTES - 1;
	if (length && bpf_probe_read_user(record->prefix, length & (TCHECK_STORE_PREFIX_BYTES - 1),
					  (const void *)text[0]))
		record->length = 0;
	bpf_ringbuf_submit(record, 0);
	return 0;
}

/* The first tensor's element count and dtype, at the offsets this torch keeps them. */
static __always_inline void read_first_tensor(__u64 tensor_impl, __u64 numel_offset,
					      struct tcheck_c10d_call_record *record)
{
	__u16 dtype;

	if (!tensor_impl || !numel_offset)
		return;
	if (bpf_probe_read_user(&record->numel, sizeof(record->numel),
				(const void *)(tensor_impl + numel_offset)))
		record->numel = 0;
	if (!bpf_probe_read_user(&dtype, sizeof(dtype),
				 (const void *)(tensor_impl + numel_offset + 8)))
		record->dtype = dtype;
}

/*
 * How long the current thread has waited for a CPU, runnable (the
 * scheduler's run_delay); 0 on a kernel built without it.
 */
static __always_inline __u64 thread_cpu_wait(void)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();

	if (!bpf_core_field_exists(task->sched_info))
		return 0;
	return BPF_CORE_READ(task, sched_info.run_delay);
}

/*
 * A c10d collective entered (ProcessGroupGloo's or ProcessGroupNCCL's allreduce, send, barrier,
 * ...). It queues the work and returns; a rank then waits in Work::wait,
 * so what tells ranks apart is what each one entered. The cookie says
 * which registers hold the group, the tensors and the peer.
 */
SEC("uprobe")
int c10d_collective(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct tcheck_c10d_call_record *record;
	__u32 pid = pid_tgid >> 32;
	__u64 tensors, first = 0, span[2] = { 0, 0 };
	__u64 registers[ENTRY_REGISTERS], peer_register;

	if (!is_traced(pid))
		return 0;
	entry_registers_read(ctx, registers);
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_C10D_CALL, pid, (__u32)pid_tgid,
		    bpf_ktime_get_ns());
	record->group = entry_register(registers, (cookie >> TCHECK_C10D_GROUP_SHIFT) &
							  TCHECK_C10D_REGISTER_MASK);
	record->operation = cookie & TCHECK_C10D_OPERATION_MASK;
	record->flags = (cookie & TCHECK_C10D_AWAITS_WORK) ? TCHECK_C10D_CALL_AWAITS_WORK : 0;
	record->tensor_count = 0;
	record->numel = 0;
	record->dtype = -1;
	peer_register = (cookie >> TCHECK_C10D_PEER_SHIFT) & TCHECK_C10D_REGISTER_MASK;
	record->peer = peer_register ? (__s32)entry_register(registers, peer_register) : -1;
	tensors = entry_register(registers,
				 (cookie >> TCHECK_C10D_TENSOR_SHIFT) & TCHECK_C10D_REGISTER_MASK);
	if (tensors && (cookie & TCHECK_C10D_TENSOR_IS_REFERENCE)) {
		/* An at::Tensor is one pointer, its TensorImpl. */
		record->tensor_count = 1;
		if (bpf_probe_read_user(&first, sizeof(first), (const void *)tensors))
			first = 0;
	} else if (tensors && !bpf_probe_read_user(span, sizeof(span), (const void *)tensors) &&
		   span[1] >= span[0]) {
		/* std::vector: begin and end pointers; each element is one at::Tensor. */
		record->tensor_count = (span[1] - span[0]) / 8;
		if (span[1] > span[0] &&
		    bpf_probe_read_user(&first, sizeof(first), (const void *)span[0]))
			first = 0;
	}
	read_first_tensor(
		first, (cookie >> TCHECK_C10D_NUMEL_OFFSET_SHIFT) & TCHECK_C10D_NUMEL_OFFSET_MASK,
		record);
	record->cpu_wait_ns = thread_cpu_wait();
	bpf_ringbuf_submit(record, 0);
	return 0;
}

/*
 * A gloo work built (its constructor, inside the collective on the
 * caller's thread) or ended (finishWorkGloo or finishWorkGlooError, on a
 * worker thread): rdi is the work; the cookie says which.
 */
SEC("uprobe")
int c10d_work_event(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tcheck_c10d_work_record *record;
	__u32 pid = pid_tgid >> 32;

	if (!is_traced(pid))
		return 0;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_C10D_WORK, pid, (__u32)pid_tgid,
		    bpf_ktime_get_ns());
	record->work = PT_REGS_PARM1(ctx);
	record->event = (__u32)bpf_get_attach_cookie(ctx);
	record->reserved = 0;
	bpf_ringbuf_submit(record, 0);
	return 0;
}
