// SPDX-License-Identifier: MIT
/* How a run's Python calls are compared: their arguments as text, and the calls left out. */
#include "diff/run_python_calls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends "name=value" for one primitive argument. */
static void format_argument(const struct trace_python_arg *arg, char *text, size_t size)
{
	switch (arg->type) {
	case TRACE_VALUE_BOOL:
		snprintf(text, size, "%s=%s", arg->name, arg->integer ? "True" : "False");
		break;
	case TRACE_VALUE_INT:
		snprintf(text, size, "%s=%lld", arg->name, (long long)arg->integer);
		break;
	case TRACE_VALUE_FLOAT:
		/* The shortest of %.15g and %.17g that reads back as the same double. */
		snprintf(text, size, "%s=%.15g", arg->name, arg->real);
		if (strtod(strchr(text, '=') + 1, NULL) != arg->real)
			snprintf(text, size, "%s=%.17g", arg->name, arg->real);
		break;
	case TRACE_VALUE_STR:
		snprintf(text, size, "%s='%s'", arg->name, arg->text ? arg->text : "");
		break;
	default:
		snprintf(text, size, "%s=None", arg->name);
	}
}

char *run_python_arguments(const struct trace_python_call *call)
{
	char text[1024] = "", one[256];
	size_t used = 0;

	for (uint32_t i = 0; i < call->arg_count && i < TRACE_PY_ARGS_MAX; i++) {
		/* A tensor's address differs from run to run: not compared. */
		if (trace_arg_describes_tensor(call->args[i].name))
			continue;
		format_argument(&call->args[i], one, sizeof(one));
		used += (size_t)snprintf(text + used, sizeof(text) - used, "%s%s", used ? ", " : "",
					 one);
		if (used >= sizeof(text))
			break;
	}
	return strdup(text);
}

static bool ends_with(const char *text, const char *suffix)
{
	size_t length = strlen(text), suffix_length = strlen(suffix);

	return length >= suffix_length && strcmp(text + length - suffix_length, suffix) == 0;
}

bool run_python_runs_at_import(const struct trace_python_call *call)
{
	if (call->flags & TRACE_PYTHON_RUNS_ONCE)
		return true;
	if (call->qualified_name && ends_with(call->qualified_name, ".<module>"))
		return true;
	for (uint32_t i = 0; i < call->py_stack.depth && i < TRACE_PY_STACK_MAX; i++)
		if (call->py_stack.frames[i] &&
		    strncmp(call->py_stack.frames[i], "importlib.", 10) == 0)
			return true;
	return false;
}
