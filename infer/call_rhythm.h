/* SPDX-License-Identifier: MIT */
/*
 * Whether a process calls a name at the pace of its steps. An APISequence of
 * scope "used" ("in every step with B, A comes first, in a process that
 * calls A") is learned from programs that call A in every step, but another
 * program may call A at a pace of its own: a learning-rate scheduler stepped
 * once an epoch, a logger every N steps. So A's absence from a step with B
 * is asked of a process only while it has called A in every step since its
 * first, two steps in a row at least: a call made in every step and then no
 * more (the DDP forward of a job that goes on with the unwrapped module) is
 * found at the step it stops; a call made at another pace is judged for its
 * order alone, in the steps that hold it.
 */
#ifndef TCHECK_CALL_RHYTHM_H
#define TCHECK_CALL_RHYTHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/u64_map.h"

struct call_rhythm {
	struct u64_map paces; /* hash (pid, rule) -> its pace so far */
};

void call_rhythm_init(struct call_rhythm *rhythm);
void call_rhythm_free(struct call_rhythm *rhythm);

/*
 * Takes a finished step of process 'pid' that held the rule's later call;
 * 'present': whether it held the earlier one too. Returns whether the step
 * is judged: always when present (the order of the two), and without it
 * only while the process had made the call in every step (when memory runs
 * out, not: no alarm on what was not followed).
 */
bool call_rhythm_step_judged(struct call_rhythm *rhythm, uint32_t pid, size_t rule_index,
			     bool present);

#endif /* TCHECK_CALL_RHYTHM_H */
