// SPDX-License-Identifier: MIT
/* tcheck-bpf check --rules: reports the invariants a recorded job violates. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/log.h"
#include "base/output_targets.h"
#include "checks/rule_runner.h"
#include "checks/rules_selection.h"
#include "cli/commands.h"
#include "trace/trace_reader.h"

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: tcheck-bpf check --rules RULES.json [--jsonl FILE] TRACE...\n"
		"       tcheck-bpf check --rules RULES.json --probes\n\n"
		"Checks recorded traces (all ranks of a job together) against the invariants\n"
		"of a rules file made by 'tcheck-bpf infer'. Shows each rule's first\n"
		"violation (the invariant in words, the step, the offending events by job\n"
		"rank and pid, their Python context), then one 'finding:' line per\n"
		"violated rule: first step, how many steps and violations, which job\n"
		"ranks.\n"
		"A TRACE may also be a TrainCheck JSON Lines trace or a folder of them.\n\n"
		"  -r, --rules FILE  the rules file (required)\n"
		"  -j, --jsonl FILE  also write every violation as JSON Lines (\"-\": standard\n"
		"                    output)\n"
		"  -p, --probes      say which probes record --rules would attach for\n"
		"                    these rules (CPython's frame evaluator only when a\n"
		"                    rule needs a Python function's calls); no trace\n"
		"  -h, --help        this text\n\n" EXIT_STATUS_HELP);
}

/* check --rules R --probes: what record --rules R attaches, one line a probe. */
static int print_probes(const char *rules_path, int trace_count)
{
	struct rules_selection selection;
	struct rule_set *rules;

	if (trace_count) {
		log_error("--probes reads only the rules file: give no trace");
		return EXIT_BAD_INPUT;
	}
	rules = rules_file_load(rules_path);
	if (!rules)
		return EXIT_BAD_INPUT;
	if (rules_selection_build(rules, &selection)) {
		rule_set_free(rules);
		log_error("out of memory");
		return EXIT_FAILED;
	}
	rules_selection_print(&selection, stdout);
	rules_selection_free(&selection);
	rule_set_free(rules);
	return 0;
}

int command_check_rules(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "rules", required_argument, NULL, 'r' },
		{ "jsonl", required_argument, NULL, 'j' },
		{ "probes", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rules = NULL, *jsonl = NULL;
	bool probes = false;
	char error[512];
	int option;

	while ((option = getopt_long(argc, argv, "r:j:ph", long_options, NULL)) != -1) {
		switch (option) {
		case 'r':
			rules = optarg;
			break;
		case 'j':
			jsonl = optarg;
			break;
		case 'p':
			probes = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (rules && probes)
		return print_probes(rules, argc - optind);
	if (!rules || optind >= argc) {
		log_error("check needs --rules RULES.json and at least one trace (see tcheck-bpf "
			  "check --help)");
		return 2;
	}
	if (trace_paths_distinct(argv + optind, argc - optind, error, sizeof(error))) {
		log_error("%s", error);
		return EXIT_BAD_INPUT;
	}
	/* --jsonl naming the rules or a trace would replace what is being checked. */
	if (output_targets_refuse_overlap(
		    &(struct output_target){ "--jsonl", jsonl }, 1,
		    (const struct input_files[]){ { "--rules file", &rules, 1 },
						  { "trace", (const char *const *)(argv + optind),
						    (size_t)(argc - optind) } },
		    2))
		return EXIT_BAD_INPUT;
	return check_rules_offline(rules, argv + optind, argc - optind, jsonl);
}
