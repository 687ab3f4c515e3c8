/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * A function's argument registers at its entry, numbered as attach cookies
 * name them (1 rdi, 2 rsi, 3 rdx, 4 rcx, 5 r8; 0 none): the torch operator
 * and c10d probes learn from their cookie which register holds what.
 */
#ifndef TCHECK_ENTRY_REGISTERS_BPF_H
#define TCHECK_ENTRY_REGISTERS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_tracing.h>

#define ENTRY_REGISTERS 8

/* Reads them at fixed context offsets: the verifier refuses a computed one. */
static __always_inline void entry_registers_read(struct pt_regs *ctx, __u64 *registers)
{
	registers[0] = 0;
	registers[1] = PT_REGS_PARM1(ctx);
	registers[2] = PT_REGS_PARM2(ctx);
	registers[3] = PT_REGS_PARM3(ctx);
	registers[4] = PT_REGS_PARM4(ctx);
	registers[5] = PT_REGS_PARM5(ctx);
	registers[6] = 0;
	registers[7] = 0;
}

/* Register 'which' of those read; 0 for none. */
static __always_inline __u64 entry_register(const __u64 *registers, __u64 which)
{
	return which >= 1 && which <= 5 ? registers[which & 7] : 0;
}

#endif /* TCHECK_ENTRY_REGISTERS_BPF_H */
