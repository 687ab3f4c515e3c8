// SPDX-License-Identifier: MIT
/* Training processes on this node, found by the libraries they map. */
#include "probe/process_finder.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/process_info.h"
#include "probe/process_maps.h"

static bool name_starts_with(const char *path, const char *prefix)
{
	const char *slash = strrchr(path, '/');

	return slash && strncmp(slash + 1, prefix, strlen(prefix)) == 0;
}

/* Whether the process maps torch's CPU library (set only when it is no training process). */
static bool list_has_training_library(const struct mapped_file_list *list, bool torch_without_nccl,
				      bool *torch_cpu)
{
	bool cpu = false;

	for (size_t i = 0; i < list->count; i++) {
		const char *path = list->files[i].path;

		if (name_starts_with(path, "libnccl") || name_starts_with(path, "libtorch_cuda"))
			return true;
		if (name_starts_with(path, "libtorch_cpu"))
			cpu = true;
	}
	if (cpu && torch_without_nccl)
		return true;
	if (torch_cpu)
		*torch_cpu = cpu;
	return false;
}

bool process_finder_maps_match(const char *maps_text, bool torch_without_nccl)
{
	struct mapped_file_list list = { 0 };
	char error[256];
	bool found;

	if (process_maps_parse(maps_text, 0, &list, error, sizeof(error)))
		return false;
	found = list_has_training_library(&list, torch_without_nccl, NULL);
	mapped_file_list_free(&list);
	return found;
}

/* Ancestors looked at for the selector's text: launcher, shell, container entry. */
#define SELECTOR_ANCESTORS 16

/*
 * Whether the command line of pid, or of one of its ancestors, holds text:
 * a worker of torch.multiprocessing.spawn runs "python -c from
 * multiprocessing.spawn import spawn_main ..." under the command the user
 * named, and a torchrun rank under torchrun's.
 */
static bool command_line_selected(pid_t pid, const char *text)
{
	for (int depth = 0; pid > 1 && depth < SELECTOR_ANCESTORS; depth++) {
		char *command = process_command_line(pid);
		bool found = command && strstr(command, text);

		free(command);
		if (found)
			return true;
		pid = process_parent_pid(pid);
	}
	return false;
}

enum selection { NOT_SELECTED, SELECTED, RANK_UNKNOWN };

/* The selector and the rank range, from the process's command lines and environment. */
static enum selection selected(const struct process_finder_options *options, pid_t pid)
{
	struct process_info info;
	char error[256];
	enum selection selection;

	if (options->command_contains && *options->command_contains &&
	    !command_line_selected(pid, options->command_contains))
		return NOT_SELECTED;
	if (options->last_rank < 0)
		return SELECTED;
	if (process_info_read(pid, &info, error, sizeof(error)))
		return NOT_SELECTED;
	selection = info.rank < 0 ? RANK_UNKNOWN
		    : info.rank >= options->first_rank && info.rank <= options->last_rank
			    ? SELECTED
			    : NOT_SELECTED;
	process_info_free(&info);
	return selection;
}

/*
 * A process left out by the selector is not looked at further (its command
 * line is cheaper to read than its memory map); the names of the mapped
 * files are enough, unchecked.
 */
static bool is_training_process(const struct process_finder_options *options, pid_t pid)
{
	struct mapped_file_list list = { 0 };
	enum selection selection = selected(options, pid);
	char error[256];
	bool found, torch_cpu = false;

	if (selection == NOT_SELECTED ||
	    process_maps_read_unchecked(pid, &list, error, sizeof(error)))
		return false;
	found = list_has_training_library(&list, options->torch_without_nccl, &torch_cpu);
	mapped_file_list_free(&list);
	if (!found && torch_cpu && options->skipped)
		options->skipped(options->context, pid, PROCESS_SKIP_CPU_JOB);
	if (found && selection == RANK_UNKNOWN) {
		int rank = options->rank_of_unranked
				   ? options->rank_of_unranked(options->context, pid)
				   : -1;

		if (rank >= 0)
			return rank >= options->first_rank && rank <= options->last_rank;
		if (options->skipped)
			options->skipped(options->context, pid, PROCESS_SKIP_RANK_UNKNOWN);
		return false;
	}
	return found;
}

size_t process_finder_scan(const struct process_finder_options *options, pid_t *pids,
			   size_t capacity)
{
	DIR *directory = opendir("/proc");
	struct dirent *entry;
	size_t count = 0;
	pid_t self = getpid();

	if (!directory)
		return 0;
	while (count < capacity && (entry = readdir(directory))) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self)
			continue;
		if (is_training_process(options, (pid_t)pid))
			pids[count++] = (pid_t)pid;
	}
	closedir(directory);
	return count;
}
