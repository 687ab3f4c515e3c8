// SPDX-License-Identifier: MIT
/*
 * Fuzzes the rules loader (check --rules, attach --rules, agent --rules):
 * loads the input as a rules file and describes every rule it accepted.
 */
#include <stdint.h>
#include <stdio.h>

#include "infer/rules.h"
#include "fuzz_input.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rule_set *set;
	char error[512], text[1024];

	set = rule_set_load(fuzz_input_path(data, size), error, sizeof(error));
	if (!set)
		return 0;
	for (size_t i = 0; i < set->count; i++)
		rule_describe(&set->rules[i], text, sizeof(text));
	rule_set_sort(set);
	rule_set_free(set);
	return 0;
}
