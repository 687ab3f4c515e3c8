// SPDX-License-Identifier: MIT
/* Whose training flag sets the stage: the outermost train()/eval() call's (python_mode_calls.h). */
#include "python/python_mode_calls.h"

#include <string.h>

static const char torch_train[] = "torch.nn.modules.module.Module.train";
static const char torch_eval[] = "torch.nn.modules.module.Module.eval";

/* The last part of a dotted name. */
static const char *last_name(const char *qualified_name)
{
	const char *dot = strrchr(qualified_name, '.');

	return dot ? dot + 1 : qualified_name;
}

/*
 * A train(self, mode) override of a class (Module.train's own signature):
 * a function named train with other parameters (a trainer's train(self),
 * a script's train(model, loader)) is a training loop, not a mode call.
 */
static bool is_train_override(const struct python_mode_caller *caller)
{
	const char *name = caller->qualified_name;

	return name && strcmp(name, torch_train) != 0 && strcmp(last_name(name), "train") == 0 &&
	       last_name(name) != name && caller->argument_count == 2 &&
	       caller->argument_names[0] && caller->argument_names[1] &&
	       strcmp(caller->argument_names[0], "self") == 0 &&
	       strcmp(caller->argument_names[1], "mode") == 0;
}

static bool is_named(const struct python_mode_caller *caller, const char *name)
{
	return caller->qualified_name && strcmp(caller->qualified_name, name) == 0;
}

/* Any train() or eval() of a module: torch's own or a train(self, mode) override. */
static bool is_mode_call(const struct python_mode_caller *caller)
{
	return is_named(caller, torch_train) || is_named(caller, torch_eval) ||
	       is_train_override(caller);
}

bool python_mode_call_is_outermost(const struct python_mode_caller *callers, uint32_t count)
{
	uint32_t at = 0;

	/* Module.train setting its own flag ... */
	if (at < count && is_named(&callers[at], torch_train))
		at++;
	/* ... from overrides' super().train(mode), each class of the hierarchy in turn ... */
	while (at < count && is_train_override(&callers[at]))
		at++;
	/* ... reached through Module.eval or not (its self.train(False) runs the overrides). */
	if (at < count && is_named(&callers[at], torch_eval))
		at++;
	/* Any other train() or eval() further out holds this one: a child's, a part's. */
	for (; at < count; at++)
		if (is_mode_call(&callers[at]))
			return false;
	return true;
}

bool python_mode_call_made_by_mode_call(const struct python_mode_caller *callers, uint32_t count)
{
	for (uint32_t at = 0; at < count; at++)
		if (is_mode_call(&callers[at]))
			return true;
	return false;
}

bool python_mode_flag_set(const struct trace_python_call *call, uint32_t *stage)
{
	const struct trace_python_arg *name = NULL, *value = NULL;

	for (uint32_t i = 0; i < call->arg_count; i++) {
		if (strcmp(call->args[i].name, "name") == 0)
			name = &call->args[i];
		else if (strcmp(call->args[i].name, "value") == 0)
			value = &call->args[i];
	}
	if (!name || !value || name->type != TRACE_VALUE_STR ||
	    strcmp(name->text, "training") != 0 || value->type != TRACE_VALUE_BOOL)
		return false;
	*stage = value->integer ? TRACE_STAGE_TRAIN : TRACE_STAGE_EVAL;
	return true;
}
