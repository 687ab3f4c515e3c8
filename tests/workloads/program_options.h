/* SPDX-License-Identifier: MIT */
/*
 * The command line of the test programs (the workloads and the benchmark
 * tools), read one way: each program lists its options in a table (name,
 * kind, where the value goes, its bounds), and program_options_parse reads
 * argv against it. --help prints the usage and exits 0; a bad value is
 * named in one sentence ("PROGRAM: bad value 'X' for --name"), an unknown
 * option or a stray argument prints the usage, and both return -1.
 */
#ifndef TCHECK_PROGRAM_OPTIONS_H
#define TCHECK_PROGRAM_OPTIONS_H

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

enum program_option_kind {
	PROGRAM_OPTION_INT,    /* int *value, within [min, max] */
	PROGRAM_OPTION_LONG,   /* long *value, within [min, max] */
	PROGRAM_OPTION_DOUBLE, /* double *value, finite, within [min, max] */
	PROGRAM_OPTION_TEXT,   /* const char **value, as given */
	PROGRAM_OPTION_FLAG,   /* bool *value, set; takes no value */
	PROGRAM_OPTION_PARSED, /* parse(text, value): false for a bad value */
};

struct program_option {
	const char *name; /* without the dashes: "ranks" */
	enum program_option_kind kind;
	void *value;
	long min, max;
	bool (*parse)(const char *text, void *value);
};

/* A decimal integer within [min, max], the whole text. */
static inline bool parse_int(const char *text, long min, long max, long *value)
{
	char *end;

	errno = 0;
	*value = strtol(text, &end, 10);
	return errno == 0 && end != text && *end == '\0' && *value >= min && *value <= max;
}

/* A finite decimal number within [min, max], the whole text ("nan" is not one). */
static inline bool parse_double(const char *text, double min, double max, double *value)
{
	char *end;

	errno = 0;
	*value = strtod(text, &end);
	return errno == 0 && end != text && *end == '\0' && *value >= min && *value <= max;
}

static inline bool program_option_take(const struct program_option *option, const char *text)
{
	long number;

	switch (option->kind) {
	case PROGRAM_OPTION_INT:
		if (!parse_int(text, option->min, option->max, &number))
			return false;
		*(int *)option->value = (int)number;
		return true;
	case PROGRAM_OPTION_LONG:
		return parse_int(text, option->min, option->max, option->value);
	case PROGRAM_OPTION_DOUBLE:
		return parse_double(text, (double)option->min, (double)option->max, option->value);
	case PROGRAM_OPTION_TEXT:
		*(const char **)option->value = text;
		return true;
	case PROGRAM_OPTION_FLAG:
		*(bool *)option->value = true;
		return true;
	case PROGRAM_OPTION_PARSED:
		return option->parse(text, option->value);
	}
	return false;
}

/*
 * Reads argv against options (count of them; --help is added); the values
 * not given keep what the caller set. 0, or -1 after saying what is wrong.
 */
static inline int program_options_parse(const char *program, int argc, char **argv,
					const struct program_option *options, size_t count,
					void (*usage)(FILE *out))
{
	struct option long_options[count + 2];
	int found;

	for (size_t i = 0; i < count; i++)
		long_options[i] = (struct option){
			.name = options[i].name,
			.has_arg = options[i].kind == PROGRAM_OPTION_FLAG ? no_argument
									  : required_argument,
			.val = 256 + (int)i,
		};
	long_options[count] = (struct option){ .name = "help", .val = 'h' };
	long_options[count + 1] = (struct option){ 0 };
	while ((found = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		const struct program_option *option = found >= 256 && (size_t)(found - 256) < count
							      ? &options[found - 256]
							      : NULL;

		if (found == 'h') {
			usage(stdout);
			exit(0);
		}
		if (!option) {
			usage(stderr);
			return -1;
		}
		if (!program_option_take(option, optarg)) {
			fprintf(stderr, "%s: bad value '%s' for --%s\n", program, optarg,
				option->name);
			return -1;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return -1;
	}
	return 0;
}

#endif /* TCHECK_PROGRAM_OPTIONS_H */
