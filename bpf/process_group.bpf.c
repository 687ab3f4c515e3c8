// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * c10d process groups as they are built: an entry probe on the base
 * constructor every backend runs (c10d::Backend::Backend(int rank, int
 * size) in torch 1.13 and 2.x, and ProcessGroup::ProcessGroup(int, int)),
 * reporting the rank and size it is given. Rare: once per group.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tcheck/probe_abi.h"
#include "tracer_maps.bpf.h"

SEC("uprobe")
int process_group_init(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tcheck_process_group_record *record;
	__u32 pid = pid_tgid >> 32;

	if (!is_traced(pid))
		return 0;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PYTHON_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_PROCESS_GROUP, pid, (__u32)pid_tgid,
		    bpf_ktime_get_ns());
	/* rdi is the object being built; rank and size follow it. */
	record->rank = (__s32)PT_REGS_PARM2(ctx);
	record->size = (__s32)PT_REGS_PARM3(ctx);
	bpf_ringbuf_submit(record, 0);
	return 0;
}
