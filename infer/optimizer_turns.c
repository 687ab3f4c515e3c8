// SPDX-License-Identifier: MIT
/* Optimizers that take turns (optimizer_turns.h). */
#include "optimizer_turns.h"

#include <errno.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "parameter_updates.h"

#define UPDATED_FIELD "tensor:self"
#define UPDATED_SHAPE_FIELD "shape:self"
#define UPDATED_REQUIRES_GRAD_FIELD "requires_grad:self"

void optimizer_turn_init(struct optimizer_turn *turn, int32_t step)
{
	turn->step = step;
	u64_map_init(&turn->changed);
}

void optimizer_turn_free(struct optimizer_turn *turn)
{
	u64_map_free(&turn->changed);
	turn->step = -1;
}

void optimizer_turn_move(struct optimizer_turn *into, struct optimizer_turn *from, int32_t step)
{
	u64_map_free(&into->changed);
	*into = *from;
	optimizer_turn_init(from, step);
}

bool optimizer_turn_is_update(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_OP) &&
	       infer_event_field_is_true(event, UPDATED_REQUIRES_GRAD_FIELD) &&
	       infer_event_tensor(event, UPDATED_FIELD) && parameter_updates_changes(event);
}

uintptr_t optimizer_turn_shape(const struct infer_event *event, const char *shape_field)
{
	const char *shape = infer_event_field(event, shape_field);
	uintptr_t hash;

	if (!shape)
		return OPTIMIZER_TURN_NO_SHAPE;
	hash = (uintptr_t)fnv1a_string(shape);
	/* 0 cannot be a map's value, and 1 says "unknown". */
	return hash <= OPTIMIZER_TURN_NO_SHAPE ? hash + 2 : hash;
}

int optimizer_turn_note(struct optimizer_turn *turn, const struct infer_event *update)
{
	uint64_t tensor = infer_event_tensor(update, UPDATED_FIELD);

	if (u64_map_get(&turn->changed, tensor))
		return 0;
	return u64_map_put(&turn->changed, tensor,
			   (void *)optimizer_turn_shape(update, UPDATED_SHAPE_FIELD));
}

int optimizer_turn_collect(struct optimizer_turn *turn, const struct infer_event *const *events,
			   size_t count)
{
	int failed = 0;

	for (size_t i = 0; i < count && !failed; i++)
		if (optimizer_turn_is_update(events[i]) &&
		    parameter_updates_step_around(events, count, events[i]))
			failed = optimizer_turn_note(turn, events[i]);
	return failed;
}

/* Whether two turns changed a parameter in common. */
static bool turns_share(const struct optimizer_turn *a, const struct optimizer_turn *b)
{
	uint64_t tensor;
	void *shape;

	for (size_t i = 0; u64_map_next(&a->changed, &i, &tensor, &shape);)
		if (u64_map_get(&b->changed, tensor))
			return true;
	return false;
}

bool optimizer_turns_alternate(const struct optimizer_turn *before,
			       const struct optimizer_turn *after)
{
	return before && after && before->step >= 0 && after->step == before->step + 1 &&
	       before->changed.count > 0 && after->changed.count > 0 && !turns_share(after, before);
}

bool optimizer_turn_changed(const struct optimizer_turn *turn, uint64_t tensor)
{
	return turn && tensor && u64_map_get(&turn->changed, tensor);
}

/* Adds 'delta' to the count of 'shape' in 'counts' (a count of 0 is no entry). */
static int count_shape(struct u64_map *counts, uint64_t shape, long delta)
{
	long count = (long)(uintptr_t)u64_map_get(counts, shape) + delta;

	if (count <= 0) {
		u64_map_remove(counts, shape);
		return count < 0 ? -ERANGE : 0;
	}
	return u64_map_put(counts, shape, (void *)(uintptr_t)count);
}

bool optimizer_turn_shapes_cover(const struct optimizer_turn *turn, const struct u64_map *tensors)
{
	struct u64_map free_parameters; /* shape -> parameters of it not yet given */
	uint64_t tensor;
	void *shape;
	bool covered = turn && tensors->count <= turn->changed.count;

	u64_map_init(&free_parameters);
	for (size_t i = 0; covered && u64_map_next(&turn->changed, &i, &tensor, &shape);)
		covered = (uintptr_t)shape == OPTIMIZER_TURN_NO_SHAPE ||
			  !count_shape(&free_parameters, (uintptr_t)shape, 1);
	for (size_t i = 0; covered && u64_map_next(tensors, &i, &tensor, &shape);)
		covered = (uintptr_t)shape != OPTIMIZER_TURN_NO_SHAPE &&
			  !count_shape(&free_parameters, (uintptr_t)shape, -1);
	u64_map_free(&free_parameters);
	return covered;
}

void optimizer_turns_init(struct optimizer_turns *turns)
{
	turns->count = 0;
}

void optimizer_turns_free(struct optimizer_turns *turns)
{
	for (size_t i = 0; i < turns->count; i++)
		optimizer_turn_free(&turns->kept[i]);
	turns->count = 0;
}

int optimizer_turns_others(const struct optimizer_turns *turns, const struct optimizer_turn *turn,
			   struct u64_map *others)
{
	uint64_t tensor;
	void *shape;
	int failed = 0;

	if (turn->changed.count == 0)
		return 0;
	for (size_t k = 0; k < turns->count && !failed; k++) {
		const struct optimizer_turn *kept = &turns->kept[k];

		if (kept->step >= turn->step || turn->step - kept->step > OPTIMIZER_TURN_WINDOW ||
		    turns_share(kept, turn))
			continue;
		for (size_t i = 0; !failed && u64_map_next(&kept->changed, &i, &tensor, &shape);)
			failed = u64_map_put(others, tensor, shape);
	}
	return failed;
}

void optimizer_turns_keep(struct optimizer_turns *turns, struct optimizer_turn *turn)
{
	size_t kept = 0;

	if (turn->changed.count == 0)
		return;
	for (size_t k = 0; k < turns->count; k++) {
		if (turns_share(&turns->kept[k], turn))
			optimizer_turn_free(&turns->kept[k]);
		else
			turns->kept[kept++] = turns->kept[k];
	}
	if (kept == OPTIMIZER_TURNS_KEPT)
		optimizer_turn_free(&turns->kept[--kept]);
	memmove(&turns->kept[1], &turns->kept[0], kept * sizeof(turns->kept[0]));
	turns->kept[0] = *turn;
	turns->count = kept + 1;
	optimizer_turn_init(turn, -1);
}
