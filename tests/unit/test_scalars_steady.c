// SPDX-License-Identifier: MIT
/*
 * ScalarsSteady on hand-built steps with known answers: the scalars an
 * optimizer's updates apply against its previous step's, a scheduler's run
 * letting them change, a rule per optimizer implementation inferred from
 * healthy programs and its violation at the step whose learning rate moved
 * when a state was loaded into the optimizer (a resume), not when the
 * program set it or built a new optimizer at another rate.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "infer/scalars_steady.h"
#include "nccl_records.h"
#include "scratch_files.h"
#include "unit.h"

#define WEIGHT 0x5000
#define BUFFER 0x7000

/* One optimizer step: its implementation, learning rate, momentum and scheduler. */
struct step_plan {
	const char *scope; /* "Optimizer.step#SGD.step" */
	double learning_rate;
	bool momentum;	    /* the momentum buffer's update (SGD from its second step) */
	bool scheduler;	    /* torch.optim.lr_scheduler code ran before the step */
	const char *set_up; /* code that built the optimizer or loaded its state before the step */
	/* the step changed parameters no step had (optimizer_firsts: INFER_EVENT_NEW_PARAMETERS) */
	bool new_parameters;
};

/* What CPython shows of an optimizer built (a torch.optim class's constructor) or loaded. */
#define BUILT "torch.optim.sgd.SGD.__init__"
#define LOADED "torch.optim.optimizer.Optimizer.load_state_dict.<locals>.<genexpr>"

static void argument(struct trace_record *record, const char *field, uint32_t type, double value)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = field, .type = type };
	if (type == TRACE_VALUE_FLOAT)
		arg->real = value;
	else
		arg->integer = (int64_t)value;
}

/* The records of one step, in arrival order (a scope's comes when it ends). */
static size_t build_step(uint32_t pid, int step, const struct step_plan *plan,
			 struct trace_record *records)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	size_t count = 0;

	if (plan->scheduler)
		records[count++] = python_call_record(
			pid, step, base + 50, 5,
			"torch.optim.lr_scheduler._enable_get_lr_call.__enter__", 0);
	if (plan->set_up)
		records[count++] = python_call_record(pid, step, base + 40, 5, plan->set_up, 0);
	if (plan->momentum) {
		records[count] = python_call_record(pid, step, base + 105, 3, "aten::mul_.Scalar",
						    TRACE_PYTHON_TORCH_OP);
		argument(&records[count], "tensor:self", TRACE_VALUE_INT, BUFFER);
		argument(&records[count++], "arg:other", TRACE_VALUE_FLOAT, 0.9);
		/* buf.mul_(momentum).add_(grad, alpha=1 - dampening) */
		records[count] = python_call_record(pid, step, base + 107, 3, "aten::add_.Tensor",
						    TRACE_PYTHON_TORCH_OP);
		argument(&records[count], "tensor:self", TRACE_VALUE_INT, BUFFER);
		argument(&records[count++], "arg:alpha", TRACE_VALUE_FLOAT, 1.0);
	}
	records[count] = python_call_record(pid, step, base + 110, 3, "aten::add_.Tensor",
					    TRACE_PYTHON_TORCH_OP);
	argument(&records[count], "tensor:self", TRACE_VALUE_INT, WEIGHT);
	argument(&records[count++], "arg:alpha", TRACE_VALUE_FLOAT, -plan->learning_rate);
	/* An update outside the optimizer's step (clipping) is not its scalars. */
	records[count] = python_call_record(pid, step, base + 60, 3, "aten::mul_.Tensor",
					    TRACE_PYTHON_TORCH_OP);
	argument(&records[count], "tensor:self", TRACE_VALUE_INT, WEIGHT + 8);
	argument(&records[count++], "arg:other", TRACE_VALUE_FLOAT, 0.5 / (step + 1));
	records[count++] = python_call_record(pid, step, base + 100, 100, plan->scope,
					      TRACE_PYTHON_TORCH_SCOPE);
	return count;
}

/* Judges one step after 'history'; returns the finding's verdict as -1 (no example), 0, 1. */
static int judge(struct string_pool *pool, int step, const struct step_plan *plan,
		 struct scalars_history *history, struct scalars_steady_finding *finding)
{
	struct trace_record records[8];
	struct infer_event events[8];
	const struct infer_event *pointers[8];
	size_t count = build_step(10, step, plan, records);

	for (size_t i = 0; i < count; i++) {
		CU_ASSERT_EQUAL(infer_event_from_record(pool, &records[i], &events[i]), 1);
		/*
		 * A constructor's run is no part of it: a new optimizer's scalars are
		 * its own. Nor is a load: the step after it carries it (below).
		 */
		CU_ASSERT_EQUAL(scalars_steady_wants(&events[i]),
				strcmp(events[i].name, BUILT) != 0 &&
					strcmp(events[i].name, LOADED) != 0);
		/* What optimizer_firsts sets on the step, as the pipelines run it first. */
		if (plan->new_parameters && (events[i].flags & TRACE_PYTHON_TORCH_SCOPE))
			events[i].flags |= INFER_EVENT_NEW_PARAMETERS;
		if (plan->set_up && strcmp(plan->set_up, LOADED) == 0 &&
		    (events[i].flags & TRACE_PYTHON_TORCH_SCOPE))
			events[i].flags |= INFER_EVENT_AFTER_STATE_LOAD;
		pointers[i] = &events[i];
	}
	CU_ASSERT_EQUAL(scalars_steady_judge(pointers, count, history, finding), 0);
	if (!finding->holds) {
		CU_ASSERT_PTR_NOT_NULL(finding->update);
		CU_ASSERT_STRING_EQUAL(finding->before.name, "aten::add_.Tensor");
	}
	return finding->applies ? finding->holds : -1;
}

UNIT_TEST(scalars_steady, a_scalar_replaced_between_steps_of_a_process_with_no_scheduler)
{
	static const struct step_plan
		sgd = { "Optimizer.step#SGD.step", 0.1, false, false, NULL },
		momentum = { "Optimizer.step#SGD.step", 0.1, true, false, NULL },
		resumed = { "Optimizer.step#SGD.step", 1.0, true, false, LOADED },
		decayed = { "Optimizer.step#SGD.step", 0.05, true, false, BUILT },
		tenfold = { "Optimizer.step#SGD.step", 1.0, true, false, NULL },
		by_hand = { "Optimizer.step#SGD.step", 0.5, true, false, NULL },
		scheduled = { "Optimizer.step#SGD.step", 0.5, true, true, NULL };
	struct string_pool *pool = string_pool_new();
	struct scalars_history history = { 0 };
	struct scalars_steady_finding finding;

	CU_ASSERT_EQUAL(judge(pool, 0, &sgd, &history, &finding), -1); /* nothing before */
	CU_ASSERT_TRUE(history.known);
	/*
	 * The momentum buffer's factor only adds a scalar: no change, and the
	 * scalars have settled; step 1 is no example (nothing had settled before it).
	 */
	CU_ASSERT_EQUAL(judge(pool, 1, &momentum, &history, &finding), -1);
	CU_ASSERT_TRUE(history.steady);
	CU_ASSERT_EQUAL(judge(pool, 2, &momentum, &history, &finding), 1);
	/*
	 * Rebuilt over parameters no step had changed (the whole model after a
	 * linear probe) at another rate: a new phase's own scalars, no example.
	 */
	{
		struct scalars_history phase = { 0 };
		struct step_plan new_phase = resumed;

		new_phase.new_parameters = true;
		CU_ASSERT_EQUAL(judge(pool, 0, &sgd, &phase, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 1, &momentum, &phase, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 2, &momentum, &phase, &finding), 1);
		CU_ASSERT_EQUAL(judge(pool, 3, &new_phase, &phase, &finding), -1);
		scalars_history_free(&phase);
	}
	/*
	 * A new optimizer built over the same parameters at half the rate, no
	 * state loaded (a rate decayed by rebuilding each epoch): the program's
	 * own new setting, no example; the steps after it settle on it.
	 */
	{
		struct scalars_history rebuilt = { 0 };
		const struct step_plan decayed_steps = { "Optimizer.step#SGD.step", 0.05, true,
							 false, NULL };

		CU_ASSERT_EQUAL(judge(pool, 0, &sgd, &rebuilt, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 1, &momentum, &rebuilt, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 2, &momentum, &rebuilt, &finding), 1);
		CU_ASSERT_EQUAL(judge(pool, 3, &decayed, &rebuilt, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 4, &decayed_steps, &rebuilt, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 5, &decayed_steps, &rebuilt, &finding), 1);
		scalars_history_free(&rebuilt);
	}
	/*
	 * Resumed at another rate over the same parameters, its first step with no
	 * momentum buffer yet (the state loaded held none): the weight's previous
	 * rate is what it replaced (not the buffer's factor of 1, which the step
	 * has not applied yet).
	 */
	{
		struct scalars_history fresh = { 0 };
		const struct step_plan resumed_fresh = { "Optimizer.step#SGD.step", 1.0, false,
							 false, LOADED };

		CU_ASSERT_EQUAL(judge(pool, 0, &sgd, &fresh, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 1, &momentum, &fresh, &finding), -1);
		CU_ASSERT_EQUAL(judge(pool, 2, &momentum, &fresh, &finding), 1);
		CU_ASSERT_EQUAL(judge(pool, 3, &resumed_fresh, &fresh, &finding), 0);
		CU_ASSERT_STRING_EQUAL(infer_event_field(&finding.before, "arg:alpha"),
				       "-0.10000000000000001");
		scalars_history_free(&fresh);
	}
	/* Resumed, and alpha -0.1 replaced by -1.0: the learning rate moved tenfold. */
	CU_ASSERT_EQUAL(judge(pool, 3, &resumed, &history, &finding), 0);
	CU_ASSERT_STRING_EQUAL(infer_event_field(finding.update, "arg:alpha"), "-1");
	CU_ASSERT_STRING_EQUAL(infer_event_field(&finding.before, "arg:alpha"),
			       "-0.10000000000000001");
	CU_ASSERT_EQUAL(finding.update->step, 3);
	CU_ASSERT_EQUAL(finding.before.step, 2);
	/* Reported once: the next step settles on the new value, the one after holds it. */
	CU_ASSERT_EQUAL(judge(pool, 4, &tenfold, &history, &finding), -1);
	CU_ASSERT_EQUAL(judge(pool, 5, &tenfold, &history, &finding), 1);
	/*
	 * The program set its own optimizer's learning rate (a step decay
	 * written out): its intent, no example (step 3's load does not carry
	 * over to it); the step after settles on it.
	 */
	CU_ASSERT_EQUAL(judge(pool, 6, &by_hand, &history, &finding), -1);
	CU_ASSERT_EQUAL(judge(pool, 7, &by_hand, &history, &finding), -1);
	CU_ASSERT_EQUAL(judge(pool, 8, &by_hand, &history, &finding), 1);
	/*
	 * A scheduler ran: from then on the process's scalars are its scheduler's,
	 * even in steps where its code is not seen (a step() CPython ran inline).
	 */
	CU_ASSERT_EQUAL(judge(pool, 9, &scheduled, &history, &finding), -1);
	CU_ASSERT_TRUE(history.scheduled);
	CU_ASSERT_EQUAL(
		judge(pool, 10,
		      &(struct step_plan){ "Optimizer.step#SGD.step", 0.05, true, false, BUILT },
		      &history, &finding),
		-1);
	scalars_history_free(&history);
	string_pool_free(pool);
}

struct scalar_violations {
	int at[12];
	int total;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct scalar_violations *seen = context;

	if (violation->rule->relation != RELATION_SCALARS_STEADY)
		return;
	seen->total++;
	if (violation->step >= 0 && violation->step < 12)
		seen->at[violation->step]++;
}

/* The records of 'steps' steps of one process, learning rate 'rates[step]'; returns their count. */
/* How an optimizer is set up again at one step of a run. */
struct set_up_plan {
	int step; /* -1: never */
	const char *code;
};

static size_t build_steps(uint32_t pid, const char *scope, const double *rates,
			  const bool *scheduled, struct set_up_plan set_up, int steps,
			  struct trace_record *records)
{
	size_t count = 0;

	for (int step = 0; step < steps; step++) {
		struct step_plan plan = { scope, rates[step], step > 0,
					  scheduled ? scheduled[step] : false,
					  step == set_up.step ? set_up.code : NULL };

		count += build_step(pid, step, &plan, records + count);
	}
	return count;
}

static void feed_inference(struct inference *inference, uint32_t pid, const char *scope,
			   const double *rates, const bool *scheduled, int steps)
{
	struct trace_record records[12 * 8];
	size_t count = build_steps(pid, scope, rates, scheduled, (struct set_up_plan){ -1, NULL },
				   steps, records);

	for (size_t i = 0; i < count; i++)
		CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
}

static void feed_checker(struct rule_checker *checker, uint32_t pid, const char *scope,
			 const double *rates, const bool *scheduled, struct set_up_plan set_up,
			 int steps)
{
	struct trace_record records[12 * 8];
	size_t count = build_steps(pid, scope, rates, scheduled, set_up, steps, records);

	for (size_t i = 0; i < count; i++)
		CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
}

/* Saved and loaded, the rule keeps its implementation; one without is malformed. */
static void round_trip(const struct rule_set *set)
{
	const char *path = scratch_path("scalars-steady-rules.json");
	struct rule_set *loaded;
	char error[512];
	FILE *file;
	size_t kept = 0;

	CU_ASSERT_EQUAL_FATAL(rule_set_save(set, path, error, sizeof(error)), 0);
	loaded = rule_set_load(path, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(loaded);
	for (size_t i = 0; i < loaded->count; i++)
		if (loaded->rules[i].relation == RELATION_SCALARS_STEADY &&
		    strcmp(loaded->rules[i].value, "SGD.step") == 0 &&
		    strcmp(loaded->rules[i].field, SCALARS_STEADY_FIELD) == 0)
			kept++;
	CU_ASSERT_EQUAL(kept, 1);
	rule_set_free(loaded);
	file = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	fputs("{\"format\": \"tcheck-bpf-rules\", \"version\": 4, \"rules\": [{\"relation\": "
	      "\"ScalarsSteady\", \"event\": {\"kind\": \"python\", \"name\": "
	      "\"Optimizer.step#*\"}, \"field\": \"implementation\", \"precondition\": []}]}",
	      file);
	fclose(file);
	CU_ASSERT_PTR_NULL(rule_set_load(path, error, sizeof(error)));
}

UNIT_TEST(scalars_steady, one_rule_per_implementation_that_holds_it)
{
	static const double steady[8] = { 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1 };
	/* Adam's step size moves every step (bias correction). */
	static const double adam[8] = { 0.5, 0.3, 0.2, 0.15, 0.12, 0.11, 0.105, 0.1 };
	static const double warm_up[8] = { 0.025, 0.05, 0.075, 0.1, 0.1, 0.1, 0.1, 0.1 };
	static const bool warm_up_scheduled[8] = { true, true, true, true };
	static const double rebuilt[10] = { 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0, 1.0 };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct scalar_violations seen = { { 0 }, 0 };
	const struct rule *rule = NULL;
	struct rule_checker *checker;
	size_t found = 0;

	/* Three programs: SGD, SGD under a scheduled warm-up, Adam. */
	inference_set_pipeline(inference, 0);
	feed_inference(inference, 20, "Optimizer.step#SGD.step", steady, NULL, 8);
	inference_set_pipeline(inference, 1);
	feed_inference(inference, 21, "Optimizer.step#SGD.step", warm_up, warm_up_scheduled, 8);
	inference_set_pipeline(inference, 2);
	feed_inference(inference, 22, "Optimizer.step#Adam.step", adam, NULL, 8);
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_SCALARS_STEADY) {
			rule = &set->rules[i];
			found++;
		}
	/*
	 * SGD's, supported by the SGD program without a scheduler (the scheduled
	 * one gives no example); none for Adam, whose scalars move.
	 */
	CU_ASSERT_EQUAL_FATAL(found, 1);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_STRING_EQUAL(rule->value, "SGD.step");
	CU_ASSERT_EQUAL(rule->pipelines, 1);
	/* Steps 2 to 7: step 0 has no step before it, step 1 none that had settled. */
	CU_ASSERT_EQUAL(rule->passing, 6);
	CU_ASSERT_EQUAL(rule->scope, RULE_SCOPE_USED);
	CU_ASSERT_EQUAL(rule->failing, 0);
	round_trip(set);

	/*
	 * A run whose optimizer is loaded from a state dict at step 5 (a resume)
	 * and gets ten times the learning rate: that step, once.
	 */
	checker = rule_checker_new(set, count_violation, &seen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	feed_checker(checker, 34, "Optimizer.step#SGD.step", rebuilt, NULL,
		     (struct set_up_plan){ 5, LOADED }, 10);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(seen.total, 1);
	CU_ASSERT_EQUAL(seen.at[5], 1);
	rule_checker_free(checker);

	/*
	 * The same change made by the program to its own optimizer (a step
	 * decay written out), or by a new optimizer built at the new rate with
	 * no state loaded (step 5); an optimizer resumed earlier (step 2) does
	 * not make a later change a resume's.
	 */
	memset(&seen, 0, sizeof(seen));
	checker = rule_checker_new(set, count_violation, &seen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	feed_checker(checker, 35, "Optimizer.step#SGD.step", rebuilt, NULL,
		     (struct set_up_plan){ -1, NULL }, 10);
	feed_checker(checker, 30, "Optimizer.step#SGD.step", rebuilt, NULL,
		     (struct set_up_plan){ 5, BUILT }, 10);
	feed_checker(checker, 36, "Optimizer.step#SGD.step", rebuilt, NULL,
		     (struct set_up_plan){ 2, LOADED }, 10);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(seen.total, 0);
	rule_checker_free(checker);

	/*
	 * A scheduled warm-up with SGD, Adam's moving step size, and a warm-up
	 * written out in the loop (the learning rate set by hand in each of the
	 * first steps, no scheduler): nothing, the scalars never settled before
	 * they stopped moving.
	 */
	memset(&seen, 0, sizeof(seen));
	checker = rule_checker_new(set, count_violation, &seen);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	feed_checker(checker, 31, "Optimizer.step#SGD.step", warm_up, warm_up_scheduled,
		     (struct set_up_plan){ -1, NULL }, 8);
	feed_checker(checker, 32, "Optimizer.step#Adam.step", adam, NULL,
		     (struct set_up_plan){ -1, NULL }, 8);
	feed_checker(checker, 33, "Optimizer.step#SGD.step", warm_up, NULL,
		     (struct set_up_plan){ -1, NULL }, 8);
	rule_checker_finish(checker);
	CU_ASSERT_EQUAL(seen.total, 0);
	rule_checker_free(checker);
	inference_free(inference);
	rule_set_free(set);
}
