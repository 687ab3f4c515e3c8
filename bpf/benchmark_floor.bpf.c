// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * The benchmark's floor: an entry and a return probe that do nothing, so
 * that `make bench` can tell what any uprobe pair costs from what the
 * tracer's own programs add. Attached only by tools/bench/probe-floor.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual MIT/GPL";

SEC("uprobe")
int floor_entry(struct pt_regs *ctx)
{
	return 0;
}

SEC("uretprobe")
int floor_return(struct pt_regs *ctx)
{
	return 0;
}
