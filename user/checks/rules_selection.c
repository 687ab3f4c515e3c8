// SPDX-License-Identifier: MIT
/* The probes a rules file needs, and the user's selection widened with them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/log.h"
#include "checks/rules_selection.h"
#include "infer/precondition.h"
#include "infer/rank_updates.h"
#include "infer/rule_frames.h"
#include "infer/scalars_steady.h"
#include "python/python_tracer.h"

/* How the trace names a --torch-op operator: "aten::" then the request. */
static const char torch_op_prefix[] = "aten::";

/* A NULL-ended list of strings that grows; the strings are not copied. */
struct name_list {
	const char **names;
	size_t count;
	size_t capacity;
};

static bool name_list_has(const struct name_list *list, const char *name)
{
	for (size_t i = 0; i < list->count; i++)
		if (strcmp(list->names[i], name) == 0)
			return true;
	return false;
}

static int name_list_add(struct name_list *list, const char *name)
{
	if (name_list_has(list, name))
		return 0;
	if (growable_array_room_for_one((void **)&list->names, list->count + 1, &list->capacity,
					sizeof(*list->names)))
		return -ENOMEM;
	list->names[list->count++] = name;
	list->names[list->count] = NULL;
	return 0;
}

static int name_list_add_all(struct name_list *list, const char *const *names)
{
	for (size_t i = 0; names && names[i]; i++)
		if (name_list_add(list, names[i]))
			return -ENOMEM;
	return 0;
}

/* An empty list is still a list: NULL-ended, never NULL itself. */
static int name_list_finish(struct name_list *list)
{
	if (!list->names) {
		list->names = calloc(1, sizeof(*list->names));
		if (!list->names)
			return -ENOMEM;
	}
	return 0;
}

static int add_descriptor(const struct rule_descriptor *descriptor, struct name_list *functions,
			  struct name_list *ops, bool *python)
{
	const char *name = descriptor->name;

	if (descriptor->kind != INFER_EVENT_PYTHON || !name)
		return 0;
	*python = true;
	if (strncmp(name, torch_op_prefix, strlen(torch_op_prefix)) == 0)
		return name_list_add(ops, name + strlen(torch_op_prefix));
	/* Torch scopes ("Optimizer.step#SGD.step") come with Python tracing. */
	if (strchr(name, '#'))
		return 0;
	return name_list_add(functions, name);
}

int rules_selection_build(const struct rule_set *rules, struct rules_selection *selection)
{
	struct name_list functions = { 0 }, ops = { 0 };
	int error = 0;

	memset(selection, 0, sizeof(*selection));
	for (size_t i = 0; i < rules->count && !error; i++) {
		const struct rule *rule = &rules->rules[i];
		const struct rule_descriptor *descriptors[] = { &rule->event, &rule->first,
								&rule->child };

		for (size_t j = 0; j < sizeof(descriptors) / sizeof(descriptors[0]) && !error; j++)
			error = add_descriptor(descriptors[j], &functions, &ops,
					       &selection->python);
		if (rule_needs_python_frames(
			    rule, selection->python_frames ? NULL : selection->python_frames_reason,
			    sizeof(selection->python_frames_reason))) {
			selection->python_frames = true;
			selection->python_frames_rules++;
		}
		/* Steps are counted from the optimizer's scopes: Python tracing. */
		selection->python |= rule_checks_rank_updates(rule);
		selection->training_ops |= rule->relation == RELATION_PARAMETERS_UPDATED ||
					   rule->relation == RELATION_FROZEN_UNCHANGED ||
					   rule->relation == RELATION_TRAINABLE_UPDATED ||
					   rule->relation == RELATION_SCALARS_STEADY ||
					   /* a parameter's storage shown by its update or read */
					   rule->relation == RELATION_INITIALISED_ONCE ||
					   rule_checks_rank_updates(rule) ||
					   /* an optimizer's first step: new parameters updated */
					   precondition_reads(&rule->precondition, "first_step");
		/*
		 * A scheduler lets scalars change, an optimizer's state loaded holds them,
		 * and an optimizer built has new ones (optimizer_firsts): followed.
		 */
		if (rule->relation == RELATION_SCALARS_STEADY && !error)
			error = name_list_add(&functions, SCALARS_STEADY_FOLLOWED_PREFIX);
	}
	if (!error)
		error = name_list_finish(&functions);
	if (!error)
		error = name_list_finish(&ops);
	selection->functions = functions.names;
	selection->function_count = functions.count;
	selection->torch_ops = ops.names;
	selection->torch_op_count = ops.count;
	if (error)
		rules_selection_free(selection);
	return error;
}

void rules_selection_free(struct rules_selection *selection)
{
	free(selection->functions);
	free(selection->torch_ops);
	free(selection->merged_functions);
	free(selection->merged_torch_ops);
	memset(selection, 0, sizeof(*selection));
}

int rules_selection_apply(struct rules_selection *selection, struct recorder_options *options)
{
	struct name_list functions = { 0 }, operators = { 0 };
	const char *const *user_functions = options->python_prefixes;
	int error;

	if (!selection->python)
		return 0;
	if (options->python && !user_functions)
		user_functions = python_default_prefixes;
	error = name_list_add_all(&functions, user_functions);
	if (!error)
		error = name_list_add_all(&functions, selection->functions);
	if (!error)
		error = name_list_finish(&functions);
	for (size_t i = 0; i < options->torch_op_count && !error; i++)
		error = name_list_add(&operators, options->torch_ops[i]);
	if (!error)
		error = name_list_add_all(&operators, selection->torch_ops);
	if (!error)
		error = name_list_finish(&operators);
	if (error) {
		free(functions.names);
		free(operators.names);
		return error;
	}
	free(selection->merged_functions);
	free(selection->merged_torch_ops);
	selection->merged_functions = functions.names;
	selection->merged_torch_ops = operators.names;
	/*
	 * The user's own --python keeps the evaluator: the trace has their
	 * functions; so does a --step-marker that may name a Python function
	 * (a scope's has its '#').
	 */
	options->torch_events_only =
		!options->python && !selection->python_frames &&
		(!options->step_marker || strchr(options->step_marker, '#') != NULL);
	options->python = true;
	options->training_ops |= selection->training_ops;
	options->python_prefixes = functions.names;
	options->torch_ops = operators.names;
	options->torch_op_count = operators.count;
	return 0;
}

/* The probes of rules_selection_print, one log_info line each (-v). */
static void log_selection_probes(const struct rules_selection *selection)
{
	char *text = NULL, *line, *next;
	size_t size = 0;
	FILE *out = open_memstream(&text, &size);

	if (!out)
		return;
	rules_selection_print(selection, out);
	if (fclose(out) || !text)
		return;
	for (line = text; *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = line + strlen(line);
		log_info("%s", line);
	}
	free(text);
}

int rules_selection_configure(const struct rule_set *rules, struct recorder_options *options,
			      struct rules_selection *selection)
{
	if (rules_selection_build(rules, selection) || rules_selection_apply(selection, options)) {
		log_error("out of memory");
		return -1;
	}
	if (selection->python)
		log_info("the rules are about %zu Python function(s) and %zu torch operator(s): "
			 "Python is traced%s",
			 selection->function_count, selection->torch_op_count,
			 options->torch_events_only ? " through torch's probes only" : "");
	else if (!options->python)
		log_info("the rules are about NCCL calls only: Python is not traced");
	if (log_verbosity() >= 1)
		log_selection_probes(selection);
	return 0;
}

void rules_selection_print(const struct rules_selection *selection, FILE *out)
{
	fprintf(out, "probe: NCCL calls (entry and return of each nccl.h function): always\n");
	if (!selection->python) {
		fprintf(out, "probe: torch and CPython: none (no rule is about Python or torch)\n");
		return;
	}
	fprintf(out, "probe: torch scopes (record_function enter and RecordFunction::end), the "
		     "backward pass (Engine::execute), c10d process groups\n");
	fprintf(out, "probe: torch operators:");
	for (size_t i = 0; i < selection->torch_op_count; i++)
		fprintf(out, " %s", selection->torch_ops[i]);
	if (selection->training_ops)
		fprintf(out, "%s the training operators (updates and forward reads)",
			selection->torch_op_count ? " and" : "");
	else if (!selection->torch_op_count)
		fprintf(out, " none");
	fprintf(out, "\n");
	if (selection->training_ops)
		fprintf(out, "probe: torch's grad mode (c10::GradMode::set_enabled, about two hits "
			     "a step, and libtorch_python's calls of AutogradState::set_tls_state, "
			     "two an inference_mode block): with the training operators, whether a "
			     "forward ran under no_grad or inference_mode\n");
	if (selection->python_frames)
		fprintf(out,
			"probe: CPython's frame evaluator: needed by %zu rule(s); the first, %s\n",
			selection->python_frames_rules, selection->python_frames_reason);
	else
		fprintf(out, "probe: CPython's frame evaluator: not needed (every rule is checked "
			     "on torch-level events)\n");
}
