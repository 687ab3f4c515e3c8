// SPDX-License-Identifier: MIT
/*
 * InitialisedOnce on hand-built runs with known answers: a parameter's
 * zero_ under no_grad as the probe records it, with the Python frames it
 * was called from. A model nesting a pretrained-style model whose
 * post_init() runs the same _init_weights again over the inner model's
 * layers (transformers#17877) breaks the rule once per parameter set
 * again; a layer's own reset_parameters followed by the model's
 * initialisation (timm's vision transformers), a model built again at the
 * same address, and a reset after an optimizer step do not. The rule is
 * learned from runs that step an optimizer, not from one that repeats an
 * initialisation, and survives a save and a load.
 */
#include <string.h>

#include "infer/initialised_once.h"
#include "infer/inference.h"
#include "infer/rule_checker.h"
#include "nccl_records.h"
#include "scratch_files.h"
#include "unit.h"

/* Call paths, innermost first, as the tracer names the frames. */
static const char *const layer_reset[] = {
	"torch.nn.init._no_grad_zero_",
	"torch.nn.init.zeros_",
	"torch.nn.modules.normalization.LayerNorm.reset_parameters",
	"torch.nn.modules.normalization.LayerNorm.__init__",
	"model.Block.__init__",
	"model.main"
};
static const char *const inner_post_init[] = {
	"model.Pretrained._init_weights", "torch.nn.modules.module.Module.apply",
	"model.Pretrained.post_init",	  "model.Body.__init__",
	"model.LanguageModel.__init__",	  "model.main"
};
static const char *const outer_post_init[] = {
	"model.Pretrained._init_weights",	"torch.nn.modules.module.Module.apply",
	"torch.nn.modules.module.Module.apply", "model.Pretrained.post_init",
	"model.LanguageModel.__init__",		"model.main"
};
static const char *const head_reset[] = { "model.Pretrained._init_weights", "model.reset_head",
					  "model.main" };

#define FRAMES(list) list, sizeof(list) / sizeof(list[0])

/*
 * zero_ on 'tensor' (its storage 'storage' where not 0), with the frames
 * that called it: a parameter under no_grad (it requires grad), or one that
 * does not require grad, such as a parameter's .data (a new TensorImpl each
 * time, often at the address the last one had, as GPT-2's _init_weights
 * sets biases) or a buffer.
 */
static void add_zero_of(struct python_records *records, uint32_t pid, uint64_t at, uint64_t tensor,
			uint64_t storage, bool requires_grad, const char *const *frames,
			size_t depth)
{
	struct trace_record *zero =
		python_records_add(records, pid, 0, at, 0, "aten::zero_", TRACE_PYTHON_TORCH_OP);

	python_call_add_arg(zero, (struct trace_python_arg){ .name = "tensor:self",
							     .type = TRACE_VALUE_INT,
							     .integer = (int64_t)tensor });
	if (storage)
		python_call_add_arg(zero, (struct trace_python_arg){ .name = "storage:self",
								     .type = TRACE_VALUE_INT,
								     .integer = (int64_t)storage });
	python_call_add_arg(zero, (struct trace_python_arg){ .name = "requires_grad:self",
							     .type = TRACE_VALUE_BOOL,
							     .integer = requires_grad });
	zero->python_call.py_stack.depth = (uint32_t)depth;
	for (size_t i = 0; i < depth; i++)
		zero->python_call.py_stack.frames[i] = frames[i];
}

/* A parameter's zero_ under no_grad, from a trace that kept no storages. */
static void add_zero(struct python_records *records, uint32_t pid, uint64_t at, uint64_t tensor,
		     const char *const *frames, size_t depth)
{
	add_zero_of(records, pid, at, tensor, 0, true, frames, depth);
}

/* zero_ through a parameter's .data, or on a buffer: known by its storage. */
static void add_data_zero(struct python_records *records, uint32_t pid, uint64_t at,
			  uint64_t storage, const char *const *frames, size_t depth)
{
	add_zero_of(records, pid, at, 0x9000, storage, false, frames, depth);
}

/* An optimizer's update of the parameter whose storage is 'storage' (it requires grad). */
static void add_update(struct python_records *records, uint32_t pid, int step, uint64_t at,
		       uint64_t storage)
{
	struct trace_record *update = python_records_add(
		records, pid, step, at, 0, "aten::add_.Tensor", TRACE_PYTHON_TORCH_OP);

	python_call_add_arg(update, (struct trace_python_arg){ .name = "tensor:self",
							       .type = TRACE_VALUE_INT,
							       .integer = (int64_t)storage + 1 });
	python_call_add_arg(update, (struct trace_python_arg){ .name = "storage:self",
							       .type = TRACE_VALUE_INT,
							       .integer = (int64_t)storage });
	python_call_add_arg(update, (struct trace_python_arg){ .name = "requires_grad:self",
							       .type = TRACE_VALUE_BOOL,
							       .integer = 1 });
}

/* How a run sets its parameters up before its first optimizer step. */
enum setup {
	SETUP_LAYER_THEN_MODEL, /* LayerNorm's own reset, then the model's post_init once */
	SETUP_NESTED_POST_INIT, /* the inner model's post_init, then the outer one's again */
	SETUP_BUILT_TWICE,	/* the same model built twice at the same address */
	SETUP_HEAD_SET_AGAIN,	/* the model's post_init, then its head's _init_weights again */
};

static void build_setup(struct python_records *records, uint32_t pid, enum setup setup)
{
	add_zero(records, pid, 10, 0x1000, FRAMES(layer_reset));
	if (setup == SETUP_BUILT_TWICE)
		add_zero(records, pid, 15, 0x1000, FRAMES(layer_reset));
	add_zero(records, pid, 20, 0x1000, FRAMES(inner_post_init));
	add_zero(records, pid, 30, 0x2000, FRAMES(inner_post_init));
	if (setup == SETUP_NESTED_POST_INIT) {
		add_zero(records, pid, 40, 0x1000, FRAMES(outer_post_init));
		add_zero(records, pid, 50, 0x2000, FRAMES(outer_post_init));
	}
	add_zero(records, pid, 60, 0x3000, FRAMES(outer_post_init));
	if (setup == SETUP_HEAD_SET_AGAIN)
		add_zero(records, pid, 70, 0x3000, FRAMES(head_reset));
}

/*
 * A step: an optimizer step; with 'reset', from the second step on, the head
 * set again by _init_weights first (a periodic reset of a trained head).
 */
static void build_step(struct python_records *records, uint32_t pid, int step, bool reset)
{
	uint64_t base = 1000000ULL * (uint64_t)(step + 1);

	if (reset && step > 0)
		add_zero(records, pid, base, 0x3000, FRAMES(head_reset));
	python_records_add(records, pid, step, base + 500, 100, "Optimizer.step#SGD.step",
			   TRACE_PYTHON_TORCH_SCOPE);
}

static struct rule_set *infer_from(enum setup setup, int steps)
{
	struct rule_set *set = rule_set_new();
	struct inference *inference = inference_new(set);
	struct python_records records = { .count = 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(inference);
	build_setup(&records, 20, setup);
	for (int step = 0; step < steps; step++)
		build_step(&records, 20, step, false);
	for (size_t i = 0; i < records.count; i++)
		CU_ASSERT_EQUAL(inference_add(inference, &records.at[i]), 0);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	inference_free(inference);
	return set;
}

static const struct rule *initialised_rule(const struct rule_set *set)
{
	const struct rule *found = NULL;

	for (size_t i = 0; i < set->count; i++)
		if (set->rules[i].relation == RELATION_INITIALISED_ONCE) {
			CU_ASSERT_PTR_NULL(found); /* one rule */
			found = &set->rules[i];
		}
	return found;
}

struct seen_violations {
	int total;
	uint64_t tensors[4];
	bool other_is_earlier;
};

static void count_violation(const struct rule_violation *violation, void *context)
{
	struct seen_violations *seen = context;

	if (violation->rule->relation != RELATION_INITIALISED_ONCE)
		return;
	if (seen->total < 4)
		seen->tensors[seen->total] =
			infer_event_tensor(violation->event, "storage:self")
				?: infer_event_tensor(violation->event, "tensor:self");
	seen->total++;
	seen->other_is_earlier = violation->other &&
				 violation->other->entry_ns < violation->event->entry_ns &&
				 violation->other->call_path != violation->event->call_path;
}

/* Checks a run set up so, then 'steps' steps; with 'reset', each step's head reset. */
static struct seen_violations check_run(struct rule_set *set, uint32_t pid, enum setup setup,
					int steps, bool reset)
{
	struct seen_violations seen = { 0 };
	struct rule_checker *checker = rule_checker_new(set, count_violation, &seen);
	struct python_records records = { .count = 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	build_setup(&records, pid, setup);
	for (int step = 0; step < steps; step++)
		build_step(&records, pid, step, reset);
	for (size_t i = 0; i < records.count; i++)
		CU_ASSERT_EQUAL(rule_checker_observe(checker, &records.at[i]), 0);
	rule_checker_finish(checker);
	rule_checker_free(checker);
	return seen;
}

UNIT_TEST(initialised_once, the_initialiser_is_the_first_frame_outside_torch)
{
	const char *path = "torch.nn.init._no_grad_zero_ < torch.nn.init.zeros_ < "
			   "model.Pretrained._init_weights < torch.nn.modules.module.Module.apply";
	size_t length = 0;
	const char *found = initialised_once_initialiser(path, &length);

	CU_ASSERT_PTR_NOT_NULL_FATAL(found);
	CU_ASSERT_EQUAL(length, strlen("model.Pretrained._init_weights"));
	CU_ASSERT_EQUAL(strncmp(found, "model.Pretrained._init_weights", length), 0);
	CU_ASSERT_PTR_NULL(initialised_once_initialiser(
		"torch.nn.init._no_grad_zero_ < torch.nn.init.zeros_", &length));
	CU_ASSERT_PTR_NULL(initialised_once_initialiser("", &length));
	CU_ASSERT_PTR_NULL(initialised_once_initialiser(NULL, &length));
}

UNIT_TEST(initialised_once, learned_from_a_run_that_steps_and_caught_at_a_nested_post_init)
{
	struct rule_set *set = infer_from(SETUP_LAYER_THEN_MODEL, 4);
	const struct rule *rule = initialised_rule(set);
	struct seen_violations seen;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_STRING_EQUAL(rule->event.name, INITIALISED_ONCE_OPERATOR);
	/* Every optimizer step is an example. */
	CU_ASSERT_EQUAL(rule->passing, 4);
	/* A layer's own reset, then the model's initialisation: another initialiser. */
	CU_ASSERT_EQUAL(check_run(set, 30, SETUP_LAYER_THEN_MODEL, 3, false).total, 0);
	/* transformers#17877: both inner parameters set again by the outer post_init. */
	seen = check_run(set, 31, SETUP_NESTED_POST_INIT, 3, false);
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.tensors[0], 0x1000);
	CU_ASSERT_EQUAL(seen.tensors[1], 0x2000);
	CU_ASSERT_TRUE(seen.other_is_earlier);
	/* The same path again: a model built anew where the last one was. */
	CU_ASSERT_EQUAL(check_run(set, 32, SETUP_BUILT_TWICE, 3, false).total, 0);
	/* The head set again by _init_weights after each optimizer step: a reset. */
	CU_ASSERT_EQUAL(check_run(set, 33, SETUP_LAYER_THEN_MODEL, 3, true).total, 0);
	/* The same before any step: the head initialised twice by one initialiser. */
	seen = check_run(set, 35, SETUP_HEAD_SET_AGAIN, 3, false);
	CU_ASSERT_EQUAL(seen.total, 1);
	CU_ASSERT_EQUAL(seen.tensors[0], 0x3000);
	rule_set_free(set);
}

UNIT_TEST(initialised_once, no_rule_from_a_reference_that_repeats_or_never_steps)
{
	struct rule_set *set = infer_from(SETUP_NESTED_POST_INIT, 4);

	CU_ASSERT_PTR_NULL(initialised_rule(set));
	rule_set_free(set);
	set = infer_from(SETUP_LAYER_THEN_MODEL, 0);
	CU_ASSERT_PTR_NULL(initialised_rule(set));
	rule_set_free(set);
}

UNIT_TEST(initialised_once, saved_and_loaded_with_no_field)
{
	struct rule_set *set = infer_from(SETUP_LAYER_THEN_MODEL, 4), *loaded;
	const char *path = scratch_path("initialised-once-rules.json");
	char error[512], text[RULE_TEXT_SIZE];
	const struct rule *rule;

	CU_ASSERT_EQUAL_FATAL(rule_set_save(set, path, error, sizeof(error)), 0);
	loaded = rule_set_load(path, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(loaded);
	rule = initialised_rule(loaded);
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_PTR_NULL(rule->field);
	CU_ASSERT_EQUAL(rule->passing, 4);
	rule_describe(rule, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "another call path"));
	CU_ASSERT_EQUAL(check_run(loaded, 34, SETUP_NESTED_POST_INIT, 2, false).total, 2);
	rule_set_free(loaded);
	rule_set_free(set);
}

/*
 * Through .data (GPT-2's _init_weights at the report's time): the nested
 * post_init zeroes two storages twice along other paths. The storage the
 * optimizer then updates is a parameter's, and its repetition is one; the
 * other is not seen as a parameter's by the end of the first step (a
 * buffer reset twice, or a freed temporary's address that a parameter
 * built later takes), and is not judged. A storage a no_grad
 * initialiser set as a parameter first is judged at once.
 */
UNIT_TEST(initialised_once, a_parameter_set_again_through_its_data_once_seen_as_one)
{
	struct rule_set *set = infer_from(SETUP_LAYER_THEN_MODEL, 4);
	struct seen_violations seen = { 0 };
	struct rule_checker *checker = rule_checker_new(set, count_violation, &seen);
	struct python_records records = { .count = 0 };
	int before_step = -1;

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	add_data_zero(&records, 40, 10, 0x5000, FRAMES(inner_post_init));
	add_data_zero(&records, 40, 20, 0x6000, FRAMES(inner_post_init));
	add_data_zero(&records, 40, 30, 0x5000, FRAMES(outer_post_init));
	add_data_zero(&records, 40, 40, 0x6000, FRAMES(outer_post_init));
	/* Set as a parameter first (under no_grad), then through its .data again. */
	add_zero_of(&records, 40, 50, 0x7001, 0x7000, true, FRAMES(inner_post_init));
	add_data_zero(&records, 40, 60, 0x7000, FRAMES(outer_post_init));
	for (int step = 0; step < 2; step++) {
		add_update(&records, 40, step, 1000000ULL * (uint64_t)(step + 1), 0x5000);
		build_step(&records, 40, step, false);
	}
	/* Two steps on, 0x6000's address is a new parameter's (a layer replaced): no repetition. */
	add_update(&records, 40, 2, 3000000ULL, 0x6000);
	for (size_t i = 0; i < records.count; i++) {
		CU_ASSERT_EQUAL(rule_checker_observe(checker, &records.at[i]), 0);
		if (i == 5)
			before_step = seen.total;
	}
	rule_checker_finish(checker);
	rule_checker_free(checker);
	/* 0x7000 at once; 0x5000 when the optimizer updates it; 0x6000 never. */
	CU_ASSERT_EQUAL(before_step, 1);
	CU_ASSERT_EQUAL(seen.total, 2);
	CU_ASSERT_EQUAL(seen.tensors[0], 0x7000);
	CU_ASSERT_EQUAL(seen.tensors[1], 0x5000);
	rule_set_free(set);
}

/*
 * torch's orthogonal() parametrization on torch 2.14: _is_orthogonal zeroes
 * a temporary, and right_inverse then zeroes the tensor that becomes the
 * parameter, at the storage the temporary freed. The program's own frames
 * are the same: one initialisation, whatever torch's helpers between.
 */
UNIT_TEST(initialised_once, torch_helpers_between_are_the_same_call_path)
{
	/* Eight frames, as the probe cuts them: the deeper one loses the module's frame. */
	static const char *const checked[] = {
		"torch.nn.utils.parametrizations._is_orthogonal",
		"torch.nn.utils.parametrizations._Orthogonal.right_inverse",
		"torch.utils._contextlib.context_decorator.<locals>.decorate_context",
		"torch.nn.utils.parametrize.ParametrizationList.__init__",
		"torch.nn.utils.parametrize.register_parametrization",
		"torch.nn.utils.parametrizations.orthogonal",
		"model.Recurrence.__init__",
		"model.main",
	};
	static const char *const set_up[] = {
		"torch.nn.utils.parametrizations._Orthogonal.right_inverse",
		"torch.utils._contextlib.context_decorator.<locals>.decorate_context",
		"torch.nn.utils.parametrize.ParametrizationList.__init__",
		"torch.nn.utils.parametrize.register_parametrization",
		"torch.nn.utils.parametrizations.orthogonal",
		"model.Recurrence.__init__",
		"model.main",
		"model.<module>",
	};
	struct rule_set *set = infer_from(SETUP_LAYER_THEN_MODEL, 4);
	struct seen_violations seen = { 0 };
	struct rule_checker *checker = rule_checker_new(set, count_violation, &seen);
	struct python_records records = { .count = 0 };

	CU_ASSERT_PTR_NOT_NULL_FATAL(checker);
	add_data_zero(&records, 50, 10, 0x8000, FRAMES(checked));
	add_data_zero(&records, 50, 20, 0x8000, FRAMES(set_up));
	add_update(&records, 50, 0, 1000000ULL, 0x8000);
	build_step(&records, 50, 0, false);
	for (size_t i = 0; i < records.count; i++)
		CU_ASSERT_EQUAL(rule_checker_observe(checker, &records.at[i]), 0);
	rule_checker_finish(checker);
	rule_checker_free(checker);
	CU_ASSERT_EQUAL(seen.total, 0);
	rule_set_free(set);
}
