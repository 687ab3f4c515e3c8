// SPDX-License-Identifier: MIT
/* Runs every registered CUnit test; exits non-zero when any fails. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <string.h>

#include "unit.h"

static struct unit_test *registered;

void unit_register(struct unit_test *test)
{
	test->next = registered;
	registered = test;
}

static CU_pSuite suite_named(const char *name)
{
	CU_pSuite suite = CU_get_suite(name);

	return suite ? suite : CU_add_suite(name, NULL, NULL);
}

int main(int argc, char **argv)
{
	unsigned int failures;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 2;
	for (struct unit_test *test = registered; test; test = test->next) {
		if (argc > 1 && strcmp(argv[1], test->suite) != 0)
			continue;
		CU_add_test(suite_named(test->suite), test->name, test->function);
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failures = CU_get_number_of_tests_failed() + CU_get_number_of_failures();
	CU_cleanup_registry();
	return failures ? 1 : 0;
}
