// SPDX-License-Identifier: MIT
/*
 * The update operators of each rank's step compared across the ranks of a
 * data-parallel job, on hand-built steps with known answers: the rule
 * inferred from a healthy 2-rank job (and not from one process), and its
 * violations where one rank clips alone, steps with another learning rate,
 * or updates weights that hold other values than its peer's.
 */
#include <string.h>

#include "infer/inference.h"
#include "infer/rank_updates.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

#define WEIGHT 0x5000
#define LR 0.1
#define DATA_PARALLEL_COMM 0x77 /* the job's world, on which each step all-reduces */

/* How one rank's step goes. */
struct rank_step {
	bool clips;	   /* scales its gradients (clip_grad_norm_) */
	double alpha;	   /* the SGD update's scale: -lr */
	int64_t weights;   /* what its weights hold before the update (their digest, in part) */
	const char *shape; /* of the tensors its optimizer updates (its shard), NULL unknown */
	bool absent;	   /* this rank's records of the step are not in the trace */
	uint64_t later_ns; /* added to the step's times (a pause of the whole job before it) */
	bool empty_share;  /* its optimizer's step updates nothing (a sharded one's empty share) */
	bool alone;	   /* makes no collective (local SGD between two averagings) */
	/* its optimizer's step counts in a 0-dim tensor, by this much (0: no counter) */
	double counter_alpha;
	bool evaluates; /* after its step, a metric's mean: a 0-dim tensor divided in place */
};

static struct trace_record update(uint32_t pid, int rank, int world_size, int step, uint64_t at,
				  const char *name, uint64_t tensor, int64_t digest,
				  const char *shape, bool parameter, const char *scalar,
				  double value)
{
	struct trace_record record =
		python_call_record(pid, step, at, 3, name, TRACE_PYTHON_TORCH_OP);
	struct trace_python_call *call = &record.python_call;

	call->rank = rank;
	call->world_size = world_size;
	call->args[call->arg_count++] = (struct trace_python_arg){ .name = "tensor:self",
								   .type = TRACE_VALUE_INT,
								   .integer = (int64_t)tensor };
	call->args[call->arg_count++] = (struct trace_python_arg){ .name = "digest:self",
								   .type = TRACE_VALUE_INT,
								   .integer = digest };
	if (shape)
		call->args[call->arg_count++] = (struct trace_python_arg){ .name = "shape:self",
									   .type = TRACE_VALUE_STR,
									   .text = shape };
	call->args[call->arg_count++] = (struct trace_python_arg){ .name = "requires_grad:self",
								   .type = TRACE_VALUE_BOOL,
								   .integer = parameter };
	if (scalar)
		call->args[call->arg_count++] = (struct trace_python_arg){
			.name = scalar, .type = TRACE_VALUE_FLOAT, .real = value
		};
	return record;
}

/*
 * One rank's step: the gradients' all-reduce on 'comm' (unless it trains
 * alone), clipping scales two gradients (each rank's own contents: not
 * compared), then SGD's step updates two weights, then its scope ends, as
 * the tracer emits them.
 */
static size_t build_rank_step(uint32_t pid, int rank, int world_size, int step, uint64_t comm,
			      struct rank_step how, struct trace_record *records)
{
	uint64_t at = how.later_ns + 1000000ULL * (uint64_t)(step + 1) + 1000ULL * (uint64_t)rank;
	size_t count = 0;

	if (!how.alone) {
		records[count] = nccl_call_record("ncclAllReduce", pid, rank, world_size, comm,
						  step, 32, at - 500);
		records[count++].call.step = step;
	}

	for (uint64_t p = 0; p < 2 && how.clips; p++)
		records[count++] = update(pid, rank, world_size, step, at + p, "aten::mul_.Tensor",
					  WEIGHT + 0x100 + p, 7000 + 10 * rank + (int64_t)p, NULL,
					  false, NULL, 0);
	for (uint64_t p = 0; p < 2 && !how.empty_share; p++)
		records[count++] =
			update(pid, rank, world_size, step, at + 10 + p, "aten::add_.Tensor",
			       WEIGHT + p, how.weights + 100 * step + (int64_t)p, how.shape, true,
			       "arg:alpha", how.alpha);
	if (how.counter_alpha != 0)
		records[count++] = update(pid, rank, world_size, step, at + 15, "aten::add_.Tensor",
					  WEIGHT + 0x200, 5 + step, "Float[]", false, "arg:alpha",
					  how.counter_alpha);
	records[count] = python_call_record(pid, step, at + 5, 20, "Optimizer.step#SGD.step",
					    TRACE_PYTHON_TORCH_SCOPE);
	records[count].python_call.rank = rank;
	records[count++].python_call.world_size = world_size;
	if (how.evaluates)
		records[count++] = update(pid, rank, world_size, step, at + 40, "aten::div_.Scalar",
					  WEIGHT + 0x300 + (uint64_t)step, 9, "Float[]", false,
					  "arg:other", 16);
	return count;
}

static const struct rank_step HEALTHY = { true, -LR, 1, "Float[4, 4]" };

/* The steps rank_updates_join found differing: how many, and the last one's ranks. */
struct differing_steps {
	int count;
	int rank, peer_rank;
};

static void note_differing(void *context, const struct infer_event *step,
			   const struct infer_event *peer)
{
	struct differing_steps *differing = context;

	differing->count++;
	differing->rank = step->rank;
	differing->peer_rank = peer->rank;
}

UNIT_TEST(rank_updates, a_step_signature_names_each_update_and_its_scalars)
{
	struct string_pool *pool = string_pool_new();
	struct rank_updates updates;
	struct trace_record records[16];
	struct infer_event event, finished[2];
	int results[2] = { 0, 0 };
	struct differing_steps differing = { 0, -1, -1 };

	CU_ASSERT_EQUAL_FATAL(rank_updates_init(&updates, pool), 0);
	/* Steps 0 and 1 of rank 0, then steps 0 and 1 of rank 1, which does not clip. */
	for (int rank = 0; rank < 2; rank++)
		for (int step = 0; step < 2; step++) {
			struct rank_step how = { rank == 0, -LR, 1 };
			size_t count = build_rank_step(100 + rank, rank, 2, step,
						       DATA_PARALLEL_COMM, how, records);

			for (size_t i = 0; i < count; i++) {
				int result;

				CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[i], &event),
						1);
				CU_ASSERT_TRUE(rank_updates_wants(&event) ==
					       (records[i].kind == TRACE_RECORD_PYTHON_CALL));
				result = rank_updates_observe(&updates, &event, NULL,
							      &finished[rank]);
				CU_ASSERT_TRUE(result == 0 || result == 1);
				results[rank] += result;
			}
		}
	/* Each rank's step 0 finished when its step 1 began; step 1 stays open. */
	CU_ASSERT_EQUAL(results[0], 1);
	CU_ASSERT_EQUAL(results[1], 1);
	CU_ASSERT_EQUAL(finished[0].kind, INFER_EVENT_STEP);
	CU_ASSERT_EQUAL(finished[0].step, 0);
	CU_ASSERT_EQUAL(finished[1].rank, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(infer_event_field(&finished[0], RANK_UPDATES_FIELD),
				      "aten::mul_.Tensor x2"));
	CU_ASSERT_PTR_NOT_NULL(strstr(infer_event_field(&finished[0], RANK_UPDATES_FIELD),
				      "aten::add_.Tensor arg:alpha=-0.1"));
	CU_ASSERT_PTR_NULL(strstr(infer_event_field(&finished[1], RANK_UPDATES_FIELD), "mul_"));
	/* The two weights the optimizer's step updated, not the clipped gradients. */
	CU_ASSERT_PTR_NOT_NULL(strstr(infer_event_field(&finished[0], RANK_UPDATES_FIELD),
				      "contents of the 2 tensors the optimizer updates"));
	/*
	 * The first rank opens the group; the second completes it, and only then
	 * is it judged: it differs from the first.
	 */
	CU_ASSERT_EQUAL(rank_updates_join(&updates, &finished[0], note_differing, &differing), 0);
	CU_ASSERT_EQUAL(differing.count, 0);
	CU_ASSERT_EQUAL(rank_updates_join(&updates, &finished[1], note_differing, &differing), 1);
	CU_ASSERT_EQUAL(differing.count, 1);
	CU_ASSERT_EQUAL(differing.rank, 1);
	CU_ASSERT_EQUAL(differing.peer_rank, 0);
	/* A process outside a job of two ranks or more does not count. */
	CU_ASSERT_EQUAL(build_rank_step(200, 0, 1, 0, DATA_PARALLEL_COMM, HEALTHY, records), 6);
	CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[1], &event), 1);
	CU_ASSERT_FALSE(rank_updates_wants(&event));
	rank_updates_free(&updates);
	string_pool_free(pool);
}

struct rank_violations {
	int at[8];
	int total;
	int contents_only;    /* same updates and scalars, other values */
	int before_finish;    /* said while the job ran, not at the end of the trace */
	int rank, other_rank; /* of the last violation */
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct rank_violations *seen = context;

	if (!rule_checks_rank_updates(violation->rule))
		return;
	seen->total++;
	if (violation->other &&
	    rank_updates_only_contents_differ(violation->event, violation->other))
		seen->contents_only++;
	if (violation->step >= 0 && violation->step < 8)
		seen->at[violation->step]++;
	seen->rank = violation->event->rank;
	seen->other_rank = violation->other ? violation->other->rank : -1;
}

/* A job of 'world_size' ranks and 'steps' steps, each rank stepping as 'how' says. */
static void run_ranks(struct rank_violations *seen, const struct rule_set *rules, int world_size,
		      int steps, struct rank_step (*how_of)(int rank, int step, const void *),
		      const void *context)
{
	struct rule_checker *checker =
		rule_checker_new((struct rule_set *)rules, count_violation, seen);
	struct trace_record records[16];

	memset(seen, 0, sizeof(*seen));
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < steps; step++)
		for (int rank = 0; rank < world_size; rank++) {
			struct rank_step how = how_of(rank, step, context);
			size_t count = build_rank_step(300 + (uint32_t)rank, rank, world_size, step,
						       DATA_PARALLEL_COMM, how, records);

			for (size_t i = 0; !how.absent && i < count; i++)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
		}
	seen->before_finish = seen->total;
	rule_checker_finish(checker);
	rule_checker_free(checker);
}

/* Where rank 1 turns faulty. */
struct turn {
	int from;
	struct rank_step faulty;
};

static struct rank_step rank_one_turns(int rank, int step, const void *context)
{
	const struct turn *turn = context;

	return rank == 1 && step >= turn->from ? turn->faulty : HEALTHY;
}

/* A 2-rank job of 'steps' steps; rank 1 steps as 'faulty' from step 'from'. */
static void run_job(struct rank_violations *seen, const struct rule_set *rules, int steps, int from,
		    struct rank_step faulty)
{
	struct turn turn = { from, faulty };

	run_ranks(seen, rules, 2, steps, rank_one_turns, &turn);
}

static const struct rule *rank_rule(const struct rule_set *set)
{
	for (size_t i = 0; i < set->count; i++)
		if (rule_checks_rank_updates(&set->rules[i]))
			return &set->rules[i];
	return NULL;
}

static struct rank_step four_shards(int rank, int step, const void *context)
{
	static const char *const shapes[4] = { "Float[4, 4]", "Float[4, 4]", "Float[4]",
					       "Float[16, 10]" };

	(void)step;
	(void)context;
	return (struct rank_step){ true, -LR, 1 + rank, shapes[rank] };
}

/*
 * A sharded optimizer over fewer parameters than ranks: rank 0's share is
 * empty (its step updates nothing) and, fed first, finishes each step first.
 */
static struct rank_step empty_share_first(int rank, int step, const void *context)
{
	struct rank_step how = four_shards(rank, step, context);

	how.empty_share = rank == 0;
	return how;
}

/* A node agent's view of an 8-rank job: ranks 0 to 3 only; rank 1 strays from step 2. */
static struct rank_step node_of_four(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)context;
	if (rank == 1 && step >= 2)
		how.weights = 2;
	how.absent = rank >= 4;
	return how;
}

/* Rank 2's records of step 2 are lost; rank 1 strays in step 2 only. */
static struct rank_step step_lost_on_rank_two(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)context;
	if (rank == 1 && step == 2)
		how.alpha = -10 * LR;
	how.absent = rank == 2 && step == 2;
	return how;
}

/*
 * Rank 2 ends after step 2; the others pause 5 minutes before step 4 (a
 * checkpoint) and go on; rank 1 strays from step 4.
 */
static struct rank_step rank_two_ends(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)context;
	if (step >= 4)
		how.later_ns = 300ULL * 1000000000ULL;
	if (rank == 1 && step >= 4)
		how.weights = 2;
	how.absent = rank == 2 && step >= 3;
	return how;
}

static struct rank_step rank_three_strays(int rank, int step, const void *context)
{
	(void)context;
	return rank == 3 && step >= 2 ? (struct rank_step){ true, -LR, 2, "Float[4, 4]" } : HEALTHY;
}

/*
 * Two 2-rank jobs on one node under one checker (an agent's view): job A
 * (pids 600 and 601) and job B (700 and 701), each on a world communicator
 * of its own, replicas within each job but other weights from job to job.
 * Their steps interleave so that A's rank 0 and B's rank 0 are the first two
 * to finish each step. 'strays' from step 2 on B's rank 1 when set.
 */
static void run_two_jobs(struct rank_violations *seen, const struct rule_set *rules, bool strays)
{
	struct rule_checker *checker =
		rule_checker_new((struct rule_set *)rules, count_violation, seen);
	static const uint32_t first_pid[2] = { 600, 700 };
	static const uint64_t world[2] = { 0xa11, 0xb22 };
	struct trace_record records[16];

	memset(seen, 0, sizeof(*seen));
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int job = 0; job < 2; job++)
		for (int rank = 0; rank < 2; rank++) {
			records[0] = all_reduce_record(first_pid[job] + (uint32_t)rank, rank, 2,
						       world[job], 0, 16);
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[0]), 0);
		}
	for (int step = 0; step < 7; step++)
		for (int rank = 0; rank < 2; rank++)
			for (int job = 0; job < 2; job++) {
				struct rank_step how = HEALTHY;
				size_t count;

				how.weights = 1 + job;
				if (strays && job == 1 && rank == 1 && step >= 2)
					how.weights = 3;
				count = build_rank_step(first_pid[job] + (uint32_t)rank, rank, 2,
							step, world[job], how, records);
				for (size_t i = 0; i < count; i++)
					CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]),
							0);
			}
	seen->before_finish = seen->total;
	rule_checker_finish(checker);
	rule_checker_free(checker);
}

/* Each rank another pipeline stage: tensors of the same shapes holding other values. */
static struct rank_step pipeline_stages(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)step;
	(void)context;
	how.weights = 1 + 10 * rank;
	return how;
}

/*
 * Tensor and data parallel: ranks 0 and 2 hold one shard of a layer, ranks
 * 1 and 3 the other (equal shapes, other values); '*stray_from' (when not
 * NULL) is the step from which rank 3's weights hold what rank 1's do not.
 */
static struct rank_step two_shards_two_replicas(int rank, int step, const void *context)
{
	const int *stray_from = context;
	struct rank_step how = HEALTHY;

	how.weights = 1 + 10 * (rank % 2);
	if (stray_from && rank == 3 && step >= *stray_from)
		how.weights = 50;
	return how;
}

/* Rules inferred from a healthy 2-rank job of 5 steps. */
static struct rule_set *rules_of_a_healthy_job(void)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct trace_record records[16];

	CU_ASSERT_PTR_NOT_NULL_FATAL(inference);
	for (int step = 0; step < 5; step++)
		for (int rank = 0; rank < 2; rank++) {
			size_t count = build_rank_step(400 + rank, rank, 2, step,
						       DATA_PARALLEL_COMM, HEALTHY, records);

			for (size_t i = 0; i < count; i++)
				CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
		}
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	inference_free(inference);
	return set;
}

UNIT_TEST(rank_updates, ranks_of_other_model_parts_are_not_replicas)
{
	struct rule_set *set = rules_of_a_healthy_job();
	struct rank_violations seen;
	int stray_from = 2;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rank_rule(set));
	/* Four pipeline stages of equal shapes, each from its own start: nothing. */
	run_ranks(&seen, set, 4, 7, pipeline_stages, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	/* Two tensor-parallel shards, each held by two data-parallel replicas: nothing. */
	run_ranks(&seen, set, 4, 7, two_shards_two_replicas, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	/*
	 * Rank 3 strays from its replica, rank 1, from step 2: its steps 2 to 5,
	 * compared with rank 1, not with rank 0 (another shard).
	 */
	run_ranks(&seen, set, 4, 7, two_shards_two_replicas, &stray_from);
	CU_ASSERT_EQUAL(seen.total, 4);
	CU_ASSERT_EQUAL(seen.contents_only, 4);
	CU_ASSERT_EQUAL(seen.at[1], 0);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	CU_ASSERT_EQUAL(seen.rank, 3);
	CU_ASSERT_EQUAL(seen.other_rank, 1);
	CU_ASSERT_EQUAL(seen.before_finish, 4);
	rule_set_free(set);
}

UNIT_TEST(rank_updates, inferred_from_a_healthy_job_and_caught_on_the_rank_that_strays)
{
	struct rule_set *set = rule_set_new(), *single = rule_set_new();
	struct inference *inference = inference_new(set), *alone = inference_new(single);
	struct rank_violations seen;
	struct trace_record records[16];
	const struct rule *rule;

	for (int step = 0; step < 5; step++)
		for (int rank = 0; rank < 2; rank++) {
			size_t count = build_rank_step(400 + rank, rank, 2, step,
						       DATA_PARALLEL_COMM, HEALTHY, records);

			for (size_t i = 0; i < count; i++)
				CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
			/* The same steps in a process of its own teach nothing across ranks. */
			count = build_rank_step(500, 0, 1, step, DATA_PARALLEL_COMM, HEALTHY,
						records);
			for (size_t i = 0; rank == 0 && i < count; i++)
				CU_ASSERT_EQUAL(inference_add(alone, &records[i]), 0);
		}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	CU_ASSERT_EQUAL_FATAL(inference_run(alone), 0);
	CU_ASSERT_PTR_NULL(rank_rule(single));
	rule = rank_rule(set);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	/* Steps 0 to 3 finished on both ranks; step 4 stays open. */
	CU_ASSERT_EQUAL(rule->passing, 4);
	CU_ASSERT_EQUAL(rule->precondition.group_count, 0);

	/* Healthy: nothing. */
	run_job(&seen, set, 7, 7, HEALTHY);
	CU_ASSERT_EQUAL(seen.total, 0);
	/* Rank 1 stops clipping from step 3: steps 3 to 5 (6 is never finished). */
	run_job(&seen, set, 7, 3, (struct rank_step){ false, -LR, 1, "Float[4, 4]" });
	CU_ASSERT_EQUAL(seen.total, 3);
	CU_ASSERT_EQUAL(seen.contents_only, 0);
	CU_ASSERT_EQUAL(seen.at[2], 0);
	CU_ASSERT_EQUAL(seen.at[3], 1);
	CU_ASSERT_EQUAL(seen.at[5], 1);
	/* Rank 1 steps with ten times the learning rate from step 4. */
	run_job(&seen, set, 7, 4, (struct rank_step){ true, -10 * LR, 1, "Float[4, 4]" });
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.at[4], 1);
	/* Rank 1's weights hold other values from step 2 (restored alone), same updates. */
	run_job(&seen, set, 7, 2, (struct rank_step){ true, -LR, 2, "Float[4, 4]" });
	CU_ASSERT_EQUAL(seen.total, 4);
	CU_ASSERT_EQUAL(seen.contents_only, 4);
	CU_ASSERT_EQUAL(seen.at[1], 0);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	/*
	 * A sharded optimizer (ZeRO-style): rank 1 updates its own shard, tensors
	 * of other shapes holding other values, by design: nothing.
	 */
	run_job(&seen, set, 7, 0, (struct rank_step){ true, -LR, 3, "Float[4]" });
	CU_ASSERT_EQUAL(seen.total, 0);
	/* Where the shapes are not known (device memory), the ranks are compared as before. */
	run_job(&seen, set, 7, 2, (struct rank_step){ true, -LR, 2, NULL });
	CU_ASSERT_EQUAL(seen.total, 4);

	/*
	 * The rule learned at 2 ranks, checked at 4. Sharded by hand, ranks 0
	 * and 1 own two equal layers (same shapes, other values) and ranks 2
	 * and 3 tensors of other shapes: the job holds shards, nothing is said.
	 */
	run_ranks(&seen, set, 4, 7, four_shards, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	/* The same with rank 0's share empty, its step first to finish: still shards. */
	run_ranks(&seen, set, 4, 7, empty_share_first, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	/* Four replicas, rank 3's weights other from step 2: its steps 2 to 5. */
	run_ranks(&seen, set, 4, 7, rank_three_strays, NULL);
	CU_ASSERT_EQUAL(seen.total, 4);
	CU_ASSERT_EQUAL(seen.contents_only, 4);
	CU_ASSERT_EQUAL(seen.at[1], 0);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	/* Judged once every rank of the job seen has finished a step: while it runs. */
	CU_ASSERT_EQUAL(seen.before_finish, 4);
	/*
	 * A node agent sees 4 ranks of an 8-rank job: a step is judged when those
	 * 4 finished it, as the job runs (steps 2 to 5; 6 is never finished).
	 */
	run_ranks(&seen, set, 8, 7, node_of_four, NULL);
	CU_ASSERT_EQUAL(seen.total, 4);
	CU_ASSERT_EQUAL(seen.before_finish, 4);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	/*
	 * A step one rank lost is judged with the ranks that have it once a later
	 * step is judged: rank 1's step 2 is named before the trace ends.
	 */
	run_ranks(&seen, set, 3, 7, step_lost_on_rank_two, NULL);
	CU_ASSERT_EQUAL(seen.total, 1);
	CU_ASSERT_EQUAL(seen.before_finish, 1);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	/*
	 * A rank that ended is waited for no more once it has been quiet two
	 * minutes: rank 1's steps 4 and 5 are named while the job runs.
	 */
	run_ranks(&seen, set, 3, 7, rank_two_ends, NULL);
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.before_finish, 2);
	CU_ASSERT_EQUAL(seen.at[4], 1);
	/*
	 * Two jobs of the same size under one checker are two jobs: healthy,
	 * nothing, though their steps interleave; job B's rank 1 strays from
	 * step 2: its steps 2 to 5, named while the jobs run.
	 */
	run_two_jobs(&seen, set, false);
	CU_ASSERT_EQUAL(seen.total, 0);
	run_two_jobs(&seen, set, true);
	CU_ASSERT_EQUAL(seen.total, 4);
	CU_ASSERT_EQUAL(seen.contents_only, 4);
	CU_ASSERT_EQUAL(seen.before_finish, 4);
	CU_ASSERT_EQUAL(seen.at[1], 0);
	CU_ASSERT_EQUAL(seen.at[2], 1);
	inference_free(inference);
	inference_free(alone);
	rule_set_free(set);
	rule_set_free(single);
}

/*
 * Local SGD: each rank trains alone and the replicas are averaged after
 * every fourth step (a collective then); between averagings each rank's
 * weights hold its own values, and after one its momentum buffers still do.
 */
static struct rank_step local_sgd(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)context;
	how.alone = step % 4 != 0 || step == 0;
	how.weights = step == 0 ? 1 : 1 + rank;
	return how;
}

/* A replica that strays while the ranks all-reduce every step (rank 1 from step 3). */
static struct rank_step strays_while_in_step(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)context;
	if (rank == 1 && step >= 3)
		how.weights = 2;
	return how;
}

UNIT_TEST(rank_updates, replicas_that_train_alone_are_not_held_to_agree)
{
	struct rule_set *set = rules_of_a_healthy_job();
	struct rank_violations seen;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rank_rule(set));
	/* Local SGD at 2 and 4 ranks: its replicas differ by design, nothing is said. */
	run_ranks(&seen, set, 2, 9, local_sgd, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	run_ranks(&seen, set, 4, 9, local_sgd, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	/* The same stray in a job whose ranks communicate in every step: steps 3 to 7. */
	run_ranks(&seen, set, 2, 9, strays_while_in_step, NULL);
	CU_ASSERT_EQUAL(seen.total, 5);
	CU_ASSERT_EQUAL(seen.at[2], 0);
	CU_ASSERT_EQUAL(seen.at[3], 1);
	rule_set_free(set);
}

/* Rank 0 alone evaluates after every third step (`if rank == 0:`): a mean over 16. */
static struct rank_step rank_zero_evaluates(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)context;
	how.evaluates = rank == 0 && step % 3 == 2;
	return how;
}

/* Every rank's optimizer counts its steps in a 0-dim tensor; rank 1 twice from step 3. */
static struct rank_step rank_one_counts_twice(int rank, int step, const void *context)
{
	struct rank_step how = HEALTHY;

	(void)context;
	how.counter_alpha = rank == 1 && step >= 3 ? 2 : 1;
	return how;
}

UNIT_TEST(rank_updates, a_number_one_rank_computes_is_no_update_of_its_replica)
{
	struct rule_set *set = rules_of_a_healthy_job();
	struct rank_violations seen;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rank_rule(set));
	/* A metric rank 0 alone computes outside the optimizer's step: nothing to say. */
	run_ranks(&seen, set, 2, 9, rank_zero_evaluates, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	run_ranks(&seen, set, 4, 9, rank_zero_evaluates, NULL);
	CU_ASSERT_EQUAL(seen.total, 0);
	/*
	 * A 0-dim tensor inside the optimizer's step is its state: a rank that
	 * counts apart, at steps 3 to 7 (the last step never ends).
	 */
	run_ranks(&seen, set, 2, 9, rank_one_counts_twice, NULL);
	CU_ASSERT_EQUAL(seen.at[2], 0);
	CU_ASSERT_EQUAL(seen.at[3], 1);
	CU_ASSERT_EQUAL(seen.total, 5);
	rule_set_free(set);
}
