// SPDX-License-Identifier: MIT
/*
 * EvalModeRespected on hand-built runs with known answers: dropout calls in
 * training and in evaluation phases, the rule inferred from a healthy run,
 * its violation at the evaluation phase whose dropout stays active, and no
 * violation where the program trains in stage eval on purpose (frozen batch
 * norm) or ends in evaluation; and the probe reading dropout's train flag.
 */
#include <string.h>

#include "infer/eval_mode.h"
#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "python/torch_op_readings.h"
#include "python/torch_tensor_layout.h"
#include "tcheck/probe_abi.h"
#include "unit.h"

/* What a step's evaluation, after its training forward, does with dropout. */
enum evaluation {
	NO_EVALUATION,
	EVALUATED,	    /* dropout off */
	EVALUATED_DROPPING, /* dropout still on: transformers#33844 */
	TRAINED_IN_EVAL,    /* no evaluation; the training forward itself runs in stage eval */
	/* Monte Carlo dropout: dropout on, inside Dropout modules put back in train() */
	SAMPLED_WITH_DROPOUT,
	/* the same, but the Dropout modules' calls are another thread's: this dropout is not */
	SAMPLED_ELSEWHERE,
};

/* A Dropout module's call in stage eval, put in train() on its own (module_training True). */
static struct trace_record dropout_module_call(uint32_t pid, uint32_t tid, int step, uint64_t at)
{
	struct trace_record record =
		python_call_record(pid, step, at, 10, TRACE_MODULE_CALL_NAME, 0);

	record.python_call.tid = tid;
	record.python_call.args[0] = (struct trace_python_arg){ .name = TRACE_MODULE_CLASS_ARG,
								.type = TRACE_VALUE_STR,
								.text = "Dropout" };
	record.python_call.args[1] = (struct trace_python_arg){ .name = TRACE_MODULE_TRAINING_ARG,
								.type = TRACE_VALUE_BOOL,
								.integer = 1 };
	record.python_call.arg_count = 2;
	record.python_call.stage = TRACE_STAGE_EVAL;
	return record;
}

static struct trace_record dropout_call(uint32_t pid, int step, uint64_t at, uint32_t stage,
					bool train)
{
	struct trace_record record =
		python_call_record(pid, step, at, 0, "aten::dropout", TRACE_PYTHON_TORCH_OP);

	record.python_call.args[0] = (struct trace_python_arg){ .name = EVAL_MODE_FLAG_FIELD,
								.type = TRACE_VALUE_BOOL,
								.integer = train };
	record.python_call.arg_count = 1;
	record.python_call.stage = stage;
	return record;
}

/* A step: a training forward (one dropout), then maybe two evaluation forwards. */
static size_t build_step(uint32_t pid, int step, enum evaluation evaluation,
			 struct trace_record *records)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);
	size_t count = 0;
	bool trained_in_eval = evaluation == TRAINED_IN_EVAL;

	records[count] = dropout_call(pid, step, base + 10,
				      trained_in_eval ? TRACE_STAGE_EVAL : TRACE_STAGE_TRAIN, true);
	count++;
	records[count++] = python_call_record(pid, step, base + 100, 100, "Optimizer.step#SGD.step",
					      TRACE_PYTHON_TORCH_SCOPE);
	for (int forward = 0;
	     forward < 2 && (evaluation == EVALUATED || evaluation == EVALUATED_DROPPING);
	     forward++) {
		records[count] = dropout_call(pid, step, base + 300 + (uint64_t)forward,
					      TRACE_STAGE_EVAL, evaluation == EVALUATED_DROPPING);
		count++;
	}
	for (uint64_t sample = 0;
	     sample < 2 && (evaluation == SAMPLED_WITH_DROPOUT || evaluation == SAMPLED_ELSEWHERE);
	     sample++) {
		/* The operator's record comes first: a module call is recorded as it returns. */
		records[count++] =
			dropout_call(pid, step, base + 302 + 20 * sample, TRACE_STAGE_EVAL, true);
		records[count++] =
			dropout_module_call(pid, evaluation == SAMPLED_ELSEWHERE ? pid + 1 : pid,
					    step, base + 300 + 20 * sample);
	}
	return count;
}

struct seen_violations {
	int at_step[8];
	int total;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct seen_violations *seen = context;

	if (violation->rule->relation != RELATION_EVAL_MODE_RESPECTED)
		return;
	seen->total++;
	if (violation->step >= 0 && violation->step < 8)
		seen->at_step[violation->step]++;
}

/* Checks a run of 'steps' steps with 'set'; the violations seen. */
static struct seen_violations check_run(struct rule_set *set, uint32_t pid,
					const enum evaluation *run, int steps)
{
	struct seen_violations seen = { { 0 }, 0 };
	struct rule_checker *checker = rule_checker_new(set, count_violation, &seen);
	struct trace_record records[6];

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	for (int step = 0; step < steps; step++) {
		size_t count = build_step(pid, step, run[step], records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records[i]), 0);
	}
	rule_checker_finish(checker);
	rule_checker_free(checker);
	return seen;
}

UNIT_TEST(eval_mode, inferred_from_evaluation_phases_and_caught_where_dropout_stays_on)
{
	/* Healthy: evaluations after steps 1, 3 and 5; the last is never followed by training. */
	static const enum evaluation healthy[6] = { NO_EVALUATION, EVALUATED,	  NO_EVALUATION,
						    EVALUATED,	   NO_EVALUATION, EVALUATED };
	static const enum evaluation buggy[6] = { NO_EVALUATION,      EVALUATED,
						  EVALUATED_DROPPING, NO_EVALUATION,
						  EVALUATED_DROPPING, NO_EVALUATION };
	/* Frozen batch norm by eval() on a submodule: the process trains in stage eval. */
	static const enum evaluation frozen[6] = { TRAINED_IN_EVAL, TRAINED_IN_EVAL,
						   TRAINED_IN_EVAL, TRAINED_IN_EVAL,
						   TRAINED_IN_EVAL, TRAINED_IN_EVAL };
	/* Evaluation with dropout on, but only at the end: no training phase follows. */
	static const enum evaluation ends_evaluating[3] = { NO_EVALUATION, NO_EVALUATION,
							    EVALUATED_DROPPING };
	static const enum evaluation sampled[6] = { NO_EVALUATION, SAMPLED_WITH_DROPOUT,
						    NO_EVALUATION, SAMPLED_WITH_DROPOUT,
						    NO_EVALUATION, NO_EVALUATION };
	static const enum evaluation sampled_elsewhere[6] = { NO_EVALUATION, SAMPLED_ELSEWHERE,
							      NO_EVALUATION, SAMPLED_ELSEWHERE,
							      NO_EVALUATION, NO_EVALUATION };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct trace_record records[6];
	struct seen_violations seen;
	int rules = 0;

	for (int step = 0; step < 6; step++) {
		size_t count = build_step(20, step, healthy[step], records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];

		if (rule->relation != RELATION_EVAL_MODE_RESPECTED)
			continue;
		rules++;
		CU_ASSERT_STRING_EQUAL(rule->event.name, "aten::dropout");
		CU_ASSERT_STRING_EQUAL(rule->field, EVAL_MODE_FLAG_FIELD);
		/* Two evaluation phases left for training, two forwards each. */
		CU_ASSERT_EQUAL(rule->passing, 4);
		CU_ASSERT_EQUAL(rule->failing, 0);
		CU_ASSERT_EQUAL(rule->precondition.group_count, 0);
	}
	CU_ASSERT_EQUAL_FATAL(rules, 1);

	/* Once per evaluation phase with dropout on, at its step. */
	seen = check_run(set, 30, buggy, 6);
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.at_step[2], 1);
	CU_ASSERT_EQUAL(seen.at_step[4], 1);
	CU_ASSERT_EQUAL(check_run(set, 31, healthy, 6).total, 0);
	CU_ASSERT_EQUAL(check_run(set, 32, frozen, 6).total, 0);
	CU_ASSERT_EQUAL(check_run(set, 33, ends_evaluating, 3).total, 0);
	/* Monte Carlo dropout is no violation; the same dropout outside those modules is. */
	CU_ASSERT_EQUAL(check_run(set, 34, sampled, 6).total, 0);
	seen = check_run(set, 35, sampled_elsewhere, 6);
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.at_step[1], 1);
	CU_ASSERT_EQUAL(seen.at_step[3], 1);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(eval_mode, batch_norm_gets_its_own_rule_on_its_training_field)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	int rules = 0;

	/* Training, evaluation, training again, twice: batch norm's flag follows the mode. */
	for (int step = 0; step < 5; step++) {
		uint32_t stage = step % 2 ? TRACE_STAGE_EVAL : TRACE_STAGE_TRAIN;
		struct trace_record record =
			python_call_record(50, step, 1000000ULL * (uint64_t)(step + 1), 0,
					   "aten::batch_norm", TRACE_PYTHON_TORCH_OP);

		record.python_call.args[0] =
			(struct trace_python_arg){ .name = EVAL_MODE_TRAINING_FIELD,
						   .type = TRACE_VALUE_BOOL,
						   .integer = stage == TRACE_STAGE_TRAIN };
		record.python_call.arg_count = 1;
		record.python_call.stage = stage;
		CU_ASSERT_EQUAL(inference_add(inference, &record), 0);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++) {
		if (set->rules[i].relation != RELATION_EVAL_MODE_RESPECTED)
			continue;
		rules++;
		CU_ASSERT_STRING_EQUAL(set->rules[i].event.name, "aten::batch_norm");
		CU_ASSERT_STRING_EQUAL(set->rules[i].field, EVAL_MODE_TRAINING_FIELD);
		CU_ASSERT_EQUAL(set->rules[i].passing, 2);
	}
	CU_ASSERT_EQUAL(rules, 1);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(eval_mode, rules_from_a_run_without_evaluation_are_none)
{
	static const enum evaluation frozen[4] = { TRAINED_IN_EVAL, TRAINED_IN_EVAL,
						   TRAINED_IN_EVAL, TRAINED_IN_EVAL };
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct trace_record records[6];

	for (int step = 0; step < 4; step++) {
		size_t count = build_step(40, step, frozen[step], records);

		for (size_t i = 0; i < count; i++)
			CU_ASSERT_EQUAL(inference_add(inference, &records[i]), 0);
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		CU_ASSERT_NOT_EQUAL(set->rules[i].relation, RELATION_EVAL_MODE_RESPECTED);
	inference_free(inference);
	rule_set_free(set);
}

UNIT_TEST(eval_mode, dropout_and_batch_norm_probes_read_their_flag_by_value)
{
	struct torch_tensor_layout layout = { 0 };
	struct torch_op_reading reading = torch_op_reading_of("dropout");
	uint64_t cookie = torch_op_cookie(7, &reading, &layout);
	bool listed = false;

	/* dropout(input, p, train) returns by value: rdi the slot, p in xmm0, train in rdx. */
	CU_ASSERT_TRUE(reading.scalar_is_bool);
	CU_ASSERT_EQUAL(reading.scalar_register, 3);
	CU_ASSERT_STRING_EQUAL(reading.scalar_field, EVAL_MODE_FLAG_FIELD);
	CU_ASSERT_PTR_NULL(reading.tensor_field);
	CU_ASSERT_TRUE((cookie & TCHECK_TORCH_OP_BOOL_BY_VALUE) != 0);
	CU_ASSERT_EQUAL((cookie >> TCHECK_TORCH_OP_SCALAR_SHIFT) & TCHECK_TORCH_OP_REGISTER_MASK,
			3);
	CU_ASSERT_EQUAL(cookie & TCHECK_TORCH_OP_INDEX_MASK, 7);
	/* batch_norm's training is its first argument on the stack, past five tensors. */
	reading = torch_op_reading_of("batch_norm");
	cookie = torch_op_cookie(8, &reading, &layout);
	CU_ASSERT_TRUE(reading.scalar_is_bool);
	CU_ASSERT_STRING_EQUAL(reading.scalar_field, EVAL_MODE_TRAINING_FIELD);
	CU_ASSERT_TRUE((cookie & TCHECK_TORCH_OP_BOOL_BY_VALUE) != 0);
	CU_ASSERT_EQUAL((cookie >> TCHECK_TORCH_OP_SCALAR_SHIFT) & TCHECK_TORCH_OP_REGISTER_MASK,
			TCHECK_TORCH_OP_FIRST_STACK_ARGUMENT);
	/* add_'s alpha stays a c10::Scalar read through its pointer. */
	reading = torch_op_reading_of("add__Tensor");
	CU_ASSERT_FALSE((torch_op_cookie(1, &reading, &layout) & TCHECK_TORCH_OP_BOOL_BY_VALUE) !=
			0);
	for (size_t i = 0; i < torch_training_op_count; i++)
		listed |= strcmp(torch_training_ops[i], "dropout.default") == 0;
	CU_ASSERT_TRUE(listed);
}

UNIT_TEST(eval_mode, weight_reads_ask_whether_the_weight_has_data_and_updates_read_contents)
{
	struct torch_tensor_layout layout = { 0 };
	const char *reads[] = { "linear", "conv1d", "conv2d", "embedding" };
	struct torch_op_reading reading;
	uint64_t cookie;

	/* torch.compile traces the model on fake tensors: the probe checks a read weight's storage.
	 */
	for (size_t i = 0; i < sizeof(reads) / sizeof(reads[0]); i++) {
		reading = torch_op_reading_of(reads[i]);
		cookie = torch_op_cookie(i, &reading, &layout);
		CU_ASSERT_TRUE(torch_op_reads_weight(&reading));
		CU_ASSERT_TRUE((cookie & TCHECK_TORCH_OP_CHECK_DATA) != 0);
		CU_ASSERT_FALSE((cookie & TCHECK_TORCH_OP_READ_CONTENTS) != 0);
	}
	/* An update's old contents are digested; what zero_ overwrites, and dropout, neither. */
	reading = torch_op_reading_of("add__Tensor");
	cookie = torch_op_cookie(1, &reading, &layout);
	CU_ASSERT_TRUE((cookie & TCHECK_TORCH_OP_READ_CONTENTS) != 0);
	CU_ASSERT_FALSE((cookie & TCHECK_TORCH_OP_CHECK_DATA) != 0);
	reading = torch_op_reading_of("zero_");
	cookie = torch_op_cookie(2, &reading, &layout);
	CU_ASSERT_FALSE((cookie & (TCHECK_TORCH_OP_READ_CONTENTS | TCHECK_TORCH_OP_CHECK_DATA)) !=
			0);
	reading = torch_op_reading_of("dropout");
	CU_ASSERT_FALSE((torch_op_cookie(3, &reading, &layout) & TCHECK_TORCH_OP_CHECK_DATA) != 0);
}
