// SPDX-License-Identifier: MIT
/*
 * A violation says a process with no job rank and an unknown step the one
 * way every report does: null in JSON (never -1), "no job rank" and "an
 * unknown step" in text; an NCCL call's communicator rank is labelled so.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checks/rule_findings.h"
#include "checks/violation_stream.h"
#include "infer/rule_checker.h"
#include "infer/rules.h"
#include "model/trace_records.h"
#include "unit.h"

/* Writes one violation through a stream that learned 'process' (or none) and reads it back. */
static json_t *written(const struct trace_process *process, const struct rule_violation *violation)
{
	struct violation_stream stream;
	FILE *out = tmpfile();
	json_error_t error;
	json_t *line;

	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	violation_stream_init(&stream, out);
	if (process) {
		struct trace_record record = { .kind = TRACE_RECORD_PROCESS };

		record.process = *process;
		violation_stream_note(&stream, &record);
	}
	violation_stream_write(&stream, violation);
	violation_stream_free(&stream);
	rewind(out);
	line = json_loadf(out, 0, &error);
	fclose(out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	return line;
}

UNIT_TEST(violation_stream, single_process_and_unknown_step_are_null)
{
	struct rule rule = { .relation = RELATION_API_ARG };
	struct infer_event call = { .kind = INFER_EVENT_NCCL,
				    .name = "ncclAllReduce",
				    .pid = 4242,
				    .tid = 4242,
				    .rank = 2,
				    .nranks = 4,
				    .step = -1,
				    .comm_id = 0x539731be23838e7eULL,
				    .seq = 7,
				    .context = "" };
	struct rule_violation violation = {
		.rule = &rule, .text = "count is constant", .event = &call, .step = -1
	};
	json_t *line = written(NULL, &violation), *event = json_object_get(line, "event");

	CU_ASSERT(json_is_null(json_object_get(line, "job_rank")));
	CU_ASSERT(json_is_null(json_object_get(line, "step")));
	CU_ASSERT(json_is_null(json_object_get(event, "job_rank")));
	CU_ASSERT(json_is_null(json_object_get(event, "step")));
	/* The communicator rank is said only as such, beside its communicator. */
	CU_ASSERT_PTR_NULL(json_object_get(event, "rank"));
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(event, "comm_rank")), 2);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(event, "comm")),
			       "0x539731be23838e7e");
	json_decref(line);
}

UNIT_TEST(violation_stream, job_rank_from_the_process_record)
{
	struct rule rule = { .relation = RELATION_API_ARG };
	struct trace_process process = {
		.pid = 4242, .rank = 3, .local_rank = 1, .world_size = 4, .exit_code = -1
	};
	struct infer_event call = { .kind = INFER_EVENT_NCCL,
				    .name = "ncclAllReduce",
				    .pid = 4242,
				    .tid = 4242,
				    .rank = 0,
				    .nranks = 2,
				    .step = 5,
				    .comm_id = 1,
				    .seq = 7,
				    .context = "" };
	struct rule_violation violation = {
		.rule = &rule, .text = "count is constant", .event = &call, .step = 5
	};
	json_t *line = written(&process, &violation), *event = json_object_get(line, "event");

	CU_ASSERT_EQUAL(json_integer_value(json_object_get(line, "job_rank")), 3);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(line, "step")), 5);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(event, "job_rank")), 3);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(event, "comm_rank")), 0);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(event, "step")), 5);
	json_decref(line);
}

/* A module call names its module (path and class) for people; other events name none. */
UNIT_TEST(violation_stream, a_module_call_names_its_module)
{
	struct rule rule = { .relation = RELATION_TRAIN_OVERRIDE_RAN };
	struct infer_event call = { .kind = INFER_EVENT_PYTHON,
				    .name = "torch.nn.modules.module.Module._call_impl",
				    .pid = 4242,
				    .tid = 4242,
				    .rank = -1,
				    .step = 0,
				    .seq = -1,
				    .context = "train.main",
				    .module = "Classifier.backbone (Backbone)" };
	struct rule_violation violation = {
		.rule = &rule, .text = "the override ran", .event = &call, .step = 0
	};
	json_t *line = written(NULL, &violation), *event = json_object_get(line, "event");

	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(event, "module")),
			       "Classifier.backbone (Backbone)");
	json_decref(line);
	call.module = "";
	line = written(NULL, &violation);
	CU_ASSERT_PTR_NULL(json_object_get(json_object_get(line, "event"), "module"));
	json_decref(line);
}

/* The findings' text for violations at the given steps of one rule, by a process with no rank. */
static char *findings_text(const int32_t *steps, size_t count, char *text, size_t size)
{
	struct rule_set *rules = rule_set_new();
	struct rule rule = { .relation = RELATION_API_ARG };
	struct rule_findings findings;
	FILE *out = tmpfile();
	size_t length;

	CU_ASSERT_PTR_NOT_NULL_FATAL(rules);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	rule.event.kind = INFER_EVENT_PYTHON;
	rule.event.name = string_pool_intern(rules->pool, "step");
	rule.field = string_pool_intern(rules->pool, "arg:lr");
	rule.value = string_pool_intern(rules->pool, "0.1");
	CU_ASSERT_EQUAL_FATAL(rule_set_add(rules, &rule), 0);
	rule_findings_init(&findings);
	for (size_t i = 0; i < count; i++)
		CU_ASSERT(rule_findings_note(&findings, 0, steps[i], -1) >= 0);
	rule_findings_print(&findings, rules, out);
	rewind(out);
	length = fread(text, 1, size - 1, out);
	text[length] = '\0';
	fclose(out);
	rule_findings_free(&findings);
	rule_set_free(rules);
	return text;
}

UNIT_TEST(violation_stream, findings_never_say_step_minus_one)
{
	static const int32_t unknown[] = { -1, -1 }, mixed[] = { -1, 4, 2, 4 };
	char text[512];

	findings_text(unknown, 2, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "at an unknown step, 2 violation(s)"));
	CU_ASSERT_PTR_NULL(strstr(text, "-1"));
	CU_ASSERT_PTR_NULL(strstr(text, "job rank"));
	/* A known step is the first step, whatever unknown ones came before it. */
	findings_text(mixed, 4, text, sizeof(text));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "first at step 2, in 2 step(s), 4 violation(s)"));
}
