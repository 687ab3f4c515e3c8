// SPDX-License-Identifier: MIT
/* Error sentences into a caller's buffer. */
#include "base/error_message.h"

#include <stdarg.h>
#include <stdio.h>

static void write_sentence(char *error, size_t error_size, const char *format, va_list arguments)
{
	if (error && error_size)
		vsnprintf(error, error_size, format, arguments);
}

int error_fail(char *error, size_t error_size, int code, const char *format, ...)
{
	va_list arguments;

	va_start(arguments, format);
	write_sentence(error, error_size, format, arguments);
	va_end(arguments);
	return -code;
}

void error_format(char *error, size_t error_size, const char *format, ...)
{
	va_list arguments;

	va_start(arguments, format);
	write_sentence(error, error_size, format, arguments);
	va_end(arguments);
}
