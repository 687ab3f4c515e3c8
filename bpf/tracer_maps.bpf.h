/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Maps shared by every BPF object of the tracer: the ring buffer, the set
 * of traced processes, the calls open on each thread and the loss counters. Declared weak so that
 * the objects linked into one skeleton share one copy of each.
 */
#ifndef TCHECK_TRACER_MAPS_BPF_H
#define TCHECK_TRACER_MAPS_BPF_H

#include "tcheck/probe_abi.h"

/* Set by the daemon: probes fire for every process mapping the library,
 * so keep only the processes in traced_pids. */
const volatile bool filter_by_pid __weak = false;

/* Size is set by the daemon before load (--ring-buffer-mb). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps") __weak;

/* Processes being traced; children of traced processes join at fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} traced_pids SEC(".maps") __weak;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, TCHECK_COUNTER_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps") __weak;

/*
 * Task storage: found from the thread itself, without hashing its id (about
 * 20 ns a call less than a hash map, entry and return together). Made at a
 * traced thread's first call, gone with the thread; user space reads it
 * through the open_calls_of_threads iterator (library_calls.bpf.c).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct tcheck_thread_calls);
} open_calls SEC(".maps") __weak;

/* Per library, where struct ncclComm keeps identity (filled by the daemon from DWARF). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, TCHECK_MAX_COMM_LAYOUTS);
	__type(key, __u32);
	__type(value, struct tcheck_comm_layout);
} comm_layouts SEC(".maps") __weak;

/* The daemon's verdict per code object (absent: not decided yet, send). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct tcheck_code_key);
	__type(value, __u8);
} code_verdicts SEC(".maps") __weak;

/*
 * Processes running Python, with where their frames keep the code object:
 * filled by the daemon as it follows a process, and by the process probes
 * at a fork (the child runs its parent's image) and at an exec of an
 * interpreter file already followed (python_exec_layouts), so a process is
 * seen from its first instruction whatever the daemon is busy with.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tcheck_python_process);
} python_processes SEC(".maps") __weak;

/* Interpreter executables already followed, by file: their addresses relative to start_code. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, struct tcheck_file_key);
	__type(value, struct tcheck_python_process);
} python_exec_layouts SEC(".maps") __weak;

/* Processes whose Python is traced: how to find a thread's frames (filled by the daemon). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tcheck_python_stack_layout);
} python_stack_layouts SEC(".maps") __weak;

/*
 * Waking the reader costs more than a probe itself (a wake-up per call
 * doubled the cost per call; so did one per call once the buffer was a
 * quarter full, while the reader was behind): the reader polls on a short
 * timer, and is woken early by the record that takes the buffer past a
 * quarter, a half or three quarters of its size. wakeup_shift is log2 of a
 * quarter of the buffer, set by the daemon with its size.
 */
const volatile __u32 wakeup_shift __weak = 21; /* 8 MiB / 4 */

/* Bytes a record of 'size' takes in the ring buffer: an 8-byte header, rounded to 8. */
#define RINGBUF_FOOTPRINT(size) ((((__u64)(size)) + 8 + 7) & ~7ULL)

static __always_inline __u64 ringbuf_wakeup_flags(__u64 record_size)
{
	__u64 waiting = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA);
	__u64 before = waiting - RINGBUF_FOOTPRINT(record_size);

	if (waiting < RINGBUF_FOOTPRINT(record_size))
		return BPF_RB_NO_WAKEUP;
	return (waiting >> wakeup_shift) != (before >> wakeup_shift) ? BPF_RB_FORCE_WAKEUP
								     : BPF_RB_NO_WAKEUP;
}

/* For a reserved record: ringbuf_wakeup_flags of its size. */
#define call_wakeup_flags(record) ringbuf_wakeup_flags(sizeof(*(record)))

/*
 * Whether any traced process's Python is followed (python_stack_layouts has
 * an entry): set by the daemon, so that a process with none pays no look-up.
 */
volatile bool python_stacks_followed __weak = false;

static __always_inline bool is_traced(__u32 pid)
{
	return !filter_by_pid || bpf_map_lookup_elem(&traced_pids, &pid);
}

static __always_inline void count(enum tcheck_counter counter)
{
	__u32 key = counter;
	__u64 *value = bpf_map_lookup_elem(&counters, &key);

	if (value)
		*value += 1;
}

/* The header every ring-buffer record starts with. */
static __always_inline void fill_header(struct tcheck_record_header *header, __u32 type, __u32 pid,
					__u32 tid, __u64 timestamp_ns)
{
	header->type = type;
	header->pid = pid;
	header->tid = tid;
	header->reserved = 0;
	header->timestamp_ns = timestamp_ns;
}

#endif /* TCHECK_TRACER_MAPS_BPF_H */
