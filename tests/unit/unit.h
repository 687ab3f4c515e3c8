/* SPDX-License-Identifier: MIT */
/*
 * Self-registering CUnit tests: each test file declares its tests with
 * UNIT_TEST(suite, name), the suite named by its first argument, and main.c
 * runs them all, so adding a test file needs no edit anywhere else.
 */
#ifndef TCHECK_UNIT_H
#define TCHECK_UNIT_H

#include <CUnit/CUnit.h>

struct unit_test {
	const char *suite;
	const char *name;
	void (*function)(void);
	struct unit_test *next;
};

void unit_register(struct unit_test *test);

#define UNIT_TEST(suite_name, test_name)                                                       \
	static void suite_name##_##test_name(void);                                            \
	static struct unit_test suite_name##_##test_name##_entry = { #suite_name, #test_name,  \
								     suite_name##_##test_name, \
								     0 };                      \
	__attribute__((constructor)) static void suite_name##_##test_name##_register(void)     \
	{                                                                                      \
		unit_register(&suite_name##_##test_name##_entry);                              \
	}                                                                                      \
	static void suite_name##_##test_name(void)

#endif /* TCHECK_UNIT_H */
