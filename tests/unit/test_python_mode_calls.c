// SPDX-License-Identifier: MIT
/*
 * Whose training flag sets the stage: the stacks torch's Module.train and
 * Module.eval give each flag they set, a model's train() override that puts
 * its frozen stages in eval() (mmpretrain's backbones), and functions named
 * train that are training loops, not mode calls.
 */
#include "python/python_mode_calls.h"
#include "unit.h"

#define TRAIN "torch.nn.modules.module.Module.train"
#define EVAL "torch.nn.modules.module.Module.eval"

/* A caller with its first parameters, as the tracer names them. */
static struct python_mode_caller caller(const char *name, int count, const char *first,
					const char *second)
{
	return (struct python_mode_caller){ .qualified_name = name,
					    .argument_count = count,
					    .argument_names = { first, second } };
}

static struct python_mode_caller torch_train(void)
{
	return caller(TRAIN, 2, "self", "mode");
}

static struct python_mode_caller torch_eval(void)
{
	return caller(EVAL, 1, "self", NULL);
}

/* A model's override: def train(self, mode=True). */
static struct python_mode_caller override(void)
{
	return caller("backbone.TinyVGG.train", 2, "self", "mode");
}

static struct python_mode_caller plain(const char *name)
{
	return caller(name, 0, NULL, NULL);
}

UNIT_TEST(python_mode_calls, the_outermost_train_or_eval_sets_the_stage)
{
	/* model.train() and model.eval() from the loop: the model's own flag. */
	struct python_mode_caller top[] = { torch_train(), plain("script.main") };
	struct python_mode_caller top_eval[] = { torch_train(), torch_eval(),
						 plain("script.main") };
	/* Module.train recursing into a child: the child's flag. */
	struct python_mode_caller child[] = { torch_train(), torch_train(), plain("script.main") };
	struct python_mode_caller child_eval[] = { torch_train(), torch_train(), torch_eval(),
						   plain("script.main") };

	CU_ASSERT_TRUE(python_mode_call_is_outermost(top, 2));
	CU_ASSERT_TRUE(python_mode_call_is_outermost(top_eval, 3));
	CU_ASSERT_FALSE(python_mode_call_is_outermost(child, 3));
	CU_ASSERT_FALSE(python_mode_call_is_outermost(child_eval, 4));
	/* Nothing known of the callers, or set by the program itself: it stands. */
	CU_ASSERT_TRUE(python_mode_call_is_outermost(NULL, 0));
	CU_ASSERT_TRUE(python_mode_call_is_outermost(top + 1, 1));
}

UNIT_TEST(python_mode_calls, an_override_freezing_its_stages_stays_in_train)
{
	/* model.train() on an override: super().train(mode) sets the model's flag. */
	struct python_mode_caller model[] = { torch_train(), override(), plain("script.main") };
	/* ... then _freeze_stages() puts stage 0 in eval(): inside the override. */
	struct python_mode_caller frozen_stage[] = { torch_train(), torch_eval(),
						     plain("backbone.TinyVGG._freeze_stages"),
						     override(), plain("script.main") };
	/* ... or sets the flag by hand there. */
	struct python_mode_caller by_hand[] = { plain("backbone.TinyVGG._freeze_stages"),
						override(), plain("script.main") };
	/* A parent's Module.train reaching a child that overrides train(). */
	struct python_mode_caller overriding_child[] = { torch_train(), override(), torch_train(),
							 plain("script.main") };

	/*
	 * model.eval() on an override (DistributedDataParallel's train): Module.eval's
	 * self.train(False) runs the override, whose super().train(mode) sets the flag.
	 */
	struct python_mode_caller evaluated[] = { torch_train(), override(), torch_eval(),
						  plain("script.main") };

	CU_ASSERT_TRUE(python_mode_call_is_outermost(model, 3));
	CU_ASSERT_TRUE(python_mode_call_is_outermost(evaluated, 4));
	CU_ASSERT_FALSE(python_mode_call_is_outermost(frozen_stage, 5));
	CU_ASSERT_FALSE(python_mode_call_is_outermost(by_hand, 3));
	CU_ASSERT_FALSE(python_mode_call_is_outermost(overriding_child, 4));
}

UNIT_TEST(python_mode_calls, a_training_loop_named_train_is_no_mode_call)
{
	/* def train(model, loader) and Trainer.train(self): model.train() inside them. */
	struct python_mode_caller script_loop[] = { torch_train(),
						    caller("script.train", 2, "model", "loader"),
						    plain("script.main") };
	struct python_mode_caller trainer[] = { torch_train(),
						caller("trainer.Trainer.train", 1, "self", NULL),
						plain("script.main") };
	/* train(self, mode, extra): not Module.train's signature either. */
	struct python_mode_caller three[] = { torch_train(),
					      caller("lib.Runner.train", 3, "self", "mode"),
					      plain("script.main") };
	/* A module-level function train(self, mode) is no method: not an override. */
	struct python_mode_caller function[] = { torch_train(), caller("train", 2, "self", "mode"),
						 plain("script.main") };

	CU_ASSERT_TRUE(python_mode_call_is_outermost(script_loop, 3));
	CU_ASSERT_TRUE(python_mode_call_is_outermost(trainer, 3));
	CU_ASSERT_TRUE(python_mode_call_is_outermost(three, 3));
	CU_ASSERT_TRUE(python_mode_call_is_outermost(function, 3));
}

UNIT_TEST(python_mode_calls, only_the_training_flag_sets_a_stage)
{
	struct trace_python_call call = { 0 };
	uint32_t stage = TRACE_STAGE_UNKNOWN;

	call.arg_count = 2;
	call.args[0] = (struct trace_python_arg){ .name = "name",
						  .type = TRACE_VALUE_STR,
						  .text = "training" };
	call.args[1] = (struct trace_python_arg){ .name = "value",
						  .type = TRACE_VALUE_BOOL,
						  .integer = 0 };
	CU_ASSERT_TRUE(python_mode_flag_set(&call, &stage));
	CU_ASSERT_EQUAL(stage, TRACE_STAGE_EVAL);
	call.args[1].integer = 1;
	CU_ASSERT_TRUE(python_mode_flag_set(&call, &stage));
	CU_ASSERT_EQUAL(stage, TRACE_STAGE_TRAIN);
	/* spectral_norm's hook sets module.weight each forward: no stage. */
	call.args[0].text = "weight";
	CU_ASSERT_FALSE(python_mode_flag_set(&call, &stage));
	call.args[0].text = "training";
	call.args[1].type = TRACE_VALUE_INT;
	CU_ASSERT_FALSE(python_mode_flag_set(&call, &stage));
}

UNIT_TEST(python_mode_calls, a_flag_set_by_any_train_or_eval_reaches_its_module)
{
	/* model.train(), model.eval(), and the children's flags they set. */
	struct python_mode_caller top[] = { torch_train(), plain("script.main") };
	struct python_mode_caller child_eval[] = { torch_train(), torch_train(), torch_eval(),
						   plain("script.main") };
	/* The override's super().train(mode), and a flag set by hand inside the override. */
	struct python_mode_caller through_override[] = { torch_train(), override(),
							 plain("script.main") };
	struct python_mode_caller by_hand[] = { plain("backbone.TinyVGG._freeze_stages"),
						override(), plain("script.main") };
	/* torch 1.13's Module.__init__ sets self.training = True: no train() ran. */
	struct python_mode_caller constructor[] = {
		plain("torch.nn.modules.module.Module.__init__"),
		plain("backbone.TinyVGG.__init__"), plain("script.main")
	};
	/* A training loop named train setting the flag by hand is no train() of a module. */
	struct python_mode_caller loop[] = { caller("script.train", 2, "model", "loader"),
					     plain("script.main") };

	CU_ASSERT_TRUE(python_mode_call_made_by_mode_call(top, 2));
	CU_ASSERT_TRUE(python_mode_call_made_by_mode_call(child_eval, 4));
	CU_ASSERT_TRUE(python_mode_call_made_by_mode_call(through_override, 3));
	CU_ASSERT_TRUE(python_mode_call_made_by_mode_call(by_hand, 3));
	CU_ASSERT_FALSE(python_mode_call_made_by_mode_call(constructor, 3));
	CU_ASSERT_FALSE(python_mode_call_made_by_mode_call(loop, 2));
	CU_ASSERT_FALSE(python_mode_call_made_by_mode_call(NULL, 0));
}
