// SPDX-License-Identifier: MIT
/*
 * Module calls are how a program builds its forward, not what training
 * asks: rules learned from programs whose every step runs its forward
 * through modules ("in every step with Optimizer.step#*, Module._call_impl
 * comes first") say nothing of a program of raw tensors (a matrix
 * factorisation), nor of a step whose forward reads no layer's weight (SAC's
 * temperature, stepped by an optimizer of its own); a step that reads a
 * layer's weight outside any module call, in a process that makes them, is
 * still judged. Known answers, built by hand.
 */
#include <string.h>

#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "model/trace_records.h"
#include "nccl_records.h"
#include "unit.h"

#define STEPS 6
#define WEIGHT 0x1000

struct records {
	struct trace_record at[8];
	size_t count;
};

/* The parts of a step, in order; a step holds those its flags name. */
enum step_part {
	MODULE_CALL = 1,    /* the forward through a module */
	WEIGHT_READ = 2,    /* ... reading a linear's weight */
	PLAIN_TRAINING = 4, /* zero_grad, backward and the optimizer's step */
};

static void add(struct records *records, uint32_t pid, int step, uint64_t at, const char *name,
		uint32_t flags)
{
	records->at[records->count++] = python_call_record(pid, step, at, 5, name, flags);
}

static void add_step(struct records *records, uint32_t pid, int step, unsigned parts)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);

	records->count = 0;
	add(records, pid, step, base + 10, "Optimizer.zero_grad#Adam.zero_grad",
	    TRACE_PYTHON_TORCH_SCOPE);
	if (parts & MODULE_CALL)
		add(records, pid, step, base + 20, TRACE_MODULE_CALL_NAME, 0);
	if (parts & WEIGHT_READ) {
		struct trace_record *read;

		add(records, pid, step, base + 22, "aten::linear", TRACE_PYTHON_TORCH_OP);
		read = &records->at[records->count - 1];
		read->python_call.args[read->python_call.arg_count++] = (struct trace_python_arg){
			.name = "tensor:weight", .type = TRACE_VALUE_INT, .integer = WEIGHT
		};
	}
	add(records, pid, step, base + 40, "Autograd.backward#MseLossBackward0.backward",
	    TRACE_PYTHON_TORCH_SCOPE);
	add(records, pid, step, base + 100, "Optimizer.step#Adam.step", TRACE_PYTHON_TORCH_SCOPE);
}

static void count_module_call_rules(const struct rule_violation *violation, void *context)
{
	int *at = context;

	if (violation->rule->relation == RELATION_API_SEQUENCE &&
	    strcmp(violation->rule->first.name, TRACE_MODULE_CALL_NAME) == 0 &&
	    violation->step >= 0 && violation->step < STEPS)
		at[violation->step]++;
}

/* Checks one process whose step k holds parts[k]; at[k]: module-call violations at step k. */
static void check_steps(struct rule_set *set, const unsigned parts[STEPS], int at[STEPS])
{
	struct rule_checker *checker = rule_checker_new(set, count_module_call_rules, at);
	struct records records;

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	memset(at, 0, STEPS * sizeof(*at));
	for (int step = 0; step < STEPS; step++) {
		add_step(&records, 40, step, parts[step]);
		for (size_t i = 0; i < records.count; i++)
			CU_ASSERT_EQUAL(rule_checker_observe(checker, &records.at[i]), 0);
	}
	rule_checker_finish(checker);
	rule_checker_free(checker);
}

static int total(const int at[STEPS])
{
	int sum = 0;

	for (int step = 0; step < STEPS; step++)
		sum += at[step];
	return sum;
}

UNIT_TEST(module_call_steps, only_steps_reading_a_layer_in_a_process_of_modules_are_asked)
{
	const unsigned modules = PLAIN_TRAINING | MODULE_CALL | WEIGHT_READ;
	const unsigned raw_tensors[STEPS] = { PLAIN_TRAINING, PLAIN_TRAINING, PLAIN_TRAINING,
					      PLAIN_TRAINING, PLAIN_TRAINING, PLAIN_TRAINING };
	const unsigned temperature_turns[STEPS] = { modules, modules, PLAIN_TRAINING,
						    modules, modules, PLAIN_TRAINING };
	const unsigned layer_outside_modules[STEPS] = {
		modules, modules, PLAIN_TRAINING | WEIGHT_READ, modules, modules, modules
	};
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct records records;
	int at[STEPS];
	bool learned = false;

	for (uint32_t program = 0; program < 2; program++) {
		inference_set_pipeline(inference, program);
		for (int step = 0; step < STEPS; step++) {
			add_step(&records, 10 + program, step, modules);
			for (size_t i = 0; i < records.count; i++)
				CU_ASSERT_EQUAL(inference_add(inference, &records.at[i]), 0);
		}
	}
	CU_ASSERT_EQUAL_FATAL(inference_run(inference), 0);
	for (size_t i = 0; i < set->count; i++)
		learned |= set->rules[i].relation == RELATION_API_SEQUENCE &&
			   set->rules[i].scope == RULE_SCOPE_ALL &&
			   strcmp(set->rules[i].first.name, TRACE_MODULE_CALL_NAME) == 0;
	CU_ASSERT_TRUE_FATAL(learned);

	/* A program of raw tensors: no module call, no layer, nothing asked. */
	check_steps(set, raw_tensors, at);
	CU_ASSERT_EQUAL(total(at), 0);
	/* Modules, and every third step a temperature's step that reads no layer. */
	check_steps(set, temperature_turns, at);
	CU_ASSERT_EQUAL(total(at), 0);
	/* A step that reads a layer outside any module call, in a process of modules. */
	check_steps(set, layer_outside_modules, at);
	CU_ASSERT_TRUE(at[2] > 0);
	CU_ASSERT_EQUAL(total(at), at[2]);

	inference_free(inference);
	rule_set_free(set);
}
