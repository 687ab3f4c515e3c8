// SPDX-License-Identifier: MIT
/* The test programs' option reader (tests/workloads/program_options.h). */
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "tests/workloads/program_options.h"
#include "unit.h"

static void quiet_usage(FILE *out)
{
	(void)out;
}

/* "odd" (1) or "even" (0), for a parsed option. */
static bool parse_parity(const char *text, void *value)
{
	if (strcmp(text, "odd") && strcmp(text, "even"))
		return false;
	*(int *)value = strcmp(text, "odd") == 0;
	return true;
}

struct parsed {
	int ranks;
	long delay_ms;
	double rate;
	const char *log;
	bool worker;
	int odd;
};

/* Reads argv (NULL-ended) against one table of every kind; the result of the reader. */
static int parse(char **argv, struct parsed *parsed)
{
	const struct program_option table[] = {
		{ "ranks", PROGRAM_OPTION_INT, &parsed->ranks, 1, 8 },
		{ "delay-ms", PROGRAM_OPTION_LONG, &parsed->delay_ms, 0, 3600000 },
		{ "rate", PROGRAM_OPTION_DOUBLE, &parsed->rate, 0, 1000 },
		{ "log", PROGRAM_OPTION_TEXT, &parsed->log },
		{ "worker", PROGRAM_OPTION_FLAG, &parsed->worker },
		{ "parity", PROGRAM_OPTION_PARSED, &parsed->odd, .parse = parse_parity },
	};
	int argc = 0;

	while (argv[argc])
		argc++;
	*parsed = (struct parsed){ .ranks = 4, .delay_ms = 500 };
	optind = 0; /* getopt starts over */
	opterr = 0;
	return program_options_parse("unit", argc, argv, table, sizeof(table) / sizeof(table[0]),
				     quiet_usage);
}

UNIT_TEST(program_options, numbers_are_whole_texts_within_their_bounds)
{
	long number;
	double real;

	CU_ASSERT_TRUE(parse_int("42", 0, 100, &number) && number == 42);
	CU_ASSERT_FALSE(parse_int("101", 0, 100, &number));
	CU_ASSERT_FALSE(parse_int("-1", 0, 100, &number));
	CU_ASSERT_FALSE(parse_int("4x", 0, 100, &number));
	CU_ASSERT_FALSE(parse_int("", 0, 100, &number));
	CU_ASSERT_FALSE(parse_int("99999999999999999999", 0, LONG_MAX, &number));
	CU_ASSERT_TRUE(parse_double("2.5", 0, 10, &real) && real == 2.5);
	CU_ASSERT_FALSE(parse_double("nan", 0, 10, &real));
	CU_ASSERT_FALSE(parse_double("inf", 0, 1e300, &real));
	CU_ASSERT_FALSE(parse_double("1e400", 0, 1e300, &real));
	CU_ASSERT_FALSE(parse_double("-0.5", 0, 10, &real));
}

UNIT_TEST(program_options, each_kind_lands_where_its_row_says)
{
	char *argv[] = { "unit",  "--ranks", "8",	 "--delay-ms", "0",   "--rate", "12.5",
			 "--log", "x.log",   "--worker", "--parity",   "odd", NULL };
	struct parsed parsed;

	CU_ASSERT_EQUAL(parse(argv, &parsed), 0);
	CU_ASSERT_EQUAL(parsed.ranks, 8);
	CU_ASSERT_EQUAL(parsed.delay_ms, 0);
	CU_ASSERT_DOUBLE_EQUAL(parsed.rate, 12.5, 0);
	CU_ASSERT_STRING_EQUAL(parsed.log, "x.log");
	CU_ASSERT_TRUE(parsed.worker);
	CU_ASSERT_EQUAL(parsed.odd, 1);
}

UNIT_TEST(program_options, what_is_not_given_keeps_its_default)
{
	char *argv[] = { "unit", "--log", "y", NULL };
	struct parsed parsed;

	CU_ASSERT_EQUAL(parse(argv, &parsed), 0);
	CU_ASSERT_EQUAL(parsed.ranks, 4);
	CU_ASSERT_EQUAL(parsed.delay_ms, 500);
	CU_ASSERT_FALSE(parsed.worker);
}

UNIT_TEST(program_options, bad_values_unknown_options_and_stray_words_are_refused)
{
	char *out_of_bounds[] = { "unit", "--ranks", "9", NULL };
	char *not_a_number[] = { "unit", "--ranks", "nan", NULL };
	char *nan_rate[] = { "unit", "--rate", "nan", NULL };
	char *bad_parity[] = { "unit", "--parity", "three", NULL };
	char *unknown[] = { "unit", "--colour", "blue", NULL };
	char *stray[] = { "unit", "--worker", "extra", NULL };
	char *missing_value[] = { "unit", "--log", NULL };
	struct parsed parsed;

	CU_ASSERT_EQUAL(parse(out_of_bounds, &parsed), -1);
	CU_ASSERT_EQUAL(parse(not_a_number, &parsed), -1);
	CU_ASSERT_EQUAL(parse(nan_rate, &parsed), -1);
	CU_ASSERT_EQUAL(parse(bad_parity, &parsed), -1);
	CU_ASSERT_EQUAL(parse(unknown, &parsed), -1);
	CU_ASSERT_EQUAL(parse(stray, &parsed), -1);
	CU_ASSERT_EQUAL(parse(missing_value, &parsed), -1);
}
