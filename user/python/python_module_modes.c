// SPDX-License-Identifier: MIT
/* The stage from the modes of the top modules a program calls (python_module_modes.h). */
#include "python/python_module_modes.h"

#include <errno.h>

#include "model/trace_records.h"

/* A mode as the maps keep it: the mode call's order above the stage, plus one (never NULL). */
static void *mode_value(uint64_t order, uint32_t stage)
{
	return (void *)(uintptr_t)((order << 8 | (stage & 0xff)) + 1);
}

static uint32_t mode_stage(const void *value)
{
	return (uint32_t)(((uintptr_t)value - 1) & 0xff);
}

static uint64_t mode_order(const void *value)
{
	return ((uintptr_t)value - 1) >> 8;
}

void python_module_modes_init(struct python_module_modes *modes)
{
	u64_map_init(&modes->modes);
	u64_map_init(&modes->own_modes);
	u64_map_init(&modes->tops);
	u64_map_init(&modes->submodules);
	u64_map_init(&modes->built);
	u64_map_init(&modes->reached);
	modes->last_set = TRACE_STAGE_UNKNOWN;
}

void python_module_modes_free(struct python_module_modes *modes)
{
	u64_map_free(&modes->modes);
	u64_map_free(&modes->own_modes);
	u64_map_free(&modes->tops);
	u64_map_free(&modes->submodules);
	u64_map_free(&modes->built);
	u64_map_free(&modes->reached);
}

int python_module_modes_attribute_set(struct python_module_modes *modes, uint64_t module,
				      bool by_mode_call)
{
	if (!module)
		return 0;
	if (by_mode_call && !u64_map_get(&modes->reached, module) &&
	    u64_map_put(&modes->reached, module, &modes->reached))
		return -ENOMEM;
	if (u64_map_get(&modes->built, module) || u64_map_get(&modes->tops, module) ||
	    u64_map_get(&modes->submodules, module))
		return 0;
	return u64_map_put(&modes->built, module, &modes->built);
}

bool python_module_modes_never_set(const struct python_module_modes *modes, uint64_t module)
{
	return module && u64_map_get(&modes->built, module) &&
	       !u64_map_get(&modes->reached, module);
}

int python_module_modes_set(struct python_module_modes *modes, uint64_t module, uint32_t stage)
{
	modes->last_set = stage;
	if (!module)
		return 0;
	modes->mode_calls++;
	/* A submodule's mode is its own: it sets no model's. */
	return u64_map_put(u64_map_get(&modes->submodules, module) ? &modes->own_modes
								   : &modes->modes,
			   module, mode_value(modes->mode_calls, stage));
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
	const void *stored = u64_map_get(&modes->modes, module);

	return stored ? mode_stage(stored) : TRACE_STAGE_TRAIN;
}

bool python_module_modes_own(const struct python_module_modes *modes, uint64_t self, uint64_t top,
			     uint32_t *stage)
{
	const void *own, *model;

	if (!self || !top || self == top)
		return false;
	/* Given before it was seen inside its model (model.eval(); enable_dropout(model)). */
	own = u64_map_get(&modes->own_modes, self);
	if (!own)
		own = u64_map_get(&modes->modes, self);
	model = u64_map_get(&modes->modes, top);
	if (!own || (model && mode_order(model) > mode_order(own)) ||
	    mode_stage(own) == python_module_modes_of(modes, top))
		return false;
	*stage = mode_stage(own);
	return true;
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
