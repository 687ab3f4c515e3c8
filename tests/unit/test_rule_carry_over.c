// SPDX-License-Identifier: MIT
/*
 * Rules learned from several reference programs, checked on programs of
 * other shapes: what every reference does holds for any program, what only
 * some do applies where a process makes the calls it names, a value one
 * program alone shows is no rule, and an unknown value is no precondition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "unit.h"

#define STEP_FAMILY "Optimizer.step#*"
#define DDP_FORWARD "torch.nn.parallel.distributed.DistributedDataParallel.forward"
#define CONFIGURE "train.configure"
#define STEPS 6

/* How one program trains: its optimizer, and what it does in which steps. */
struct program {
	uint32_t pid;
	const char *optimizer; /* "SGD": scopes Optimizer.step#SGD.step, ... */
	int zero_grad_until;   /* zero_grad in steps before this one (STEPS: always) */
	int ddp_until;	       /* DDP forward in steps before this one (0: never) */
	double lr;	       /* train.configure(lr=...) in every step */
	int eval_at;	       /* the optimizer steps in eval mode at this step (-1: never) */
	/*
	 * zero_grad after the optimizer's step instead of before the forward: the
	 * step marker has ended, so it lies in the next step; step 0 has none.
	 */
	int zero_grad_after_step;
	/*
	 * Its backward (none without): BACKWARD_ACCUMULATES adds into gradients
	 * that exist (an in-place add_ inside it), BACKWARD_FRESH finds them
	 * None (set to None by hand) and adds into none; either way the
	 * optimizer's step runs an add_, so the tracer is seen to watch them.
	 * BACKWARD_INTO_ZEROED adds into gradients zeroed in place first in the
	 * step (a module's zero_grad() on torch 1.x), BACKWARD_ZEROED_OTHERS
	 * zeroes other tensors than those it adds into.
	 */
	int backward;
	/* zero_grad between the forward (DDP's) and the backward, where it also clears in time. */
	int zero_grad_after_forward;
	/* DDP's forward only every this many steps (0: every step until ddp_until) */
	int ddp_every;
	/* an evaluation forward (stage eval) first in each step, before the configure call */
	int evaluates_first;
	/*
	 * optimizer.step(closure): the step's scope opens before the zero_grad and
	 * ends after the backward, which the closure runs inside it (PyTorch
	 * Lightning's automatic optimization)
	 */
	int closure;
	/*
	 * a backward for the input's gradient first in each step, before the
	 * zero_grad, the forward and the training backward (adversarial
	 * training, SAM's first pass)
	 */
	int backward_for_inputs_first;
	/* zero_grad after the backward, just before the step: the gradients it steps on are zeros
	 */
	int zero_grad_before_step;
	/* every call in stage eval: the program trains in eval() from its first step, on purpose */
	int trains_in_eval;
};

enum {
	NO_BACKWARD,
	BACKWARD_ACCUMULATES,
	BACKWARD_FRESH,
	BACKWARD_INTO_ZEROED,
	BACKWARD_ZEROED_OTHERS
};

/* A gradient's and another tensor's addresses. */
#define GRADIENT 0x7f0010
#define OTHER_TENSOR 0x7f0020

static void tensor_argument(struct trace_record *record, uint64_t tensor)
{
	struct trace_python_arg *arg = &record->python_call.args[record->python_call.arg_count++];

	*arg = (struct trace_python_arg){ .name = "tensor:self",
					  .type = TRACE_VALUE_INT,
					  .integer = (int64_t)tensor };
}

static struct trace_record call(const struct program *program, int step, uint64_t entry_ns,
				const char *name, uint32_t flags)
{
	struct trace_record record =
		python_call_record(program->pid, step, entry_ns, 10, name, flags);

	if (step == program->eval_at)
		record.python_call.stage = TRACE_STAGE_EVAL;
	/* As the tracer says it: in training mode until the model's first call returns. */
	if (program->trains_in_eval && (step > 0 || !strstr(name, "zero_grad")))
		record.python_call.stage = TRACE_STAGE_EVAL;
	return record;
}

/* Feeds a program's steps to an inference (pipeline set by the caller) or a checker. */
static void run_program(const struct program *program, struct inference *inference,
			struct rule_checker *checker)
{
	char zero_grad[64], step_scope[64];

	snprintf(zero_grad, sizeof(zero_grad), "Optimizer.zero_grad#%s.zero_grad",
		 program->optimizer);
	snprintf(step_scope, sizeof(step_scope), "Optimizer.step#%s.step", program->optimizer);
	for (int step = 0; step < STEPS; step++) {
		uint64_t base = 1000000ULL * (uint64_t)(step + 1);
		struct trace_record records[12];
		size_t count = 0;

		if (program->evaluates_first) {
			records[count] = call(program, step, base - 50, DDP_FORWARD, 0);
			records[count++].python_call.stage = TRACE_STAGE_EVAL;
		}
		records[count] = call(program, step, base, CONFIGURE, 0);
		records[count].python_call.arg_count = 1;
		records[count++].python_call.args[0] = (struct trace_python_arg){
			.name = "lr", .type = TRACE_VALUE_FLOAT, .real = program->lr
		};
		if (program->backward_for_inputs_first) {
			records[count] =
				call(program, step, base + 20, "Autograd.backward#Engine.execute",
				     TRACE_PYTHON_TORCH_SCOPE);
			records[count++].python_call.duration_ns = 50;
		}
		if (program->zero_grad_after_step ? step > 0 : step < program->zero_grad_until)
			records[count++] = call(program, step,
						base + (program->zero_grad_before_step	   ? 280
							: program->zero_grad_after_forward ? 210
											   : 100),
						zero_grad, TRACE_PYTHON_TORCH_SCOPE);
		if (step < program->ddp_until &&
		    (!program->ddp_every || step % program->ddp_every == 0))
			records[count++] = call(program, step, base + 200, DDP_FORWARD, 0);
		if (program->backward == BACKWARD_INTO_ZEROED ||
		    program->backward == BACKWARD_ZEROED_OTHERS) {
			records[count] = call(program, step, base + 150, "aten::zero_",
					      TRACE_PYTHON_TORCH_OP);
			tensor_argument(&records[count++], program->backward == BACKWARD_INTO_ZEROED
								   ? GRADIENT
								   : OTHER_TENSOR);
		}
		/* An operator's record comes before that of the scope it ran in. */
		if (program->backward == BACKWARD_ACCUMULATES ||
		    program->backward == BACKWARD_INTO_ZEROED ||
		    program->backward == BACKWARD_ZEROED_OTHERS) {
			records[count] = call(program, step, base + 230, "aten::add_.Tensor",
					      TRACE_PYTHON_TORCH_OP);
			tensor_argument(&records[count++], GRADIENT);
		}
		if (program->backward != NO_BACKWARD) {
			records[count] =
				call(program, step, base + 220, "Autograd.backward#Engine.execute",
				     TRACE_PYTHON_TORCH_SCOPE);
			records[count++].python_call.duration_ns = 50;
			records[count++] = call(program, step, base + 305, "aten::add_.Tensor",
						TRACE_PYTHON_TORCH_OP);
		}
		records[count] = call(program, step, program->closure ? base + 50 : base + 300,
				      step_scope, TRACE_PYTHON_TORCH_SCOPE);
		if (program->closure)
			records[count].python_call.duration_ns = 400;
		count++;
		for (size_t i = 0; i < count; i++) {
			if (inference)
				CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
			if (checker)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
		}
	}
}

static const struct rule *sequence_rule(const struct rule_set *set, const char *first)
{
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_API_SEQUENCE &&
		    strcmp(set->rules[i].event.name, STEP_FAMILY) == 0 &&
		    strcmp(set->rules[i].first.name, first) == 0)
			return &set->rules[i];
	return NULL;
}

/* "in every step with 'event', 'first' comes first", or NULL. */
static const struct rule *order_rule(const struct rule_set *set, const char *event,
				     const char *first)
{
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_API_SEQUENCE &&
		    strcmp(set->rules[i].event.name, event) == 0 &&
		    strcmp(set->rules[i].first.name, first) == 0)
			return &set->rules[i];
	return NULL;
}

static const struct rule *argument_rule(const struct rule_set *set, const char *name,
					const char *field, const char *value)
{
	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_API_ARG &&
		    strcmp(set->rules[i].event.name, name) == 0 && set->rules[i].field &&
		    strcmp(set->rules[i].field, field) == 0 && set->rules[i].value &&
		    strcmp(set->rules[i].value, value) == 0)
			return &set->rules[i];
	return NULL;
}

/* Violations per rule (by position) and step. */
struct tally {
	const struct rule_set *set;
	int at[64][STEPS];
	int total;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct tally *tally = context;
	size_t rule = (size_t)(violation->rule - tally->set->rules);

	tally->total++;
	if (rule < 64 && violation->step >= 0 && violation->step < STEPS)
		tally->at[rule][violation->step]++;
}

/* Checks one program alone against the rules; the tally of its violations. */
static void check_program(struct rule_set *set, const struct program *program, struct tally *tally)
{
	struct rule_checker *checker;

	memset(tally, 0, sizeof(*tally));
	tally->set = set;
	checker = rule_checker_new(set, count_violation, tally);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	run_program(program, NULL, checker);
	rule_checker_finish(checker);
	rule_checker_free(checker);
}

static int first_step_of(const struct tally *tally, const struct rule_set *set,
			 const struct rule *rule)
{
	size_t index = (size_t)(rule - set->rules);

	for (int step = 0; step < STEPS && index < 64; step++)
		if (tally->at[index][step])
			return step;
	return -1;
}

UNIT_TEST(carry_over, rules_from_three_programs_hold_on_a_fourth)
{
	/* A CNN with SGD, a DDP job with Adam, an MLP with SGD: other learning rates. */
	static const struct program references[3] = {
		{ 10, "SGD", STEPS, 0, 0.1, -1 },
		{ 20, "Adam", STEPS, STEPS, 0.001, -1 },
		{ 30, "SGD", STEPS, 0, 0.1, -1 },
	};
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	const struct rule *zero_grad_first, *ddp_first, *trains;
	struct tally tally;

	for (uint32_t p = 0; p < 3; p++) {
		inference_set_pipeline(inference, p);
		run_program(&references[p], inference, NULL);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	CU_ASSERT_TRUE_FATAL(set->count <= 64);

	/* Every program zeroes before it steps, whatever its optimizer: for any program. */
	zero_grad_first = sequence_rule(set, ZERO_GRAD_FAMILY);
	CU_ASSERT_PTR_NOT_NULL_FATAL(zero_grad_first);
	CU_ASSERT_EQUAL(zero_grad_first->scope, RULE_SCOPE_ALL);
	CU_ASSERT_EQUAL(zero_grad_first->pipelines, 3);
	/* Only the DDP job runs DDP's forward first: where a process calls it. */
	ddp_first = sequence_rule(set, DDP_FORWARD);
	CU_ASSERT_PTR_NOT_NULL_FATAL(ddp_first);
	CU_ASSERT_EQUAL(ddp_first->scope, RULE_SCOPE_USED);
	CU_ASSERT_EQUAL(ddp_first->pipelines, 1);
	/* The non-DDP programs are no failing examples, hence no precondition to tell them. */
	CU_ASSERT_EQUAL(ddp_first->precondition.group_count, 0);
	/* Every optimizer step trains. */
	trains = argument_rule(set, STEP_FAMILY, "stage", "train");
	CU_ASSERT_PTR_NOT_NULL_FATAL(trains);
	CU_ASSERT_EQUAL(trains->scope, RULE_SCOPE_ALL);
	/*
	 * Every reference zeroes in training mode too, but zeroing trains nothing:
	 * the tutorial's loop runs zero_grad() in its validation phase as well.
	 */
	CU_ASSERT_PTR_NULL(argument_rule(set, ZERO_GRAD_FAMILY, "stage", "train"));
	/* A learning rate is each program's own: neither value is a rule. */
	CU_ASSERT_PTR_NULL(argument_rule(set, CONFIGURE, "arg:lr", "0.10000000000000001"));
	CU_ASSERT_PTR_NULL(argument_rule(set, CONFIGURE, "arg:lr", "0.001"));
	/* No rule is conditioned on a stage nobody set. */
	for (size_t i = 0; i < set->count; i++)
		for (uint32_t g = 0; g < set->rules[i].precondition.group_count; g++)
			for (uint32_t c = 0; c < set->rules[i].precondition.groups[g].clause_count;
			     c++) {
				const struct precondition_clause *clause =
					&set->rules[i].precondition.groups[g].clauses[c];

				CU_ASSERT_FALSE(clause->type == CLAUSE_CONSTANT &&
						strcmp(clause->value, "unknown") == 0);
			}

	/* A healthy program of another shape (RMSprop, no DDP): nothing. */
	check_program(set, &(struct program){ 40, "RMSprop", STEPS, 0, 0.1, -1 }, &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/*
	 * One that zeroes after its optimizer's step: the gradients are cleared
	 * between every two steps that consume them, nothing to say.
	 */
	check_program(set, &(struct program){ 45, "RMSprop", 0, 0, 0.1, -1, 1 }, &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/*
	 * One that never zeroes its gradients: caught at its first step after an
	 * optimizer step (step 0 has none before it whose gradients it reuses).
	 */
	check_program(set, &(struct program){ 50, "RMSprop", 0, 0, 0.1, -1 }, &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, zero_grad_first), 1);
	/*
	 * One that sets its gradients to None by hand (a ZeRO-style sharded
	 * optimizer): no zero_grad, but its backward finds no gradient to add
	 * into: cleared all the same, nothing to say.
	 */
	check_program(set, &(struct program){ 52, "Adam", 0, 0, 0.1, -1, 0, BACKWARD_FRESH },
		      &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/* One that clears nothing, and whose backward adds into last step's gradients: caught. */
	check_program(set, &(struct program){ 54, "Adam", 0, 0, 0.1, -1, 0, BACKWARD_ACCUMULATES },
		      &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, zero_grad_first), 1);
	/*
	 * One that clears with its model's zero_grad(), which zeroes each
	 * gradient in place (torch 1.x) rather than through the optimizer: its
	 * backward adds into gradients zeroed in the step, nothing to say.
	 */
	check_program(set, &(struct program){ 56, "Adam", 0, 0, 0.1, -1, 0, BACKWARD_INTO_ZEROED },
		      &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/* One that zeroes other tensors (another model's) and adds into last step's: caught. */
	check_program(set,
		      &(struct program){ 58, "Adam", 0, 0, 0.1, -1, 0, BACKWARD_ZEROED_OTHERS },
		      &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, zero_grad_first), 1);
	/* A DDP program whose forward stops being DDP's at step 3: from step 3 on. */
	check_program(set, &(struct program){ 60, "Adam", STEPS, 3, 0.1, -1 }, &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, ddp_first), 3);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, zero_grad_first), -1);
	/*
	 * One that makes the call at a pace of its own, every third step (a
	 * scheduler stepped once an epoch): in order where it runs, nothing to say.
	 */
	check_program(set, &(struct program){ 62, "Adam", STEPS, STEPS, 0.1, -1, .ddp_every = 3 },
		      &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/*
	 * One that evaluates first in each step (eval(), a forward, train()):
	 * the evaluation's calls are no part of the training step's order.
	 */
	check_program(set,
		      &(struct program){ 64, "Adam", STEPS, STEPS, 0.1, -1, .evaluates_first = 1 },
		      &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/* A program left in eval mode at step 4: its step there, nothing else. */
	check_program(set, &(struct program){ 70, "SGD", STEPS, 0, 0.1, 4 }, &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, trains), 4);
	CU_ASSERT_EQUAL(tally.total, 1);
	/*
	 * One that trains in eval() from its first step (dropout off on purpose,
	 * RL fine-tuning): its steps were never in training mode to leave it.
	 */
	check_program(set, &(struct program){ 72, "SGD", STEPS, 0, 0.1, -1, .trains_in_eval = 1 },
		      &tally);
	CU_ASSERT_EQUAL(tally.total, 0);

	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(carry_over, zero_grad_is_asked_before_the_backward_not_before_the_forward_or_the_closure)
{
	/* Two DDP references that zero, run DDP's forward, then the backward, then step. */
	static const struct program references[2] = {
		{ 10, "SGD", STEPS, STEPS, 0.1, -1, 0, BACKWARD_ACCUMULATES },
		{ 20, "Adam", STEPS, STEPS, 0.001, -1, 0, BACKWARD_ACCUMULATES },
	};
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	const struct rule *before_backward;
	struct tally tally;

	for (uint32_t p = 0; p < 2; p++) {
		inference_set_pipeline(inference, p);
		run_program(&references[p], inference, NULL);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	CU_ASSERT_TRUE_FATAL(set->count <= 64);
	/* Cleared before the backward that fills them, and so before the step. */
	before_backward = order_rule(set, "Autograd.backward#*", ZERO_GRAD_FAMILY);
	CU_ASSERT_PTR_NOT_NULL_FATAL(before_backward);
	CU_ASSERT_PTR_NOT_NULL(order_rule(set, STEP_FAMILY, ZERO_GRAD_FAMILY));
	/* Before the forward: these references' own order, no rule. */
	CU_ASSERT_PTR_NULL(order_rule(set, DDP_FORWARD, ZERO_GRAD_FAMILY));
	/* The forward's place before the backward is still one. */
	CU_ASSERT_PTR_NOT_NULL(order_rule(set, "Autograd.backward#*", DDP_FORWARD));

	/* A program that zeroes after its forward, before its backward: healthy. */
	check_program(
		set,
		&(struct program){ 30, "Adam", STEPS, STEPS, 0.1, -1, 0, BACKWARD_ACCUMULATES, 1 },
		&tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/* One that stops zeroing at step 3: caught there, before its backward. */
	check_program(set,
		      &(struct program){ 40, "Adam", 3, STEPS, 0.1, -1, 0, BACKWARD_ACCUMULATES },
		      &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, before_backward), 3);
	/* optimizer.step(closure): zero_grad, forward and backward run inside the step. */
	check_program(set,
		      &(struct program){ 50, "Adam", STEPS, STEPS, 0.1, -1, 0, BACKWARD_ACCUMULATES,
					 .closure = 1 },
		      &tally);
	CU_ASSERT_EQUAL(tally.total, 0);
	/* The same closure without zero_grad from step 3: still caught there. */
	check_program(set,
		      &(struct program){ 60, "Adam", 3, STEPS, 0.1, -1, 0, BACKWARD_ACCUMULATES,
					 .closure = 1 },
		      &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, before_backward), 3);
	/*
	 * Adversarial training: a backward for the input's gradient, then
	 * zero_grad, then the training backward. Cleared before the backward
	 * whose gradients the step uses: in order (these references' one
	 * backward a step is a count of theirs, not asked here).
	 */
	check_program(set,
		      &(struct program){ 70, "Adam", STEPS, STEPS, 0.1, -1, 0, BACKWARD_ACCUMULATES,
					 .backward_for_inputs_first = 1 },
		      &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, before_backward), -1);
	/* zero_grad after the only backward: the step finds zeros, from step 1. */
	check_program(set,
		      &(struct program){ 80, "Adam", STEPS, STEPS, 0.1, -1, 0, BACKWARD_ACCUMULATES,
					 .zero_grad_before_step = 1 },
		      &tally);
	CU_ASSERT_EQUAL(first_step_of(&tally, set, before_backward), 1);

	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(carry_over, one_program_keeps_its_values_but_none_holds_for_every_program)
{
	static const struct program reference = { 10, "SGD", STEPS, STEPS, 0.1, -1 };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	const struct rule *lr;

	run_program(&reference, inference, NULL);
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	lr = argument_rule(set, CONFIGURE, "arg:lr", "0.10000000000000001");
	CU_ASSERT_PTR_NOT_NULL(lr);
	for (size_t i = 0; i < set->count; i++) {
		CU_ASSERT_EQUAL(set->rules[i].scope, RULE_SCOPE_USED);
		CU_ASSERT_EQUAL(set->rules[i].pipelines, 1);
	}
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(carry_over, a_scope_is_its_family_with_implementation_and_stage)
{
	struct string_pool *pool = string_pool_new();
	struct program program = { 10, "Adam", STEPS, 0, 0.1, 2 };
	struct trace_record record =
		call(&program, 2, 1, "Optimizer.step#Adam.step", TRACE_PYTHON_TORCH_SCOPE);
	struct infer_event event;

	CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &record, &event), 1);
	CU_ASSERT_STRING_EQUAL(event.name, STEP_FAMILY);
	CU_ASSERT_STRING_EQUAL(infer_event_field(&event, "implementation"), "Adam.step");
	CU_ASSERT_STRING_EQUAL(infer_event_field(&event, "stage"), "eval");
	/* A stage not known is no value at all, neither field nor variable. */
	record.python_call.stage = TRACE_STAGE_UNKNOWN;
	CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &record, &event), 1);
	CU_ASSERT_PTR_NULL(infer_event_field(&event, "stage"));
	CU_ASSERT_PTR_NULL(infer_event_variable(pool, &event, "stage"));
	/* A Python function keeps its name. */
	record = call(&program, 2, 1, DDP_FORWARD, 0);
	CU_ASSERT_EQUAL_FATAL(infer_event_from_record(pool, &record, &event), 1);
	CU_ASSERT_STRING_EQUAL(event.name, DDP_FORWARD);
	string_pool_free(pool);
}

/*
 * One job's all-gathers: 'nranks' ranks on communicator 'comm', each
 * gathering 'count' values per call, 'calls' calls.
 */
static void gather_job(struct inference *inference, struct rule_checker *checker,
		       uint32_t first_pid, int nranks, uint64_t comm, uint64_t count, int calls)
{
	for (int seq = 0; seq < calls; seq++)
		for (int rank = 0; rank < nranks; rank++) {
			struct trace_record record = nccl_call_record(
				"ncclAllGather", first_pid + (uint32_t)rank, rank, nranks, comm,
				seq, count, 1000 + (uint64_t)seq * 100);

			if (inference)
				CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
			if (checker)
				CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
		}
}

static void count_any(const struct rule_violation *violation, void *context)
{
	(void)violation;
	(*(int *)context)++;
}

UNIT_TEST(carry_over, a_collectives_size_is_no_constant_across_jobs)
{
	struct rule_set *set = rule_set_new(), *single = rule_set_new();
	struct inference *inference = inference_new(set), *alone = inference_new(single);
	struct rule_checker *checker;
	int violations = 0;

	/* A 2-rank and a 4-rank job, both gathering 64 values: two programs. */
	inference_set_pipeline(inference, 0);
	gather_job(inference, NULL, 100, 2, 0xa1, 64, 6);
	inference_set_pipeline(inference, 1);
	gather_job(inference, NULL, 200, 4, 0xb1, 64, 6);
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		CU_ASSERT_FALSE(set->rules[i].relation == RELATION_API_ARG &&
				!set->rules[i].distinct &&
				(strcmp(set->rules[i].field, "sendcount") == 0 ||
				 strcmp(set->rules[i].field, "datatype") == 0 ||
				 strcmp(set->rules[i].field, "nranks") == 0));
	/* The ranks agreeing on it carries over. */
	{
		bool consistent = false;

		for (size_t i = 0; i < set->count; i++)
			consistent |= set->rules[i].relation == RELATION_CONSISTENT &&
				      strcmp(set->rules[i].field, "sendcount") == 0;
		CU_ASSERT_TRUE(consistent);
	}
	/* An 8-rank job whose gathers carry 128 values: healthy, nothing to say. */
	checker = rule_checker_new(set, count_any, &violations);
	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	gather_job(NULL, checker, 300, 8, 0xc1, 128, 6);
	rule_checker_finish(checker);
	rule_checker_free(checker);
	CU_ASSERT_EQUAL(violations, 0);
	/* One program alone keeps its value: the rules are that program's. */
	gather_job(alone, NULL, 100, 2, 0xa1, 64, 6);
	CU_ASSERT_EQUAL_FATAL(inference_run(alone), 0);
	{
		bool constant = false;

		for (size_t i = 0; i < single->count; i++)
			constant |= single->rules[i].relation == RELATION_API_ARG &&
				    strcmp(single->rules[i].field, "sendcount") == 0 &&
				    strcmp(single->rules[i].value, "64") == 0;
		CU_ASSERT_TRUE(constant);
	}
	inference_free(inference);
	inference_free(alone);
	rule_set_free(set);
	rule_set_free(single);
}

UNIT_TEST(carry_over, a_process_whose_steps_never_end_is_said_unjudged)
{
	struct rule_set *set = rule_set_new();
	struct rule_checker *checker = rule_checker_new(set, NULL, NULL);
	struct trace_record record;
	uint32_t pids[2] = { 0 };
	bool stepped = true;

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	/* Weights updated by hand: no optimizer step, every call in step 0. */
	for (int call_index = 0; call_index < 3; call_index++) {
		record = python_call_record(70, 0, 1000 + 100 * (uint64_t)call_index, 10,
					    TRACE_MODULE_CALL_NAME, 0);
		CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
	}
	CU_ASSERT_EQUAL(rule_checker_python_processes(checker, &stepped, pids, 2), 1);
	CU_ASSERT_FALSE(stepped);
	CU_ASSERT_EQUAL(pids[0], 70);
	/* A second process whose optimizer stepped: the steps were judged. */
	record = python_call_record(71, 1, 5000, 10, "Optimizer.step#SGD.step",
				    TRACE_PYTHON_TORCH_SCOPE);
	CU_ASSERT_EQUAL(rule_checker_observe(checker, &record), 0);
	CU_ASSERT_EQUAL(rule_checker_python_processes(checker, &stepped, pids, 2), 2);
	CU_ASSERT_TRUE(stepped);
	rule_checker_free(checker);
	rule_set_free(set);
}
