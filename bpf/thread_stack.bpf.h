/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What the probe pairs share: per-thread stacks of open calls and the reads of
 * the traced process's memory.
 *
 * A probe pair keeps the calls it has entered but not yet returned from in a
 * hash map from thread id to a fixed-depth stack. A stack is too large for
 * the BPF stack, so a thread's first call copies a zeroed one from a per-CPU
 * array: THREAD_STACKS declares both maps and the lookup NAME_of(tid,
 * create). Returns the kernel did not report (past its nesting limit, or a
 * thread leaving frames by longjmp) are dropped by stack position with
 * THREAD_STACK_DROP_ENDED.
 */
#ifndef TCHECK_THREAD_STACK_BPF_H
#define TCHECK_THREAD_STACK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* Threads with a stack at once, per map: a training job has a few hundred. */
#define THREAD_STACK_THREADS 16384

/*
 * MAP: thread id -> VALUE_TYPE (flags: 0, or BPF_F_NO_PREALLOC for a large
 * value only some threads need); GETTER(tid, create): the thread's stack,
 * made from a zeroed one when asked.
 */
#define THREAD_STACKS(MAP, GETTER, VALUE_TYPE, FLAGS) \
	THREAD_STACK_MAP(MAP, VALUE_TYPE, FLAGS);     \
	THREAD_STACK_GETTER(MAP, GETTER, VALUE_TYPE)

/*
 * The map alone, for one that several programs share: declared where each
 * includes it, followed by __weak (the linker keeps one), with its GETTER
 * where it is written.
 */
#define THREAD_STACK_MAP(MAP, VALUE_TYPE, FLAGS)           \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_HASH);           \
		__uint(max_entries, THREAD_STACK_THREADS); \
		__uint(map_flags, FLAGS);                  \
		__type(key, __u32);                        \
		__type(value, VALUE_TYPE);                 \
	} MAP SEC(".maps")

/* GETTER for a MAP declared elsewhere (one that other programs share). */
#define THREAD_STACK_GETTER(MAP, GETTER, VALUE_TYPE)                      \
	struct {                                                          \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);                  \
		__uint(max_entries, 1);                                   \
		__type(key, __u32);                                       \
		__type(value, VALUE_TYPE);                                \
	} MAP##_empty SEC(".maps");                                       \
	static __always_inline VALUE_TYPE *GETTER(__u32 tid, bool create) \
	{                                                                 \
		VALUE_TYPE *stack = bpf_map_lookup_elem(&MAP, &tid);      \
		__u32 zero = 0;                                           \
                                                                          \
		if (stack || !create)                                     \
			return stack;                                     \
		stack = bpf_map_lookup_elem(&MAP##_empty, &zero);         \
		if (!stack)                                               \
			return NULL;                                      \
		bpf_map_update_elem(&MAP, &tid, stack, BPF_NOEXIST);      \
		return bpf_map_lookup_elem(&MAP, &tid);                   \
	}

/*
 * Entries at or below STACK_POINTER have ended: the thread uses that stack
 * again. ENTRIES is the stack's array (each entry with a 'stack' member, the
 * stack pointer at entry), MAX its length (a power of two), at most POPS pops.
 */
#define THREAD_STACK_DROP_ENDED(STACK, ENTRIES, MAX, POPS, STACK_POINTER)                     \
	do {                                                                                  \
		for (int pop_ = 0; pop_ < (POPS); pop_++) {                                   \
			__u32 top_ = (STACK)->depth;                                          \
                                                                                              \
			if (top_ == 0 || top_ > (MAX) ||                                      \
			    (STACK)->ENTRIES[(top_ - 1) & ((MAX)-1)].stack > (STACK_POINTER)) \
				break;                                                        \
			(STACK)->depth = top_ - 1;                                            \
		}                                                                             \
	} while (0)

/*
 * The entry on top of STACK (ENTRIES[MAX], MAX a power of two), NULL when it
 * is empty; the empty ['slot'] one above it, NULL when it is full. The asm
 * keeps the bound the verifier needs past the compiler's checks.
 */
#define THREAD_STACK_TOP(STACK, ENTRIES, MAX)                                   \
	({                                                                      \
		__u32 top_depth_ = (STACK)->depth;                              \
		typeof(&(STACK)->ENTRIES[0]) top_ = NULL;                       \
                                                                                \
		if (top_depth_ > 0 && top_depth_ <= (MAX)) {                    \
			asm volatile("" : "+r"(top_depth_));                    \
			top_ = &(STACK)->ENTRIES[(top_depth_ - 1) & ((MAX)-1)]; \
		}                                                               \
		top_;                                                           \
	})
#define THREAD_STACK_SLOT(STACK, ENTRIES, MAX)                              \
	({                                                                  \
		__u32 slot_depth_ = (STACK)->depth;                         \
		typeof(&(STACK)->ENTRIES[0]) slot_ = NULL;                  \
                                                                            \
		if (slot_depth_ < (MAX)) {                                  \
			asm volatile("" : "+r"(slot_depth_));               \
			slot_ = &(STACK)->ENTRIES[slot_depth_ & ((MAX)-1)]; \
		}                                                           \
		slot_;                                                      \
	})

/* A word of the traced process's memory; 0 where it cannot be read. */
static __always_inline __u64 user_u64(__u64 address)
{
	__u64 value = 0;

	if (bpf_probe_read_user(&value, sizeof(value), (const void *)address))
		return 0;
	return value;
}

/* Four bytes of the traced process's memory; 0 where they cannot be read. */
static __always_inline __u32 user_u32(__u64 address)
{
	__u32 value = 0;

	if (bpf_probe_read_user(&value, sizeof(value), (const void *)address))
		return 0;
	return value;
}

#endif /* TCHECK_THREAD_STACK_BPF_H */
