// SPDX-License-Identifier: MIT
/* Attaches the empty uprobe pair (the benchmark's floor) to one function until SIGINT/SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/elf_symbol_lookup.h"
#include "probe/probe_session.h"
#include "tests/workloads/program_options.h"

struct options {
	const char *library;
	const char *symbol;
	long pid;
};

static volatile sig_atomic_t stop_requested;

static void usage(FILE *out)
{
	fprintf(out, "usage: probe-floor --lib PATH [--symbol NAME] --pid PID\n"
		     "Attaches an entry and a return probe that do nothing to the function NAME\n"
		     "(default ncclAllReduce) of the library at PATH, for process PID only, says\n"
		     "\"probe-floor: attached\" on stderr, and detaches on SIGINT or SIGTERM.\n"
		     "What a traced call costs over this is what tcheck-bpf's own programs\n"
		     "add to any uprobe pair. Needs root.\n");
}

static void request_stop(int signal_number)
{
	(void)signal_number;
	stop_requested = 1;
}

/* Called for ring-buffer records; the floor programs write none. */
static int ignore_record(void *context, const void *record, size_t size)
{
	(void)context;
	(void)record;
	(void)size;
	return 0;
}

static int parse_options(int argc, char **argv, struct options *options)
{
	const struct program_option table[] = {
		{ "lib", PROGRAM_OPTION_TEXT, &options->library },
		{ "symbol", PROGRAM_OPTION_TEXT, &options->symbol },
		{ "pid", PROGRAM_OPTION_LONG, &options->pid, 1, 0x3fffffff },
	};

	*options = (struct options){ .symbol = "ncclAllReduce" };
	if (program_options_parse("probe-floor", argc, argv, table,
				  sizeof(table) / sizeof(table[0]), usage))
		return -1;
	if (!options->library || !options->pid) {
		usage(stderr);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct probe_session_config config = { 0 };
	struct sigaction action = { .sa_handler = request_stop };
	sigset_t stop_signals, waiting_mask;
	struct probe_session *session;
	struct options options;
	uint64_t offset;
	char error[512];

	if (parse_options(argc, argv, &options))
		return 2;
	/* Blocked except inside sigsuspend: a signal cannot slip in before the wait. */
	sigemptyset(&stop_signals);
	sigaddset(&stop_signals, SIGINT);
	sigaddset(&stop_signals, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop_signals, &waiting_mask);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	if (elf_symbol_file_offset(options.library, options.symbol, &offset, error,
				   sizeof(error))) {
		fprintf(stderr, "probe-floor: %s\n", error);
		return 1;
	}
	session = probe_session_new(&config, ignore_record, NULL, error, sizeof(error));
	if (!session) {
		fprintf(stderr, "probe-floor: %s\n", error);
		return 1;
	}
	if (probe_session_attach_floor(session, options.library, offset, (int)options.pid, error,
				       sizeof(error))) {
		fprintf(stderr, "probe-floor: %s\n", error);
		probe_session_free(session);
		return 1;
	}
	fprintf(stderr, "probe-floor: attached to %s in %s at offset 0x%llx for pid %ld\n",
		options.symbol, options.library, (unsigned long long)offset, options.pid);
	while (!stop_requested)
		sigsuspend(&waiting_mask);
	probe_session_free(session);
	return 0;
}
