/* SPDX-License-Identifier: MIT */
/*
 * Finds the NCCL code a traced process runs (libnccl itself, or NCCL
 * linked into another library such as libtorch_cuda.so) and the dynamic
 * loader that announces later dlopen()s, and attaches probes to each file
 * once: a uprobe on a file serves every process that maps it.
 */
#ifndef TCHECK_LIBRARY_DISCOVERY_H
#define TCHECK_LIBRARY_DISCOVERY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/trace_records.h"
#include "probe/probe_session.h"

struct library_discovery;

/* Told about every library probed, for the trace. */
typedef int (*library_attached_fn)(void *context, const struct trace_library *library);

struct library_discovery *library_discovery_new(struct probe_session *session,
						library_attached_fn on_attached, void *context);
void library_discovery_free(struct library_discovery *discovery);

/* Probes a library named by the user (--nccl-lib). */
int library_discovery_add_path(struct library_discovery *discovery, const char *path, uint32_t pid,
			       char *error, size_t error_size);

/* Scans a process's mappings and probes what is new. Returns libraries added. */
int library_discovery_scan_process(struct library_discovery *discovery, pid_t pid, char *error,
				   size_t error_size);

/*
 * Probes, before a command starts, the libraries its executable will be
 * loaded with and any NCCL the system's library cache lists, so that calls
 * made right at start-up or right after a dlopen() are not missed.
 */
int library_discovery_scan_command(struct library_discovery *discovery, const char *command,
				   char *error, size_t error_size);

/* The NCCL library a process maps (its host path), or NULL when none is known. */
const char *library_discovery_nccl_path(struct library_discovery *discovery, pid_t pid);

/*
 * Also shows every new file looked at (host path, and the pid that maps it,
 * 0 before a command starts) to hook: for probes of other libraries.
 */
typedef int (*library_file_hook_fn)(void *context, const char *host_path, uint32_t pid);
void library_discovery_set_file_hook(struct library_discovery *discovery, library_file_hook_fn hook,
				     void *context);

/* NCCL libraries probed so far. */
size_t library_discovery_library_count(const struct library_discovery *discovery);

/* A process ended: its own probe (the loader's library-change notice) goes. */
void library_discovery_forget_process(struct library_discovery *discovery, pid_t pid);

#endif /* TCHECK_LIBRARY_DISCOVERY_H */
