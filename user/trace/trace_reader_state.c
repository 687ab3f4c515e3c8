// SPDX-License-Identifier: MIT
/* The trace reader's failure, set by each of its parts; see trace_reader_state.h. */
#include <stdarg.h>
#include <stdio.h>

#include "trace/trace_reader_state.h"

int trace_reader_fail(struct trace_reader *reader, int err, const char *format, ...)
{
	va_list arguments;

	va_start(arguments, format);
	vsnprintf(reader->error, sizeof(reader->error), format, arguments);
	va_end(arguments);
	reader->failure = err;
	return err;
}
