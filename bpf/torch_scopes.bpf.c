// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * torch's record_function scopes (Optimizer.step#SGD.step, ...): the names
 * of Python APIs that never leave Python. Where torch opens a scope, the
 * probes read its name and the at::RecordFunction it is kept in, the key:
 * both at one site (torch 1.13's internal enter), or the name where the
 * exported record_function_enter_new is entered and the key at the
 * RecordFunction constructor it calls next (torch 2.x, whichever of its
 * helpers the compiler inlined). A probe on the profiler's exit operator
 * (or, where that is not found, on RecordFunction::end) closes the scope on
 * top of the thread's stack whose RecordFunction it is (other ends, of
 * unnamed scopes, cost a lookup). Where the exit operator is probed, 2.x
 * opens the scope at enter_new with no key, and its exit closes the top.
 * The backward pass is recorded where the autograd engine's execute() is
 * entered and where it returns.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "entry_registers.bpf.h"
#include "tcheck/probe_abi.h"
#include "thread_stack.bpf.h"
#include "torch_scope_stack.bpf.h"
#include "tracer_maps.bpf.h"

/* at::RecordScope::USER_SCOPE, what record_function's enter builds (1.13 and 2.x alike). */
#define RECORD_SCOPE_USER 7

THREAD_STACK_GETTER(torch_scope_stacks, torch_scope_stack_of, struct torch_scope_stack)

/* The thread's next free scope slot (its stack in *stack), or NULL when there is none. */
static __always_inline struct torch_scope *next_scope(__u32 tid, struct torch_scope_stack **stack)
{
	struct torch_scope *scope;

	*stack = torch_scope_stack_of(tid, true);
	if (!*stack)
		return NULL;
	scope = THREAD_STACK_SLOT(*stack, scopes, TORCH_SCOPE_DEPTH);
	if (!scope)
		count(TCHECK_COUNTER_PYTHON_TOO_DEEP);
	return scope;
}

/* The scope name from the register the cookie names; false when it cannot be read. */
static __always_inline bool scope_name_read(const __u64 *arguments, __u64 cookie,
					    struct torch_scope *scope)
{
	__u64 name_string, name_data = 0;

	/* A std::string (C++11 ABI): its characters' address first, NUL-terminated. */
	name_string = entry_register(arguments, (cookie >> TCHECK_TORCH_NAME_REGISTER_SHIFT) &
							TCHECK_TORCH_REGISTER_MASK);
	return name_string && (name_data = user_u64(name_string)) &&
	       bpf_probe_read_user_str(scope->name, sizeof(scope->name), (void *)name_data) > 0;
}

/*
 * A scope just opened: a record of its name and entry, so that user space
 * knows a step marker has begun before the operators it runs arrive (the
 * scope's own record comes at its end, after them).
 */
static __always_inline void announce_scope(__u32 pid, __u32 tid, const struct torch_scope *scope,
					   __u32 depth)
{
	struct tcheck_torch_scope_record *record;

	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return;
	}
	fill_header(&record->header, TCHECK_RECORD_TORCH_SCOPE, pid, tid, scope->entry_ns);
	record->return_ns = 0;
	record->depth = depth;
	record->flags = TCHECK_TORCH_SCOPE_OPENS;
	__builtin_memcpy(record->name, scope->name, sizeof(record->name));
	bpf_ringbuf_submit(record, BPF_RB_NO_WAKEUP);
}

/* A site that has both the name and the key (torch 1.13's internal enter): the scope opens. */
SEC("uprobe")
int torch_scope_enter(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct torch_scope_stack *stack;
	struct torch_scope *scope;
	__u64 arguments[ENTRY_REGISTERS];

	if (!is_traced(pid))
		return 0;
	entry_registers_read(ctx, arguments);
	scope = next_scope(tid, &stack);
	if (!scope || !scope_name_read(arguments, cookie, scope))
		return 0;
	scope->key = entry_register(arguments, (cookie >> TCHECK_TORCH_KEY_REGISTER_SHIFT) &
						       TCHECK_TORCH_REGISTER_MASK);
	scope->entry_ns = bpf_ktime_get_ns();
	stack->named = 0;
	announce_scope(pid, tid, scope, stack->depth);
	stack->depth++;
	return 0;
}

/* record_function_enter_new's entry (torch 2.x): the name waits in the next slot for its key. */
SEC("uprobe")
int torch_scope_named(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct torch_scope_stack *stack;
	struct torch_scope *scope;
	__u64 arguments[ENTRY_REGISTERS];

	if (!is_traced(pid))
		return 0;
	entry_registers_read(ctx, arguments);
	scope = next_scope(tid, &stack);
	if (!scope)
		return 0;
	stack->named = 0;
	if (!scope_name_read(arguments, bpf_get_attach_cookie(ctx), scope))
		return 0;
	scope->key = 0;
	scope->entry_ns = bpf_ktime_get_ns();
	stack->named = 1;
	return 0;
}

/*
 * at::RecordFunction::RecordFunction(RecordScope) (this in rdi, the scope in
 * sil): the first user scope a thread builds after a name opens that scope.
 * Other constructors (a profiler's, autograd nodes') cost a lookup.
 */
SEC("uprobe")
int torch_scope_keyed(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct torch_scope_stack *stack;
	struct torch_scope *scope;

	if (!is_traced(pid))
		return 0;
	stack = torch_scope_stack_of(tid, false);
	if (!stack || !stack->named || (PT_REGS_PARM2(ctx) & 0xff) != RECORD_SCOPE_USER)
		return 0;
	stack->named = 0;
	scope = THREAD_STACK_SLOT(stack, scopes, TORCH_SCOPE_DEPTH);
	if (!scope)
		return 0;
	scope->key = PT_REGS_PARM1(ctx);
	announce_scope(pid, tid, scope, stack->depth);
	stack->depth++;
	return 0;
}

/* Closes the scope on top of the thread's stack when its key is 'key', and records it. */
static __always_inline int close_scope(__u64 key)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct tcheck_torch_scope_record *record;
	struct torch_scope_stack *stack;
	struct torch_scope *scope;

	if (!is_traced(pid))
		return 0;
	stack = torch_scope_stack_of(tid, false);
	if (!stack)
		return 0;
	scope = THREAD_STACK_TOP(stack, scopes, TORCH_SCOPE_DEPTH);
	/*
	 * The end of another RecordFunction (an autograd node, a second end()).
	 * A scope opened with no key (2.x, ends probed on the exit operator,
	 * which only scope ends reach) is closed by the next end.
	 */
	if (!scope || (scope->key && scope->key != key))
		return 0;
	stack->depth--;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_TORCH_SCOPE, pid, tid, scope->entry_ns);
	record->return_ns = bpf_ktime_get_ns();
	record->depth = stack->depth;
	record->flags = 0;
	__builtin_memcpy(record->name, scope->name, sizeof(record->name));
	bpf_ringbuf_submit(record, call_wakeup_flags(record));
	return 0;
}

SEC("uprobe")
int torch_scope_exit(struct pt_regs *ctx)
{
	return close_scope(PT_REGS_PARM1(ctx));
}

/*
 * The backward pass: a record at the engine's entry, and one at each of its
 * return instructions where those are probed (the cookie says so), which
 * the daemon pairs. No return probe: one on Engine::execute breaks the
 * unwinding of the C++ exception a failing backward pass (a hook that
 * raises) throws through it, and the process aborts; a probe on a "ret"
 * changes nothing on the stack.
 */
static __always_inline int backward_record(__u32 flags)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct tcheck_torch_scope_record *record;
	struct torch_scope_stack *stack;

	if (!is_traced(pid))
		return 0;
	stack = torch_scope_stack_of(tid, false);
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_TORCH_SCOPE, pid, tid, bpf_ktime_get_ns());
	record->return_ns = record->header.timestamp_ns;
	record->depth = stack ? stack->depth : 0;
	record->flags = flags;
	__builtin_memset(record->name, 0, sizeof(record->name));
	/* Stored as immediates: no string in a data section. */
	__builtin_memcpy(record->name, TCHECK_BACKWARD_SCOPE_NAME,
			 sizeof(TCHECK_BACKWARD_SCOPE_NAME));
	bpf_ringbuf_submit(record, call_wakeup_flags(record));
	return 0;
}

SEC("uprobe")
int backward_enter(struct pt_regs *ctx)
{
	return backward_record(bpf_get_attach_cookie(ctx) & TCHECK_BACKWARD_ENDS_PROBED
				       ? TCHECK_TORCH_SCOPE_END_FOLLOWS
				       : 0);
}

SEC("uprobe")
int backward_return(struct pt_regs *ctx)
{
	return backward_record(TCHECK_TORCH_SCOPE_BACKWARD_END);
}
