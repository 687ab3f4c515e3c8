// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The Python exception that ends a process: an entry probe on
 * PyErr_Display(type, value, traceback), which CPython's default
 * sys.excepthook calls when an exception reaches the top of the main thread
 * and the process is about to exit, and one on PyErr_SetObject for an
 * exception a launcher caught before it calls sys.exit with a failure.
 * Everything is read here, while the objects are alive: the type's
 * tp_name, the message (the exception's first argument, when it is an
 * ASCII str) and the code objects along its traceback. The process's
 * layout comes from python_stack_layouts.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tcheck/probe_abi.h"
#include "python_thread_state.bpf.h"
#include "thread_stack.bpf.h"
#include "tracer_maps.bpf.h"

/* ob_type, PyTypeObject.tp_name, PyTupleObject's size, the traceback's links. */
#define OBJECT_TYPE 8
#define TYPE_NAME 24
#define TUPLE_SIZE 16
#define TRACEBACK_NEXT 16
#define TRACEBACK_FRAME 24
#define UNICODE_COMPACT_ASCII (3U << 5)
#define SIGNAL_STOP 19 /* SIGSTOP */
/* _PyErr_StackItem (3.11+): the exception, then the item below it. */
#define STACK_ITEM_VALUE 0
#define STACK_ITEM_PREVIOUS 8
#define HANDLED_ITEMS_MAX 4

/*
 * --freeze-on-crash: stop the process at PyErr_Display, before the
 * exception is printed and the interpreter torn down, or as a handler that
 * caught the exception calls sys.exit with a failure (a spawned worker),
 * for an operator to look at it live. The only signal the tracer ever
 * sends, and only when asked.
 */
const volatile bool freeze_on_crash = false;

/* The message: the first argument, when it is a compact ASCII str. */
static __always_inline void read_message(const struct tcheck_python_stack_layout *layout,
					 __u64 value, struct tcheck_python_exception_record *record)
{
	__u64 args = user_u64(value + layout->exception_args), text;
	__u32 state = 0;

	if (!args || user_u64(args + TUPLE_SIZE) < 1)
		return;
	text = user_u64(args + layout->tuple_items);
	if (!text || user_u64(text + OBJECT_TYPE) != layout->unicode_type)
		return;
	if (bpf_probe_read_user(&state, sizeof(state),
				(const void *)(text + layout->unicode_state)) ||
	    (state & UNICODE_COMPACT_ASCII) != UNICODE_COMPACT_ASCII)
		return;
	if (bpf_probe_read_user_str(record->message, sizeof(record->message),
				    (const void *)(text + layout->unicode_ascii_data)) < 0)
		record->message[0] = 0;
}

/* The traceback's code objects, outermost first; the last ones kept in a ring. */
static __always_inline void read_traceback(const struct tcheck_python_stack_layout *layout,
					   __u64 traceback,
					   struct tcheck_python_exception_record *record)
{
	__u32 count = 0;

	for (int i = 0; i < TCHECK_EXCEPTION_TRACEBACK_MAX && traceback; i++) {
		__u64 frame = user_u64(traceback + TRACEBACK_FRAME);

		/* 3.11+: the frame object owns a copy of the interpreter frame. */
		if (frame && layout->frame_object_frame >= 0)
			frame = user_u64(frame + layout->frame_object_frame);
		if (frame && layout->frame_code >= 0)
			record->codes[count % TCHECK_PY_STACK_MAX] =
				user_u64(frame + layout->frame_code) &
				~TCHECK_PYTHON_REFERENCE_TAG_BITS;
		count++;
		traceback = user_u64(traceback + TRACEBACK_NEXT);
	}
	record->frame_count = count;
}

/* Sends the exception value as a record: type name, message, traceback. */
static __always_inline void send_exception(const struct tcheck_python_stack_layout *layout,
					   __u64 pid_tgid, __u64 value, __u64 traceback,
					   __u32 flags)
{
	struct tcheck_python_exception_record *record;
	__u64 type_name;

	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return;
	}
	fill_header(&record->header, TCHECK_RECORD_PYTHON_EXCEPTION, pid_tgid >> 32,
		    (__u32)pid_tgid, bpf_ktime_get_ns());
	__builtin_memset(record->codes, 0, sizeof(record->codes));
	record->type_name[0] = 0;
	record->message[0] = 0;
	record->flags = flags;
	type_name = user_u64(user_u64(value + OBJECT_TYPE) + TYPE_NAME);
	if (!type_name || bpf_probe_read_user_str(record->type_name, sizeof(record->type_name),
						  (const void *)type_name) < 0)
		record->type_name[0] = 0;
	read_message(layout, value, record);
	/* 3.12+ pass no traceback of their own: the exception carries it. */
	if (!traceback && layout->exception_traceback > 0)
		traceback = user_u64(value + layout->exception_traceback);
	read_traceback(layout, traceback, record);
	bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
}

SEC("uprobe")
int python_exception_display(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	const struct tcheck_python_stack_layout *layout;
	__u32 pid = pid_tgid >> 32;
	__u64 value = PT_REGS_PARM2(ctx);

	if (!is_traced(pid) || !value)
		return 0;
	layout = bpf_map_lookup_elem(&python_stack_layouts, &pid);
	if (!layout)
		return 0;
	send_exception(layout, pid_tgid, value, PT_REGS_PARM3(ctx), 0);
	if (freeze_on_crash)
		bpf_send_signal(SIGNAL_STOP);
	return 0;
}

/*
 * True when sys.exit's status says success: none, None, or an int whose
 * first digit is 0 (0; statuses are small ints).
 */
static __always_inline bool exits_cleanly(const struct tcheck_python_stack_layout *layout,
					  __u64 status)
{
	__u32 digit = 1;

	if (!status || status == layout->none)
		return true;
	if (user_u64(status + OBJECT_TYPE) != layout->long_type)
		return false;
	bpf_probe_read_user(&digit, sizeof(digit), (const void *)(status + layout->long_digits));
	return digit == 0;
}

/* The exception the thread is handling, 0 when none: the topmost set item. */
static __always_inline __u64 handled_exception(const struct tcheck_python_stack_layout *layout)
{
	bool main_thread;
	__u64 state = python_thread_state(layout, &main_thread), item, value;

	if (!state || main_thread)
		return 0;
	item = user_u64(state + layout->thread_exception_handled);
	for (int i = 0; i < HANDLED_ITEMS_MAX && item; i++) {
		value = user_u64(item + STACK_ITEM_VALUE);
		if (value && value != layout->none)
			return value;
		item = user_u64(item + STACK_ITEM_PREVIOUS);
	}
	return 0;
}

/*
 * PyErr_SetObject(type, value), as sys.exit raises SystemExit: with a
 * failure status, while the thread handles an exception (sys.exit(1) in an
 * except block, as torch.multiprocessing.spawn's worker wrapper does), the
 * handled exception is what ends the process: it is sent, flagged (and,
 * under --freeze-on-crash, the process stopped). Any other exception set
 * is left after one read.
 */
SEC("uprobe")
int python_exception_at_exit(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	const struct tcheck_python_stack_layout *layout;
	__u32 pid = pid_tgid >> 32;
	__u64 type = PT_REGS_PARM1(ctx), status = PT_REGS_PARM2(ctx), handled;

	/* SystemExit ends a process only from its main thread; elsewhere, only that thread. */
	if (!is_traced(pid) || !type || (__u32)pid_tgid != pid)
		return 0;
	layout = bpf_map_lookup_elem(&python_stack_layouts, &pid);
	if (!layout || !layout->system_exit_type || layout->thread_exception_handled < 0)
		return 0;
	if (type != user_u64(layout->system_exit_type) || exits_cleanly(layout, status))
		return 0;
	handled = handled_exception(layout);
	if (!handled)
		return 0;
	send_exception(layout, pid_tgid, handled, 0, TCHECK_EXCEPTION_HANDLED_AT_EXIT);
	/* Still inside the handler: the exception, its frames and locals are alive. */
	if (freeze_on_crash)
		bpf_send_signal(SIGNAL_STOP);
	return 0;
}
