// SPDX-License-Identifier: MIT
/* tcheck-bpf: dispatches the command line to its verbs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/build_version.h"
#include "base/log.h"
#include "cli/commands.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "record", command_record, "record NCCL calls of a command or of running processes" },
	{ "attach", command_attach, "watch a running process live (and optionally record it)" },
	{ "snapshot", command_snapshot,
	  "read a running job's state now: stacks, blocked calls, the rank a hang waits for" },
	{ "dump", command_dump, "export a trace as JSON Lines or Perfetto/Chrome trace JSON" },
	{ "check", command_check,
	  "find hangs and slowdowns in traces; with --rules, silent errors" },
	{ "diff", command_diff, "compare two runs of a job: first differences per rank, timing" },
	{ "agent", command_agent, "node agent: find training processes, serve Prometheus metrics" },
	{ "analyze", command_analyze, "localise a stalled job over all nodes from Prometheus" },
	{ "infer", command_infer, "learn invariants from traces of healthy runs (rules file)" },
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: tcheck-bpf [-v|-vv] [--quiet] COMMAND [ARGS...]\n\n"
		     "Watches distributed training jobs from outside the process with eBPF.\n\n"
		     "Commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(out,
		"\nExamples:\n"
		"  sudo tcheck-bpf attach --pid 4242\n"
		"  sudo tcheck-bpf record -o job.trace -- torchrun --nproc-per-node 8 train.py\n"
		"  tcheck-bpf dump job.trace --format perfetto > job.json\n\n"
		"'tcheck-bpf COMMAND --help' describes each command; 'man tcheck-bpf' has the "
		"rest.\n");
}

int main(int argc, char **argv)
{
	int first = 1, verbosity = 0;

	for (; first < argc && argv[first][0] == '-'; first++) {
		if (strcmp(argv[first], "-v") == 0 || strcmp(argv[first], "--verbose") == 0)
			verbosity++;
		else if (strcmp(argv[first], "-vv") == 0)
			verbosity += 2;
		else if (strcmp(argv[first], "--quiet") == 0 || strcmp(argv[first], "-q") == 0)
			log_set_quiet(1);
		else if (strcmp(argv[first], "--version") == 0 || strcmp(argv[first], "-V") == 0) {
			printf("tcheck-bpf %s (commit %s)\n", build_version(), build_commit());
			return 0;
		} else if (strcmp(argv[first], "--help") == 0 || strcmp(argv[first], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			log_error("unknown option %s (see tcheck-bpf --help)", argv[first]);
			return 2;
		}
	}
	log_set_verbosity(verbosity);
	if (first >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[first], commands[i].name) == 0)
			return commands[i].run(argc - first, argv + first);
	log_error("unknown command '%s' (see tcheck-bpf --help)", argv[first]);
	return 2;
}
