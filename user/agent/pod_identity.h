/* SPDX-License-Identifier: MIT */
/*
 * Which Kubernetes pod and container a process runs in, from outside:
 * its cgroup path names the container id, and the kubelet names every
 * container's log link <pod>_<namespace>_<container>-<id>.log in
 * /var/log/containers. No API server access is needed. In a sidecar the
 * downward API gives the pod instead (TCHECK_POD_NAME,
 * TCHECK_POD_NAMESPACE).
 */
#ifndef TCHECK_POD_IDENTITY_H
#define TCHECK_POD_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Where the kubelet keeps its container log links. */
#define POD_IDENTITY_CONTAINERS_DIR "/var/log/containers"

struct pod_identity {
	char pod[254];
	char namespace[64];
	char container[64];
	char container_id[65]; /* 64 hex digits, "" when the process is in no container */
};

/* The container id in the text of /proc/PID/cgroup; false when there is none. */
bool pod_identity_container_id(const char *cgroup_text, char id[65]);

/*
 * Fills identity for a container id from the log links in containers_dir;
 * false when no link names it.
 */
bool pod_identity_from_logs(const char *containers_dir, const char *container_id,
			    struct pod_identity *identity);

/*
 * Everything known about pid: container id from its cgroup, names from the
 * log links, else from the sidecar's environment. Fields left "" when
 * unknown.
 */
void pod_identity_of_process(pid_t pid, const char *containers_dir, struct pod_identity *identity);

#endif /* TCHECK_POD_IDENTITY_H */
