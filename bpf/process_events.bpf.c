// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Follows the traced processes: children join the traced set at fork
 * (torchrun and mp.spawn start ranks as children), and the daemon hears
 * of exec and exit so it can rescan libraries and close the books.
 * BTF-typed tracepoints: no tracefs and no kprobes needed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "tcheck/probe_abi.h"
#include "exec_environment.bpf.h"
#include "tracer_maps.bpf.h"

static __always_inline bool is_in_traced_set(__u32 pid)
{
	return bpf_map_lookup_elem(&traced_pids, &pid) != NULL;
}

static __always_inline void notify(__u32 type, __u32 pid, __u32 tid, __u32 child_pid,
				   __s32 exit_code, __u32 python_from_start)
{
	struct tcheck_process_record *record;

	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PROCESS_DROPS);
		return;
	}
	fill_header(&record->header, type, pid, tid, bpf_ktime_get_ns());
	record->child_pid = child_pid;
	record->exit_code = exit_code;
	record->command_length = 0;
	record->command_cut = 0;
	record->environment_read = 0;
	record->python_from_start = python_from_start;
	record->reserved = 0;
	/* Rare and needed at once (a new process's libraries, an exit): wake the reader. */
	bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(process_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_pid = BPF_CORE_READ(parent, tgid);
	__u32 child_pid = BPF_CORE_READ(child, tgid);
	struct tcheck_python_process *python;
	__u32 python_from_start = 0;
	__u8 traced = 1;

	/* A new thread shares its parent's tgid: only new processes count. */
	if (child_pid == parent_pid || !is_in_traced_set(parent_pid))
		return 0;
	bpf_map_update_elem(&traced_pids, &child_pid, &traced, BPF_ANY);
	/* The child runs its parent's image: its Python is where the parent's is. */
	python = bpf_map_lookup_elem(&python_processes, &parent_pid);
	if (python)
		python_from_start =
			!bpf_map_update_elem(&python_processes, &child_pid, python, BPF_ANY);
	notify(TCHECK_RECORD_PROCESS_FORK, parent_pid, BPF_CORE_READ(parent, pid), child_pid, 0,
	       python_from_start);
	return 0;
}

/*
 * A new image of an interpreter file already followed: its Python, with
 * the object addresses moved to where this image's code starts. Any other
 * image drops the entry its previous image left. 1: followed from here.
 */
static __always_inline __u32 follow_exec_python(struct task_struct *task, __u32 pid)
{
	struct tcheck_file_key key = {
		.inode = BPF_CORE_READ(task, mm, exe_file, f_inode, i_ino),
		.device = BPF_CORE_READ(task, mm, exe_file, f_inode, i_sb, s_dev),
		.reserved = 0,
	};
	struct tcheck_python_process *known = bpf_map_lookup_elem(&python_exec_layouts, &key);
	struct tcheck_python_process python;

	if (!known) {
		bpf_map_delete_elem(&python_processes, &pid);
		return 0;
	}
	python = *known;
	tcheck_python_process_move(&python, BPF_CORE_READ(task, mm, start_code));
	return !bpf_map_update_elem(&python_processes, &pid, &python, BPF_ANY);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(process_exec, struct task_struct *task, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = BPF_CORE_READ(task, tgid);

	struct tcheck_process_record *record;
	__u64 arg_start, length;

	if (!is_in_traced_set(pid))
		return 0;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PROCESS_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_PROCESS_EXEC, pid, BPF_CORE_READ(task, pid),
		    bpf_ktime_get_ns());
	record->child_pid = 0;
	record->exit_code = 0;
	record->command_cut = 0;
	record->command_length = 0;
	record->python_from_start = follow_exec_python(task, pid);
	record->reserved = 0;
	/* The new image's arguments, on its own stack: the task is the current one. */
	arg_start = BPF_CORE_READ(task, mm, arg_start);
	length = BPF_CORE_READ(task, mm, arg_end) - arg_start;
	if (length > TCHECK_COMMAND_BYTES) {
		length = TCHECK_COMMAND_BYTES;
		record->command_cut = 1;
	}
	if (length && !bpf_probe_read_user(record->command, length, (void *)arg_start))
		record->command_length = length;
	read_exec_environment(task, record);
	/* Rare and needed at once (the new image's libraries): wake the reader. */
	bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/*
 * The calls a thread leaves open as it ends (killed inside a collective)
 * will never return: each becomes a call record flagged open, so the trace
 * keeps what the thread was inside, and since when.
 */
static __always_inline void report_open_calls(struct task_struct *task, __u32 pid, __u32 tid)
{
	struct tcheck_thread_calls *calls = bpf_task_storage_get(&open_calls, task, 0, 0);
	__u64 now = bpf_ktime_get_ns();

	if (!calls)
		return;
	for (__u32 i = 0; i < TCHECK_MAX_NESTING; i++) {
		const struct tcheck_open_call *frame = &calls->frames[i];
		struct tcheck_call_record *record;

		if (i >= calls->depth)
			break;
		/* A poll (ncclCommGetAsyncError) a watchdog thread was in as it ended says nothing.
		 */
		if (frame->cookie & TCHECK_COOKIE_ONLY_FAILURES)
			continue;
		record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
		if (!record) {
			count(TCHECK_COUNTER_RINGBUF_DROPS);
			return;
		}
		__builtin_memset(record, 0, sizeof(*record));
		fill_header(&record->header, TCHECK_RECORD_CALL, pid, tid, frame->entry_ns);
		record->return_ns = now;
		__builtin_memcpy(record->args, frame->args, sizeof(record->args));
		record->function_index = frame->cookie & TCHECK_COOKIE_FUNCTION_MASK;
		record->depth = i;
		record->flags = TCHECK_CALL_OPEN | frame->py_flags | frame->call_flags;
		record->comm_op_count = frame->comm_op_count;
		if (frame->cookie & TCHECK_COOKIE_BLOB_FROM_STACK) {
			__builtin_memcpy(record->blob, frame->blob, TCHECK_BLOB_BYTES);
			record->flags |= TCHECK_CALL_HAS_BLOB;
		}
		record->py_depth = frame->py_depth;
		__builtin_memcpy(record->py_code, frame->py_code, sizeof(record->py_code));
		__builtin_memcpy(record->py_name, frame->py_name, sizeof(record->py_name));
		bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
	}
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(process_exit, struct task_struct *task)
{
	__u32 pid = BPF_CORE_READ(task, tgid);
	__u32 tid = BPF_CORE_READ(task, pid);

	/* The thread's open calls will never return. */
	if (is_in_traced_set(pid))
		report_open_calls(task, pid, tid);
	/* Reported: the open-calls walk must not find them again while the thread is freed. */
	bpf_task_storage_delete(&open_calls, task);
	/* Report the process once, when its last thread leaves. */
	if (BPF_CORE_READ(task, signal, live.counter) != 0 || !is_in_traced_set(pid))
		return 0;
	bpf_map_delete_elem(&traced_pids, &pid);
	notify(TCHECK_RECORD_PROCESS_EXIT, pid, tid, 0, BPF_CORE_READ(task, exit_code), 0);
	return 0;
}
