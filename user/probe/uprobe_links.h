/* SPDX-License-Identifier: MIT */
/*
 * Attaching one BPF program to many offsets of a file. Where the kernel
 * has uprobe_multi links (6.6 and newer) the offsets share one link:
 * removing a uprobe waits for a kernel grace period (about 0.1 s here),
 * and one link waits once instead of once per probe, so detaching 54
 * probes takes a fraction of a second instead of five. Older kernels get
 * one perf-event link per offset.
 */
#ifndef TCHECK_UPROBE_LINKS_H
#define TCHECK_UPROBE_LINKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct bpf_program;

/* One attachment: a libbpf link, or the file descriptor of a multi link. */
struct uprobe_link {
	struct bpf_link *link;
	int fd;	       /* -1 for a libbpf link */
	int pid;       /* the one process it probes, -1 for every process */
	size_t probes; /* offsets it holds */
};

struct uprobe_link_list {
	struct uprobe_link *links;
	size_t count;
	size_t capacity;
	size_t probes; /* offsets attached over all links */
	/* Told of every attachment the kernel refuses, with the file's path; NULL: nobody. */
	void (*on_failure)(void *context, const char *path);
	void *failure_context;
};

/* Whether the running kernel has uprobe_multi links (asked once). */
bool uprobe_multi_supported(void);

/*
 * Whether it has uprobe sessions too (6.13+): one program run at entry and
 * at return, whose entry can decline the return (asked once).
 */
bool uprobe_session_supported(void);

/* Prepares a session program before the skeleton is loaded; -EOPNOTSUPP without sessions. */
int uprobe_session_prepare(struct bpf_program *program);

/*
 * Attaches a session program, prepared, as uprobe_link_attach does; with
 * uprobe_session_supported() only.
 */
int uprobe_session_attach(struct uprobe_link_list *list, struct bpf_program *program,
			  const char *path, const uint64_t *offsets, const uint64_t *cookies,
			  size_t count, int pid, char *error, size_t error_size);

/*
 * Prepares a program, before the skeleton is loaded, for the kind of
 * attachment uprobe_link_attach will make: the kernel binds a program to
 * uprobe_multi links at load time.
 */
int uprobe_link_prepare(struct bpf_program *program);

/*
 * Attaches program at every offset of path, with the cookie of the same
 * index, in process pid (-1: every process mapping the file). Fills error
 * and returns -errno when the kernel refuses.
 */
int uprobe_link_attach(struct uprobe_link_list *list, struct bpf_program *program, bool retprobe,
		       const char *path, const uint64_t *offsets, const uint64_t *cookies,
		       size_t count, int pid, char *error, size_t error_size);

/* Detaches the links made for process pid only; returns how many. */
size_t uprobe_link_detach_process(struct uprobe_link_list *list, int pid);

/* Detaches everything and frees the list. */
void uprobe_link_list_free(struct uprobe_link_list *list);

#endif /* TCHECK_UPROBE_LINKS_H */
