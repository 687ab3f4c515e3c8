// SPDX-License-Identifier: MIT
/* ParametersUpdated and Consistent on a step's updates across ranks, inferred step by step. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "base/u64_map.h"
#include "inference_engine.h"
#include "parameter_updates.h"
#include "rank_updates.h"

/*
 * ParametersUpdated: in each step of each process, the weights its forward
 * reads against what its optimizer step changes. 'order' is sorted by
 * process and step (inference_sequences leaves it so).
 */
int inference_parameter_updates(struct inference *inference, const struct infer_event **order,
				const struct infer_event **passing,
				const struct infer_event **failing)
{
	struct rule rule = { .relation = RELATION_PARAMETERS_UPDATED,
			     .event = { INFER_EVENT_PYTHON,
					string_pool_intern(inference->rules->pool,
							   OPTIMIZER_STEP_FAMILY) } };
	const struct infer_event **wanted = malloc((inference->count + 1) * sizeof(*wanted));
	size_t passing_count = 0, failing_count = 0, start = 0;
	int failed = rule.event.name && wanted ? 0 : -ENOMEM;
	struct u64_map history; /* the weights the current process's steps changed */

	u64_map_init(&history);
	while (start < inference->count && !failed) {
		struct parameter_updates_finding finding;
		size_t end = start, count = 0;

		/* Steps come in order within a process; a new process starts a new history. */
		if (start > 0 && (order[start]->pipeline != order[start - 1]->pipeline ||
				  order[start]->pid != order[start - 1]->pid)) {
			u64_map_free(&history);
			u64_map_init(&history);
		}

		while (end < inference->count &&
		       inference_same_process_step(order[end], order[start])) {
			if (parameter_updates_wants(order[end]))
				wanted[count++] = order[end];
			end++;
		}
		if (order[start]->step >= 0 && count > 0) {
			failed = parameter_updates_judge(wanted, count, &history, NULL, &finding);
			if (!failed && finding.applies) {
				if (finding.holds)
					passing[passing_count++] = finding.step;
				else
					failing[failing_count++] = finding.step;
			}
		}
		start = end;
	}
	if (!failed && inference_several_steps(passing, passing_count))
		failed = inference_emit(inference, &rule, passing, passing_count, failing,
					failing_count, NULL);
	u64_map_free(&history);
	free(wanted);
	return failed;
}

/* By source, job size, step, then rank: the ranks of one step in a row. */
static int by_job_step(const void *left, const void *right)
{
	const struct infer_event *a = *(const struct infer_event *const *)left;
	const struct infer_event *b = *(const struct infer_event *const *)right;
	int order;

	if ((order = inference_compare_u64(a->pipeline, b->pipeline)) ||
	    (order = inference_compare_i64(a->nranks, b->nranks)) ||
	    (order = inference_compare_i64(a->step, b->step)))
		return order;
	return inference_compare_i64(a->rank, b->rank);
}

static bool same_job_step(const struct infer_event *a, const struct infer_event *b)
{
	return a->pipeline == b->pipeline && a->nranks == b->nranks && a->step == b->step;
}

/*
 * Consistent on the update operators of a step across the ranks of a job
 * (rank_updates.h): an example is a step every rank finished.
 */
int inference_rank_updates(struct inference *inference, const struct infer_event **order,
			   const struct infer_event **passing, const struct infer_event **failing)
{
	struct infer_event *steps = malloc((inference->count + 1) * sizeof(*steps));
	const struct infer_event **by_step = malloc((inference->count + 1) * sizeof(*by_step));
	const struct infer_event **peers = malloc((inference->count + 1) * sizeof(*peers));
	const struct infer_event **failing_peers = malloc((inference->count + 1) * sizeof(*peers));
	size_t step_count = 0, passing_count = 0, failing_count = 0;
	struct rank_updates updates;
	struct rule rule = { .relation = RELATION_CONSISTENT };
	int failed = rank_updates_init(&updates, inference->rules->pool);

	if (!steps || !by_step || !peers || !failing_peers)
		failed = -ENOMEM;
	for (size_t i = 0; i < inference->count; i++)
		order[i] = &inference->events[i];
	qsort(order, inference->count, sizeof(*order), infer_event_order_by_process_step);
	for (size_t i = 0; i < inference->count && !failed; i++) {
		int finished = rank_updates_observe(&updates, order[i], NULL, &steps[step_count]);

		if (finished < 0)
			failed = finished;
		else
			step_count += (size_t)finished;
	}
	for (size_t i = 0; i < step_count; i++)
		by_step[i] = &steps[i];
	if (!failed)
		qsort(by_step, step_count, sizeof(*by_step), by_job_step);
	for (size_t start = 0, end; start < step_count && !failed; start = end) {
		const struct infer_event *disagreeing = NULL;
		const char *first = infer_event_field(by_step[start], RANK_UPDATES_FIELD);
		const char *shard = NULL;
		bool sharded = rank_updates_note_shard(&shard, by_step[start]);

		for (end = start + 1;
		     end < step_count && same_job_step(by_step[start], by_step[end]); end++) {
			if (!disagreeing &&
			    infer_event_field(by_step[end], RANK_UPDATES_FIELD) != first)
				disagreeing = by_step[end];
			sharded |= rank_updates_note_shard(&shard, by_step[end]);
		}
		/* A rank's step is missing, or the ranks hold shards, not replicas: no example. */
		if (end - start != (size_t)by_step[start]->nranks || sharded)
			continue;
		if (disagreeing) {
			failing_peers[failing_count] = disagreeing;
			failing[failing_count++] = by_step[start];
		} else {
			peers[passing_count] = by_step[start + 1];
			passing[passing_count++] = by_step[start];
		}
	}
	if (!failed && step_count) {
		rule.event = (struct rule_descriptor){ INFER_EVENT_STEP, steps[0].name };
		rule.field = updates.field_name;
		failed = inference_emit_pairs(inference, &rule, passing, peers, passing_count,
					      failing, failing_peers, failing_count,
					      RANK_UPDATES_FIELD);
	}
	rank_updates_free(&updates);
	free(steps);
	free(by_step);
	free(peers);
	free(failing_peers);
	return failed;
}
