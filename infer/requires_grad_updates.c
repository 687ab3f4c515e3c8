// SPDX-License-Identifier: MIT
/* FrozenUnchanged and TrainableUpdated: weights read frozen or trainable against the optimizer. */
#include "requires_grad_updates.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/u64_map.h"
#include "checkpoint_regions.h"
#include "model_calls.h"
#include "parameter_updates.h"
#include "precondition.h"

#define UPDATED_FIELD "tensor:self"
#define READ_FIELD "tensor:weight"
#define READ_REQUIRES_GRAD_FIELD "requires_grad:weight"
#define READ_GRAD_FN_FIELD "grad_fn:weight"
#define UPDATED_SHAPE_FIELD "shape:self"
#define READ_SHAPE_FIELD "shape:weight"

bool requires_grad_updates_wants(const struct infer_event *event)
{
	return parameter_updates_wants(event);
}

/* Keeps the earliest event per tensor: events come in any order. */
static int keep_earliest(struct u64_map *map, uint64_t tensor, const struct infer_event *event)
{
	const struct infer_event *earlier = u64_map_get(map, tensor);

	if (earlier && earlier->entry_ns <= event->entry_ns)
		return 0;
	return u64_map_put(map, tensor, (void *)event) ? -ENOMEM : 0;
}

/* A step's weights read outside its optimizer step, by requires_grad, and its changing updates. */
struct step_tensors {
	struct u64_map frozen;	  /* weight read with requires_grad False -> its first read */
	struct u64_map trainable; /* ... with requires_grad True -> its first read */
	struct u64_map changed;	  /* tensor -> its first update that changes it, in the step */
	struct u64_map computed;  /* shapes of weights computed from a parameter, not read */
};

static int collect(const struct infer_event *const *events, size_t count,
		   const struct checkpoint_regions *regions, struct step_tensors *tensors,
		   struct requires_grad_finding *finding)
{
	int failed = 0;

	for (size_t i = 0; i < count && !failed; i++) {
		const struct infer_event *event = events[i];
		bool in_step = parameter_updates_step_around(events, count, event) != NULL;
		uint64_t weight = infer_event_tensor(event, READ_FIELD);
		uint64_t updated = infer_event_tensor(event, UPDATED_FIELD);
		const char *requires_grad = infer_event_field(event, READ_REQUIRES_GRAD_FIELD);

		/*
		 * A weight autograd computes (MAML's fast weights) is neither:
		 * its requires_grad flag is clear, and once it is freed its
		 * address may hold an optimizer's state that the step changes.
		 */
		if (infer_event_field_is_true(event, READ_GRAD_FN_FIELD))
			requires_grad = NULL;
		if (parameter_updates_is_optimizer_step(event)) {
			if (!finding->step || event->entry_ns < finding->step->entry_ns)
				finding->step = event;
		} else if (weight && !in_step && requires_grad &&
			   !parameter_updates_computed_weight(event, &tensors->computed) &&
			   (strcmp(requires_grad, "False") == 0 ||
			    !checkpoint_regions_read_gets_no_gradient(regions, event))) {
			failed = keep_earliest(strcmp(requires_grad, "False") == 0
						       ? &tensors->frozen
						       : &tensors->trainable,
					       weight, event);
		} else if (updated && in_step && parameter_updates_changes(event)) {
			failed = keep_earliest(&tensors->changed, updated, event);
		}
	}
	return failed;
}

/*
 * Whether an update changed the tensor a read saw: the same identity, and
 * the same dtype and sizes where the trace has both. A TensorImpl freed in
 * the step (autocast's bfloat16 copy of a weight) may come back at the
 * same address as another tensor (an optimizer's moment buffer).
 */
static bool changed_what_was_read(const struct infer_event *read, const struct infer_event *update)
{
	const char *read_shape = infer_event_field(read, READ_SHAPE_FIELD);
	const char *updated_shape;

	if (!update)
		return false;
	updated_shape = infer_event_field(update, UPDATED_SHAPE_FIELD);
	return !read_shape || !updated_shape || strcmp(read_shape, updated_shape) == 0;
}

/* Notes the models whose reads 'changed' holds: those the step trains; 0 or -ENOMEM. */
static int note_trained_models(struct model_calls *models, const struct u64_map *reads,
			       const struct u64_map *changed)
{
	uint64_t tensor;
	void *value;
	int failed = 0;

	for (size_t i = 0; !failed && u64_map_next(reads, &i, &tensor, &value);)
		if (changed_what_was_read(value, u64_map_get(changed, tensor)))
			failed = model_calls_note_changed(models, value);
	return failed;
}

/* What first_read leaves out and where it puts what it finds (each may be NULL). */
struct read_filter {
	const struct model_calls *models; /* reads of models the step does not train */
	const struct u64_map *other_turn; /* weights the other of optimizers taking turns changed */
	struct u64_map *matched;	  /* every read found: tensor -> read */
	int failed;			  /* -ENOMEM: 'matched' lacks some */
};

/* The earliest read in 'reads' whose tensor 'changed' holds (want_changed) or lacks. */
static const struct infer_event *first_read(const struct u64_map *reads,
					    const struct u64_map *changed, bool want_changed,
					    struct read_filter *filter, size_t *matching)
{
	const struct infer_event *first = NULL;
	uint64_t tensor;
	void *value;

	for (size_t i = 0; u64_map_next(reads, &i, &tensor, &value);) {
		const struct infer_event *read = value;

		if (changed_what_was_read(read, u64_map_get(changed, tensor)) != want_changed ||
		    (filter && filter->models &&
		     model_calls_of_another_model(filter->models, read)) ||
		    (filter && filter->other_turn && u64_map_get(filter->other_turn, tensor)))
			continue;
		if (filter && filter->matched && u64_map_put(filter->matched, tensor, value))
			filter->failed = -ENOMEM;
		(*matching)++;
		if (!first || read->entry_ns < first->entry_ns)
			first = read;
	}
	return first;
}

int requires_grad_updates_judge(const struct infer_event *const *events, size_t count,
				const struct u64_map *other_turn, struct u64_map *unchanged,
				struct requires_grad_finding *finding)
{
	struct step_tensors tensors;
	struct model_calls models;
	struct checkpoint_regions regions = { 0 };
	size_t frozen_changed = 0, trainable_changed = 0, trainable_unchanged = 0;
	size_t frozen_unchanged = 0;
	bool reads;
	int failed;

	memset(finding, 0, sizeof(*finding));
	memset(&models, 0, sizeof(models));
	u64_map_init(&tensors.frozen);
	u64_map_init(&tensors.trainable);
	u64_map_init(&tensors.changed);
	u64_map_init(&tensors.computed);
	failed = model_calls_find(&models, events, count);
	if (!failed)
		failed = checkpoint_regions_find(&regions, events, count, &models);
	if (!failed)
		failed =
			parameter_updates_unread_shapes(events, count, &regions, &tensors.computed);
	if (!failed)
		failed = collect(events, count, &regions, &tensors, finding);
	if (!failed)
		failed = note_trained_models(&models, &tensors.frozen, &tensors.changed);
	if (!failed)
		failed = note_trained_models(&models, &tensors.trainable, &tensors.changed);
	if (!failed) {
		finding->frozen_read =
			first_read(&tensors.frozen, &tensors.changed, true, NULL, &frozen_changed);
		first_read(&tensors.frozen, &tensors.changed, false, NULL, &frozen_unchanged);
		first_read(&tensors.trainable, &tensors.changed, true, NULL, &trainable_changed);
		struct read_filter filter = { &models, other_turn, unchanged, 0 };

		finding->trainable_read = first_read(&tensors.trainable, &tensors.changed, false,
						     &filter, &trainable_unchanged);
		failed = filter.failed;
	}
	reads = frozen_changed + frozen_unchanged + trainable_changed + trainable_unchanged > 0;
	finding->frozen_applies = !failed && finding->step && reads;
	finding->frozen_holds = !finding->frozen_applies || frozen_changed == 0;
	finding->frozen_update =
		finding->frozen_holds
			? NULL
			: u64_map_get(&tensors.changed,
				      infer_event_tensor(finding->frozen_read, READ_FIELD));
	if (finding->frozen_holds)
		finding->frozen_read = NULL;
	finding->trainable_applies = !failed && finding->step && finding->step->nranks <= 1 &&
				     frozen_changed + trainable_changed > 0;
	finding->trainable_holds = !finding->trainable_applies || trainable_unchanged == 0;
	if (finding->trainable_holds)
		finding->trainable_read = NULL;
	u64_map_free(&tensors.frozen);
	u64_map_free(&tensors.trainable);
	u64_map_free(&tensors.changed);
	u64_map_free(&tensors.computed);
	checkpoint_regions_free(&regions);
	model_calls_free(&models);
	return failed;
}

/* The examples of one relation: its steps that held and those that did not. */
struct examples {
	const struct infer_event **passing, **failing;
	size_t passing_count, failing_count;
};

static void add_example(struct examples *examples, bool applies, bool holds,
			const struct infer_event *step)
{
	if (!applies)
		return;
	if (holds)
		examples->passing[examples->passing_count++] = step;
	else
		examples->failing[examples->failing_count++] = step;
}

/* Judges every step of 'order' (sorted by process step). */
static int judge_steps(const struct infer_event **order, size_t count, struct examples *frozen,
		       struct examples *trainable)
{
	int failed = 0;

	for (size_t start = 0, end; start < count && !failed; start = end) {
		const struct infer_event *first = order[start];
		struct requires_grad_finding finding;

		for (end = start; end < count && order[end]->pipeline == first->pipeline &&
				  order[end]->pid == first->pid && order[end]->step == first->step;
		     end++)
			;
		if (first->step < 0)
			continue;
		failed = requires_grad_updates_judge(order + start, end - start, NULL, NULL,
						     &finding);
		if (failed)
			break;
		add_example(frozen, finding.frozen_applies, finding.frozen_holds, finding.step);
		add_example(trainable, finding.trainable_applies, finding.trainable_holds,
			    finding.step);
	}
	return failed;
}

/* One rule of 'relation' from its examples; 0 or -ENOMEM. */
static int emit(struct rule_set *rules, uint32_t relation, const struct examples *examples,
		const struct rule_evidence *evidence)
{
	struct rule rule = { .relation = relation };
	bool ok = true, several_steps = false;
	int found;

	for (size_t i = 1; i < examples->passing_count; i++)
		several_steps |= examples->passing[i]->step != examples->passing[0]->step;
	if (examples->passing_count == 0 || examples->passing_count < evidence->min_passing ||
	    !several_steps)
		return 0;
	rule.event = (struct rule_descriptor){ INFER_EVENT_PYTHON, examples->passing[0]->name };
	if (!rule_support_judge(&rule, examples->passing, examples->passing_count, evidence, &ok))
		return ok ? 0 : -ENOMEM;
	found = precondition_deduce(rules->pool, examples->passing, examples->passing_count,
				    examples->failing, examples->failing_count, NULL,
				    &rule.precondition);
	if (found <= 0)
		return found < 0 ? -ENOMEM : 0;
	rule.passing = examples->passing_count;
	rule.failing = examples->failing_count;
	return rule_set_add(rules, &rule);
}

int infer_requires_grad_updates(struct rule_set *rules, const struct infer_event *events,
				size_t count, const struct rule_evidence *evidence)
{
	size_t size = (count ? count : 1) * sizeof(void *), wanted = 0;
	const struct infer_event **order = malloc(size);
	struct examples frozen = { malloc(size), malloc(size), 0, 0 };
	struct examples trainable = { malloc(size), malloc(size), 0, 0 };
	int failed =
		order && frozen.passing && frozen.failing && trainable.passing && trainable.failing
			? 0
			: -ENOMEM;

	for (size_t i = 0; i < count && !failed; i++)
		if (requires_grad_updates_wants(&events[i]))
			order[wanted++] = &events[i];
	if (!failed) {
		qsort(order, wanted, sizeof(*order), infer_event_order_by_process_step);
		failed = judge_steps(order, wanted, &frozen, &trainable);
	}
	if (!failed)
		failed = emit(rules, RELATION_FROZEN_UNCHANGED, &frozen, evidence);
	if (!failed)
		failed = emit(rules, RELATION_TRAINABLE_UPDATED, &trainable, evidence);
	free(order);
	free(frozen.passing);
	free(frozen.failing);
	free(trainable.passing);
	free(trainable.failing);
	return failed;
}
