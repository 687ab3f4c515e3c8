// SPDX-License-Identifier: MIT
/* Leveled messages to stderr, prefixed with the program name. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

static int verbosity;
static int quiet;

void log_set_verbosity(int level)
{
	verbosity = level;
}

int log_verbosity(void)
{
	return verbosity;
}

void log_set_quiet(int value)
{
	quiet = value;
}

static void emit(const char *prefix, const char *format, va_list args)
{
	fprintf(stderr, "tcheck-bpf: %s", prefix);
	vfprintf(stderr, format, args);
	fputc('\n', stderr);
}

#define DEFINE_LOG(name, prefix, condition) \
	void name(const char *format, ...)  \
	{                                   \
		va_list args;               \
		if (!(condition))           \
			return;             \
		va_start(args, format);     \
		emit(prefix, format, args); \
		va_end(args);               \
	}

DEFINE_LOG(log_error, "error: ", 1)
DEFINE_LOG(log_warning, "warning: ", 1)
DEFINE_LOG(log_notice, "", !quiet)
DEFINE_LOG(log_info, "", verbosity >= 1)
DEFINE_LOG(log_debug, "debug: ", verbosity >= 2)
