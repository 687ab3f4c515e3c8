/* SPDX-License-Identifier: MIT */
/*
 * Where in a function a uprobe costs least. The kernel emulates a few
 * instructions under a uprobe (push, jmp, jcc, call, nop) and single-steps
 * every other one out of line, which costs several times more per hit. A
 * function that begins with a compare and a conditional jump (a guard such
 * as "if (!active) return") is probed on the jump instead: the compare
 * changes only the flags, so the argument registers are the entry's.
 */
#ifndef TCHECK_UPROBE_ENTRY_SITE_H
#define TCHECK_UPROBE_ENTRY_SITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether the kernel emulates the instruction at code (no single-step). */
bool uprobe_instruction_is_emulated(const uint8_t *code, size_t size);

/*
 * The offset from the function's start where a probe still sees the entry's
 * argument registers and is emulated: 0 when the first instruction is
 * emulated, the conditional jump's offset after a leading compare, each
 * past a leading endbr64 (4 more), -1 when none of these (the probe then
 * goes at 0 and is single-stepped).
 */
int uprobe_cheap_entry_offset(const uint8_t *code, size_t size);

/*
 * The file offset to probe for the function whose first byte is at
 * file_offset in path: moved by uprobe_cheap_entry_offset, or file_offset
 * itself when its code cannot be read or nothing near is emulated.
 */
uint64_t uprobe_cheap_entry_file_offset(const char *path, uint64_t file_offset);

/* endbr64: the landing pad of indirect branches in builds with CET (-fcf-protection). */
#define UPROBE_BRANCH_LANDING_PAD_SIZE 4
bool uprobe_is_branch_landing_pad(const uint8_t *code, size_t size);

#endif /* TCHECK_UPROBE_ENTRY_SITE_H */
