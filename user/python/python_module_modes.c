// SPDX-License-Identifier: MIT
/* The stage from the modes of the top modules a program calls (python_module_modes.h). */
#include "python/python_module_modes.h"

#include <errno.h>

#include "model/trace_records.h"

void python_module_modes_init(struct python_module_modes *modes)
{
	u64_map_init(&modes->modes);
	u64_map_init(&modes->tops);
	u64_map_init(&modes->submodules);
	modes->last_set = TRACE_STAGE_UNKNOWN;
}

void python_module_modes_free(struct python_module_modes *modes)
{
	u64_map_free(&modes->modes);
	u64_map_free(&modes->tops);
	u64_map_free(&modes->submodules);
}

int python_module_modes_set(struct python_module_modes *modes, uint64_t module, uint32_t stage)
{
	modes->last_set = stage;
	if (!module || u64_map_get(&modes->submodules, module))
		return 0;
	/* Stored plus one: a map value is never NULL. */
	return u64_map_put(&modes->modes, module, (void *)(uintptr_t)(stage + 1));
}

int python_module_modes_called(struct python_module_modes *modes, uint64_t self, uint64_t top)
{
	if (!self || !top)
		return 0;
	if (self != top)
		return u64_map_get(&modes->submodules, self)
			       ? 0
			       : u64_map_put(&modes->submodules, self, &modes->submodules);
	if (u64_map_get(&modes->tops, top))
		return 0;
	return u64_map_put(&modes->tops, top, &modes->tops) ? -ENOMEM : 1;
}

uint32_t python_module_modes_of(const struct python_module_modes *modes, uint64_t module)
{
	uintptr_t stored = (uintptr_t)u64_map_get(&modes->modes, module);

	return stored ? (uint32_t)(stored - 1) : TRACE_STAGE_TRAIN;
}

uint32_t python_module_modes_stage(const struct python_module_modes *modes,
				   bool module_calls_followed)
{
	uint64_t top;
	void *value;

	if (!module_calls_followed)
		return modes->last_set;
	if (modes->tops.count == 0)
		return TRACE_STAGE_UNKNOWN;
	for (size_t i = 0; u64_map_next(&modes->tops, &i, &top, &value);)
		if (python_module_modes_of(modes, top) != TRACE_STAGE_EVAL)
			return TRACE_STAGE_TRAIN;
	return TRACE_STAGE_EVAL;
}
