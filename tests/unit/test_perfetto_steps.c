// SPDX-License-Identifier: MIT
/*
 * The Perfetto export's step track and torch operators, against a trace
 * written by hand: each process gets a "steps" thread whose slices run from
 * a step's first event to the next step's first (a late event of an earlier
 * step moves nothing back), the last step to its last event's end; an
 * operator recorded at its entry only is a moment with its arguments, one
 * with a duration a slice; with --calls-only no step track is written.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/export_perfetto.h"
#include "scratch_files.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"
#include "unit.h"

#define ERROR_SIZE 512

static struct trace_record python_event(uint64_t entry_ns, uint64_t duration_ns, int32_t step,
					const char *name, uint32_t flags)
{
	return (struct trace_record){ .kind = TRACE_RECORD_PYTHON_CALL,
				      .python_call = { .entry_ns = entry_ns,
						       .duration_ns = duration_ns,
						       .pid = 500,
						       .tid = 500,
						       .flags = flags,
						       .first_line = -1,
						       .step = step,
						       .rank = -1,
						       .world_size = -1,
						       .qualified_name = name,
						       .file = "" } };
}

static json_t *export_document(const char *path, unsigned flags)
{
	char error[ERROR_SIZE] = "", *text = NULL;
	struct trace_reader *reader = trace_reader_open(path, error, sizeof(error));
	json_error_t parse_error;
	size_t length = 0;
	json_t *document;
	FILE *out;

	CU_ASSERT_PTR_NOT_NULL_FATAL(reader);
	out = open_memstream(&text, &length);
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	CU_ASSERT_EQUAL(export_perfetto(reader, out, flags, error, sizeof(error)), 0);
	fclose(out);
	trace_reader_close(reader);
	document = json_loads(text, 0, &parse_error);
	free(text);
	CU_ASSERT_PTR_NOT_NULL_FATAL(document);
	return document;
}

/* The events of one category, in document order. */
static size_t events_of(const json_t *document, const char *category, const json_t **found,
			size_t capacity)
{
	const json_t *events = json_object_get(document, "traceEvents"), *event;
	size_t index, count = 0;

	json_array_foreach(events, index, event)
	{
		const char *cat = json_string_value(json_object_get(event, "cat"));

		if (cat && strcmp(cat, category) == 0 && count < capacity)
			found[count++] = event;
	}
	return count;
}

static double number(const json_t *object, const char *key)
{
	return json_number_value(json_object_get(object, key));
}

UNIT_TEST(perfetto_steps, step_track_and_torch_operators)
{
	const char *path = scratch_path("steps.trace");
	struct trace_header header = { 0 };
	struct trace_record records[7];
	char error[ERROR_SIZE] = "";
	const json_t *steps[8], *ops[4], *arguments;
	struct trace_writer *writer;
	json_t *document;

	strcpy(header.hostname, "node-1");
	/* Step 0 from 1000 ns; step 1 from 5000 ns; a late event of step 0 at 6000 ns. */
	records[0] = python_event(1000, 2000, 0, "torch.nn.Module._call_impl", 0);
	records[1] =
		python_event(3000, 1000, 0, "Optimizer.step#SGD.step", TRACE_PYTHON_TORCH_SCOPE);
	records[2] = python_event(5000, 1000, 1, "torch.nn.Module._call_impl", 0);
	records[3] = python_event(6000, 500, 0, "torch.nn.Module._call_impl", 0);
	/* An operator seen at its entry only, with its arguments, and one with a duration. */
	records[4] = python_event(7000, 0, 1, "aten::add_.Tensor", TRACE_PYTHON_TORCH_OP);
	records[4].python_call.arg_count = 2;
	records[4].python_call.args[0] = (struct trace_python_arg){ .name = "shape:self",
								    .type = TRACE_VALUE_STR,
								    .text = "Float[2, 4]" };
	records[4].python_call.args[1] = (struct trace_python_arg){ .name = "arg:alpha",
								    .type = TRACE_VALUE_FLOAT,
								    .real = -0.1 };
	records[5] = python_event(8000, 250, 1, "aten::mul_.Tensor", TRACE_PYTHON_TORCH_OP);
	records[6] = python_event(9000, 3000, 2, "torch.nn.Module._call_impl", 0);
	writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(writer);
	for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
		CU_ASSERT_EQUAL_FATAL(trace_writer_add(writer, &records[i]), 0);
	CU_ASSERT_EQUAL_FATAL(trace_writer_close(writer, error, sizeof(error)), 0);

	document = export_document(path, 0);
	CU_ASSERT_EQUAL_FATAL(events_of(document, "step", steps, 8), 3);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(steps[0], "name")), "step 0");
	CU_ASSERT_DOUBLE_EQUAL(number(steps[0], "ts"), 1.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(number(steps[0], "dur"), 4.0, 1e-9);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(steps[1], "name")), "step 1");
	CU_ASSERT_DOUBLE_EQUAL(number(steps[1], "ts"), 5.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(number(steps[1], "dur"), 4.0, 1e-9);
	/* The last step ends with its last event (9000 + 3000 ns). */
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(steps[2], "name")), "step 2");
	CU_ASSERT_DOUBLE_EQUAL(number(steps[2], "ts"), 9.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(number(steps[2], "dur"), 3.0, 1e-9);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(steps[0], "tid")),
			json_integer_value(json_object_get(steps[2], "tid")));

	CU_ASSERT_EQUAL_FATAL(events_of(document, "torch_op", ops, 4), 2);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(ops[0], "ph")), "i");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(ops[0], "s")), "t");
	CU_ASSERT_PTR_NULL(json_object_get(ops[0], "dur"));
	arguments = json_object_get(json_object_get(ops[0], "args"), "arguments");
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(arguments, "shape:self")),
			       "Float[2, 4]");
	CU_ASSERT_DOUBLE_EQUAL(number(arguments, "arg:alpha"), -0.1, 1e-12);
	CU_ASSERT_EQUAL(
		json_integer_value(json_object_get(json_object_get(ops[0], "args"), "step")), 1);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(ops[1], "ph")), "X");
	CU_ASSERT_DOUBLE_EQUAL(number(ops[1], "dur"), 0.25, 1e-9);
	json_decref(document);

	document = export_document(path, EXPORT_CALLS_ONLY);
	CU_ASSERT_EQUAL(events_of(document, "step", steps, 8), 0);
	json_decref(document);
	unlink(path);
}
