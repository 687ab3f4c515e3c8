/* SPDX-License-Identifier: MIT */
/*
 * Operators entered after a training step's end, held until the process's
 * next followed call or scope shows where they belong: in the same step when
 * a second optimizer's step follows (its opening is known only once its
 * scope opens, and torch 1.13 runs an operator before that), else in the
 * next step. A program may run many between two optimizers' steps (its own
 * in-place updates of the first one's parameters): the room grows as they
 * come, up to TORCH_HELD_OPS_MAX. Needs no kernel.
 */
#ifndef TCHECK_TORCH_HELD_OPS_H
#define TCHECK_TORCH_HELD_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tcheck/probe_abi.h"

/* Operators held at most (about 128 bytes each); one more releases them all. */
#define TORCH_HELD_OPS_MAX 4096

struct torch_held_ops {
	bool holding;
	uint64_t since_ns; /* the step's end: operators entered after it are held */
	uint32_t count;
	size_t capacity;
	struct tcheck_torch_op_record *ops;
};

/* A step ended at since_ns: hold the operators entered after it. */
void torch_held_ops_start(struct torch_held_ops *held, uint64_t since_ns);

/*
 * Whether 'record' was kept; false when nothing is held, or there is no
 * room (TORCH_HELD_OPS_MAX held, or no memory for more).
 */
bool torch_held_ops_keep(struct torch_held_ops *held, const struct tcheck_torch_op_record *record);

/* Whether a call or scope entered at entry_ns shows where the held operators belong. */
bool torch_held_ops_settled_by(const struct torch_held_ops *held, uint64_t entry_ns);

/* Frees the room (the operators held are dropped). */
void torch_held_ops_free(struct torch_held_ops *held);

#endif /* TCHECK_TORCH_HELD_OPS_H */
