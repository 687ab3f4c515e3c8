/* SPDX-License-Identifier: MIT */
/*
 * Selective instrumentation: the probes a rules file needs. NCCL calls are
 * always traced (hang detection wants them); Python is traced only when a
 * rule is about a Python function, a torch scope or a torch operator, and
 * then only the functions and operators the rules name.
 */
#ifndef TCHECK_RULES_SELECTION_H
#define TCHECK_RULES_SELECTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "infer/rules.h"
#include "record/recorder.h"

struct rules_selection {
	bool python; /* some rule is about a Python call, scope or operator */
	/* a rule about parameters (ParametersUpdated, InitialisedOnce, ...): training operators */
	bool training_ops;
	/*
	 * Some rule needs Python functions' calls (rule_frames.h): CPython's
	 * frame evaluator is probed. Without one, torch's probes do.
	 */
	bool python_frames;
	size_t python_frames_rules;	/* how many rules need it */
	char python_frames_reason[320]; /* the first such rule's need */
	const char **functions; /* qualified names to follow, NULL-ended (the rule set's strings) */
	size_t function_count;
	const char **torch_ops; /* --torch-op requests ("add_.Tensor"), NULL-ended */
	size_t torch_op_count;
	const char **merged_functions; /* what rules_selection_apply gave the recorder */
	const char **merged_torch_ops;
};

/* Fills 'selection' from the rules' descriptors; 0 or -ENOMEM. */
int rules_selection_build(const struct rule_set *rules, struct rules_selection *selection);
void rules_selection_free(struct rules_selection *selection);

/*
 * Widens the recorder's Python selection with what the rules need: when a
 * rule is about Python, Python is traced, with the rules' functions and
 * operators added to the user's (to the defaults when the user asked for
 * Python without naming functions; to none when the user did not ask).
 * When the user did not ask for Python and no rule needs Python functions'
 * calls, only torch's probes are attached (options->torch_events_only).
 * The lists it makes are kept in 'selection' until rules_selection_free.
 * Returns 0 or -ENOMEM.
 */
int rules_selection_apply(struct rules_selection *selection, struct recorder_options *options);

/*
 * The probes the selection attaches, one line each: NCCL's, torch's
 * (scopes, backward pass, the operators named), CPython's frame evaluator
 * and why (for check --rules R --probes and record -v).
 */
void rules_selection_print(const struct rules_selection *selection, FILE *out);

/*
 * rules_selection_build then rules_selection_apply, saying in the log what
 * the rules made the recorder trace. 0, or -1 after logging why not.
 */
int rules_selection_configure(const struct rule_set *rules, struct recorder_options *options,
			      struct rules_selection *selection);

#endif /* TCHECK_RULES_SELECTION_H */
