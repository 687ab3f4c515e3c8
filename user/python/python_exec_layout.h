/* SPDX-License-Identifier: MIT */
/*
 * Interpreter executables by file, for the process probes: a process that
 * execs (or forks from) a Python already followed is followed by the kernel
 * from its first instruction, however far behind the reader is.
 */
#ifndef TCHECK_PYTHON_EXEC_LAYOUT_H
#define TCHECK_PYTHON_EXEC_LAYOUT_H

#include <sys/types.h>

#include "probe/probe_session.h"
#include "tcheck/probe_abi.h"

/*
 * Shares the Python of process 'pid' (as the probes were told it) by its
 * executable, when the interpreter at 'interpreter_host_path' is that
 * executable (a libpython is mapped after the exec: not shared). 0 shared
 * or nothing to share, negative errno when it could not be.
 */
int python_exec_layout_share(struct probe_session *session, pid_t pid,
			     const char *interpreter_host_path,
			     const struct tcheck_python_process *process);

/*
 * The same for an interpreter file before any process runs it: process is
 * its Python as laid out at load bias 0. 0 shared, negative errno.
 */
int python_exec_layout_share_file(struct probe_session *session, const char *host_path,
				  const struct tcheck_python_process *process);

#endif /* TCHECK_PYTHON_EXEC_LAYOUT_H */
