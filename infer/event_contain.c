// SPDX-License-Identifier: MIT
/* EventContain inference: children counted per parent, then a rule per (parent, child). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "base/u64_map.h"
#include "event_contain.h"
#include "gradient_clearing.h"

/* Distinct child names counted per parent; a parent with more is left out. */
#define CHILDREN_MAX 32
/* Nesting of scopes followed on one thread. */
#define DEPTH_MAX 16
/* How torch operators are named (aten::add_.Tensor). */
#define TORCH_OPERATOR_PREFIX "aten::"
/* Most distinct counts tried as "exactly N times". */
#define COUNT_VALUES_MAX 4

struct child_count {
	const char *name;
	uint32_t kind;
	uint32_t count;
	struct contain_last_call last;
};

/* A parent being filled: its children so far. */
struct open_parent {
	size_t index; /* in parents */
	uint64_t exit_ns;
	uint32_t child_count;
	int overflow;
	struct child_count children[CHILDREN_MAX];
};

/* One (parent, child name, count) found. */
struct contained {
	size_t parent;
	const char *child;
	uint32_t child_kind;
	uint32_t count;
};

struct contain_state {
	struct rule_set *rules;
	const struct rule_evidence *evidence;
	const struct infer_event **parents;
	struct infer_event *steps; /* the synthetic step parents */
	size_t parent_count;
	struct contained *found;
	size_t found_count, found_capacity;
	int out_of_memory;
};

int event_contain_is_parent(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_SCOPE);
}

static int compare_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b ? 1 : 0;
}

/* By thread, entry time, then the longer first: parents before what they contain. */
static int by_thread_time(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order;

	if ((order = compare_u64(a->pid, b->pid)) || (order = compare_u64(a->tid, b->tid)) ||
	    (order = compare_u64(a->entry_ns, b->entry_ns)))
		return order;
	return compare_u64(b->exit_ns, a->exit_ns);
}

static int by_process_step(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order;

	if ((order = compare_u64(a->pid, b->pid)) ||
	    (order = compare_u64((uint64_t)(int64_t)a->step, (uint64_t)(int64_t)b->step)))
		return order;
	return compare_u64(a->entry_ns, b->entry_ns);
}

bool event_contain_judged(const struct infer_event *parent)
{
	return parent->kind != INFER_EVENT_STEP || infer_step_between_markers(parent->step);
}

uint64_t event_contain_holder(const struct infer_event *parent)
{
	const char *implementation = infer_event_field(parent, INFER_IMPLEMENTATION_FIELD);
	uint64_t key =
		fnv1a_add_u64(fnv1a_add_u64(FNV1A_OFFSET_BASIS, parent->pipeline), parent->pid);

	return implementation ? fnv1a_add_u64(key, fnv1a_string(implementation)) : key;
}

static bool is_torch_operator(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_OP);
}

bool event_contain_nested_again(struct contain_last_call *last, uint32_t tid, uint64_t entry_ns,
				uint64_t exit_ns, bool torch_scope)
{
	bool inside, around;

	if (!torch_scope)
		return false;
	inside = last->seen && last->tid == tid && entry_ns >= last->entry_ns &&
		 exit_ns <= last->exit_ns;
	around = last->seen && last->tid == tid && entry_ns <= last->entry_ns &&
		 exit_ns >= last->exit_ns;
	if (!inside)
		*last = (struct contain_last_call){ true, tid, entry_ns, exit_ns };
	return inside || around;
}

/* An optimizer's own scopes: "Optimizer.step#*", "Optimizer.zero_grad#*". */
#define OPTIMIZER_SCOPE_PREFIX "Optimizer."

bool event_contain_is_optimizer_scope(const char *child)
{
	return child && strncmp(child, OPTIMIZER_SCOPE_PREFIX, strlen(OPTIMIZER_SCOPE_PREFIX)) == 0;
}

bool event_contain_count_judged(const struct infer_event *parent, const char *child)
{
	/* Clearing gradients twice clears them once (SAM's two passes): only its absence counts. */
	if (gradient_clearing_excuses(child))
		return false;
	return !(parent->flags &
		 (EVENT_CONTAIN_SEVERAL_OPTIMIZERS | EVENT_CONTAIN_OPTIMIZER_CLOSURE)) ||
	       !event_contain_is_optimizer_scope(child);
}

/* Whether an optimizer's own scope other than its step ran inside one of its steps. */
static bool optimizer_closure(const struct infer_event **order, size_t start, size_t end)
{
	for (size_t i = start; i < end; i++) {
		if (!event_contain_is_parent(order[i]) ||
		    strcmp(order[i]->name, OPTIMIZER_STEP_FAMILY) != 0)
			continue;
		for (size_t j = start; j < end; j++)
			if (event_contain_is_optimizer_scope(order[j]->name) &&
			    order[j]->name != order[i]->name &&
			    infer_event_runs_inside(order[j], order[i]))
				return true;
	}
	return false;
}

static void count_child(struct open_parent *parent, const struct infer_event *child)
{
	const char *name = child->name;
	uint32_t i;

	for (i = 0; i < parent->child_count; i++)
		if (parent->children[i].name == name)
			break;
	if (i == parent->child_count) {
		if (i == CHILDREN_MAX) {
			parent->overflow = 1;
			return;
		}
		parent->children[parent->child_count++] =
			(struct child_count){ name, child->kind, 0, { 0 } };
	}
	if (event_contain_nested_again(&parent->children[i].last, child->tid, child->entry_ns,
				       child->exit_ns, event_contain_is_parent(child)))
		return;
	parent->children[i].count++;
}

static void close_parent(struct contain_state *state, const struct open_parent *parent)
{
	if (parent->overflow) {
		/* Too many kinds of children to count: the parent is no example at all. */
		state->parents[parent->index] = NULL;
		return;
	}
	if (growable_array_reserve((void **)&state->found, state->found_count,
				   &state->found_capacity, parent->child_count,
				   sizeof(*state->found))) {
		state->out_of_memory = 1;
		return;
	}
	for (uint32_t i = 0; i < parent->child_count; i++)
		state->found[state->found_count++] =
			(struct contained){ parent->index, parent->children[i].name,
					    parent->children[i].kind, parent->children[i].count };
}

/* Scopes as parents: a sweep per thread with a stack of the scopes still open. */
static void count_in_scopes(struct contain_state *state, const struct infer_event **order,
			    size_t count)
{
	static struct open_parent stack[DEPTH_MAX];
	size_t depth = 0;

	for (size_t i = 0; i < count; i++) {
		const struct infer_event *event = order[i];
		int same_thread =
			i > 0 && order[i - 1]->pid == event->pid && order[i - 1]->tid == event->tid;

		while (depth > 0 && (!same_thread || stack[depth - 1].exit_ns <= event->entry_ns))
			close_parent(state, &stack[--depth]);
		if (infer_event_is_operation(event))
			for (size_t d = 0; d < depth; d++)
				if (event->exit_ns <= stack[d].exit_ns)
					count_child(&stack[d], event);
		if (event_contain_is_parent(event) && depth < DEPTH_MAX) {
			struct open_parent *parent = &stack[depth++];

			memset(parent, 0, sizeof(*parent));
			parent->index = state->parent_count;
			parent->exit_ns = event->exit_ns;
			state->parents[state->parent_count++] = event;
		}
	}
	while (depth > 0)
		close_parent(state, &stack[--depth]);
}

/* Steps as parents: one synthetic event per (process, step), counting its operations. */
static int count_in_steps(struct contain_state *state, const struct infer_event **order,
			  size_t count)
{
	static struct open_parent parent;
	const char *name = string_pool_intern(state->rules->pool, STEP_PARENT_NAME);
	size_t step_count = 0, start = 0;

	if (!name)
		return -ENOMEM;
	qsort(order, count, sizeof(*order), by_process_step);
	for (size_t i = 0; i < count; i++)
		step_count +=
			order[i]->step >= 0 && (i == 0 || order[i]->pid != order[i - 1]->pid ||
						order[i]->step != order[i - 1]->step);
	state->steps = calloc(step_count ? step_count : 1, sizeof(*state->steps));
	if (!state->steps)
		return -ENOMEM;
	step_count = 0;
	while (start < count) {
		size_t end = start;
		struct infer_event *step;

		while (end < count && order[end]->pid == order[start]->pid &&
		       order[end]->step == order[start]->step)
			end++;
		/*
		 * The last step of a process never ended (the step marker did not
		 * run again): it holds teardown, not a step, and is no example.
		 */
		if (order[start]->step < 0 || end == count ||
		    order[end]->pid != order[start]->pid || order[end]->step < 0) {
			start = end;
			continue;
		}
		step = &state->steps[step_count++];
		step->kind = INFER_EVENT_STEP;
		step->name = name;
		step->pipeline = order[start]->pipeline;
		step->pid = order[start]->pid;
		step->rank = -1;
		step->nranks = -1;
		step->step = order[start]->step;
		step->seq = -1;
		step->context = string_pool_intern(state->rules->pool, "");
		step->entry_ns = order[start]->entry_ns;
		memset(&parent, 0, sizeof(parent));
		parent.index = state->parent_count;
		state->parents[state->parent_count++] = step;
		for (size_t i = start; i < end; i++) {
			const struct infer_event *event = order[i];

			if (event->kind == INFER_EVENT_PYTHON && event->rank >= 0 &&
			    step->rank < 0) {
				step->rank = event->rank;
				step->nranks = event->nranks;
				step->stage = event->stage;
			}
			if (event->exit_ns > step->exit_ns)
				step->exit_ns = event->exit_ns;
			/*
			 * The model's forward and backward run operators too: across programs
			 * a step counts calls and scopes; within one, its operators as well.
			 */
			if (infer_event_is_operation(event) &&
			    (!is_torch_operator(event) || state->evidence->pipeline_count < 2))
				count_child(&parent, event);
		}
		for (uint32_t c = 0; c < parent.child_count; c++)
			if (strcmp(parent.children[c].name, OPTIMIZER_STEP_FAMILY) == 0 &&
			    parent.children[c].count > 1)
				step->flags |= EVENT_CONTAIN_SEVERAL_OPTIMIZERS;
		if (optimizer_closure(order, start, end))
			step->flags |= EVENT_CONTAIN_OPTIMIZER_CLOSURE;
		close_parent(state, &parent);
		start = end;
	}
	return 0;
}

static const struct contain_state *sorting;

/* By parent name, child name, then parent. */
static int by_pair(const void *left, const void *right)
{
	const struct contained *a = left, *b = right;
	const struct infer_event *pa = sorting->parents[a->parent];
	const struct infer_event *pb = sorting->parents[b->parent];
	int order;

	if ((order = compare_u64((uintptr_t)(pa ? pa->name : NULL),
				 (uintptr_t)(pb ? pb->name : NULL))) ||
	    (order = compare_u64((uintptr_t)a->child, (uintptr_t)b->child)))
		return order;
	return compare_u64(a->parent, b->parent);
}

static int by_name(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order = compare_u64((uintptr_t)(a ? a->name : NULL), (uintptr_t)(b ? b->name : NULL));

	return order ? order : compare_u64((uintptr_t)a, (uintptr_t)b);
}

/* Whether the passing examples come from two steps or more: a per-step fact needs them. */
static int several_steps(const struct infer_event *const *passing, size_t count)
{
	for (size_t i = 1; i < count; i++)
		if (passing[i]->step != passing[0]->step)
			return 1;
	return 0;
}

static int emit(struct contain_state *state, const struct infer_event *parent, const char *child,
		uint32_t child_kind, const char *value, const struct infer_event *const *passing,
		size_t passing_count, const struct infer_event *const *failing,
		size_t failing_count)
{
	struct rule rule = { .relation = RELATION_EVENT_CONTAIN,
			     .event = { parent->kind, parent->name },
			     .child = { child_kind, child },
			     .value = value };
	bool ok = true;
	int found;

	if (passing_count < state->evidence->min_passing || !several_steps(passing, passing_count))
		return 0;
	if (!rule_support_judge(&rule, passing, passing_count, state->evidence, &ok))
		return ok ? 0 : -ENOMEM;
	/*
	 * Which operators an optimizer's step runs is its implementation's choice
	 * (lerp_ or add_, a _foreach_ variant on a device): at most where used;
	 * how many times, the number of parameters: across programs, no rule.
	 */
	if (strncmp(child, TORCH_OPERATOR_PREFIX, strlen(TORCH_OPERATOR_PREFIX)) == 0) {
		if (value && state->evidence->pipeline_count >= 2)
			return 0;
		/*
		 * The operators a backward pass runs are the model's (its autograd
		 * functions; a checkpointed block's backward runs a pass of its own):
		 * across programs, as for a step, no rule.
		 */
		if (strcmp(parent->name, BACKWARD_FAMILY) == 0 &&
		    state->evidence->pipeline_count >= 2)
			return 0;
		rule.scope = RULE_SCOPE_USED;
	}
	found = precondition_deduce(state->rules->pool, passing, passing_count, failing,
				    failing_count, NULL, &rule.precondition);
	if (found <= 0)
		return found < 0 ? -ENOMEM : 0;
	rule.passing = passing_count;
	rule.failing = failing_count;
	return rule_set_add(state->rules, &rule);
}

/* Rules of one (parent name, child) pair; 'counts' holds each parent's count of the child. */
static int infer_pair(struct contain_state *state, const struct infer_event **by_parent,
		      size_t first, size_t end, const uint32_t *counts, const char *child,
		      const struct infer_event **passing, const struct infer_event **failing,
		      uint32_t child_kind)
{
	uint32_t values[COUNT_VALUES_MAX];
	size_t value_count = 0, passing_count = 0, failing_count = 0;
	int too_many = 0, failed;

	struct u64_map holders; /* processes whose parents of this name held the child */
	int failed_holders = 0;

	u64_map_init(&holders);
	for (size_t i = first; i < end && !failed_holders; i++)
		if (counts[i - first] &&
		    u64_map_put(&holders, event_contain_holder(by_parent[i]), (void *)by_parent[i]))
			failed_holders = -ENOMEM;
	if (failed_holders) {
		u64_map_free(&holders);
		return failed_holders;
	}
	for (size_t i = first; i < end; i++) {
		uint32_t count = counts[i - first];
		size_t known = 0;

		/* Where the process's parents never held the child, they say nothing of it. */
		if (!u64_map_get(&holders, event_contain_holder(by_parent[i])) ||
		    !event_contain_judged(by_parent[i]))
			continue;
		if (count)
			passing[passing_count++] = by_parent[i];
		else
			failing[failing_count++] = by_parent[i];
		if (!event_contain_count_judged(by_parent[i], child))
			continue;
		while (known < value_count && values[known] != count)
			known++;
		if (known == value_count) {
			if (value_count == COUNT_VALUES_MAX)
				too_many = 1;
			else
				values[value_count++] = count;
		}
	}
	failed = emit(state, by_parent[first], child, child_kind, NULL, passing, passing_count,
		      failing, failing_count);
	for (size_t v = 0; v < value_count && !too_many && !failed; v++) {
		char text[16];
		const char *value;

		if (!values[v])
			continue;
		snprintf(text, sizeof(text), "%u", values[v]);
		value = string_pool_intern(state->rules->pool, text);
		if (!value) {
			failed = -ENOMEM;
			break;
		}
		passing_count = failing_count = 0;
		for (size_t i = first; i < end; i++) {
			if (!u64_map_get(&holders, event_contain_holder(by_parent[i])) ||
			    !event_contain_judged(by_parent[i]) ||
			    !event_contain_count_judged(by_parent[i], child))
				continue;
			if (counts[i - first] == values[v])
				passing[passing_count++] = by_parent[i];
			else
				failing[failing_count++] = by_parent[i];
		}
		failed = emit(state, by_parent[first], child, child_kind, value, passing,
			      passing_count, failing, failing_count);
	}
	u64_map_free(&holders);
	return failed;
}

static int infer_pairs(struct contain_state *state)
{
	size_t size = (state->parent_count ? state->parent_count : 1);
	const struct infer_event **by_parent = malloc(size * sizeof(*by_parent));
	const struct infer_event **passing = malloc(size * sizeof(*passing));
	const struct infer_event **failing = malloc(size * sizeof(*failing));
	size_t *position = malloc(size * sizeof(*position));
	uint32_t *counts = calloc(size, sizeof(*counts));
	size_t parents = 0, first = 0, start = 0;
	int failed = -ENOMEM;

	if (!by_parent || !passing || !failing || !position || !counts)
		goto out;
	for (size_t i = 0; i < state->parent_count; i++)
		if (state->parents[i])
			by_parent[parents++] = state->parents[i];
	qsort(by_parent, parents, sizeof(*by_parent), by_name);
	/* Where each parent went: parents are distinct pointers, found by search. */
	for (size_t i = 0; i < state->parent_count; i++) {
		const struct infer_event *const *at;

		if (!state->parents[i])
			continue;
		at = bsearch(&state->parents[i], by_parent, parents, sizeof(*by_parent), by_name);
		position[i] = (size_t)(at - by_parent);
	}
	sorting = state;
	if (state->found)
		qsort(state->found, state->found_count, sizeof(*state->found), by_pair);
	sorting = NULL;
	failed = 0;
	while (state->found && start < state->found_count && !failed) {
		const struct contained *pair = &state->found[start];
		const struct infer_event *parent = state->parents[pair->parent];
		size_t end = start, last;

		if (!parent) {
			start++;
			continue;
		}
		while (end < state->found_count && state->found[end].child == pair->child &&
		       state->parents[state->found[end].parent] &&
		       state->parents[state->found[end].parent]->name == parent->name)
			end++;
		while (first < parents && by_parent[first]->name != parent->name)
			first++;
		last = first;
		while (last < parents && by_parent[last]->name == parent->name)
			last++;
		for (size_t i = start; i < end; i++)
			counts[position[state->found[i].parent] - first] = state->found[i].count;
		failed = infer_pair(state, by_parent, first, last, counts, pair->child, passing,
				    failing, pair->child_kind);
		memset(counts, 0, (last - first) * sizeof(*counts));
		start = end;
	}
out:
	free(by_parent);
	free(passing);
	free(failing);
	free(position);
	free(counts);
	return failed;
}

int infer_event_contain(struct rule_set *rules, const struct infer_event *events, size_t count,
			const struct rule_evidence *evidence)
{
	struct contain_state state = { .rules = rules, .evidence = evidence };
	const struct infer_event **order = malloc((count ? count : 1) * sizeof(*order));
	int failed = -ENOMEM;

	/* At most one parent per event, plus one per step. */
	state.parents = malloc((2 * count + 1) * sizeof(*state.parents));
	if (!order || !state.parents)
		goto out;
	for (size_t i = 0; i < count; i++)
		order[i] = &events[i];
	qsort(order, count, sizeof(*order), by_thread_time);
	count_in_scopes(&state, order, count);
	failed = count_in_steps(&state, order, count);
	if (!failed && state.out_of_memory)
		failed = -ENOMEM;
	if (!failed)
		failed = infer_pairs(&state);
out:
	free(order);
	free(state.parents);
	free(state.steps);
	free(state.found);
	return failed;
}
