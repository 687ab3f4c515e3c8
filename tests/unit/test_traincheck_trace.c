// SPDX-License-Identifier: MIT
/*
 * TrainCheck's JSON Lines traces read as trace records, on hand-written
 * snippets with known answers: pre/post pairing by func_call_id, nesting,
 * arguments and return values, exceptions, calls never closed, variable
 * states, corrupt lines, and the inference engine fed from such a trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer/inference.h"
#include "trace/traincheck_trace.h"
#include "unit.h"

#define SEEN_MAX 16

/* What the tests look at in a handed-out record, copied (its strings die with the callback). */
struct seen_call {
	char name[128];
	char caller[128];
	uint32_t pid, tid, depth, flags, stage, arg_count;
	int32_t rank, step;
	uint64_t entry_ns, duration_ns;
	struct {
		char name[64];
		uint32_t type;
		int64_t integer;
		double real;
		char text[160];
	} args[TRACE_PY_ARGS_MAX], returned;
};

struct seen {
	size_t count;
	struct seen_call calls[SEEN_MAX];
};

static int collect(void *context, const struct trace_record *record)
{
	struct seen *seen = context;
	const struct trace_python_call *call = &record->python_call;
	struct seen_call *out;

	CU_ASSERT_EQUAL(record->kind, TRACE_RECORD_PYTHON_CALL);
	if (seen->count == SEEN_MAX)
		return 0;
	out = &seen->calls[seen->count++];
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", call->qualified_name);
	if (call->py_stack.depth > 0)
		snprintf(out->caller, sizeof(out->caller), "%s", call->py_stack.frames[0]);
	out->pid = call->pid;
	out->tid = call->tid;
	out->depth = call->depth;
	out->flags = call->flags;
	out->stage = call->stage;
	out->rank = call->rank;
	out->step = call->step;
	out->entry_ns = call->entry_ns;
	out->duration_ns = call->duration_ns;
	out->arg_count = call->arg_count;
	for (uint32_t i = 0; i <= call->arg_count && i <= TRACE_PY_ARGS_MAX; i++) {
		const struct trace_python_arg *arg =
			i < call->arg_count ? &call->args[i] : &call->return_value;
		__typeof__(out->returned) *copy =
			i < call->arg_count ? &out->args[i] : &out->returned;

		snprintf(copy->name, sizeof(copy->name), "%s", arg->name ? arg->name : "");
		copy->type = arg->type;
		copy->integer = arg->integer;
		copy->real = arg->real;
		snprintf(copy->text, sizeof(copy->text), "%s", arg->text ? arg->text : "");
	}
	return 0;
}

static int64_t read_text(const char *text, struct seen *seen, struct traincheck_stats *stats,
			 char *error, size_t error_size)
{
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	int64_t records;

	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	memset(seen, 0, sizeof(*seen));
	error[0] = '\0';
	records = traincheck_trace_read(in, "snippet.log", collect, seen, stats, error, error_size);
	fclose(in);
	return records;
}

#define META "\"meta_vars\": {\"step\": 3, \"stage\": \"training\", \"_DATA_PARALLEL_RANK\": 1}"
#define WHO "\"process_id\": 41, \"thread_id\": 7"

/* SGD.step (pre), its inner _init_group (pre, post), SGD.step (post), then a state change. */
static const char nested[] =
	"{\"func_call_id\": \"a\", " WHO ", " META ", \"type\": \"function_call (pre)\", "
	"\"function\": \"torch.optim.sgd.SGD.step\", \"is_bound_method\": true, "
	"\"args\": {\"0\": {\"torch.optim.sgd.SGD\": {}}}, \"kwargs\": {\"closure\": "
	"{\"NoneType\": null}}, \"time\": 1000}\n"
	"{\"func_call_id\": \"b\", " WHO ", " META ", \"type\": \"function_call (pre)\", "
	"\"function\": \"torch.optim.sgd.SGD._init_group\", \"args\": {\"0\": {\"int\": 5}, "
	"\"1\": {\"tuple\": [8, 2]}, \"2\": {\"list\": {}}}, \"kwargs\": {\"lr\": {\"float\": "
	"0.25}, \"name\": {\"str\": \"adam\"}, \"foreach\": {\"bool\": false}}, \"time\": 1100}\n"
	"\n"
	"{\"func_call_id\": \"b\", " WHO ", " META ", \"type\": \"function_call (post)\", "
	"\"function\": \"torch.optim.sgd.SGD._init_group\", \"return_values\": {\"bool\": true}, "
	"\"time\": 1350}\n"
	"{\"func_call_id\": \"a\", " WHO ", " META ", \"type\": \"function_call (post) "
	"(exception)\", \"function\": \"torch.optim.sgd.SGD.step\", \"exception\": "
	"\"RuntimeError\", \"exception_msg\": \"boom\", \"time\": 2000}\n"
	"{\"var_name\": \"model.net.weight\", \"var_type\": \"torch.nn.Parameter\", " WHO ", " META
	", \"type\": \"state_change\", \"attributes\": {\"_ML_DAIKON_data_ID\": 99, \"data\": "
	"1234, \"dtype\": \"torch.float32\", \"grad\": null, \"is_cuda\": false, \"shape\": [15, "
	"20], \"requires_grad\": true}, \"time\": 2100}\n";

UNIT_TEST(traincheck_trace, pairs_pre_and_post_with_callers_arguments_and_return)
{
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256];
	const struct seen_call *inner, *outer;

	CU_ASSERT_EQUAL_FATAL(read_text(nested, &seen, &stats, error, sizeof(error)), 3);
	CU_ASSERT_EQUAL(stats.calls, 2);
	CU_ASSERT_EQUAL(stats.states, 1);
	CU_ASSERT_EQUAL(stats.unfinished, 0);
	CU_ASSERT_EQUAL(stats.lines, 6);
	inner = &seen.calls[0];
	outer = &seen.calls[1];
	/* The inner call closes first: handed out first, its caller the outer call. */
	CU_ASSERT_STRING_EQUAL(inner->name, "torch.optim.sgd.SGD._init_group");
	CU_ASSERT_STRING_EQUAL(inner->caller, "torch.optim.sgd.SGD.step");
	CU_ASSERT_EQUAL(inner->depth, 1);
	CU_ASSERT_EQUAL(inner->entry_ns, 1100);
	CU_ASSERT_EQUAL(inner->duration_ns, 250);
	CU_ASSERT_EQUAL(inner->pid, 41);
	CU_ASSERT_EQUAL(inner->tid, 7);
	CU_ASSERT_EQUAL(inner->rank, 1);
	CU_ASSERT_EQUAL(inner->step, 3);
	CU_ASSERT_EQUAL(inner->stage, TRACE_STAGE_TRAIN);
	CU_ASSERT_EQUAL(inner->flags, 0);
	/* Primitives only, positional then keywords; the empty "list" object is not one. */
	CU_ASSERT_EQUAL_FATAL(inner->arg_count, 5);
	CU_ASSERT_STRING_EQUAL(inner->args[0].name, "0");
	CU_ASSERT_EQUAL(inner->args[0].type, TRACE_VALUE_INT);
	CU_ASSERT_EQUAL(inner->args[0].integer, 5);
	CU_ASSERT_STRING_EQUAL(inner->args[1].name, "1");
	CU_ASSERT_EQUAL(inner->args[1].type, TRACE_VALUE_STR);
	CU_ASSERT_STRING_EQUAL(inner->args[1].text, "[8,2]");
	CU_ASSERT_STRING_EQUAL(inner->args[2].name, "lr");
	CU_ASSERT_EQUAL(inner->args[2].type, TRACE_VALUE_FLOAT);
	CU_ASSERT_DOUBLE_EQUAL(inner->args[2].real, 0.25, 1e-12);
	CU_ASSERT_STRING_EQUAL(inner->args[3].name, "name");
	CU_ASSERT_STRING_EQUAL(inner->args[3].text, "adam");
	CU_ASSERT_STRING_EQUAL(inner->args[4].name, "foreach");
	CU_ASSERT_EQUAL(inner->args[4].type, TRACE_VALUE_BOOL);
	CU_ASSERT_EQUAL(inner->args[4].integer, 0);
	CU_ASSERT_EQUAL(inner->returned.type, TRACE_VALUE_BOOL);
	CU_ASSERT_EQUAL(inner->returned.integer, 1);
	/* The outer call: left by an exception, no caller, its self argument dropped. */
	CU_ASSERT_STRING_EQUAL(outer->name, "torch.optim.sgd.SGD.step");
	CU_ASSERT_STRING_EQUAL(outer->caller, "");
	CU_ASSERT_EQUAL(outer->depth, 0);
	CU_ASSERT_EQUAL(outer->duration_ns, 1000);
	CU_ASSERT_EQUAL(outer->flags, TRACE_PYTHON_RAISED);
	CU_ASSERT_EQUAL_FATAL(outer->arg_count, 1);
	CU_ASSERT_STRING_EQUAL(outer->args[0].name, "closure");
	CU_ASSERT_EQUAL(outer->args[0].type, TRACE_VALUE_NONE);
	CU_ASSERT_EQUAL(outer->returned.type, 0);
}

UNIT_TEST(traincheck_trace, variable_state_keeps_primitive_attributes_preferred_first)
{
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256];
	const struct seen_call *state;

	CU_ASSERT_EQUAL_FATAL(read_text(nested, &seen, &stats, error, sizeof(error)), 3);
	state = &seen.calls[2];
	CU_ASSERT_STRING_EQUAL(state->name, TRAINCHECK_STATE_PREFIX "model.net.weight");
	CU_ASSERT_EQUAL(state->rank, 1);
	CU_ASSERT_EQUAL(state->entry_ns, 2100);
	/* data, grad, dtype, shape, requires_grad (preferred order), then is_cuda; no address. */
	CU_ASSERT_EQUAL_FATAL(state->arg_count, 6);
	CU_ASSERT_STRING_EQUAL(state->args[0].name, "data");
	CU_ASSERT_EQUAL(state->args[0].integer, 1234);
	CU_ASSERT_STRING_EQUAL(state->args[1].name, "grad");
	CU_ASSERT_EQUAL(state->args[1].type, TRACE_VALUE_NONE);
	CU_ASSERT_STRING_EQUAL(state->args[2].name, "dtype");
	CU_ASSERT_STRING_EQUAL(state->args[2].text, "torch.float32");
	CU_ASSERT_STRING_EQUAL(state->args[3].name, "shape");
	CU_ASSERT_STRING_EQUAL(state->args[3].text, "[15,20]");
	CU_ASSERT_STRING_EQUAL(state->args[4].name, "requires_grad");
	CU_ASSERT_EQUAL(state->args[4].integer, 1);
	CU_ASSERT_STRING_EQUAL(state->args[5].name, "is_cuda");
	CU_ASSERT_EQUAL(state->args[5].type, TRACE_VALUE_BOOL);
}

UNIT_TEST(traincheck_trace, call_never_closed_is_handed_out_at_the_end)
{
	static const char cut[] =
		"{\"func_call_id\": \"x\", " WHO ", \"meta_vars\": {\"step\": 0, \"stage\": "
		"\"init\"}, \"type\": \"function_call (pre)\", \"function\": \"torch.distributed."
		"barrier\", \"args\": {}, \"kwargs\": {}, \"time\": 500}\n";
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256];

	CU_ASSERT_EQUAL_FATAL(read_text(cut, &seen, &stats, error, sizeof(error)), 1);
	CU_ASSERT_EQUAL(stats.unfinished, 1);
	CU_ASSERT_EQUAL(stats.calls, 0);
	CU_ASSERT_STRING_EQUAL(seen.calls[0].name, "torch.distributed.barrier");
	CU_ASSERT_EQUAL(seen.calls[0].duration_ns, 0);
	CU_ASSERT_EQUAL(seen.calls[0].rank, -1);
	CU_ASSERT_EQUAL(seen.calls[0].stage, TRACE_STAGE_UNKNOWN);
}

UNIT_TEST(traincheck_trace, corrupt_line_is_named_by_file_and_line)
{
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256], text[sizeof(nested) + 64];

	/* The third line cut in the middle of its JSON object. */
	snprintf(text, sizeof(text), "%.*s{\"func_call_id\": \"b\", \"ty\n",
		 (int)(strchr(strchr(nested, '\n') + 1, '\n') + 1 - nested), nested);
	CU_ASSERT_EQUAL(read_text(text, &seen, &stats, error, sizeof(error)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "snippet.log:3: not JSON"));
	CU_ASSERT_EQUAL(read_text("[1, 2]\n", &seen, &stats, error, sizeof(error)), -1);
	CU_ASSERT_STRING_EQUAL(error, "snippet.log:1: not a JSON object");
	CU_ASSERT_EQUAL(read_text("{\"time\": 1}\n", &seen, &stats, error, sizeof(error)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "snippet.log:1: a record without \"type\""));
}

UNIT_TEST(traincheck_trace, post_without_pre_is_refused)
{
	static const char orphan[] = "{\"func_call_id\": \"z\", " WHO ", " META
				     ", \"type\": \"function_call (post)\", \"function\": \"f\", "
				     "\"return_values\": {\"int\": 1}, \"time\": 9}\n";
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256];

	CU_ASSERT_EQUAL(read_text(orphan, &seen, &stats, error, sizeof(error)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "snippet.log:1: a \"(post)\" record of call z"));
	CU_ASSERT_EQUAL(seen.count, 0);
}

static int add_to_inference(void *context, const struct trace_record *record)
{
	return inference_add(context, record);
}

static const struct rule *find(const struct rule_set *rules, uint32_t relation, const char *name,
			       const char *field)
{
	for (size_t i = 0; i < rules->count; i++) {
		const struct rule *rule = &rules->rules[i];

		if (rule->relation == relation && strcmp(rule->event.name, name) == 0 &&
		    rule->field && strcmp(rule->field, field) == 0)
			return rule;
	}
	return NULL;
}

/*
 * Two ranks, three steps: the learning rate argument and the weight's data
 * hash agree across ranks at every step, and is_grad_enabled always
 * returns True: Consistent and APIOutput rules on TrainCheck's input.
 */
UNIT_TEST(traincheck_trace, inference_learns_from_a_traincheck_trace)
{
	struct rule_set *rules = rule_set_new();
	struct inference *inference = inference_new(rules);
	char text[8192], error[256];
	struct traincheck_stats stats = { 0 };
	size_t used = 0;
	FILE *in;
	const struct rule *rule;

	CU_ASSERT_PTR_NOT_NULL_FATAL(inference);
	for (int step = 0; step < 3; step++) {
		for (int rank = 0; rank < 2; rank++) {
			used += (size_t)snprintf(
				text + used, sizeof(text) - used,
				"{\"func_call_id\": \"s%d%d\", \"process_id\": %d, \"thread_id\": "
				"1, "
				"\"meta_vars\": {\"step\": %d, \"stage\": \"training\", "
				"\"_DATA_PARALLEL_RANK\": %d}, \"type\": \"function_call (pre)\", "
				"\"function\": \"torch.is_grad_enabled\", \"args\": {}, "
				"\"kwargs\": "
				"{\"lr\": {\"float\": 0.%d}}, \"time\": %d}\n"
				"{\"func_call_id\": \"s%d%d\", \"process_id\": %d, \"thread_id\": "
				"1, "
				"\"meta_vars\": {\"step\": %d, \"stage\": \"training\", "
				"\"_DATA_PARALLEL_RANK\": %d}, \"type\": \"function_call (post)\", "
				"\"function\": \"torch.is_grad_enabled\", \"return_values\": "
				"{\"bool\": "
				"true}, \"time\": %d}\n"
				"{\"var_name\": \"w\", \"var_type\": \"torch.nn.Parameter\", "
				"\"process_id\": %d, \"thread_id\": 1, \"meta_vars\": {\"step\": "
				"%d, "
				"\"stage\": \"training\", \"_DATA_PARALLEL_RANK\": %d}, \"type\": "
				"\"state_change\", \"attributes\": {\"data\": %d}, \"time\": %d}\n",
				step, rank, 100 + rank, step, rank, step + 1, step * 100 + 10, step,
				rank, 100 + rank, step, rank, step * 100 + 20, 100 + rank, step,
				rank, 7000 + step, step * 100 + 30);
		}
	}
	in = fmemopen(text, used, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	CU_ASSERT_EQUAL(traincheck_trace_read(in, "steps.log", add_to_inference, inference, &stats,
					      error, sizeof(error)),
			12);
	fclose(in);
	CU_ASSERT_EQUAL(inference_run(inference), 0);
	CU_ASSERT_PTR_NOT_NULL(find(rules, RELATION_CONSISTENT, "torch.is_grad_enabled", "arg:lr"));
	CU_ASSERT_PTR_NOT_NULL(find(rules, RELATION_CONSISTENT, "state:w", "arg:data"));
	rule = find(rules, RELATION_API_OUTPUT, "torch.is_grad_enabled", "result");
	CU_ASSERT_PTR_NOT_NULL_FATAL(rule);
	CU_ASSERT_STRING_EQUAL(rule->value, "True");
	/* The learning rate changes every step: no constant without a precondition on step. */
	rule = find(rules, RELATION_API_ARG, "torch.is_grad_enabled", "arg:lr");
	CU_ASSERT(rule == NULL || rule->precondition.group_count > 0);
	inference_free(inference);
	rule_set_free(rules);
}

UNIT_TEST(traincheck_trace, time_in_seconds_is_read_as_nanoseconds)
{
	static const char seconds[] =
		"{\"func_call_id\": \"t\", " WHO ", " META ", \"type\": \"function_call (pre)\", "
		"\"function\": \"f\", \"args\": {}, \"kwargs\": {}, \"time\": 1.5}\n"
		"{\"func_call_id\": \"t\", " WHO ", " META ", \"type\": \"function_call (post)\", "
		"\"function\": \"f\", \"return_values\": {\"NoneType\": null}, \"time\": 1.75}\n";
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256];

	CU_ASSERT_EQUAL_FATAL(read_text(seconds, &seen, &stats, error, sizeof(error)), 1);
	CU_ASSERT_EQUAL(seen.calls[0].entry_ns, 1500000000ULL);
	CU_ASSERT_EQUAL(seen.calls[0].duration_ns, 250000000ULL);
	CU_ASSERT_EQUAL(seen.calls[0].returned.type, TRACE_VALUE_NONE);
}

/* Found by fuzzing (tests/fuzz/): a time in seconds too large for 64 bits of nanoseconds. */
UNIT_TEST(traincheck_trace, time_beyond_any_clock_is_refused)
{
	static const char far_pre[] =
		"{\"func_call_id\": \"1005_1\", \"thread_id\": 139500000000001, \"process_id\": "
		"4101, \"meta_vars\": {\"step\": 0}, \"type\": \"function_call (pre)\", "
		"\"function\": \"torch.cuda.set_device\", \"args\": {}, \"kwargs\": {}, "
		"\"time\": 10000190e5}\n";
	static const char far_state[] = "{\"var_name\": \"w\", " WHO ", " META
					", \"type\": \"state_change\", \"attributes\": {}, "
					"\"time\": 1e300}\n";
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256];

	CU_ASSERT_EQUAL(read_text(far_pre, &seen, &stats, error, sizeof(error)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "snippet.log:1: a \"time\" of 1.00002e+12 seconds"));
	CU_ASSERT_EQUAL(seen.count, 0);
	CU_ASSERT_EQUAL(read_text(far_state, &seen, &stats, error, sizeof(error)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "snippet.log:1: a \"time\" of 1e+300 seconds"));
	CU_ASSERT_EQUAL(seen.count, 0);
}

/* A field of the wrong JSON type is a damaged line, not a 0 or an empty argument list. */
UNIT_TEST(traincheck_trace, fields_of_the_wrong_type_are_refused)
{
	static const char *const lines[] = {
		"{\"func_call_id\": \"1_1\", \"thread_id\": 1, \"process_id\": \"4101\", "
		"\"type\": \"function_call (pre)\", \"function\": \"f\", \"time\": 1}\n",
		"{\"func_call_id\": \"1_1\", \"thread_id\": -1, \"process_id\": 4101, "
		"\"type\": \"function_call (pre)\", \"function\": \"f\", \"time\": 1}\n",
		"{\"func_call_id\": \"1_1\", \"thread_id\": 1, \"process_id\": 4101, "
		"\"type\": \"function_call (pre)\", \"function\": \"f\", \"time\": \"noon\"}\n",
		"{\"func_call_id\": \"1_1\", \"thread_id\": 1, \"process_id\": 4101, "
		"\"type\": \"function_call (pre)\", \"function\": \"f\", \"args\": [1], \"time\": "
		"1}\n",
		"{\"var_name\": \"w\", " WHO ", \"meta_vars\": 7, \"type\": \"state_change\", "
		"\"attributes\": {}, \"time\": 1}\n",
	};
	static const char *const said[] = {
		"\"process_id\" is a string, not a process or thread id",
		"\"thread_id\" is a negative number, not a process or thread id",
		"\"time\" is a string, not a time",
		"\"args\" is an array, not an object",
		"\"meta_vars\" is a number, not an object",
	};
	struct traincheck_stats stats = { 0 };
	struct seen seen;
	char error[256];

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		CU_ASSERT_EQUAL(read_text(lines[i], &seen, &stats, error, sizeof(error)), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(error, said[i]));
		CU_ASSERT_EQUAL(seen.count, 0);
	}
}
