// SPDX-License-Identifier: MIT
/* Training processes on this node, found by the libraries they map. */
#include "process_finder.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "process_maps.h"

/* A maps file is read up to this much: the libraries come early enough in it. */
#define MAPS_READ_LIMIT (4U << 20)

static bool path_has_library(const char *line, const char *prefix)
{
	const char *slash = strrchr(line, '/');

	return slash && strncmp(slash + 1, prefix, strlen(prefix)) == 0;
}

bool process_finder_maps_match(const char *maps_text, bool torch_without_nccl)
{
	const char *line = maps_text;

	while (line && *line) {
		const char *end = strchr(line, '\n');
		char buffer[4096];
		size_t length = end ? (size_t)(end - line) : strlen(line);

		if (length >= sizeof(buffer))
			length = sizeof(buffer) - 1;
		memcpy(buffer, line, length);
		buffer[length] = '\0';
		if (path_has_library(buffer, "libnccl") ||
		    path_has_library(buffer, "libtorch_cuda") ||
		    (torch_without_nccl && path_has_library(buffer, "libtorch_cpu")))
			return true;
		line = end ? end + 1 : NULL;
	}
	return false;
}

static char *read_text(const char *path, size_t limit)
{
	FILE *file = fopen(path, "re");
	size_t length = 0, capacity = 65536;
	char *text = file ? malloc(capacity + 1) : NULL;

	if (!text) {
		if (file)
			fclose(file);
		return NULL;
	}
	for (;;) {
		size_t got = fread(text + length, 1, capacity - length, file);

		length += got;
		if (got == 0 || length >= limit)
			break;
		if (length == capacity) {
			char *grown = realloc(text, 2 * capacity + 1);

			if (!grown)
				break;
			text = grown;
			capacity *= 2;
		}
	}
	fclose(file);
	text[length] = '\0';
	return text;
}

static bool command_matches(const char *proc_root, pid_t pid, const char *wanted)
{
	char path[256], *text;
	bool found;
	FILE *file;
	size_t length;

	if (!wanted || !*wanted)
		return true;
	snprintf(path, sizeof(path), "%s/%d/cmdline", proc_root, (int)pid);
	text = calloc(1, 65537);
	file = text ? fopen(path, "re") : NULL;
	if (!file) {
		free(text);
		return false;
	}
	length = fread(text, 1, 65536, file);
	fclose(file);
	for (size_t i = 0; i + 1 < length; i++)
		if (text[i] == '\0')
			text[i] = ' ';
	found = strstr(text, wanted) != NULL;
	free(text);
	return found;
}

/* With a rank range, the process's RANK (from its environment) must lie in it. */
static bool rank_matches(const struct process_finder_options *options, pid_t pid)
{
	struct process_info info;
	char error[256];
	bool inside;

	if (options->last_rank < 0)
		return true;
	if (process_info_read(pid, &info, error, sizeof(error)))
		return false;
	inside = info.rank >= options->first_rank && info.rank <= options->last_rank;
	process_info_free(&info);
	return inside;
}

size_t process_finder_scan(const struct process_finder_options *options, pid_t *pids,
			   size_t capacity)
{
	const char *proc_root = options->proc_root ? options->proc_root : "/proc";
	DIR *directory = opendir(proc_root);
	struct dirent *entry;
	size_t count = 0;
	pid_t self = getpid();

	if (!directory)
		return 0;
	while (count < capacity && (entry = readdir(directory))) {
		char path[256], *maps;
		char *end;
		long pid = strtol(entry->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self)
			continue;
		snprintf(path, sizeof(path), "%s/%ld/maps", proc_root, pid);
		maps = read_text(path, MAPS_READ_LIMIT);
		if (maps && process_finder_maps_match(maps, options->torch_without_nccl) &&
		    command_matches(proc_root, (pid_t)pid, options->command_contains) &&
		    rank_matches(options, (pid_t)pid))
			pids[count++] = (pid_t)pid;
		free(maps);
	}
	closedir(directory);
	return count;
}
