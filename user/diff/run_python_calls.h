/* SPDX-License-Identifier: MIT */
/*
 * How two runs' Python calls are compared: the primitive arguments of a
 * call as one line of text (tensors left out: their addresses differ from
 * run to run), and the calls not compared at all.
 */
#ifndef TCHECK_RUN_PYTHON_CALLS_H
#define TCHECK_RUN_PYTHON_CALLS_H

#include <stdbool.h>

#include "model/trace_records.h"

/* "name=value, ..." of the call's primitive arguments (malloc'd; NULL when out of memory). */
char *run_python_arguments(const struct trace_python_call *call);

/*
 * Code run while a module is imported: module and class bodies (marked so by
 * the recorder; in older traces, by name or an importer among the callers).
 * Which of them a recording names depends on the recorder keeping up (they
 * are freed once run), so they are not compared.
 */
bool run_python_runs_at_import(const struct trace_python_call *call);

#endif /* TCHECK_RUN_PYTHON_CALLS_H */
