/* SPDX-License-Identifier: MIT */
/* The verbs of the tcheck-bpf command line, one file each. */
#ifndef TCHECK_COMMANDS_H
#define TCHECK_COMMANDS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/exit_status.h"

/* The most traces (hosts, or pieces of a recording) one check or dump reads at once. */
#define MAX_TRACES 256

/* Each takes the arguments after the verb (argv[0] is the verb). */
int command_record(int argc, char **argv);
int command_attach(int argc, char **argv);
int command_dump(int argc, char **argv);
int command_agent(int argc, char **argv);
int command_analyze(int argc, char **argv);
int command_infer(int argc, char **argv);
int command_check(int argc, char **argv);
int command_diff(int argc, char **argv);
/* check --rules: the invariant checker (user/cli/command_check_rules.c). */
int command_check_rules(int argc, char **argv);

int command_snapshot(int argc, char **argv);

/* Parses a --pid value; prints a sentence and returns -1 when bad. */
int parse_pid(const char *text, pid_t *pid);

struct number_bounds;

/*
 * An option's number within its bounds (base/number_parse.h: finite, the
 * whole text); prints a sentence naming the option and returns -1 when bad.
 */
int parse_number_option(const char *option, const char *text, const struct number_bounds *bounds,
			double *value);
/* A number above 0 and at most 'maximum'. */
int parse_positive_number(const char *option, const char *text, double maximum, double *value);
/* Seconds: above 0 (or from 0 with 'zero_allowed') and at most NUMBER_MAX_SECONDS. */
int parse_seconds(const char *option, const char *text, bool zero_allowed, double *seconds);
/* A whole number from 'minimum' to 'maximum'. */
int parse_whole_number(const char *option, const char *text, double minimum, double maximum,
		       double *value);

/*
 * Parses --ring-buffer-mb: at most 2 GiB, rounded up to the power of two
 * the kernel takes, in bytes; prints a sentence and returns -1 when bad.
 */
int parse_ring_buffer_mb(const char *text, size_t *bytes);

#endif /* TCHECK_COMMANDS_H */
