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
#include "thread_stack.bpf.h"
#include "tracer_maps.bpf.h"

#define PYTHON_MAX_DEPTH 32
/* Frames left behind by returns the kernel did not report, dropped per probe hit. */
#define PYTHON_STALE_POPS 4

struct python_frame {
	__u64 code;
	__u64 name; /* the code object's name object: see tcheck_code_key */
	__u64 entry_ns;
	__u64 stack; /* the stack pointer at entry: pairs the return with its call */
	/* Read at entry, while the arguments and the callers are what the call got. */
	__u32 arg_count;
	__u32 caller_count;
	__u32 callers_cut; /* frames were left beyond the callers kept */
	__u32 reserved;
	struct tcheck_python_arg args[TCHECK_PYTHON_ARGS_MAX];
	__u64 callers[TCHECK_PY_STACK_MAX];
};

struct python_stack {
	__u32 depth;
	__u32 reserved;
	struct python_frame frames[PYTHON_MAX_DEPTH];
};

/* Allocated per thread that runs Python, not in advance: an entry is 11 KiB. */
THREAD_STACKS(python_stacks, python_stack_of, struct python_stack, BPF_F_NO_PREALLOC)

/* The daemon's verdict on a code object, 0 while it has none. */
static __always_inline __u8 verdict_of(__u32 pid, __u64 code, __u64 name)
{
	struct tcheck_code_key key = { .pid = pid, .reserved = 0, .code = code, .name = name };
	__u8 *verdict = bpf_map_lookup_elem(&code_verdicts, &key);

	return verdict ? *verdict : 0;
}

/* Caller frames walked past shim frames and frames without code, at most. */
#define PYTHON_CALLER_WALK 12

/* Bytes of an object read at once: the header and value of every primitive. */
#define OBJECT_HEAD_WORDS 8

/* words 8-byte words (1 or 2) at object + offset: from the head when it holds them, else read. */
static __always_inline int object_bytes(const __u64 *head, bool have_head, __u64 object,
					__s32 offset, void *out, __u32 words)
{
	__u64 *target = out;

	if (have_head && offset >= 0 && !(offset & 7) &&
	    offset + words * 8 <= OBJECT_HEAD_WORDS * 8) {
		__u32 index = (__u32)offset >> 3;

		asm volatile("" : "+r"(index));
		target[0] = head[index & (OBJECT_HEAD_WORDS - 1)];
		if (words > 1)
			target[1] = head[(index + 1) & (OBJECT_HEAD_WORDS - 1)];
		return 0;
	}
	return bpf_probe_read_user(out, words * 8, (void *)(object + offset));
}

/*
 * Copies one argument's value, raw, when it is a primitive, or the type of
 * a first argument that is not; false otherwise.
 * One read of the object's first 64 bytes covers the type and the value of
 * floats, ints, and short compact strings; single reads are the fallback.
 */
static __always_inline bool capture_argument(const struct tcheck_python_process *process,
					     __u64 object, struct tcheck_python_arg *arg)
{
	__u64 head[OBJECT_HEAD_WORDS] = {};
	__u64 type = 0, word = 0;
	bool have_head;

	if (!object)
		return false;
	if (object == process->none) {
		arg->type = TCHECK_PYTHON_ARG_NONE;
		return true;
	}
	have_head = !bpf_probe_read_user(head, sizeof(head), (void *)object);
	type = have_head ? head[1] : user_u64(object + 8);
	if (type == process->bool_type) {
		arg->type = TCHECK_PYTHON_ARG_BOOL;
		arg->value = object == process->true_object;
		return true;
	}
	if (type == process->float_type) {
		arg->type = TCHECK_PYTHON_ARG_FLOAT;
		return !object_bytes(head, have_head, object, process->float_value_offset,
				     &arg->value, 1);
	}
	if (type == process->long_type) {
		arg->type = TCHECK_PYTHON_ARG_INT;
		if (object_bytes(head, have_head, object, process->long_size_offset, &arg->value,
				 1))
			return false;
		/* A short int's object can end before 16 bytes of digits: read what exists. */
		if (object_bytes(head, have_head, object, process->long_digits_offset, arg->bytes,
				 2))
			bpf_probe_read_user(arg->bytes, 4,
					    (void *)(object + process->long_digits_offset));
		return true;
	}
	if (type == process->unicode_type) {
		__s32 data;

		arg->type = TCHECK_PYTHON_ARG_STR;
		if (object_bytes(head, have_head, object, process->unicode_state_offset, &word,
				 1) ||
		    object_bytes(head, have_head, object, process->unicode_length_offset,
				 &arg->value, 1))
			return false;
		arg->state = (__u32)word;
		if (!(word & (1U << 5))) /* not compact: characters elsewhere, left out */
			return true;
		data = word & (1U << 6) ? process->unicode_ascii_data_offset
					: process->unicode_compact_data_offset;
		/* A short string's object can end before 16 bytes: fall back to 4. */
		if (object_bytes(head, have_head, object, data, arg->bytes, 2))
			bpf_probe_read_user(arg->bytes, 4, (void *)(object + data));
		return true;
	}
	/* self: its type names the module a Module._call_impl call runs, its address the module. */
	if (arg->position == 0 && type) {
		arg->type = TCHECK_PYTHON_ARG_OBJECT;
		arg->value = type;
		__builtin_memcpy(arg->bytes, &object, sizeof(object));
		return true;
	}
	return false;
}

/* The first parameters of the call, primitive ones kept. */
static __always_inline void capture_arguments(const struct tcheck_python_process *process,
					      __u64 frame_address, __u64 code,
					      struct python_frame *frame)
{
	__u64 values[TCHECK_PYTHON_ARGS_MAX] = {};
	__s32 positional = 0, keyword_only = 0;
	__u32 count, kept = 0;

	frame->arg_count = 0;
	__s32 gap = process->code_keyword_only_count_offset - process->code_argument_count_offset;
	__s32 counts[4] = {};

	/* Both counts lie within 16 bytes in every version: one read. */
	if (gap > 0 && gap <= 12 && !(gap & 3)) {
		if (bpf_probe_read_user(counts, sizeof(counts),
					(void *)(code + process->code_argument_count_offset)))
			return;
		positional = counts[0];
		keyword_only = gap == 4 ? counts[1] : gap == 8 ? counts[2] : counts[3];
	} else if (bpf_probe_read_user(&positional, sizeof(positional),
				       (void *)(code + process->code_argument_count_offset)) ||
		   bpf_probe_read_user(&keyword_only, sizeof(keyword_only),
				       (void *)(code + process->code_keyword_only_count_offset))) {
		return;
	}
	if (positional < 0 || keyword_only < 0)
		return;
	count = (__u32)positional + (__u32)keyword_only;
	if (count == 0)
		return;
	if (count > TCHECK_PYTHON_ARGS_MAX)
		count = TCHECK_PYTHON_ARGS_MAX;
	if (bpf_probe_read_user(values, sizeof(values),
				(void *)(frame_address + process->frame_localsplus_offset)))
		return;
	for (__u32 i = 0; i < TCHECK_PYTHON_ARGS_MAX; i++) {
		struct tcheck_python_arg *arg;

		if (i >= count)
			break;
		arg = &frame->args[kept & (TCHECK_PYTHON_ARGS_MAX - 1)];
		__builtin_memset(arg, 0, sizeof(*arg));
		arg->position = i;
		if (capture_argument(process, values[i] & ~TCHECK_PYTHON_REFERENCE_TAG_BITS, arg))
			kept++;
	}
	frame->arg_count = kept;
}

/*
 * The self of the outermost open call of the same code object on the thread,
 * beside the call's own self (TCHECK_PYTHON_ARG_OBJECT): for a module call,
 * the top module whose tree holds this one. The call's own self when it is
 * the outermost. The number of such open calls goes in state.
 */
static __always_inline void capture_outermost_self(const struct python_stack *stack,
						   struct python_frame *frame)
{
	struct tcheck_python_arg *self = &frame->args[0];

	if (frame->arg_count == 0 || self->position != 0 || self->type != TCHECK_PYTHON_ARG_OBJECT)
		return;
	__builtin_memcpy(self->bytes + 8, self->bytes, 8);
	self->state = 0;
	for (__u32 i = 0; i < PYTHON_MAX_DEPTH && i < stack->depth; i++) {
		const struct python_frame *outer = &stack->frames[i & (PYTHON_MAX_DEPTH - 1)];

		if (outer->code == frame->code && outer->arg_count &&
		    outer->args[0].position == 0 &&
		    outer->args[0].type == TCHECK_PYTHON_ARG_OBJECT) {
			if (self->state == 0)
				__builtin_memcpy(self->bytes + 8, outer->args[0].bytes, 8);
			self->state++;
		}
		/*
		 * The count stays in the map value, read back each time: the
		 * verifier then need not follow one state per count.
		 */
		asm volatile("" ::: "memory");
	}
}

/* The Python frame that made the C call that entered this one. */
static __always_inline __u64 calling_frame(const struct tcheck_python_process *process,
					   __u64 thread_state)
{
	__u64 cframe;

	if (!thread_state)
		return 0;
	if (process->thread_cframe_offset < 0)
		return user_u64(thread_state + process->thread_frame_offset);
	cframe = user_u64(thread_state + process->thread_cframe_offset);
	return cframe ? user_u64(cframe + process->cframe_current_frame_offset) : 0;
}

/* Bytes of a frame read at once: its code, previous and owner in every version. */
#define FRAME_HEAD_BYTES 72
/* The array that holds them: a power of two, so an index can be masked. */
#define FRAME_HEAD_SLOTS 16

/* A byte of a frame head read in one piece; -1 when outside it. */
static __always_inline int head_byte(const __u64 *head, __s32 offset)
{
	__u32 index;

	if (offset < 0 || offset >= FRAME_HEAD_BYTES)
		return -1;
	index = (__u32)offset >> 3;
	/* Keep the mask the compiler would drop after the check: the verifier needs it. */
	asm volatile("" : "+r"(index));
	return (head[index & (FRAME_HEAD_SLOTS - 1)] >> ((offset & 7) * 8)) & 0xff;
}

/* The 8-byte word at offset of a frame head; 0 when outside it or misaligned. */
static __always_inline __u64 frame_word(const __u64 *head, __s32 offset)
{
	__u32 index;

	if (offset < 0 || offset + 8 > FRAME_HEAD_BYTES || (offset & 7))
		return 0;
	index = (__u32)offset >> 3;
	asm volatile("" : "+r"(index));
	return head[index & (FRAME_HEAD_SLOTS - 1)];
}

/*
 * The callers' code objects, innermost first, shim frames and frames
 * without code skipped. One read per frame: its first 72 bytes.
 */
static __always_inline void capture_callers(const struct tcheck_python_process *process,
					    __u64 thread_state, struct python_frame *frame)
{
	__u64 current = calling_frame(process, thread_state);
	__u32 kept = 0;

	frame->caller_count = 0;
	for (int i = 0; i < PYTHON_CALLER_WALK && current; i++) {
		__u64 head[FRAME_HEAD_SLOTS] = {};
		__u64 code;
		int owner;

		if (bpf_probe_read_user(head, FRAME_HEAD_BYTES, (void *)current))
			break;
		code = frame_word(head, process->frame_code_offset) &
		       ~TCHECK_PYTHON_REFERENCE_TAG_BITS;
		owner = process->frame_owner_c_stack >= 0
				? head_byte(head, process->frame_owner_offset)
				: -1;
		if (owner >= 0 && owner >= process->frame_owner_c_stack)
			code = 0;
		if (code && code != process->none) {
			frame->callers[kept & (TCHECK_PY_STACK_MAX - 1)] = code;
			if (++kept == TCHECK_PY_STACK_MAX)
				break;
		}
		current = frame_word(head, process->frame_previous_offset);
	}
	frame->caller_count = kept;
	frame->callers_cut = current != 0;
}

/* A call of a code object not ignored: its frame pushed. False: nothing to do at its return. */
static __always_inline bool frame_entered(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	struct tcheck_python_process *process;
	struct python_stack *stack;
	struct python_frame *frame;
	__u64 code = 0, name = 0, stack_pointer = PT_REGS_SP(ctx);

	if (!is_traced(pid))
		return false;
	process = bpf_map_lookup_elem(&python_processes, &pid);
	if (!process)
		return false;
	if (bpf_probe_read_user(&code, sizeof(code),
				(void *)(PT_REGS_PARM2(ctx) + process->frame_code_offset)) ||
	    !(code &= ~TCHECK_PYTHON_REFERENCE_TAG_BITS) ||
	    bpf_probe_read_user(&name, sizeof(name), (void *)(code + process->code_name_offset)) ||
	    verdict_of(pid, code, name) == TCHECK_CODE_IGNORED)
		return false;
	stack = python_stack_of(tid, true);
	if (!stack)
		return false;
	/* Past the kernel's nesting limit returns go unreported: those frames ended. */
	THREAD_STACK_DROP_ENDED(stack, frames, PYTHON_MAX_DEPTH, PYTHON_STALE_POPS, stack_pointer);
	frame = THREAD_STACK_SLOT(stack, frames, PYTHON_MAX_DEPTH);
	if (!frame) {
		count(TCHECK_COUNTER_PYTHON_TOO_DEEP);
		return false;
	}
	frame->code = code;
	frame->name = name;
	frame->entry_ns = bpf_ktime_get_ns();
	frame->stack = stack_pointer;
	capture_arguments(process, PT_REGS_PARM2(ctx), code, frame);
	capture_outermost_self(stack, frame);
	capture_callers(process, PT_REGS_PARM1(ctx), frame);
	stack->depth++;
	return true;
}

SEC("uprobe")
int python_frame_entry(struct pt_regs *ctx)
{
	frame_entered(ctx);
	return 0;
}

/* The return of a call frame_entered pushed (or of an ignored one, then dropped). */
static __always_inline void frame_returned(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 pid = pid_tgid >> 32, tid = (__u32)pid_tgid;
	/* The return address has been popped: the caller's stack is 8 bytes up. */
	__u64 entry_stack = PT_REGS_SP(ctx) - 8;
	struct tcheck_python_record *record;
	struct python_stack *stack;
	struct python_frame *frame;
	__u8 verdict;

	if (!is_traced(pid))
		return;
	stack = python_stack_of(tid, false);
	if (!stack)
		return;
	THREAD_STACK_DROP_ENDED(stack, frames, PYTHON_MAX_DEPTH, PYTHON_STALE_POPS,
				entry_stack - 1);
	frame = THREAD_STACK_TOP(stack, frames, PYTHON_MAX_DEPTH);
	/* Not the call on top: the return of an ignored one. */
	if (!frame || frame->stack != entry_stack)
		return;
	stack->depth--;
	verdict = verdict_of(pid, frame->code, frame->name);
	if (verdict == TCHECK_CODE_IGNORED)
		return;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return;
	}
	fill_header(&record->header, TCHECK_RECORD_PYTHON_CALL, pid, tid, frame->entry_ns);
	record->return_ns = bpf_ktime_get_ns();
	record->code = frame->code;
	record->code_name = frame->name;
	record->depth = stack->depth;
	record->flags = (PT_REGS_RC(ctx) ? 0 : TCHECK_PYTHON_RAISED) |
			(frame->callers_cut ? TCHECK_PYTHON_CALLERS_CUT : 0);
	record->arg_count = frame->arg_count;
	record->stack_depth = frame->caller_count;
	__builtin_memcpy(record->args, frame->args, sizeof(record->args));
	__builtin_memcpy(record->stack, frame->callers, sizeof(record->stack));
	/*
	 * A code object not named yet must be read while it exists: wake the
	 * daemon now. There are few of them, so this costs little.
	 */
	bpf_ringbuf_submit(record, verdict ? call_wakeup_flags(record) : BPF_RB_FORCE_WAKEUP);
}

SEC("uretprobe")
int python_frame_return(struct pt_regs *ctx)
{
	frame_returned(ctx);
	return 0;
}

/* The kernel's (6.13+): whether a session program runs at the return. */
extern bool bpf_session_is_return(void) __ksym __weak;

/*
 * The same as one uprobe session (kernels with them): the entry answers 1
 * for a call that is not followed, and the kernel then sets up no return
 * probe for it, which halves the probe hits of the calls of ignored code
 * (most of them).
 */
SEC("uprobe")
int python_frame_session(struct pt_regs *ctx)
{
	if (bpf_session_is_return()) {
		frame_returned(ctx);
		return 0;
	}
	return frame_entered(ctx) ? 0 : 1;
}
