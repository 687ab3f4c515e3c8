/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The torch scopes open on each thread (torch_scopes.bpf.c keeps them): the
 * operator probe asks whether one is open, to tell an initialiser's zero_
 * from an optimizer's.
 */
#ifndef TCHECK_TORCH_SCOPE_STACK_BPF_H
#define TCHECK_TORCH_SCOPE_STACK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "tcheck/probe_abi.h"
#include "thread_stack.bpf.h"

#define TORCH_SCOPE_DEPTH 8

struct torch_scope {
	__u64 key; /* the at::RecordFunction */
	__u64 entry_ns;
	char name[TCHECK_TORCH_SCOPE_NAME_BYTES];
};

struct torch_scope_stack {
	__u32 depth;
	__u32 named; /* the next slot holds a name; the next user-scope constructor gives its key */
	struct torch_scope scopes[TORCH_SCOPE_DEPTH];
};

/* Thread id -> its open scopes; one map for every program that includes this. */
THREAD_STACK_MAP(torch_scope_stacks, struct torch_scope_stack, 0) __weak;

/* Whether a torch scope (an optimizer's step or zero_grad, ...) is open on the thread. */
static __always_inline bool torch_scope_open(__u32 tid)
{
	const struct torch_scope_stack *stack = bpf_map_lookup_elem(&torch_scope_stacks, &tid);

	return stack && stack->depth > 0;
}

#endif /* TCHECK_TORCH_SCOPE_STACK_BPF_H */
