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
#include "python_context.bpf.h"
#include "tcheck/probe_abi.h"
#include "torch_scope_stack.bpf.h"
#include "tracer_maps.bpf.h"

#define TORCH_OP_DEPTH 8

/* Each thread's grad mode as GradMode::set_enabled last set it (TCHECK_GRAD_MODE_*). */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u32);
} grad_modes SEC(".maps");

/*
 * c10::GradMode::set_enabled(bool): what torch.no_grad(), torch.enable_grad()
 * and the optimizers' own no_grad call, entering and leaving; the bool is
 * rdi's low byte. c10::AutogradState::set_tls_state(AutogradState): what
 * torch.inference_mode() calls instead, entering and leaving; grad mode is
 * bit 0 of the state, in rdi or at an offset from it (the cookie says,
 * probe_abi.h's TCHECK_GRAD_MODE_FROM_*).
 */
SEC("uprobe")
int grad_mode_set(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 first = PT_REGS_PARM1(ctx);
	__u8 state;
	__u32 *mode;
	bool on;

	if (!is_traced(bpf_get_current_pid_tgid() >> 32))
		return 0;
	switch (cookie & TCHECK_GRAD_MODE_FROM_MASK) {
	case TCHECK_GRAD_MODE_FROM_STATE_VALUE:
		on = first & 1;
		break;
	case TCHECK_GRAD_MODE_FROM_STATE_REFERENCE:
		if (bpf_probe_read_user(
			    &state, sizeof(state),
			    (void *)(first + (cookie >> TCHECK_GRAD_MODE_STATE_OFFSET_SHIFT))))
			return 0;
		on = state & 1;
		break;
	default:
		on = first & 0xff;
	}
	mode = bpf_task_storage_get(&grad_modes, bpf_get_current_task_btf(), 0,
				    BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (mode)
		*mode = on ? TCHECK_GRAD_MODE_ON : TCHECK_GRAD_MODE_OFF;
	return 0;
}

static __always_inline __u32 thread_grad_mode(void)
{
	__u32 *mode = bpf_task_storage_get(&grad_modes, bpf_get_current_task_btf(), 0, 0);

	return mode ? *mode : TCHECK_GRAD_MODE_UNKNOWN;
}

struct torch_op_call {
	__u64 entry_ns;
	__u32 operator;
	__u32 scalar_tag;
	__u64 tensor;
	__u64 scalar;
	__u32 contents;
	__u64 digest;
	__u64 numel;
	__u32 dims;
	__u32 dtype;
	__u64 sizes[TCHECK_TORCH_OP_DIMS_MAX];
	__u32 requires_grad;
	__u64 storage; /* its StorageImpl, where read_storage read it */
};

/* TensorImpl from its SizesAndStrides to its dtype, as the cookie's numel offset places it. */
struct shape_layout {
	__u64 dims;
	__u64 sizes[TCHECK_TORCH_OP_SIZES_BEFORE_NUMEL / 8 - 1];
	__u64 numel;
	__u8 dtype;
};

/*
 * Where a tensor's bytes are (the cookie gives the header size: 24 bytes in
 * torch 1.13, 16 in 2.x): a TensorImpl and a StorageImpl both start with
 * c10::intrusive_ptr_target (vtable, reference and weak counts). The
 * TensorImpl's first member is its Storage (one StorageImpl pointer); the
 * StorageImpl's is its DataPtr (the data pointer, the deleter context's
 * two words, then the c10::Device, whose first byte is the device type, 0
 * for the CPU), then its size in bytes (a size_t in 1.13, a SymInt holding
 * the integer in 2.x).
 */
struct storage_layout {
	__u64 data;
	__u64 deleter_context[2];
	__s8 device_type;
	__u8 device_index;
	__u8 padding[6];
	__u64 size_bytes;
};
#define DEVICE_TYPE_CPU 0
#define DIGEST_SAMPLE_BYTES 64

/* FNV-1a over 64-bit words: only equality across processes matters. */
static __always_inline __u64 digest_words(__u64 hash, const __u64 *words, int count)
{
	for (int i = 0; i < count; i++) {
		hash ^= words[i];
		hash *= 0x100000001b3ULL;
	}
	return hash;
}

/* The tensor's StorageImpl (kept in call->storage); false when it cannot be read. */
static __always_inline bool read_storage_address(struct torch_op_call *call, __u64 header)
{
	return header &&
	       !bpf_probe_read_user(&call->storage, sizeof(call->storage),
				    (const void *)(call->tensor + header)) &&
	       call->storage;
}

/* The tensor's StorageImpl's first members; false when they cannot be read. */
static __always_inline bool read_storage(struct torch_op_call *call, __u64 header,
					 struct storage_layout *storage)
{
	return read_storage_address(call, header) &&
	       !bpf_probe_read_user(storage, sizeof(*storage),
				    (const void *)(call->storage + header));
}

/*
 * Whether a weight the forward reads has bytes: torch.compile runs the
 * model's code on fake tensors (a meta storage, no data) while it traces it.
 */
static __always_inline void check_data(struct torch_op_call *call, __u64 header)
{
	struct storage_layout storage;

	if (read_storage(call, header, &storage) && !storage.data)
		call->contents = TCHECK_TENSOR_CONTENTS_NO_DATA;
}

/*
 * The first and the last 64 bytes of the tensor's storage (fewer for a
 * smaller one) and its size, hashed: a cheap digest of a parameter that
 * replicas holding the same values share. Device memory is not read.
 */
static __always_inline void read_contents(struct torch_op_call *call, __u64 header)
{
	struct storage_layout storage;
	__u64 sample[DIGEST_SAMPLE_BYTES / 8], hash = 0xcbf29ce484222325ULL;
	__u64 size;

	call->contents = TCHECK_TENSOR_CONTENTS_UNREADABLE;
	if (!read_storage(call, header, &storage))
		return;
	if (storage.device_type != DEVICE_TYPE_CPU) {
		call->contents = TCHECK_TENSOR_CONTENTS_DEVICE;
		return;
	}
	size = storage.size_bytes;
	if (!storage.data || !size)
		return;
	__builtin_memset(sample, 0, sizeof(sample));
	if (size >= DIGEST_SAMPLE_BYTES) {
		if (bpf_probe_read_user(sample, DIGEST_SAMPLE_BYTES, (const void *)storage.data))
			return;
		hash = digest_words(hash, sample, DIGEST_SAMPLE_BYTES / 8);
		if (bpf_probe_read_user(sample, DIGEST_SAMPLE_BYTES,
					(const void *)(storage.data + size - DIGEST_SAMPLE_BYTES)))
			return;
	} else if (bpf_probe_read_user(sample, size & (DIGEST_SAMPLE_BYTES - 1),
				       (const void *)storage.data)) {
		return;
	}
	hash = digest_words(hash, sample, DIGEST_SAMPLE_BYTES / 8);
	call->digest = digest_words(hash, &size, 1);
	call->contents = TCHECK_TENSOR_CONTENTS_READ;
}

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

/* The tensor's element count, dtype and sizes (up to 4 dimensions): one read. */
static __always_inline void read_shape(struct torch_op_call *call, __u64 numel_offset)
{
	struct shape_layout shape;

	if (!numel_offset || numel_offset < TCHECK_TORCH_OP_SIZES_BEFORE_NUMEL ||
	    bpf_probe_read_user(&shape, sizeof(shape),
				(const void *)(call->tensor + numel_offset -
					       TCHECK_TORCH_OP_SIZES_BEFORE_NUMEL)))
		return;
	call->numel = shape.numel;
	call->dims = (__u32)shape.dims;
	call->dtype = shape.dtype;
	for (int i = 0; i < TCHECK_TORCH_OP_DIMS_MAX; i++)
		call->sizes[i] = shape.sizes[i];
}

/*
 * Whether the tensor requires grad: its AutogradMeta (the TensorImpl's
 * member after its Storage; none for a tensor that never did) and the
 * flag's byte in it, at the offset the cookie gives; where the flag is
 * clear, whether autograd computes the tensor (its grad_fn_ set).
 */
static __always_inline __u32 read_requires_grad(__u64 tensor, __u64 header, __u64 flag_offset,
						__u64 grad_fn_offset)
{
	__u64 meta = 0, grad_fn = 0;
	__u8 flag = 0;

	if (!header || !flag_offset ||
	    bpf_probe_read_user(&meta, sizeof(meta), (const void *)(tensor + header + 8)))
		return TCHECK_REQUIRES_GRAD_UNKNOWN;
	if (!meta)
		return TCHECK_REQUIRES_GRAD_NO;
	if (bpf_probe_read_user(&flag, sizeof(flag), (const void *)(meta + flag_offset)))
		return TCHECK_REQUIRES_GRAD_UNKNOWN;
	if (flag)
		return TCHECK_REQUIRES_GRAD_YES;
	if (grad_fn_offset &&
	    !bpf_probe_read_user(&grad_fn, sizeof(grad_fn),
				 (const void *)(meta + grad_fn_offset)) &&
	    grad_fn)
		return TCHECK_REQUIRES_GRAD_COMPUTED;
	return TCHECK_REQUIRES_GRAD_NO;
}

/*
 * The tensor and scalar arguments the cookie names, and the tensor's
 * contents, shape and requires_grad: a few reads of the caller's memory.
 */
static __always_inline void read_arguments(struct pt_regs *ctx, __u64 cookie,
					   struct torch_op_call *call)
{
	__u64 registers[ENTRY_REGISTERS], tensor_slot, scalar_at;
	__u64 header = (cookie >> TCHECK_TORCH_OP_HEADER_SHIFT) & TCHECK_TORCH_OP_HEADER_MASK;
	struct scalar_layout scalar = { .tag = TCHECK_SCALAR_NONE };

	entry_registers_read(ctx, registers);
	tensor_slot = entry_register(registers, (cookie >> TCHECK_TORCH_OP_TENSOR_SHIFT) &
							TCHECK_TORCH_OP_REGISTER_MASK);
	scalar_at = entry_register(registers, (cookie >> TCHECK_TORCH_OP_SCALAR_SHIFT) &
						      TCHECK_TORCH_OP_REGISTER_MASK);

	call->tensor = 0;
	call->scalar = 0;
	call->scalar_tag = TCHECK_SCALAR_NONE;
	call->contents = TCHECK_TENSOR_CONTENTS_NONE;
	call->digest = 0;
	call->storage = 0;
	/* An at::Tensor is one pointer, its TensorImpl: the tensor's identity. */
	if (tensor_slot &&
	    bpf_probe_read_user(&call->tensor, sizeof(call->tensor), (const void *)tensor_slot))
		call->tensor = 0;
	call->numel = 0;
	call->dims = 0;
	call->dtype = 0;
	call->requires_grad = TCHECK_REQUIRES_GRAD_UNKNOWN;
	if (call->tensor) {
		/* The bytes only where the daemon keeps them: an update's old value. */
		if (cookie & TCHECK_TORCH_OP_READ_CONTENTS)
			read_contents(call, header);
		else if (cookie & TCHECK_TORCH_OP_CHECK_DATA)
			check_data(call, header);
		read_shape(call,
			   (cookie >> TCHECK_TORCH_OP_NUMEL_SHIFT) & TCHECK_TORCH_OP_NUMEL_MASK);
		call->requires_grad = read_requires_grad(
			call->tensor, header,
			(cookie >> TCHECK_TORCH_OP_REQUIRES_GRAD_SHIFT) &
				TCHECK_TORCH_OP_REQUIRES_GRAD_MASK,
			(cookie >> TCHECK_TORCH_OP_GRAD_FN_SHIFT) & TCHECK_TORCH_OP_GRAD_FN_MASK);
	}
	/*
	 * A bool argument is its register's or stack slot's low byte (the System V ABI
	 * leaves the rest); the first stack argument is above the return address.
	 */
	if (cookie & TCHECK_TORCH_OP_BOOL_BY_VALUE) {
		__u64 which =
			(cookie >> TCHECK_TORCH_OP_SCALAR_SHIFT) & TCHECK_TORCH_OP_REGISTER_MASK;

		if (which == TCHECK_TORCH_OP_FIRST_STACK_ARGUMENT &&
		    bpf_probe_read_user(&scalar_at, sizeof(scalar_at),
					(const void *)(PT_REGS_SP(ctx) + 8)))
			return;
		if (which) {
			call->scalar = (scalar_at & 0xff) != 0;
			call->scalar_tag = TCHECK_SCALAR_BOOL;
		}
		return;
	}
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
	bool caller, named = true;
	__u64 cookie;

	if (!is_traced(pid))
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
	call.entry_ns = bpf_ktime_get_ns();
	call.operator=(__u32)(cookie & TCHECK_TORCH_OP_INDEX_MASK);
	read_arguments(ctx, cookie, &call);
	/*
	 * A parameter set in place (under no_grad, or through its .data outside
	 * any torch scope): an initialiser, whose caller and storage are kept.
	 */
	caller = (cookie & TCHECK_TORCH_OP_READ_CALLER) &&
		 (call.requires_grad == TCHECK_REQUIRES_GRAD_YES ||
		  (call.requires_grad == TCHECK_REQUIRES_GRAD_NO && !torch_scope_open(tid)));
	if (caller && !call.storage)
		read_storage_address(&call, (cookie >> TCHECK_TORCH_OP_HEADER_SHIFT) &
						    TCHECK_TORCH_OP_HEADER_MASK);
	if (caller)
		record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	else
		record = bpf_ringbuf_reserve(&events, TCHECK_TORCH_OP_RECORD_SHORT_BYTES, 0);
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
	record->contents = call.contents;
	record->digest = call.digest;
	record->numel = call.numel;
	record->dims = call.dims;
	record->dtype = call.dtype;
	for (int i = 0; i < TCHECK_TORCH_OP_DIMS_MAX; i++)
		record->sizes[i] = call.sizes[i];
	record->requires_grad = call.requires_grad;
	record->grad_mode = thread_grad_mode();
	record->storage = call.storage;
	if (!caller) {
		bpf_ringbuf_submit(record,
				   ringbuf_wakeup_flags(TCHECK_TORCH_OP_RECORD_SHORT_BYTES));
		return 0;
	}
	python_frames_read(pid, &record->py_depth, &record->py_flags, record->py_code,
			   record->py_name);
	if (record->py_depth)
		named = python_frames_named(pid, record->py_depth, record->py_code,
					    record->py_name);
	bpf_ringbuf_submit(record, named ? call_wakeup_flags(record) : BPF_RB_FORCE_WAKEUP);
	return 0;
}
