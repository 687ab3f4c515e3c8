/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The Python frames a thread is in, read from a probe anywhere (an NCCL
 * entry): the thread's state is found in the interpreter's thread list by
 * its pthread_t, which works whether the thread holds the GIL or not (a
 * ctypes or pybind call has dropped it); its frame chain is then walked,
 * innermost first. A thread with no Python state (a C++ worker such as
 * PyTorch's NCCL or DDP threads) gets the main thread's frames, flagged.
 */
#ifndef TCHECK_PYTHON_CONTEXT_BPF_H
#define TCHECK_PYTHON_CONTEXT_BPF_H

#include "tcheck/probe_abi.h"
#include "python_thread_state.bpf.h"
#include "thread_stack.bpf.h"
#include "tracer_maps.bpf.h"

/* Frames looked at: the kept ones plus the 3.12+ shims between them. */
#define PYTHON_CONTEXT_MAX_FRAMES (2 * TCHECK_PY_STACK_MAX)

static __always_inline __u64 python_current_frame(const struct tcheck_python_stack_layout *layout,
						  __u64 state)
{
	if (layout->thread_frame >= 0)
		return user_u64(state + layout->thread_frame);
	return user_u64(user_u64(state + layout->thread_cframe) + layout->cframe_current_frame);
}

#define PYTHON_FRAME_HEADER_MAX 128

/* One frame's first bytes: its code, previous and owner members in a single read. */
struct python_frame_header {
	__u8 bytes[PYTHON_FRAME_HEADER_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct python_frame_header);
} python_frame_headers SEC(".maps") __weak;

static __always_inline __u64 header_u64(const struct python_frame_header *header, __s32 offset)
{
	if (offset < 0 || offset > PYTHON_FRAME_HEADER_MAX - 8)
		return 0;
	return *(const __u64 *)&header->bytes[offset];
}

/*
 * Fills a record's Python frames (their count, TCHECK_CALL_PY_* flags, code
 * and name objects) when its process's Python is traced: none otherwise.
 */
static __always_inline void python_frames_read(__u32 pid, __u32 *depth_out, __u32 *flags,
					       __u64 *codes, __u64 *names)
{
	const struct tcheck_python_stack_layout *layout;
	struct python_frame_header *header;
	__u32 depth = 0, zero = 0, size;
	bool main_thread, shim;
	__u64 frame, code;

	*depth_out = 0;
	*flags = 0;
	if (!python_stacks_followed)
		return;
	layout = bpf_map_lookup_elem(&python_stack_layouts, &pid);
	if (!layout)
		return;
	header = bpf_map_lookup_elem(&python_frame_headers, &zero);
	size = layout->frame_header_size;
	if (!header || size == 0 || size > PYTHON_FRAME_HEADER_MAX)
		return;
	frame = python_thread_state(layout, &main_thread);
	if (!frame)
		return;
	if (main_thread)
		*flags |= TCHECK_CALL_PY_MAIN_THREAD;
	frame = python_current_frame(layout, frame);
	for (int i = 0; i < PYTHON_CONTEXT_MAX_FRAMES && frame; i++) {
		if (depth >= TCHECK_PY_STACK_MAX)
			break;
		if (bpf_probe_read_user(header->bytes, size, (void *)frame))
			break;
		code = header_u64(header, layout->frame_code) & ~TCHECK_PYTHON_REFERENCE_TAG_BITS;
		shim = layout->frame_owner_c_stack >= 0 && layout->frame_owner >= 0 &&
		       layout->frame_owner < PYTHON_FRAME_HEADER_MAX &&
		       header->bytes[layout->frame_owner] >= layout->frame_owner_c_stack;
		/* Shim frames and 3.13's None executables are not Python functions. */
		if (!shim && code && code != layout->none) {
			codes[depth & (TCHECK_PY_STACK_MAX - 1)] = code;
			names[depth & (TCHECK_PY_STACK_MAX - 1)] =
				user_u64(code + layout->code_name_offset);
			depth++;
		}
		frame = header_u64(header, layout->frame_previous);
	}
	*depth_out = depth;
}

/* Fills the call's Python frames when its process's Python is traced. */
static __always_inline void python_context_read(__u32 pid, struct tcheck_open_call *call)
{
	python_frames_read(pid, &call->py_depth, &call->py_flags, call->py_code, call->py_name);
}

/*
 * Whether the daemon has named every one of a record's frames: a code object
 * it has not seen must be read while the process lives, so the record wakes it.
 */
static __always_inline bool python_frames_named(__u32 pid, __u32 depth, const __u64 *codes,
						const __u64 *names)
{
	struct tcheck_code_key key = { .pid = pid, .reserved = 0 };

	for (int i = 0; i < TCHECK_PY_STACK_MAX; i++) {
		if (i >= depth)
			break;
		key.code = codes[i];
		key.name = names[i];
		if (!bpf_map_lookup_elem(&code_verdicts, &key))
			return false;
	}
	return true;
}

/* The same for an NCCL call's frames. */
static __always_inline bool python_context_named(__u32 pid, const struct tcheck_open_call *call)
{
	return python_frames_named(pid, call->py_depth, call->py_code, call->py_name);
}

#endif /* TCHECK_PYTHON_CONTEXT_BPF_H */
