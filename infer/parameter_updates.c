// SPDX-License-Identifier: MIT
/* ParametersUpdated: the weights a step's forward reads against what its optimizer step changes. */
#include "parameter_updates.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/u64_map.h"
#include "checkpoint_regions.h"
#include "model_calls.h"

#define UPDATED_FIELD "tensor:self"
#define READ_FIELD "tensor:weight"

bool parameter_updates_is_optimizer_step(const struct infer_event *event)
{
	return event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_SCOPE) &&
	       strcmp(event->name, OPTIMIZER_STEP_FAMILY) == 0;
}

/*
 * A collective that writes the weights of every rank from some of them: a
 * broadcast or an all-gather (c10d's or NCCL's). Inside an optimizer's step
 * it is a sharded optimizer's owners sending the shards they updated
 * (torch's ZeroRedundancyOptimizer broadcasts, DeepSpeed's ZeRO gathers).
 */
static bool is_weights_collective(const struct infer_event *event)
{
	static const char *const prefixes[] = { "c10d::broadcast",  "c10d::allgather",
						"c10d::_allgather", "ncclBroadcast",
						"ncclBcast",	    "ncclAllGather" };

	if (event->kind != INFER_EVENT_NCCL || !event->name)
		return false;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(event->name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

bool parameter_updates_wants(const struct infer_event *event)
{
	return parameter_updates_is_optimizer_step(event) || model_calls_wants(event) ||
	       is_weights_collective(event) || checkpoint_regions_is_forward(event) ||
	       (event->kind == INFER_EVENT_PYTHON && (event->flags & TRACE_PYTHON_TORCH_OP) &&
		(infer_event_field(event, UPDATED_FIELD) || infer_event_field(event, READ_FIELD)));
}

/*
 * Whether an update changes its tensor: an additive scale (alpha, value,
 * weight) of 0 or a factor (mul_'s, div_'s other) of 1 leaves it as it was.
 */
bool parameter_updates_changes(const struct infer_event *update)
{
	static const char *const additive[] = { "arg:alpha", "arg:value", "arg:weight" };
	const char *factor = infer_event_field(update, "arg:other");

	for (size_t i = 0; i < sizeof(additive) / sizeof(additive[0]); i++) {
		const char *scale = infer_event_field(update, additive[i]);

		if (scale)
			return strtod(scale, NULL) != 0.0;
	}
	return !factor || strtod(factor, NULL) != 1.0;
}

const struct infer_event *parameter_updates_step_around(const struct infer_event *const *events,
							size_t count,
							const struct infer_event *event)
{
	for (size_t i = 0; i < count; i++)
		if (parameter_updates_is_optimizer_step(events[i]) &&
		    infer_event_runs_inside(event, events[i]))
			return events[i];
	return NULL;
}

/* Tensor -> its first update in an optimizer step (changed: the map holds changing ones). */
struct updates {
	struct u64_map any;	   /* tensor -> an update */
	struct u64_map changing;   /* tensor -> an update that changes it */
	size_t of_parameters;	   /* updates of tensors that require grad */
	size_t of_state;	   /* updates of tensors known not to (buffers, step counters) */
	size_t parameters_changed; /* tensors that require grad changed */
	size_t collectives;	   /* broadcasts and all-gathers inside the step (a shard's) */
};

/*
 * Whether the optimizer's step did its work out of sight: it updated its
 * own state (a fused AdamW counts its steps in 0-dim tensors) but no tensor
 * that requires grad, while every weight the forward read requires grad,
 * so its parameters were changed by one fused kernel the tracer does not
 * watch. An optimizer whose parameters got no gradient updates nothing at
 * all, one that updates other parameters than the forward reads updates
 * tensors that require grad, and frozen layers show in the forward's reads:
 * all are still judged.
 */
static bool updated_out_of_sight(const struct updates *updates, size_t frozen_reads)
{
	return updates->of_state > 0 && updates->of_parameters == 0 && frozen_reads == 0;
}

/*
 * Whether the step is a rank's share of a sharded optimizer (ZeRO-style): in
 * a job of several ranks, its optimizer changed parameters, none of them a
 * weight the forward reads, and none of those it changed before: it holds
 * another shard, and the weights it reads are changed by their owners (a
 * broadcast). A rank whose share is empty (more ranks than the optimizer has
 * parameters to share out) changes nothing itself, and its step only
 * receives the weights by a broadcast or all-gather. Each rank's own shard
 * is still judged where it reads it.
 */
static bool other_shard(const struct parameter_updates_finding *finding,
			const struct updates *updates, bool stopped)
{
	return finding->step->nranks > 1 && finding->changed == 0 && !stopped &&
	       (updates->parameters_changed > 0 || updates->collectives > 0);
}

static int collect_updates(const struct infer_event *const *events, size_t count,
			   struct updates *updates, struct parameter_updates_finding *finding)
{
	for (size_t i = 0; i < count; i++) {
		const struct infer_event *event = events[i];
		const char *requires_grad;
		uint64_t tensor;

		if (parameter_updates_is_optimizer_step(event)) {
			if (!finding->step || event->entry_ns < finding->step->entry_ns)
				finding->step = event;
			continue;
		}
		if (is_weights_collective(event)) {
			updates->collectives +=
				parameter_updates_step_around(events, count, event) != NULL;
			continue;
		}
		tensor = infer_event_tensor(event, UPDATED_FIELD);
		if (!tensor || !parameter_updates_step_around(events, count, event))
			continue;
		if (!u64_map_get(&updates->any, tensor) &&
		    u64_map_put(&updates->any, tensor, (void *)event))
			return -ENOMEM;
		requires_grad = infer_event_field(event, "requires_grad:self");
		if (infer_event_field_is_true(event, "requires_grad:self"))
			updates->of_parameters++;
		else if (requires_grad)
			updates->of_state++;
		/* Optimizer state and temporaries: their freed addresses may next hold a weight. */
		if (!parameter_updates_changes(event) || u64_map_get(&updates->changing, tensor) ||
		    (requires_grad && strcmp(requires_grad, "False") == 0))
			continue;
		if (u64_map_put(&updates->changing, tensor, (void *)event))
			return -ENOMEM;
		updates->parameters_changed +=
			infer_event_field_is_true(event, "requires_grad:self");
	}
	return 0;
}

/* Keeps the earliest read: events come in any order. */
static void note_unchanged(const struct infer_event **first, const struct infer_event *read)
{
	if (!*first || read->entry_ns < (*first)->entry_ns)
		*first = read;
}

static bool is_false(const char *flag)
{
	return flag && strcmp(flag, "False") == 0;
}

/*
 * The forward's weight reads: weight -> its first read (none inside the
 * optimizer's step, none that gets no gradient: checkpoint_regions.h).
 */
static int collect_reads(const struct infer_event *const *events, size_t count,
			 const struct checkpoint_regions *regions, struct u64_map *reads)
{
	for (size_t i = 0; i < count; i++) {
		const struct infer_event *read = events[i];
		const struct infer_event *known;
		uint64_t weight = infer_event_tensor(read, READ_FIELD);

		if (!weight || parameter_updates_step_around(events, count, read) ||
		    checkpoint_regions_read_gets_no_gradient(regions, read))
			continue;
		known = u64_map_get(reads, weight);
		if (known && known->entry_ns <= read->entry_ns)
			continue;
		if (u64_map_put(reads, weight, (void *)read))
			return -ENOMEM;
	}
	return 0;
}

/* Whether a shape as recorded ("'BFloat16[32, 8]'", quoted or not) is of that dtype. */
static bool shape_of_dtype(const char *shape, const char *dtype)
{
	size_t length = strlen(dtype);

	if (*shape == '\'')
		shape++;
	return strncmp(shape, dtype, length) == 0 && shape[length] == '[';
}

/* Reduced precisions a model may run in while its optimizer keeps float32 masters. */
static bool of_reduced_precision(const char *shape)
{
	return shape_of_dtype(shape, "BFloat16") || shape_of_dtype(shape, "Half");
}

/* The key of a float32 master's sizes ("[32, 8]"), apart from the keys of whole shapes. */
static uint64_t master_sizes_key(const char *shape)
{
	return fnv1a_add_u64(fnv1a_string(strchr(shape, '[')), 1);
}

/*
 * The shapes (hashed) of the parameters the step changed and the forward
 * did not read: a reparametrised layer's (spectral_norm, weight_norm,
 * parametrize) weight_orig, from which each forward computes the weight it
 * reads as a new tensor that is no parameter; and the sizes of the float32
 * ones, master copies of a reduced-precision model's weights.
 */
static int unread_parameter_shapes(const struct updates *updates, const struct u64_map *reads,
				   struct u64_map *shapes)
{
	uint64_t tensor;
	void *value;

	for (size_t i = 0; u64_map_next(&updates->changing, &i, &tensor, &value);) {
		const struct infer_event *update = value;
		const char *shape = infer_event_field(update, "shape:self");

		if (!shape || !strchr(shape, '[') || u64_map_get(reads, tensor) ||
		    !infer_event_field_is_true(update, "requires_grad:self"))
			continue;
		if (u64_map_put(shapes, fnv1a_string(shape), shapes) ||
		    (shape_of_dtype(shape, "Float") &&
		     u64_map_put(shapes, master_sizes_key(shape), shapes)))
			return -ENOMEM;
	}
	return 0;
}

/* Whether a shape as recorded ("'Float[64, 32]'") has two dimensions or more: a matrix. */
static bool shape_is_matrix(const char *shape)
{
	const char *sizes = shape ? strchr(shape, '[') : NULL;

	return sizes && strchr(sizes, ',') != NULL;
}

/*
 * Whether the step changed a matrix that requires grad which no watched
 * forward read of the process ever saw: not read in this step, not one read
 * and changed in an earlier one (history), and of no shape the forward read.
 * The model trains it through operators the probes do not watch (prompt
 * tuning's soft prompt joined to the embeddings with torch.cat, an adapter
 * applied with matmul), so weights the forward reads staying as they were
 * says nothing: they may all be frozen by design. Still judged: a stale
 * model's parameters (read in the steps before it was replaced, or of the
 * shapes of the model that replaced it), a reparametrised weight's
 * parameter (of the computed weight's shape) and a model trained in its
 * norms only (every matrix frozen: it changes no matrix).
 */
static bool trains_unwatched_matrix(const struct updates *updates, const struct u64_map *reads,
				    const struct u64_map *history)
{
	struct u64_map read_shapes;
	uint64_t tensor;
	void *value;
	bool found = false;

	u64_map_init(&read_shapes);
	for (size_t i = 0; u64_map_next(reads, &i, &tensor, &value);) {
		const char *shape = infer_event_field(value, "shape:weight");

		if (shape && u64_map_put(&read_shapes, fnv1a_string(shape), &read_shapes)) {
			u64_map_free(&read_shapes);
			return false;
		}
	}
	for (size_t i = 0; !found && u64_map_next(&updates->changing, &i, &tensor, &value);) {
		const struct infer_event *update = value;
		const char *shape = infer_event_field(update, "shape:self");

		found = infer_event_field_is_true(update, "requires_grad:self") &&
			shape_is_matrix(shape) && !u64_map_get(&read_shapes, fnv1a_string(shape)) &&
			!u64_map_get(reads, tensor) && !u64_map_get(history, tensor);
	}
	u64_map_free(&read_shapes);
	return found;
}

bool parameter_updates_computed_weight(const struct infer_event *read,
				       const struct u64_map *unread_shapes)
{
	const char *shape = infer_event_field(read, "shape:weight");

	if (!shape || !strchr(shape, '['))
		return false;
	if (of_reduced_precision(shape) && u64_map_get(unread_shapes, master_sizes_key(shape)))
		return true;
	return is_false(infer_event_field(read, "requires_grad:weight")) &&
	       u64_map_get(unread_shapes, fnv1a_string(shape));
}

int parameter_updates_unread_shapes(const struct infer_event *const *events, size_t count,
				    const struct checkpoint_regions *regions,
				    struct u64_map *shapes)
{
	struct parameter_updates_finding finding = { 0 };
	struct updates updates = { 0 };
	struct u64_map reads;
	int failed;

	u64_map_init(&updates.any);
	u64_map_init(&updates.changing);
	u64_map_init(&reads);
	failed = collect_updates(events, count, &updates, &finding);
	if (!failed)
		failed = collect_reads(events, count, regions, &reads);
	if (!failed)
		failed = unread_parameter_shapes(&updates, &reads, shapes);
	u64_map_free(&updates.any);
	u64_map_free(&updates.changing);
	u64_map_free(&reads);
	return failed;
}

int parameter_updates_judge(const struct infer_event *const *events, size_t count,
			    struct u64_map *history, const struct u64_map *other_turn,
			    struct parameter_updates_finding *finding)
{
	const struct infer_event *first_unchanged = NULL, *first_stopped = NULL;
	const struct infer_event *first_frozen = NULL;
	struct updates updates;
	struct u64_map reads;	      /* weight read -> its first read */
	struct u64_map unread_shapes; /* shapes of parameters changed and not read */
	struct model_calls models;    /* the model of each read, and those the step trains */
	struct checkpoint_regions regions = { 0 };
	size_t frozen_reads = 0;
	size_t computed_reads = 0; /* reads of weights computed from a parameter the step changed */
	uint64_t weight;
	void *value;
	int failed;

	memset(finding, 0, sizeof(*finding));
	memset(&updates, 0, sizeof(updates));
	memset(&models, 0, sizeof(models));
	u64_map_init(&updates.any);
	u64_map_init(&updates.changing);
	u64_map_init(&reads);
	u64_map_init(&unread_shapes);
	failed = collect_updates(events, count, &updates, finding);
	if (!failed)
		failed = model_calls_find(&models, events, count);
	if (!failed && finding->step)
		failed = checkpoint_regions_find(&regions, events, count, &models);
	if (!failed && finding->step)
		failed = collect_reads(events, count, &regions, &reads);
	if (!failed && finding->step)
		failed = unread_parameter_shapes(&updates, &reads, &unread_shapes);
	for (size_t i = 0; !failed && u64_map_next(&reads, &i, &weight, &value);)
		if (u64_map_get(&updates.changing, weight))
			failed = model_calls_note_changed(&models, value);
	for (size_t i = 0; !failed && u64_map_next(&reads, &i, &weight, &value);) {
		const struct infer_event *read = value;

		if (model_calls_of_another_model(&models, read))
			continue;
		if (parameter_updates_computed_weight(read, &unread_shapes)) {
			computed_reads++;
			continue;
		}
		finding->weights++;
		if (is_false(infer_event_field(read, "requires_grad:weight")))
			frozen_reads++;
		if (u64_map_get(&updates.changing, weight)) {
			finding->changed++;
			continue;
		}
		/* The other model of optimizers taking turns: trained in the turn before. */
		if (other_turn && u64_map_get(other_turn, weight)) {
			finding->other_turn++;
			continue;
		}
		note_unchanged(&first_unchanged, read);
		if (!u64_map_get(history, weight))
			continue;
		/* Frozen by the program (requires_grad False): it stops changing as it should. */
		if (is_false(infer_event_field(read, "requires_grad:weight")))
			note_unchanged(&first_frozen, read);
		else
			note_unchanged(&first_stopped, read);
	}
	finding->applies = !failed && finding->step && finding->weights > 0 &&
			   !updated_out_of_sight(&updates, frozen_reads) &&
			   !other_shard(finding, &updates, first_stopped != NULL) &&
			   !(finding->changed == 0 && !first_stopped &&
			     trains_unwatched_matrix(&updates, &reads, history));
	/*
	 * Nothing the forward reads changes, or what changed before stopped
	 * changing. A reparametrised weight (spectral_norm's, weight_norm's) is
	 * read as a new tensor each time: it changes when its parameter does.
	 */
	finding->holds = !finding->applies ||
			 ((finding->changed > 0 || finding->other_turn > 0 || computed_reads > 0) &&
			  !first_stopped);
	if (!finding->holds) {
		finding->stopped = first_stopped != NULL;
		finding->read = first_stopped ? first_stopped : first_unchanged;
		finding->update =
			u64_map_get(&updates.any, infer_event_tensor(finding->read, READ_FIELD));
	}
	finding->frozen = finding->holds && finding->applies ? first_frozen : NULL;
	/*
	 * The weights read and changed in this step are history for the next;
	 * a frozen one that stopped is said once, and is history no more.
	 */
	for (size_t i = 0; !failed && u64_map_next(&reads, &i, &weight, &value);) {
		if (u64_map_get(&updates.changing, weight)) {
			if (u64_map_put(history, weight, history))
				failed = -ENOMEM;
		} else if (is_false(infer_event_field(value, "requires_grad:weight"))) {
			u64_map_remove(history, weight);
		}
	}
	u64_map_free(&updates.any);
	u64_map_free(&updates.changing);
	u64_map_free(&reads);
	u64_map_free(&unread_shapes);
	checkpoint_regions_free(&regions);
	model_calls_free(&models);
	return failed;
}
