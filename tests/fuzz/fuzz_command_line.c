// SPDX-License-Identifier: MIT
/*
 * Fuzzes every verb's command-line option parser. The input is a verb
 * (its first byte picks one) and then the arguments, separated by NUL
 * bytes. Only options are handed over: an argument that does not start
 * with '-', and "-" and "--", are dropped (they name traces to read,
 * commands to run), and two "--help" are added at the end, so each verb
 * parses every option and its value, then prints its help and stops before
 * it reads a trace, attaches a probe or starts a command (a value-taking
 * option at the end takes the first "--help" as its value).
 */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/commands.h"
#include "fuzz_input.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGUMENTS 64

struct verb {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct verb verbs[] = {
	{ "record", command_record },	  { "attach", command_attach },
	{ "snapshot", command_snapshot }, { "dump", command_dump },
	{ "check", command_check },	  { "diff", command_diff },
	{ "agent", command_agent },	  { "analyze", command_analyze },
	{ "infer", command_infer },	  { "check", command_check_rules },
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_input_silence_stdout();
	log_set_quiet(1);
	return 0;
}

/*
 * getopt keeps its place inside a cluster of short options ("-hd") between
 * calls; a program parses once, the fuzzer many times over freed inputs.
 * optind 0 makes glibc start afresh.
 */
static void forget_earlier_parse(void)
{
	static char name[] = "fuzz";
	char *nothing[] = { name, NULL };

	optind = 0;
	opterr = 0;
	(void)getopt(1, nothing, "");
	opterr = 1;
}

static int is_option(const char *argument)
{
	return argument[0] == '-' && strcmp(argument, "-") != 0 && strcmp(argument, "--") != 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char help[] = "--help";
	const struct verb *verb;
	char *text, *arguments[MAX_ARGUMENTS + 4];
	int count = 0;

	if (size < 1)
		return 0;
	verb = &verbs[data[0] % (sizeof(verbs) / sizeof(verbs[0]))];
	/* The arguments as NUL-terminated strings, the last one terminated too. */
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	arguments[count++] = (char *)verb->name;
	for (size_t at = 0; at < size - 1 && count < MAX_ARGUMENTS + 1;) {
		char *argument = text + at;

		if (is_option(argument))
			arguments[count++] = argument;
		at += strlen(argument) + 1;
	}
	arguments[count++] = help;
	arguments[count++] = help;
	arguments[count] = NULL;
	forget_earlier_parse();
	verb->run(count, arguments);
	free(text);
	return 0;
}
