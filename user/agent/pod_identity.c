// SPDX-License-Identifier: MIT
/* Pod, namespace and container of a process, from its cgroup and the kubelet's log links. */
#include "agent/pod_identity.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTAINER_ID_LENGTH 64

static bool hexadecimal_run(const char *text, size_t length)
{
	for (size_t i = 0; i < length; i++)
		if (!isxdigit((unsigned char)text[i]) || isupper((unsigned char)text[i]))
			return false;
	return true;
}

bool pod_identity_container_id(const char *cgroup_text, char id[65])
{
	/* The last 64-hex-digit run on any line: "cri-containerd-<id>.scope", "docker-<id>",
	 * "/<id>". */
	bool found = false;

	for (const char *at = cgroup_text; at && *at; at++) {
		bool starts = at == cgroup_text || !isxdigit((unsigned char)at[-1]);

		if (!starts || strnlen(at, CONTAINER_ID_LENGTH) < CONTAINER_ID_LENGTH ||
		    !hexadecimal_run(at, CONTAINER_ID_LENGTH) ||
		    isxdigit((unsigned char)at[CONTAINER_ID_LENGTH]))
			continue;
		memcpy(id, at, CONTAINER_ID_LENGTH);
		id[CONTAINER_ID_LENGTH] = '\0';
		found = true;
		at += CONTAINER_ID_LENGTH - 1;
	}
	return found;
}

/* "<pod>_<namespace>_<container>-<id>.log" with this id: the three names. */
static bool parse_log_name(const char *name, const char *container_id,
			   struct pod_identity *identity)
{
	size_t length = strlen(name), tail = 1 + CONTAINER_ID_LENGTH + 4;
	const char *first, *second;
	size_t container_length;

	if (length <= tail || strcmp(name + length - 4, ".log") != 0 ||
	    name[length - tail] != '-' ||
	    strncmp(name + length - tail + 1, container_id, CONTAINER_ID_LENGTH) != 0)
		return false;
	first = strchr(name, '_');
	second = first ? strchr(first + 1, '_') : NULL;
	if (!first || !second || second >= name + length - tail)
		return false;
	container_length = (size_t)(name + length - tail - (second + 1));
	if ((size_t)(first - name) >= sizeof(identity->pod) ||
	    (size_t)(second - first - 1) >= sizeof(identity->namespace) ||
	    container_length >= sizeof(identity->container))
		return false;
	snprintf(identity->pod, sizeof(identity->pod), "%.*s", (int)(first - name), name);
	snprintf(identity->namespace, sizeof(identity->namespace), "%.*s",
		 (int)(second - first - 1), first + 1);
	snprintf(identity->container, sizeof(identity->container), "%.*s", (int)container_length,
		 second + 1);
	return true;
}

bool pod_identity_from_logs(const char *containers_dir, const char *container_id,
			    struct pod_identity *identity)
{
	DIR *directory = opendir(containers_dir);
	struct dirent *entry;
	bool found = false;

	if (!directory)
		return false;
	while (!found && (entry = readdir(directory)))
		found = parse_log_name(entry->d_name, container_id, identity);
	closedir(directory);
	return found;
}

static void copy_environment(const char *variable, char *out, size_t size)
{
	const char *value = getenv(variable);

	if (value && !*out)
		snprintf(out, size, "%s", value);
}

void pod_identity_of_process(pid_t pid, const char *containers_dir, struct pod_identity *identity)
{
	char path[64], text[8192];
	size_t length = 0;
	FILE *file;

	memset(identity, 0, sizeof(*identity));
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	file = fopen(path, "re");
	if (file) {
		length = fread(text, 1, sizeof(text) - 1, file);
		fclose(file);
	}
	text[length] = '\0';
	if (pod_identity_container_id(text, identity->container_id))
		pod_identity_from_logs(containers_dir ? containers_dir
						      : POD_IDENTITY_CONTAINERS_DIR,
				       identity->container_id, identity);
	/* A sidecar shares its pod's PID namespace: the downward API names the pod. */
	copy_environment("TCHECK_POD_NAME", identity->pod, sizeof(identity->pod));
	copy_environment("TCHECK_POD_NAMESPACE", identity->namespace, sizeof(identity->namespace));
}
