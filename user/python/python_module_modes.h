/* SPDX-License-Identifier: MIT */
/*
 * The stage from the modes of the models a program runs. torch defines a
 * model's mode by the train() or eval() call on it, but a program may hold
 * several models in other modes: an EMA copy or a distillation teacher kept
 * in eval() beside the model it trains, a GAN's two halves. So where the
 * tracer follows module calls, the stage is train while any top module the
 * program has called (the outermost module call on a thread) is in train
 * mode, eval once every one is in eval: a top module's mode is that of the
 * last outermost train()/eval() on it (python_mode_calls.h), train before
 * any (nn.Module's default). A train() or eval() on a module seen running
 * inside another (a batch norm frozen by hand, `model.module.eval()`) sets
 * no model's mode. Before the first top module call returns the stage is
 * unknown. Where module calls are not followed, the stage is that of the
 * last outermost train()/eval(), as before.
 *
 * Such a train() or eval() does give that submodule a mode of its own,
 * until its model's next train() or eval() (which sets every submodule's):
 * Monte Carlo dropout puts the model in eval() and its dropout modules back
 * in train() to sample predictions. Its module calls say so
 * (TRACE_MODULE_TRAINING_ARG), so that the dropout they run is not taken
 * for one that ignores the model's mode. Needs no kernel.
 */
#ifndef TCHECK_PYTHON_MODULE_MODES_H
#define TCHECK_PYTHON_MODULE_MODES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/u64_map.h"

/*
 * The maps' mode values: the stage and the order of the mode call that set
 * it (python_module_modes.c), never NULL.
 */
struct python_module_modes {
	struct u64_map modes;	   /* module address -> its last outermost mode call's stage */
	struct u64_map own_modes;  /* submodule address -> the mode a call gave it alone */
	struct u64_map tops;	   /* top module address -> non-NULL: the program called it */
	struct u64_map submodules; /* module address -> non-NULL: seen running inside another */
	/* module address -> non-NULL: an attribute set on it was seen before any call of it */
	struct u64_map built;
	struct u64_map reached; /* module address -> non-NULL: a train() or eval() set its flag */
	uint64_t mode_calls;	/* outermost mode calls so far: the order of each */
	uint32_t last_set;	/* the last outermost mode call's stage (enum trace_stage) */
};

void python_module_modes_init(struct python_module_modes *modes);
void python_module_modes_free(struct python_module_modes *modes);

/* The outermost train() or eval() on the module at 'module' set 'stage'; 0 or -ENOMEM. */
int python_module_modes_set(struct python_module_modes *modes, uint64_t module, uint32_t stage);

/*
 * Module.__setattr__ on the module at 'module': 'by_mode_call' where it set
 * the training flag from within a train() or eval()
 * (python_mode_call_made_by_mode_call), on the module itself or on its
 * model. An attribute set before any call of the module was seen says that
 * the tracer watched the module being built. 0 or -ENOMEM.
 */
int python_module_modes_attribute_set(struct python_module_modes *modes, uint64_t module,
				      bool by_mode_call);

/*
 * Whether the module at 'module' was seen being built and no train() or
 * eval() has set its flag since: it runs in the training mode its
 * constructor gave it, and a class's train() override (mmpretrain's frozen
 * stages) has not run for it. False where the tracer came after the
 * module was built: an earlier train() is not known.
 */
bool python_module_modes_never_set(const struct python_module_modes *modes, uint64_t module);

/*
 * A module call of the module at 'self' whose top module (the outermost
 * module call on its thread) is at 'top' (self itself for a top module):
 * 1 when it is a top module met for the first time, 0 otherwise, or -ENOMEM.
 */
int python_module_modes_called(struct python_module_modes *modes, uint64_t self, uint64_t top);

/* The mode of the top module at 'top' (enum trace_stage): train before any mode call on it. */
uint32_t python_module_modes_of(const struct python_module_modes *modes, uint64_t top);

/*
 * Whether the submodule at 'self', run inside the top module at 'top', was
 * put in a mode of its own by a train() or eval() on it after the last one
 * on its model, other than its model's; then that mode in *stage.
 */
bool python_module_modes_own(const struct python_module_modes *modes, uint64_t self, uint64_t top,
			     uint32_t *stage);

/*
 * The stage now (enum trace_stage): from the called top modules' modes
 * where module calls are followed, else the last outermost mode call's.
 */
uint32_t python_module_modes_stage(const struct python_module_modes *modes,
				   bool module_calls_followed);

#endif /* TCHECK_PYTHON_MODULE_MODES_H */
