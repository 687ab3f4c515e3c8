// SPDX-License-Identifier: MIT
/*
 * An exception that ended a Python process, or that its launcher caught and
 * exited on: turned into a raised call with its type, message and Python
 * stack, named like the process's other frames.
 */
#include <stdio.h>

#include "python/python_losses.h"
#include "python/python_names.h"
#include "python/python_tracer.h"
#include "python/python_tracer_state.h"

int python_tracer_handle_exception(struct python_tracer *tracer, struct python_process *process,
				   const struct tcheck_python_exception_record *record)
{
	struct trace_record out = { .kind = TRACE_RECORD_PYTHON_CALL,
				    .python_call = { .rank = -1, .world_size = -1 } };
	struct trace_python_call *call = &out.python_call;
	char type_name[TCHECK_EXCEPTION_TYPE_BYTES + 1],
		message[TCHECK_EXCEPTION_MESSAGE_BYTES + 1];
	const char *names[TCHECK_PY_STACK_MAX];
	uint64_t codes[TCHECK_PY_STACK_MAX];
	uint32_t kept = record->frame_count < TCHECK_PY_STACK_MAX ? record->frame_count
								  : TCHECK_PY_STACK_MAX;

	process = python_process_followed(process);
	if (!process) {
		python_losses_count_unfollowed(&tracer->losses, record->header.pid);
		return 0;
	}
	snprintf(type_name, sizeof(type_name), "%.*s", (int)sizeof(record->type_name),
		 record->type_name);
	snprintf(message, sizeof(message), "%.*s", (int)sizeof(record->message), record->message);
	/* The ring holds the last entries of the traceback: innermost first here. */
	for (uint32_t i = 0; i < kept; i++)
		codes[i] = record->codes[(record->frame_count - 1 - i) % TCHECK_PY_STACK_MAX];
	python_tracer_name_callers(tracer, process, codes, kept, names);
	call->entry_ns = record->header.timestamp_ns;
	call->pid = record->header.pid;
	call->tid = record->header.tid;
	call->flags = TRACE_PYTHON_RAISED | TRACE_PYTHON_UNCAUGHT;
	if (record->flags & TCHECK_EXCEPTION_HANDLED_AT_EXIT)
		call->flags |= TRACE_PYTHON_HANDLED_AT_EXIT;
	call->first_line = -1;
	call->qualified_name = type_name[0] ? type_name : "<unknown exception>";
	call->file = "";
	python_tracer_fill_meta(process, record->header.timestamp_ns, call);
	for (uint32_t i = 0; i < kept; i++) {
		if (!codes[i])
			continue;
		if (!names[i])
			tracer->losses.unnamed_callers++;
		call->py_stack.frames[call->py_stack.depth++] =
			names[i] ? names[i] : PYTHON_UNREADABLE_FRAME;
	}
	call->args[0] = (struct trace_python_arg){ .name = "message",
						   .type = TRACE_VALUE_STR,
						   .text = message };
	call->arg_count = 1;
	return tracer->emit(tracer->context, &out);
}
