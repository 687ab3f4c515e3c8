// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Python calls entered from C: a probe pair on CPython's frame evaluator
 * (_PyEval_EvalFrameDefault). On 3.11 and later the evaluator runs
 * Python-to-Python calls inline, so it is entered for what C calls:
 * module __call__, hooks, autograd functions, callbacks. Code objects the
 * daemon has ignored cost one map lookup and send nothing.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tcheck/probe_abi.h"
#include "tracer_maps.bpf.h"

#define PYTHON_MAX_DEPTH 32
/* Frames left behind by returns the kernel did not report, dropped per probe hit. */
#define PYTHON_STALE_POPS 4

struct python_frame {
	__u64 code;
	__u64 name; /* the code object's name object: see tcheck_code_key */
	__u64 entry_ns;
	__u64 stack; /* the stack pointer at entry: pairs the return with its call */
};

struct python_stack {
	__u32 depth;
	__u32 reserved;
	struct python_frame frames[PYTHON_MAX_DEPTH];
};

/* Processes running Python, with where their frames keep the code object. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tcheck_python_process);
} python_processes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct python_stack);
} python_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct python_stack);
} empty_python_stack SEC(".maps");

static __always_inline struct python_stack *python_stack_of(__u32 tid, bool create)
{
	struct python_stack *stack = bpf_map_lookup_elem(&python_stacks, &tid);
	__u32 zero = 0;

	if (stack || !create)
		return stack;
	stack = bpf_map_lookup_elem(&empty_python_stack, &zero);
	if (!stack)
		return NULL;
	bpf_map_update_elem(&python_stacks, &tid, stack, BPF_NOEXIST);
	return bpf_map_lookup_elem(&python_stacks, &tid);
}

/* The daemon's verdict on a code object, 0 while it has none. */
static __always_inline __u8 verdict_of(__u32 pid, __u64 code, __u64 name)
{
	struct tcheck_code_key key = { .pid = pid, .reserved = 0, .code = code, .name = name };
	__u8 *verdict = bpf_map_lookup_elem(&code_verdicts, &key);

	return verdict ? *verdict : 0;
}

/*
 * The kernel stops reporting returns past a nesting limit, and a thread can
 * leave frames by longjmp-like paths: frames at or below a stack position
 * now in use again have ended.
 */
static __always_inline void drop_ended_frames(struct python_stack *stack, __u64 stack_pointer)
{
	for (int i = 0; i < PYTHON_STALE_POPS; i++) {
		__u32 top = stack->depth;

		if (top == 0 || top > PYTHON_MAX_DEPTH)
			return;
		if (stack->frames[(top - 1) & (PYTHON_MAX_DEPTH - 1)].stack > stack_pointer)
			return;
		stack->depth = top - 1;
	}
}

SEC("uprobe")
int python_frame_entry(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct tcheck_python_process *process;
	struct python_stack *stack;
	struct python_frame *frame;
	__u64 code = 0, name = 0, stack_pointer = PT_REGS_SP(ctx);
	__u32 depth;

	if (!is_traced(pid))
		return 0;
	process = bpf_map_lookup_elem(&python_processes, &pid);
	if (!process)
		return 0;
	if (bpf_probe_read_user(&code, sizeof(code),
				(void *)(PT_REGS_PARM2(ctx) + process->frame_code_offset)) ||
	    !code ||
	    bpf_probe_read_user(&name, sizeof(name), (void *)(code + process->code_name_offset)) ||
	    verdict_of(pid, code, name) == TCHECK_CODE_IGNORED)
		return 0;
	stack = python_stack_of(tid, true);
	if (!stack)
		return 0;
	drop_ended_frames(stack, stack_pointer);
	depth = stack->depth;
	if (depth >= PYTHON_MAX_DEPTH) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	/* Keep the mask the compiler would drop after the check: the verifier needs it. */
	asm volatile("" : "+r"(depth));
	frame = &stack->frames[depth & (PYTHON_MAX_DEPTH - 1)];
	frame->code = code;
	frame->name = name;
	frame->entry_ns = bpf_ktime_get_ns();
	frame->stack = stack_pointer;
	stack->depth = depth + 1;
	return 0;
}

SEC("uretprobe")
int python_frame_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	/* The return address has been popped: the caller's stack is 8 bytes up. */
	__u64 entry_stack = PT_REGS_SP(ctx) - 8;
	struct tcheck_python_record *record;
	struct python_stack *stack;
	struct python_frame *frame;
	__u32 depth;
	__u8 verdict;

	if (!is_traced(pid))
		return 0;
	stack = python_stack_of(tid, false);
	if (!stack)
		return 0;
	drop_ended_frames(stack, entry_stack - 1);
	depth = stack->depth;
	if (depth == 0 || depth > PYTHON_MAX_DEPTH)
		return 0;
	asm volatile("" : "+r"(depth));
	frame = &stack->frames[(depth - 1) & (PYTHON_MAX_DEPTH - 1)];
	/* Not the call on top: the return of an ignored one. */
	if (frame->stack != entry_stack)
		return 0;
	stack->depth = depth - 1;
	verdict = verdict_of(pid, frame->code, frame->name);
	if (verdict == TCHECK_CODE_IGNORED)
		return 0;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	record->header.type = TCHECK_RECORD_PYTHON_CALL;
	record->header.pid = pid;
	record->header.tid = tid;
	record->header.reserved = 0;
	record->header.timestamp_ns = frame->entry_ns;
	record->return_ns = bpf_ktime_get_ns();
	record->code = frame->code;
	record->code_name = frame->name;
	record->depth = depth - 1;
	record->flags = PT_REGS_RC(ctx) ? 0 : TCHECK_PYTHON_RAISED;
	/*
	 * A code object not named yet must be read while it exists: wake the
	 * daemon now. There are few of them, so this costs little.
	 */
	bpf_ringbuf_submit(record, verdict ? call_wakeup_flags() : BPF_RB_FORCE_WAKEUP);
	count(TCHECK_COUNTER_PYTHON_CALLS);
	return 0;
}
