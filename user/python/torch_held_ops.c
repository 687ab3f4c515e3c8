// SPDX-License-Identifier: MIT
/* Operators held from a step's end until the process shows where they belong. */
#include "python/torch_held_ops.h"

#include <stdlib.h>

#include "base/growable_array.h"

void torch_held_ops_start(struct torch_held_ops *held, uint64_t since_ns)
{
	held->holding = true;
	held->since_ns = since_ns;
}

bool torch_held_ops_keep(struct torch_held_ops *held, const struct tcheck_torch_op_record *record)
{
	if (!held->holding || record->header.timestamp_ns < held->since_ns ||
	    held->count == TORCH_HELD_OPS_MAX ||
	    growable_array_room_for_one((void **)&held->ops, held->count, &held->capacity,
					sizeof(*held->ops)))
		return false;
	held->ops[held->count++] = *record;
	return true;
}

bool torch_held_ops_settled_by(const struct torch_held_ops *held, uint64_t entry_ns)
{
	return held->holding && entry_ns >= held->since_ns;
}

void torch_held_ops_free(struct torch_held_ops *held)
{
	free(held->ops);
	held->ops = NULL;
	held->count = 0;
	held->capacity = 0;
	held->holding = false;
}
