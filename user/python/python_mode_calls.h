/* SPDX-License-Identifier: MIT */
/*
 * Whose training flag sets the stage. Module.train() sets self.training
 * and then calls train() on every child, and a model's own train() override
 * may put parts of itself in eval() (mmpretrain's frozen stages): the flag
 * set last is rarely the model's. As torch defines a model's mode, the stage
 * follows the module the program called train() or eval() on: the outermost
 * call, not one made from inside another train().
 */
#ifndef TCHECK_PYTHON_MODE_CALLS_H
#define TCHECK_PYTHON_MODE_CALLS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/trace_records.h"

/*
 * Module.training is set through nn.Module.__setattr__, a Python __setattr__
 * the interpreter enters from C (the type's slot) on every version, even
 * where Module.train() itself runs inline: its arguments give the stage.
 */
#define PYTHON_STAGE_SETTER "torch.nn.modules.module.Module.__setattr__"

/* One caller of Module.__setattr__("training", mode): its code's name and parameters. */
struct python_mode_caller {
	const char *qualified_name; /* NULL: not named */
	int argument_count;
	const char *argument_names[2]; /* the first two, NULL past argument_count */
};

/*
 * Whether a flag set with these callers (innermost first, count of them) is
 * the outermost mode call's: set by Module.train (reached through
 * Module.eval or not), by train(self, mode) overrides calling super, or by
 * the program itself, with no other train() or eval() further out. A stack
 * the probe cut short is judged by what it holds.
 */
bool python_mode_call_is_outermost(const struct python_mode_caller *callers, uint32_t count);

/*
 * Whether a flag set with these callers was made by some train() or eval():
 * the outermost one's own, or one it made on a child (Module.train sets
 * every submodule's), through a class's train(self, mode) override or not.
 * A module's constructor setting its flag (Module.__init__) is none.
 */
bool python_mode_call_made_by_mode_call(const struct python_mode_caller *callers, uint32_t count);

/*
 * Whether a Module.__setattr__ call (its arguments decoded) sets the
 * training flag; *stage: the stage it sets (enum trace_stage).
 */
bool python_mode_flag_set(const struct trace_python_call *call, uint32_t *stage);

#endif /* TCHECK_PYTHON_MODE_CALLS_H */
