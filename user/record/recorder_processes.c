// SPDX-License-Identifier: MIT
/*
 * The recorder's traced processes: each one added to the probes' traced
 * set, its libraries and its Python looked at, its record written as it
 * starts, changes and ends.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/system_clock.h"
#include "network/work_requests.h"
#include "probe/library_discovery.h"
#include "probe/probe_session.h"
#include "probe/process_info.h"
#include "python/python_tracer.h"
#include "record/c10d_calls.h"
#include "record/call_builder.h"
#include "record/job_snapshot.h"
#include "record/recorder_state.h"

/* Reads what /proc says of a process: command, rank, world size. */
void recorder_refresh_process(struct recorder *recorder, struct traced_process *process)
{
	bool before_exec =
		!recorder->command.released && (pid_t)process->record.pid == recorder->command.pid;

	process_registry_refresh(process, before_exec ? recorder->options->command : NULL);
}

/* A process group's rank and size stand in for the RANK and WORLD_SIZE the environment lacked. */
void recorder_take_process_group_rank(struct recorder *recorder, struct traced_process *process,
				      const struct tcheck_process_group_record *record)
{
	int32_t rank = -1, world_size = -1;

	if (!python_tracer_handle_process_group(process->stages.python, record, &rank, &world_size))
		return;
	if (process->record.rank >= 0)
		return;
	process->record.rank = rank;
	process->record.world_size = world_size;
	recorder_write_process(recorder, process);
}

/*
 * Its Python ran from its fork or exec until the probes followed it: that
 * window goes into its record (widened when a later image adds another).
 */
static void note_unseen_window(struct recorder *recorder, struct traced_process *process)
{
	struct trace_process *record = &process->record;

	if (!process->image_start_ns || !process->python_followed_ns ||
	    process->python_followed_ns <= process->image_start_ns)
		return;
	if (!record->python_unseen_to_ns)
		record->python_unseen_from_ns = process->image_start_ns;
	record->python_unseen_to_ns = process->python_followed_ns;
	recorder_write_process(recorder, process);
}

void recorder_image_started(struct recorder *recorder, struct traced_process *process,
			    uint64_t start_ns, bool new_image, bool python_from_start)
{
	struct trace_process *record = &process->record;

	if (new_image)
		process->python_followed_ns = 0;
	process->python_from_start = python_from_start;
	if (!python_from_start) {
		process->image_start_ns = start_ns;
		note_unseen_window(recorder, process);
		return;
	}
	process->image_start_ns = 0;
	/*
	 * A look at the process before this notice (the periodic rescan) saw
	 * this image already and took its start for the previous one's: the
	 * probes followed it from here, so that window was not one.
	 */
	if (record->python_unseen_to_ns >= start_ns && record->python_unseen_from_ns <= start_ns) {
		record->python_unseen_from_ns = record->python_unseen_to_ns = 0;
		recorder_write_process(recorder, process);
	}
}

/* Whether a command's program is named python ("python3.11", "/usr/bin/python3"). */
static bool command_names_python(const char *command)
{
	const char *end = command ? command + strcspn(command, " ") : NULL;
	const char *base = end;

	if (!command)
		return false;
	while (base > command && base[-1] != '/')
		base--;
	return end - base >= 6 && strncmp(base, "python", 6) == 0;
}

/*
 * Gone before its Python could be looked at: said once when the probes
 * followed it (so it ran Python), or it ran a program named python.
 */
static void say_ended_unfollowed(struct recorder *recorder, struct traced_process *process)
{
	if (!recorder->python || process->python_followed_ns || process->ended_unfollowed_said ||
	    !(process->python_from_start || command_names_python(process->command)))
		return;
	process->ended_unfollowed_said = true;
	log_warning("process %u had ended before the recorder could follow its Python (the "
		    "recorder was behind): its Python calls are not in the trace",
		    process->record.pid);
}

/* A process that runs a CPython the tracer cannot follow is said so, once. */
void recorder_follow_python(struct recorder *recorder, struct traced_process *process)
{
	uint32_t pid = process->record.pid;
	char error[512];
	int followed;

	if (!recorder->python)
		return;
	followed = python_tracer_add_process(recorder->python, &process->stages.python, (pid_t)pid,
					     error, sizeof(error));
	if (followed < 0)
		log_warning("process %u: %s", pid, error);
	if (!followed && process_has_ended((pid_t)pid))
		say_ended_unfollowed(recorder, process);
	if (followed <= 0 || process->python_followed_ns)
		return;
	process->python_followed_ns = monotonic_ns();
	note_unseen_window(recorder, process);
}

void recorder_release_stages(void *context, struct traced_process *process)
{
	struct recorder *recorder = context;

	call_builder_forget_process(recorder->builder, &process->stages.call_builder);
	if (recorder->python)
		python_tracer_forget_process(recorder->python, &process->stages.python);
	c10d_calls_forget_process(recorder->c10d, &process->stages.c10d);
}

void recorder_end_image(struct recorder *recorder, struct traced_process *process, uint64_t end_ns)
{
	uint32_t pid = process->record.pid;

	if (recorder->python)
		python_tracer_end_process(recorder->python, process->stages.python);
	/* Its c10d calls still waiting on their work end with the image, open. */
	if (c10d_calls_end(recorder->c10d, pid, end_ns) == -ENOMEM)
		log_warning("process %u: out of memory for its c10d calls", pid);
	recorder_release_stages(recorder, process);
}

struct traced_process *recorder_add_process(struct recorder *recorder, uint32_t pid,
					    uint32_t parent_pid)
{
	struct traced_process *process = process_registry_find(&recorder->processes, pid);
	char error[512];

	if (process)
		return process;
	process = process_registry_add(&recorder->processes, pid, parent_pid, monotonic_ns());
	if (!process)
		return NULL;
	if (probe_session_trace_process(recorder->session, pid))
		log_warning("cannot add process %u to the traced set", pid);
	recorder_refresh_process(recorder, process);
	/* Before NCCL's probes: their first calls already name their Python caller. */
	recorder_follow_python(recorder, process);
	if (library_discovery_scan_process(recorder->discovery, (pid_t)pid, error, sizeof(error)) <
	    0)
		log_debug("process %u: %s", pid, error);
	recorder_write_process(recorder, process);
	return process;
}

void recorder_end_process(struct recorder *recorder, uint32_t pid, int exit_code)
{
	struct traced_process *process = process_registry_find(&recorder->processes, pid);

	if (!process ||
	    !process_registry_end(&recorder->processes, process, exit_code, monotonic_ns()))
		return;
	/*
	 * Its exit came before any look found its interpreter (one in a
	 * libpython is mapped after the exec notice, and the rescans are
	 * 0.5 s apart): a short run of python ended unfollowed.
	 */
	say_ended_unfollowed(recorder, process);
	/* Its c10d calls still waiting on their work end with it, open. */
	if (c10d_calls_end(recorder->c10d, pid, process->record.end_ns) == -ENOMEM)
		log_warning("process %u: out of memory for its c10d calls", pid);
	library_discovery_forget_process(recorder->discovery, (pid_t)pid);
	recorder_write_process(recorder, process);
	work_requests_forget_process(recorder->work_requests, pid, process->record.end_ns,
				     recorder_emit_network_sample, recorder);
}

/*
 * The traced process a Python event comes from, in one look-up. One the
 * recorder never heard of (its fork and exec notices were lost: ring buffer
 * full) is introduced by its Python events, so the rest of them are
 * recorded. NULL: not traced.
 */
struct traced_process *recorder_adopt_process(struct recorder *recorder, uint32_t pid)
{
	struct traced_process *process = process_registry_find(&recorder->processes, pid);

	if (!process && recorder->python)
		process = recorder_add_process(recorder, pid, 0);
	return process;
}

/* Processes can end unseen (the exit notice was dropped): ask the kernel. */
void recorder_check_liveness(struct recorder *recorder)
{
	struct traced_process *process;

	for (size_t i = 0; (process = process_registry_next(&recorder->processes, &i));) {
		if (process->alive && kill((pid_t)process->record.pid, 0) && errno == ESRCH)
			recorder_end_process(recorder, process->record.pid, -1);
	}
}

void recorder_scan_libraries(struct recorder *recorder, uint32_t pid,
			     struct traced_process *process)
{
	char error[512];

	if (library_discovery_scan_process(recorder->discovery, (pid_t)pid, error, sizeof(error)) <
	    0)
		log_debug("process %u: %s", pid, error);
	if (process)
		recorder_follow_python(recorder, process);
}

void recorder_rescan_libraries(struct recorder *recorder)
{
	struct traced_process *process;

	for (size_t i = 0; (process = process_registry_next(&recorder->processes, &i));)
		if (process->alive)
			recorder_scan_libraries(recorder, process->record.pid, process);
}

void recorder_scan_changed_libraries(struct recorder *recorder)
{
	struct traced_process *process;

	if (!recorder->libraries_changed)
		return;
	recorder->libraries_changed = false;
	for (size_t i = 0; (process = process_registry_next(&recorder->processes, &i));) {
		if (process->libraries_changed && process->alive)
			recorder_scan_libraries(recorder, process->record.pid, process);
		process->libraries_changed = false;
	}
}

/* Processes the observer found since the last look (the agent's discovery). */
void recorder_add_discovered(struct recorder *recorder)
{
	const struct recorder_observer *observer = recorder->options->observer;
	pid_t found[256], added[256];
	size_t count, added_count = 0;

	if (!observer || !observer->discover)
		return;
	count = observer->discover(observer->context, found, sizeof(found) / sizeof(found[0]));
	for (size_t i = 0; i < count; i++) {
		struct traced_process *process =
			process_registry_find(&recorder->processes, (uint32_t)found[i]);

		if (process && process->alive)
			continue;
		added[added_count++] = found[i];
		if (process) { /* the pid was reused by a new process */
			recorder_end_image(recorder, process, monotonic_ns());
			process_registry_remove(&recorder->processes, (uint32_t)found[i]);
		}
		recorder_add_process(recorder, (uint32_t)found[i], 0);
	}
	/* A job found already stuck makes no call to see: read where it stands. */
	if (added_count)
		job_snapshot_log_arrival(added, added_count, false, recorder_emit_built, recorder);
}
