// SPDX-License-Identifier: MIT
/* tcheck-bpf infer: learns invariants from the traces of healthy runs and writes a rules file. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/output_targets.h"
#include "cli/commands.h"
#include "infer/inference.h"
#include "infer/rule_frames.h"
#include "trace/trace_replay.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: tcheck-bpf infer -o RULES.json PROGRAM...\n\n"
		"Learns invariants (Consistent, APIArg, APIOutput, APISequence, EventContain,\n"
		"ParametersUpdated, ScalarsSteady, FrozenUnchanged, TrainableUpdated,\n"
		"EvalModeRespected, OnePrecision, TrainOverrideRan, InitialisedOnce) from the\n"
		"traces of healthy runs and writes those with a safe precondition to a rules\n"
		"file for 'tcheck-bpf check --rules'. Each\n"
		"PROGRAM is the trace of one reference program, or several traces of it\n"
		"joined by commas (its hosts, its runs): a tcheck-bpf trace, a TrainCheck\n"
		"JSON Lines trace (trace_API_*.log, trace_VAR_*.log) or a folder of\n"
		"TrainCheck traces. What every program does becomes a rule for any program;\n"
		"what only some do applies where a process makes the calls the rule names; a\n"
		"value not every program shows is dropped. A data-parallel reference (two\n"
		"ranks or more) teaches what every rank's step does to its replica\n"
		"(docs/rules-format.md). Give programs of several shapes.\n\n"
		"  -o, --output FILE  the rules file to write (required; written aside and\n"
		"                     renamed into place; \"-\": standard output)\n"
		"  -t, --torch-level  keep only the rules checked on torch-level events\n"
		"                     (torch scopes, the backward pass, operators, NCCL\n"
		"                     calls): record --rules then leaves CPython's frame\n"
		"                     evaluator unprobed (check --rules R --probes)\n"
		"  -h, --help         this text\n\n" EXIT_STATUS_HELP "\n"
		"Examples:\n"
		"  tcheck-bpf infer -o rules.json cnn.trace mlp.trace "
		"ddp-node0.trace,ddp-node1.trace\n"
		"  tcheck-bpf infer -o rules.json traincheck-traces/\n");
}

static int add_record(void *context, const struct trace_record *record)
{
	return inference_add(context, record);
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

static void print_summary(const struct rule_set *rules, uint32_t programs, size_t events,
			  double seconds)
{
	size_t by_relation[RELATION_LAST + 1] = { 0 }, for_any_program = 0;

	for (size_t i = 0; i < rules->count; i++) {
		by_relation[rules->rules[i].relation]++;
		for_any_program += rules->rules[i].scope == RULE_SCOPE_ALL;
	}
	log_notice("%zu events from %zu trace(s) of %u program(s): %zu invariants in %.2f s",
		   events, rules->source_count, programs, rules->count, seconds);
	for (uint32_t r = 1; r <= RELATION_LAST; r++)
		log_notice("  %-12s %zu", rule_relation_name(r), by_relation[r]);
	log_notice("  %zu hold for any program (every reference supports them), %zu where a "
		   "process makes the calls they name",
		   for_any_program, rules->count - for_any_program);
	if (programs < 2)
		log_notice("  one reference program: no rule can hold for every program; give "
			   "programs of other shapes too");
}

/* One reference program: its traces, joined by commas. 0, or -1 when one could not be read. */
static int add_program(struct inference *inference, struct rule_set *rules, uint32_t pipeline,
		       const char *traces)
{
	char *copy = strdup(traces), *cursor = copy, *path;
	int failed = copy ? 0 : -1;

	inference_set_pipeline(inference, pipeline);
	while (!failed && (path = strsep(&cursor, ",")) != NULL) {
		if (!*path)
			continue;
		if (trace_replay(path, add_record, inference, 1) < 0 ||
		    rule_set_add_source(rules, path))
			failed = -1;
	}
	if (!copy)
		log_error("out of memory");
	free(copy);
	return failed;
}

int command_infer(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "torch-level", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *output = NULL;
	bool torch_level = false;
	size_t python_rules = 0;
	long preferred;
	struct inference *inference;
	struct rule_set *rules;
	struct timespec start;
	char error[512];
	int option, status = 1;

	while ((option = getopt_long(argc, argv, "o:th", long_options, NULL)) != -1) {
		switch (option) {
		case 'o':
			output = optarg;
			break;
		case 't':
			torch_level = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (!output || optind >= argc) {
		log_error("infer needs -o RULES.json and at least one trace (see tcheck-bpf infer "
			  "--help)");
		return 2;
	}
	/* -o naming a trace it learns from would replace the trace by the rules. */
	if (output_targets_refuse_overlap(
		    &(struct output_target){ "-o", output }, 1,
		    &(struct input_files){ "trace", (const char *const *)(argv + optind),
					   (size_t)(argc - optind) },
		    1))
		return EXIT_BAD_INPUT;
	clock_gettime(CLOCK_MONOTONIC, &start);
	rules = rule_set_new();
	inference = rules ? inference_new(rules) : NULL;
	if (!inference) {
		log_error("out of memory");
		rule_set_free(rules);
		return EXIT_FAILED;
	}
	status = EXIT_BAD_INPUT;
	for (int i = optind; i < argc; i++)
		if (add_program(inference, rules, (uint32_t)(i - optind), argv[i]))
			goto out;
	status = EXIT_FAILED;
	if (inference_run(inference)) {
		log_error("out of memory while inferring invariants");
		goto out;
	}
	preferred = rule_set_prefer_torch_level(rules);
	if (preferred < 0) {
		log_error("out of memory while inferring invariants");
		goto out;
	}
	if (preferred)
		log_info("%ld rule(s) about a Python function left out: the same rule holds about "
			 "the torch scope that wraps it, which needs no frame-evaluator probe",
			 preferred);
	if (torch_level)
		python_rules = rule_set_keep_torch_level(rules);
	/* An empty rules file would pass every run: none is written. */
	if (!inference_event_count(inference) || !rules->count) {
		log_error(
			"nothing to learn: %zu event(s) in %d trace(s) gave no invariant (a "
			"recording with no call, or too short to show a step); %s was not written",
			inference_event_count(inference), argc - optind, output);
		status = EXIT_NOTHING_TO_JUDGE;
		goto out;
	}
	if (rule_set_save(rules, output, error, sizeof(error))) {
		log_error("%s", error);
		goto out;
	}
	print_summary(rules, (uint32_t)(argc - optind), inference_event_count(inference),
		      seconds_since(&start));
	if (torch_level)
		log_notice("%zu rule(s) needing Python functions' calls or the stage were left "
			   "out (--torch-level)",
			   python_rules);
	status = EXIT_CLEAN;
out:
	inference_free(inference);
	rule_set_free(rules);
	return status;
}
