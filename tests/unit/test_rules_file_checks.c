// SPDX-License-Identifier: MIT
/*
 * Rules files that make no sense are refused with a sentence naming the
 * rule and the field: negative or non-numeric counts, an EventContain
 * count that is not one, a file of no rules; repeated rules load once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/rules.h"
#include "scratch_files.h"
#include "unit.h"

#define ONE_RULE                                                                    \
	"{\"relation\": \"APIArg\", \"event\": {\"kind\": \"nccl\", \"name\": "     \
	"\"ncclAllReduce\"}, \"field\": \"datatype\", \"value\": \"ncclFloat32\", " \
	"\"precondition\": []"
#define CONTAIN_RULE                                                                  \
	"{\"relation\": \"EventContain\", \"event\": {\"kind\": \"step\", \"name\": " \
	"\"step\"}, \"child\": {\"kind\": \"nccl\", \"name\": \"ncclAllReduce\"}, "   \
	"\"precondition\": []"

/* Loads a rules file of format 5 holding 'rules' (the text inside the array). */
static struct rule_set *load_rules(const char *rules, char *error, size_t size)
{
	const char *path = scratch_path("rules-file-checks.json");
	FILE *file = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	fprintf(file, "{\"format\": \"tcheck-bpf-rules\", \"version\": 5, \"rules\": [%s]}", rules);
	fclose(file);
	error[0] = '\0';
	return rule_set_load(path, error, size);
}

static void expect_refused(const char *rules, const char *sentence)
{
	char error[512];
	struct rule_set *set = load_rules(rules, error, sizeof(error));

	CU_ASSERT_PTR_NULL(set);
	rule_set_free(set);
	if (!strstr(error, sentence))
		fprintf(stderr, "\nexpected '%s' in: %s\n", sentence, error);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, sentence));
}

UNIT_TEST(rules_file_checks, counts_that_are_not_counts_are_refused)
{
	expect_refused(ONE_RULE ", \"passing\": -1}", "rule 1 of ");
	expect_refused(ONE_RULE ", \"passing\": -1}", "\"passing\" is -1, not a count");
	expect_refused(ONE_RULE "}, " ONE_RULE ", \"failing\": \"abc\"}", "rule 2 of ");
	expect_refused(ONE_RULE ", \"failing\": \"abc\"}", "\"failing\" is \"abc\", not a count");
	expect_refused(ONE_RULE ", \"passing\": 2.5}", "\"passing\" is 2.5, not a count");
	expect_refused(ONE_RULE ", \"pipelines\": 4294967296}",
		       "\"pipelines\" is 4294967296, not a count (a whole number from 0 to "
		       "4294967295)");
	expect_refused(CONTAIN_RULE ", \"value\": \"abc\"}",
		       "EventContain's \"value\" is \"abc\", not a count");
	expect_refused(CONTAIN_RULE ", \"value\": \"0\"}", "\"value\" is \"0\", not a count");
	expect_refused(CONTAIN_RULE ", \"value\": \"-3\"}", "\"value\" is \"-3\", not a count");
	expect_refused(CONTAIN_RULE ", \"value\": \"07\"}", "\"value\" is \"07\", not a count");
	expect_refused(CONTAIN_RULE ", \"value\": \"4294967296\"}",
		       "\"value\" is \"4294967296\", not a count");
}

UNIT_TEST(rules_file_checks, counts_that_are_counts_load)
{
	char error[512];
	struct rule_set *set =
		load_rules(ONE_RULE ", \"passing\": 0, \"failing\": 9223372036854775807, "
				    "\"pipelines\": 4294967295}, " CONTAIN_RULE
				    ", \"value\": \"4294967295\"}, " CONTAIN_RULE "}",
			   error, sizeof(error));

	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	CU_ASSERT_EQUAL(set->count, 3);
	CU_ASSERT_EQUAL(set->rules[0].failing, 9223372036854775807ULL);
	CU_ASSERT_EQUAL(set->rules[0].pipelines, 4294967295U);
	CU_ASSERT_STRING_EQUAL(set->rules[1].value, "4294967295");
	CU_ASSERT_PTR_NULL(set->rules[2].value);
	CU_ASSERT_EQUAL(set->repeated_count, 0);
	rule_set_free(set);
}

UNIT_TEST(rules_file_checks, a_file_of_no_rules_is_refused)
{
	expect_refused("", "holds no rules: nothing would be checked");
}

UNIT_TEST(rules_file_checks, repeated_rules_load_once)
{
	const size_t room = 32 * 1024 * 1024;
	char *rules = malloc(room), error[512];
	struct rule_set *set;
	size_t used = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rules);
	/* 100,000 copies of one rule (evidence aside), then two other rules. */
	for (int i = 0; i < 100000 && used < room; i++)
		used += (size_t)snprintf(rules + used, room - used,
					 "%s" ONE_RULE ", \"passing\": %d}", i ? ", " : "", i);
	if (used < room)
		used += (size_t)snprintf(rules + used, room - used,
					 ", " CONTAIN_RULE ", \"value\": \"2\"}, " CONTAIN_RULE
					 "}");
	CU_ASSERT_FATAL(used < room - 1);
	set = load_rules(rules, error, sizeof(error));
	free(rules);
	CU_ASSERT_PTR_NOT_NULL_FATAL(set);
	CU_ASSERT_EQUAL(set->count, 3);
	CU_ASSERT_EQUAL(set->repeated_count, 99999);
	/* The first of the repeats is kept, with its evidence. */
	CU_ASSERT_EQUAL(set->rules[0].relation, RELATION_API_ARG);
	CU_ASSERT_EQUAL(set->rules[0].passing, 0);
	CU_ASSERT_STRING_EQUAL(set->rules[1].value, "2");
	CU_ASSERT_PTR_NULL(set->rules[2].value);
	rule_set_free(set);
}
