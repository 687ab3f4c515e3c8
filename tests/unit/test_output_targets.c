// SPDX-License-Identifier: MIT
/*
 * Outputs kept apart from inputs and from each other (base/output_targets.h):
 * one file by another name, through a link, or not yet made is found; other
 * files, standard output and devices are not refused.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/output_targets.h"
#include "scratch_files.h"
#include "unit.h"

static void make_file(const char *path)
{
	FILE *file = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	fputs("kept\n", file);
	fclose(file);
}

UNIT_TEST(output_targets, one_file_is_found_by_any_name_link_or_before_it_exists)
{
	char trace[512], other[512], link_path[512], dotted[512], fresh[512], fresh_dotted[600];

	snprintf(trace, sizeof(trace), "%s", scratch_path("targets-trace"));
	snprintf(other, sizeof(other), "%s", scratch_path("targets-other"));
	snprintf(link_path, sizeof(link_path), "%s", scratch_path("targets-link"));
	snprintf(fresh, sizeof(fresh), "%s", scratch_path("targets-fresh"));
	make_file(trace);
	make_file(other);
	unlink(link_path);
	CU_ASSERT_EQUAL_FATAL(symlink(trace, link_path), 0);
	/* dir/./name: another spelling of the same path. */
	snprintf(dotted, sizeof(dotted), "%s", trace);
	*strrchr(dotted, '/') = '\0';
	snprintf(fresh_dotted, sizeof(fresh_dotted), "%s/./targets-fresh", dotted);
	strncat(dotted, "/./targets-trace", sizeof(dotted) - strlen(dotted) - 1);
	unlink(fresh);

	CU_ASSERT_TRUE(output_targets_same(trace, trace));
	CU_ASSERT_TRUE(output_targets_same(trace, dotted));
	CU_ASSERT_TRUE(output_targets_same(link_path, trace));
	CU_ASSERT_TRUE(output_targets_same(fresh, fresh_dotted));
	CU_ASSERT_FALSE(output_targets_same(trace, other));
	CU_ASSERT_FALSE(output_targets_same(fresh, trace));
	CU_ASSERT_FALSE(output_targets_same("-", "-"));
	CU_ASSERT_FALSE(output_targets_same("/dev/null", "/dev/null"));
	CU_ASSERT_FALSE(output_targets_same(NULL, trace));
}

UNIT_TEST(output_targets, an_output_on_an_input_or_another_output_is_refused_and_named)
{
	char trace[512], rules[512], events[512], error[1024] = "";
	const char *traces[] = { NULL, NULL };
	const char *rules_paths[] = { NULL };
	struct input_files inputs[] = { { "trace", traces, 2 },
					{ "--rules file", rules_paths, 1 } };
	struct output_target outputs[] = { { "-o", NULL }, { "--events", NULL } };

	snprintf(trace, sizeof(trace), "%s", scratch_path("targets-input-trace"));
	snprintf(rules, sizeof(rules), "%s", scratch_path("targets-input-rules"));
	snprintf(events, sizeof(events), "%s", scratch_path("targets-events"));
	make_file(trace);
	make_file(rules);
	unlink(events);
	traces[1] = trace;
	rules_paths[0] = rules;

	/* Nothing given, or outputs of their own: nothing refused. */
	CU_ASSERT_EQUAL(output_targets_check(outputs, 2, inputs, 2, error, sizeof(error)), 0);
	outputs[1].path = events;
	outputs[0].path = "-";
	CU_ASSERT_EQUAL(output_targets_check(outputs, 2, inputs, 2, error, sizeof(error)), 0);

	outputs[0].path = trace;
	CU_ASSERT_EQUAL(output_targets_check(outputs, 2, inputs, 2, error, sizeof(error)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "-o "));
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "is a trace this command reads"));

	outputs[0].path = NULL;
	outputs[1].path = rules;
	CU_ASSERT_EQUAL(output_targets_check(outputs, 2, inputs, 2, error, sizeof(error)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "--events "));
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "is the --rules file this command reads"));

	/* Two outputs on one file not yet made. */
	outputs[0].path = events;
	outputs[1].path = events;
	CU_ASSERT_EQUAL(output_targets_check(outputs, 2, inputs, 2, error, sizeof(error)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "is the file -o names"));
}
