// SPDX-License-Identifier: MIT
/* The traced processes of a recording: what is known of each, and which are alive. */
#include "record/process_registry.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/command_text.h"
#include "base/log.h"
#include "probe/process_info.h"

void process_registry_init(struct process_registry *registry)
{
	memset(registry, 0, sizeof(*registry));
	u64_map_init(&registry->processes);
}

void process_registry_set_release(struct process_registry *registry,
				  process_registry_release_fn release, void *context)
{
	registry->release = release;
	registry->release_context = context;
}

static void free_process(struct process_registry *registry, struct traced_process *process)
{
	if (registry->release)
		registry->release(registry->release_context, process);
	free(process->command);
	free(process);
}

void process_registry_destroy(struct process_registry *registry)
{
	struct traced_process *process;

	for (size_t i = 0; (process = process_registry_next(registry, &i));)
		free_process(registry, process);
	u64_map_free(&registry->processes);
}

struct traced_process *process_registry_find(const struct process_registry *registry, uint32_t pid)
{
	return u64_map_get(&registry->processes, pid);
}

struct traced_process *process_registry_add(struct process_registry *registry, uint32_t pid,
					    uint32_t parent_pid, uint64_t now_ns)
{
	struct traced_process *process = calloc(1, sizeof(*process));

	if (!process || u64_map_put(&registry->processes, pid, process)) {
		free(process);
		return NULL;
	}
	process->record.pid = pid;
	process->record.parent_pid = parent_pid;
	process->record.rank = process->record.local_rank = process->record.world_size = -1;
	process->record.exit_code = -1;
	process->record.start_ns = now_ns;
	process->alive = true;
	registry->alive_count++;
	registry->seen_count++;
	return process;
}

void process_registry_remove(struct process_registry *registry, uint32_t pid)
{
	struct traced_process *process = u64_map_remove(&registry->processes, pid);

	if (!process)
		return;
	if (process->alive)
		registry->alive_count--;
	free_process(registry, process);
}

bool process_registry_end(struct process_registry *registry, struct traced_process *process,
			  int exit_code, uint64_t now_ns)
{
	if (!process->alive)
		return false;
	process->alive = false;
	registry->alive_count--;
	process->record.end_ns = now_ns;
	process->record.exit_code = exit_code;
	return true;
}

void process_registry_refresh(struct traced_process *process, char *const *command_before_exec)
{
	struct process_info info;
	char error[256];

	if (process_info_read((pid_t)process->record.pid, &info, error, sizeof(error))) {
		log_debug("%s", error);
		return;
	}
	free(process->command);
	/* The started command before its exec still shows tcheck-bpf's own command line. */
	if (command_before_exec) {
		char command[4096];

		process->command = strdup(
			command_text_join(command, sizeof(command), INT_MAX, command_before_exec));
	} else {
		process->command = strdup(info.command ? info.command : "");
	}
	process->record.rank = info.rank;
	process->record.local_rank = info.local_rank;
	process->record.world_size = info.world_size;
	process_info_free(&info);
}

/*
 * The arguments the exec record carries: read as the image started, they
 * name a process that ended before /proc could be read (a helper run by a
 * shell), where /proc gives its parent's command, "" or its name alone.
 * /proc's is kept when it is the same command given whole past the
 * record's limit.
 */
void process_registry_take_exec_command(struct traced_process *process,
					const struct tcheck_process_record *notice)
{
	size_t length = notice->command_length;
	char *command;

	if (!length || length > sizeof(notice->command))
		return;
	while (length && notice->command[length - 1] == '\0')
		length--;
	command = malloc(length + 1);
	if (!command)
		return;
	/* NUL-separated arguments: strndup would stop at the first. */
	for (size_t i = 0; i < length; i++)
		command[i] = notice->command[i] ? notice->command[i] : ' ';
	command[length] = '\0';
	if (notice->command_cut && process->command &&
	    strncmp(process->command, command, length) == 0) {
		free(command);
		return;
	}
	free(process->command);
	process->command = command;
}

void process_registry_take_exec_environment(struct traced_process *process,
					    const struct tcheck_process_record *notice)
{
	/* Not read (too long, a page not there): /proc's reading stands. */
	if (!notice->environment_read)
		return;
	process->record.rank = notice->environment_values[TCHECK_ENVIRONMENT_RANK];
	process->record.local_rank = notice->environment_values[TCHECK_ENVIRONMENT_LOCAL_RANK];
	process->record.world_size = notice->environment_values[TCHECK_ENVIRONMENT_WORLD_SIZE];
}

void process_registry_record(const struct traced_process *process, struct trace_record *record)
{
	memset(record, 0, sizeof(*record));
	record->kind = TRACE_RECORD_PROCESS;
	record->process = process->record;
	record->process.command = process->command ? process->command : "";
}

struct traced_process *process_registry_next(const struct process_registry *registry,
					     size_t *position)
{
	uint64_t pid;
	void *value;

	if (!u64_map_next(&registry->processes, position, &pid, &value))
		return NULL;
	return value;
}
