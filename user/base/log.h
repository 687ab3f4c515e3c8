/* SPDX-License-Identifier: MIT */
/* Leveled messages to stderr: errors always, info with -v, debug with -vv. */
#ifndef TCHECK_LOG_H
#define TCHECK_LOG_H

void log_set_verbosity(int verbosity);
int log_verbosity(void);
void log_set_quiet(int quiet);

__attribute__((format(printf, 1, 2))) void log_error(const char *format, ...);
__attribute__((format(printf, 1, 2))) void log_warning(const char *format, ...);
/* Progress and results a user wants without asking (hidden by --quiet). */
__attribute__((format(printf, 1, 2))) void log_notice(const char *format, ...);
__attribute__((format(printf, 1, 2))) void log_info(const char *format, ...);
__attribute__((format(printf, 1, 2))) void log_debug(const char *format, ...);

#endif /* TCHECK_LOG_H */
