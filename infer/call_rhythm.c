// SPDX-License-Identifier: MIT
/* Whether a process calls a name in every step (call_rhythm.h). */
#include "call_rhythm.h"

#include "base/fnv_hash.h"

/* Steps in a row that show a call made every step: one alone shows no pace. */
#define STEPS_FOR_A_PACE 2

struct pace {
	uint32_t steps_in_a_row; /* since the process's first step with the later call */
	bool irregular;		 /* a step went without it: its pace is the program's own */
};

void call_rhythm_init(struct call_rhythm *rhythm)
{
	u64_map_init(&rhythm->paces);
}

void call_rhythm_free(struct call_rhythm *rhythm)
{
	u64_map_free_with_values(&rhythm->paces);
}

bool call_rhythm_step_judged(struct call_rhythm *rhythm, uint32_t pid, size_t rule_index,
			     bool present)
{
	uint64_t key = fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, pid), rule_index);
	struct pace *pace = u64_map_get_or_add(&rhythm->paces, key, sizeof(*pace), NULL);
	bool kept;

	if (!pace)
		return present;
	if (present) {
		pace->steps_in_a_row++;
		return true;
	}
	kept = !pace->irregular && pace->steps_in_a_row >= STEPS_FOR_A_PACE;
	pace->irregular = true;
	return kept;
}
