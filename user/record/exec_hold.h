/* SPDX-License-Identifier: MIT */
/*
 * The first exec of a Python interpreter file by a traced process, held
 * (fanotify FAN_OPEN_EXEC_PERM) until the recorder has probed that file, so
 * the process's Python is followed from its first instruction. The hold is
 * bounded: the exec is let through when the recorder has followed the file,
 * when following it failed, or after EXEC_HOLD_MAX_MS, whichever comes
 * first; nothing is written into the process and no signal is sent. Execs
 * of other files, and of other processes, are let through at once by a
 * process of its own, which a stopped or busy recorder does not hold up.
 */
#ifndef TCHECK_EXEC_HOLD_H
#define TCHECK_EXEC_HOLD_H

#include <stddef.h>
#include <stdint.h>

#include "probe/probe_session.h"

/* The longest a traced process's exec is held. */
#define EXEC_HOLD_MAX_MS 2000

struct exec_hold;

/*
 * Starts holding first execs of interpreter files by the traced processes
 * of session. NULL (error filled) when the kernel cannot hold execs (no
 * CONFIG_FANOTIFY_ACCESS_PERMISSIONS, not allowed): recording goes on and
 * a first run's unseen start is said, as without the hold.
 */
struct exec_hold *exec_hold_start(struct probe_session *session, char *error, size_t error_size);

/* Readable while a held exec waits for exec_hold_serve. -1 for NULL. */
int exec_hold_request_fd(const struct exec_hold *hold);

/*
 * Follows the file of each exec held now (follow: 1 followed, 0 not an
 * interpreter, negative not followable; each file is asked about once)
 * and lets the exec through. Does nothing for NULL.
 */
void exec_hold_serve(struct exec_hold *hold, int (*follow)(void *context, const char *host_path),
		     void *context);

/* Ends the answering process: every exec still held goes through. NULL is fine. */
void exec_hold_stop(struct exec_hold *hold);

#endif /* TCHECK_EXEC_HOLD_H */
