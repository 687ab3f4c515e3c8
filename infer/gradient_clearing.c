// SPDX-License-Identifier: MIT
/*
 * Gradients cleared without Optimizer.zero_grad: a step whose first backward
 * accumulated into none, or only into gradients zeroed earlier in the step
 * or of the parameters another optimizer changed in the step before.
 */
#include "gradient_clearing.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "optimizer_turns.h"

/*
 * In-place adds remembered per step until its first backward's record comes
 * (after those of what ran in it): the forward's few. Beyond them the step
 * is not excused.
 */
#define ADDS_MAX 256
#define ACCUMULATE_OPERATOR "aten::add_.Tensor"
#define ZERO_OPERATOR "aten::zero_"
#define TENSOR_FIELD "tensor:self"
#define SHAPE_FIELD "shape:self"

/* Clearings, backward passes and updates kept per step, in any order, to order at its end. */
#define MARKS_MAX 128

enum mark_kind { MARK_CLEAR, MARK_BACKWARD, MARK_UPDATE };

struct mark {
	uint64_t at_ns;
	enum mark_kind kind;
};

/* Since the last clearing of gradients (zero_grad): a backward filled them, an update used them. */
struct since_clearing {
	bool backward, update;
};

struct add_seen {
	uint32_t tid;
	uint64_t entry_ns;
	uint64_t tensor; /* 0: not known */
	uintptr_t shape; /* optimizer_turn_shape */
};

struct clearing_step {
	struct infer_event backward;	       /* the step's first backward */
	struct u64_map accumulated_into;       /* those gradients: tensor -> its shape's hash */
	struct optimizer_turn turn, last_turn; /* what this step's and the last one's changed */
	struct u64_map zeroed; /* tensors zeroed in place in the step (values: the map) */
	struct add_seen adds[ADDS_MAX];
	struct mark marks[MARKS_MAX];
	int32_t step;
	uint32_t add_count; /* adds before the backward's record came */
	uint32_t mark_count;
	int32_t finished_step; /* -1 none */
	bool backward_seen;
	bool accumulated;	  /* an in-place add into a gradient not zeroed ran inside it */
	bool accumulated_unknown; /* ... one of them not known */
	bool adds_overflowed;
	bool adds_watched; /* the process showed an in-place add: the tracer watches them */
	bool marks_overflowed;
	bool finished_fresh;
	bool finished_unused;	     /* the finished step cleared gradients no update had used */
	struct since_clearing since; /* as the steps before this one left it */
};

void gradient_clearing_init(struct gradient_clearing *clearing)
{
	u64_map_init(&clearing->processes);
}

void gradient_clearing_free(struct gradient_clearing *clearing)
{
	size_t position = 0;
	uint64_t pid;
	void *value;

	while (u64_map_next(&clearing->processes, &position, &pid, &value)) {
		struct clearing_step *state = value;

		u64_map_free(&state->zeroed);
		u64_map_free(&state->accumulated_into);
		optimizer_turn_free(&state->turn);
		optimizer_turn_free(&state->last_turn);
	}
	u64_map_free_with_values(&clearing->processes);
}

bool gradient_clearing_runs_before(const struct infer_event *event,
				   const struct infer_event *backward)
{
	return event && backward && event != backward && event->entry_ns < backward->entry_ns;
}

bool gradient_clearing_excuses(const char *name)
{
	return name && strcmp(name, ZERO_GRAD_FAMILY) == 0;
}

static bool is_scope(const struct infer_event *event, const char *family)
{
	return event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_SCOPE) &&
	       strcmp(event->name, family) == 0;
}

/*
 * The step's first backward added only into gradients of the parameters the
 * other optimizer changed in the step before, this one taking its turn
 * after it (optimizer_turns.h): a GAN's generator step fills the
 * discriminator's gradients, which the discriminator's step clears.
 */
static bool accumulated_into_other_turn(const struct clearing_step *state)
{
	return !state->accumulated_unknown &&
	       optimizer_turns_alternate(&state->last_turn, &state->turn) &&
	       optimizer_turn_shapes_cover(&state->last_turn, &state->accumulated_into);
}

static bool step_fresh(const struct clearing_step *state)
{
	return state->adds_watched && state->backward_seen && !state->adds_overflowed &&
	       (!state->accumulated || accumulated_into_other_turn(state));
}

static bool in_backward(const struct clearing_step *state, uint32_t tid, uint64_t entry_ns)
{
	return tid == state->backward.tid && entry_ns >= state->backward.entry_ns &&
	       entry_ns <= state->backward.exit_ns;
}

/*
 * An add inside the first backward into a gradient that held last step's
 * values: not one the step zeroed in place before it (Module.zero_grad,
 * zero_grad(set_to_none=False), a gradient zeroed by hand).
 */
static bool accumulates(const struct clearing_step *state, const struct add_seen *add)
{
	return in_backward(state, add->tid, add->entry_ns) &&
	       !(add->tensor && u64_map_get(&state->zeroed, add->tensor));
}

/* An add into a gradient the step did not clear: noted with the gradient's shape. */
static int note_accumulation(struct clearing_step *state, const struct add_seen *add)
{
	if (!accumulates(state, add))
		return 0;
	state->accumulated = true;
	if (!add->tensor) {
		state->accumulated_unknown = true;
		return 0;
	}
	return u64_map_put(&state->accumulated_into, add->tensor, (void *)add->shape);
}

/* The step's first backward came: the adds seen so far ran inside it or not. */
static int note_backward(struct clearing_step *state, const struct infer_event *backward)
{
	int failed = 0;

	state->backward = *backward;
	state->backward_seen = true;
	for (uint32_t i = 0; i < state->add_count && !failed; i++)
		failed = note_accumulation(state, &state->adds[i]);
	state->add_count = 0;
	return failed;
}

static int by_time(const void *left, const void *right)
{
	const struct mark *a = left, *b = right;

	return a->at_ns < b->at_ns ? -1 : a->at_ns > b->at_ns;
}

/*
 * Whether the step, in time order, cleared gradients a backward had filled
 * since the clearing before and no update had used (an optimizer step
 * skipped between two clearings); carries 'since' on to the next step. Not
 * said when some of the step's marks were not kept.
 */
static bool cleared_unused(struct clearing_step *state)
{
	bool unused = false;

	qsort(state->marks, state->mark_count, sizeof(state->marks[0]), by_time);
	for (uint32_t i = 0; i < state->mark_count; i++) {
		switch (state->marks[i].kind) {
		case MARK_CLEAR:
			unused |= state->since.backward && !state->since.update;
			state->since = (struct since_clearing){ false, false };
			break;
		case MARK_BACKWARD:
			state->since.backward = true;
			break;
		case MARK_UPDATE:
			state->since.update = true;
			break;
		}
	}
	return unused && !state->marks_overflowed;
}

static void note_mark(struct clearing_step *state, uint64_t at_ns, enum mark_kind kind)
{
	if (state->mark_count < MARKS_MAX)
		state->marks[state->mark_count++] = (struct mark){ at_ns, kind };
	else
		state->marks_overflowed = true;
}

static void start_step(struct clearing_step *state, int32_t step)
{
	state->mark_count = 0;
	state->marks_overflowed = false;
	state->step = step;
	state->backward_seen = false;
	state->accumulated = false;
	state->accumulated_unknown = false;
	state->add_count = 0;
	state->adds_overflowed = false;
	u64_map_free(&state->zeroed); /* left empty, ready for the step */
	u64_map_free(&state->accumulated_into);
	optimizer_turn_move(&state->last_turn, &state->turn, step);
}

int gradient_clearing_observe(struct gradient_clearing *clearing, const struct infer_event *event,
			      void **cached)
{
	struct clearing_step *state;
	int added;
	bool backward = is_scope(event, BACKWARD_FAMILY);
	bool torch_op = event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_OP);
	bool add = torch_op && strcmp(event->name, ACCUMULATE_OPERATOR) == 0;
	bool zero = torch_op && strcmp(event->name, ZERO_OPERATOR) == 0;
	uint64_t tensor = add || zero ? infer_event_tensor(event, TENSOR_FIELD) : 0;
	struct add_seen seen;

	if (event->step < 0 || event->kind != INFER_EVENT_PYTHON)
		return 0;
	state = u64_map_get_or_add_cached(&clearing->processes, event->pid, sizeof(*state), &added,
					  cached);
	if (!state)
		return -ENOMEM;
	if (added) {
		state->finished_step = -1; /* zeroed: empty maps, as start_step leaves them */
		optimizer_turn_init(&state->last_turn, -1);
		optimizer_turn_init(&state->turn, -1);
		start_step(state, event->step);
	}
	if (event->step < state->step)
		return 0; /* a late record of a finished step */
	if (event->step > state->step) {
		state->finished_step = state->step;
		state->finished_fresh = step_fresh(state);
		state->finished_unused = cleared_unused(state);
		start_step(state, event->step);
	}
	/* An optimizer's step uses the gradients as it ends: its updates ran inside it. */
	if (is_scope(event, ZERO_GRAD_FAMILY))
		note_mark(state, event->entry_ns, MARK_CLEAR);
	else if (backward)
		note_mark(state, event->entry_ns, MARK_BACKWARD);
	else if (is_scope(event, OPTIMIZER_STEP_FAMILY))
		note_mark(state, event->exit_ns, MARK_UPDATE);
	else if (optimizer_turn_is_update(event))
		note_mark(state, event->entry_ns, MARK_UPDATE);
	state->adds_watched |= add;
	if (zero && tensor && u64_map_put(&state->zeroed, tensor, &state->zeroed))
		return -ENOMEM;
	if (optimizer_turn_is_update(event) && optimizer_turn_note(&state->turn, event))
		return -ENOMEM;
	seen = (struct add_seen){ .tid = event->tid,
				  .entry_ns = event->entry_ns,
				  .tensor = tensor,
				  .shape = add ? optimizer_turn_shape(event, SHAPE_FIELD) : 0 };
	/* Backward scopes of a thread come in order: the first one is the first pass. */
	if (backward && !state->backward_seen)
		return note_backward(state, event);
	if (add && state->backward_seen)
		return note_accumulation(state, &seen);
	if (add && state->add_count < ADDS_MAX)
		state->adds[state->add_count++] = seen;
	else if (add)
		state->adds_overflowed = true;
	return 0;
}

bool gradient_clearing_cleared_unused(const struct gradient_clearing *clearing, uint32_t pid,
				      int32_t step)
{
	const struct clearing_step *state = u64_map_get(&clearing->processes, pid);

	return state && state->finished_step == step && state->finished_unused;
}

bool gradient_clearing_fresh(const struct gradient_clearing *clearing, uint32_t pid, int32_t step)
{
	const struct clearing_step *state = u64_map_get(&clearing->processes, pid);

	if (!state)
		return false;
	if (state->step == step)
		return step_fresh(state);
	return state->finished_step == step && state->finished_fresh;
}
