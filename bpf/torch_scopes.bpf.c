// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * torch's record_function scopes (Optimizer.step#SGD.step, ...): the names
 * of Python APIs that never leave Python. An entry probe where torch opens
 * a scope reads its name and the at::RecordFunction it is kept in; a probe
 * on RecordFunction::end closes the scope on top of the thread's stack
 * whose RecordFunction it is (other ends, of unnamed scopes, cost a lookup).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tcheck/probe_abi.h"
#include "tracer_maps.bpf.h"

#define TORCH_SCOPE_DEPTH 8

struct torch_scope {
	__u64 key; /* the at::RecordFunction */
	__u64 entry_ns;
	char name[TCHECK_TORCH_SCOPE_NAME_BYTES];
};

struct torch_scope_stack {
	__u32 depth;
	__u32 reserved;
	struct torch_scope scopes[TORCH_SCOPE_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct torch_scope_stack);
} torch_scope_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct torch_scope_stack);
} empty_torch_scope_stack SEC(".maps");

/* The verifier allows only fixed offsets into the registers: read all three, then choose. */
static __always_inline __u64 argument_register(const __u64 *arguments, __u64 which)
{
	if (which == 1)
		return arguments[0];
	if (which == 2)
		return arguments[1];
	if (which == 3)
		return arguments[2];
	return 0;
}

SEC("uprobe")
int torch_scope_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid, zero = 0;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct torch_scope_stack *stack;
	struct torch_scope *scope;
	__u64 name_string, name_data = 0, arguments[3];
	__u32 depth;

	if (!is_traced(pid))
		return 0;
	arguments[0] = PT_REGS_PARM1(ctx);
	arguments[1] = PT_REGS_PARM2(ctx);
	arguments[2] = PT_REGS_PARM3(ctx);
	stack = bpf_map_lookup_elem(&torch_scope_stacks, &tid);
	if (!stack) {
		stack = bpf_map_lookup_elem(&empty_torch_scope_stack, &zero);
		if (!stack)
			return 0;
		bpf_map_update_elem(&torch_scope_stacks, &tid, stack, BPF_NOEXIST);
		stack = bpf_map_lookup_elem(&torch_scope_stacks, &tid);
		if (!stack)
			return 0;
	}
	depth = stack->depth;
	if (depth >= TORCH_SCOPE_DEPTH) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	asm volatile("" : "+r"(depth));
	scope = &stack->scopes[depth & (TORCH_SCOPE_DEPTH - 1)];
	/* A std::string (C++11 ABI): its characters' address first, NUL-terminated. */
	name_string = argument_register(arguments, (cookie >> TCHECK_TORCH_NAME_REGISTER_SHIFT) &
							   TCHECK_TORCH_REGISTER_MASK);
	if (!name_string ||
	    bpf_probe_read_user(&name_data, sizeof(name_data), (void *)name_string) ||
	    bpf_probe_read_user_str(scope->name, sizeof(scope->name), (void *)name_data) <= 0)
		return 0;
	scope->key = argument_register(arguments, (cookie >> TCHECK_TORCH_KEY_REGISTER_SHIFT) &
							  TCHECK_TORCH_REGISTER_MASK);
	scope->entry_ns = bpf_ktime_get_ns();
	stack->depth = depth + 1;
	return 0;
}

SEC("uprobe")
int torch_scope_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct tcheck_torch_scope_record *record;
	struct torch_scope_stack *stack;
	struct torch_scope *scope;
	__u32 depth;

	if (!is_traced(pid))
		return 0;
	stack = bpf_map_lookup_elem(&torch_scope_stacks, &tid);
	if (!stack)
		return 0;
	depth = stack->depth;
	if (depth == 0 || depth > TORCH_SCOPE_DEPTH)
		return 0;
	asm volatile("" : "+r"(depth));
	scope = &stack->scopes[(depth - 1) & (TORCH_SCOPE_DEPTH - 1)];
	/* The end of another RecordFunction (an autograd node, a second end()). */
	if (scope->key != PT_REGS_PARM1(ctx))
		return 0;
	stack->depth = depth - 1;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	record->header.type = TCHECK_RECORD_TORCH_SCOPE;
	record->header.pid = pid;
	record->header.tid = tid;
	record->header.reserved = 0;
	record->header.timestamp_ns = scope->entry_ns;
	record->return_ns = bpf_ktime_get_ns();
	record->depth = depth - 1;
	record->reserved = 0;
	__builtin_memcpy(record->name, scope->name, sizeof(record->name));
	bpf_ringbuf_submit(record, call_wakeup_flags());
	count(TCHECK_COUNTER_PYTHON_CALLS);
	return 0;
}
