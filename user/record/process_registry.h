/* SPDX-License-Identifier: MIT */
/*
 * The processes a recording traces, one entry per pid, owned by the
 * recorder: what /proc and the exec notice say of each (command, rank,
 * world size), whether it is alive, and how many were seen in all. The
 * process records of the trace are written from here.
 *
 * Each stage that keeps something per process keeps it in a slot of the
 * process's entry ('stages'), so the recorder's one look-up of a pid finds
 * the state of every stage. The registry frees none of it itself: it calls
 * the release hook the recorder set, which hands each slot back to its stage.
 */
#ifndef TCHECK_PROCESS_REGISTRY_H
#define TCHECK_PROCESS_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/u64_map.h"
#include "model/trace_records.h"
#include "tcheck/probe_abi.h"

struct c10d_process;
struct call_builder_process;
struct python_process;

/* The state of each stage for one process; NULL until the stage makes it. */
struct process_stage_slots {
	struct call_builder_process *call_builder; /* record/call_builder.h */
	struct python_process *python;		   /* python/python_tracer.h */
	struct c10d_process *c10d;		   /* record/c10d_calls.h */
};

struct traced_process {
	struct trace_process record;
	char *command; /* owned; NULL until /proc or the exec notice gave one */
	bool alive;
	struct process_stage_slots stages;
	/* When its image began (fork or exec seen while recording), 0 before the recording. */
	uint64_t image_start_ns;
	/* When its Python was first followed in this image, 0 not yet. */
	uint64_t python_followed_ns;
	/* The probes followed this image's Python from its start: the tracer must follow it too. */
	bool python_from_start;
	bool ended_unfollowed_said; /* it ended before the tracer could, and that was said */
	/* It mapped libraries since its last scan: scanned once the ring's batch is read. */
	bool libraries_changed;
};

/* Hands a process's stage slots back to their stages (the entry is going, or the image changed). */
typedef void (*process_registry_release_fn)(void *context, struct traced_process *process);

struct process_registry {
	struct u64_map processes; /* pid -> traced_process */
	unsigned alive_count;
	uint64_t seen_count; /* every process traced, alive or not */
	process_registry_release_fn release;
	void *release_context;
};

void process_registry_init(struct process_registry *registry);
/* Called for every entry removed or destroyed, before it is freed. */
void process_registry_set_release(struct process_registry *registry,
				  process_registry_release_fn release, void *context);
void process_registry_destroy(struct process_registry *registry);
struct traced_process *process_registry_find(const struct process_registry *registry, uint32_t pid);
/*
 * A new entry for 'pid', alive, first seen now; NULL when out of memory.
 * The pid must not be in the registry.
 */
struct traced_process *process_registry_add(struct process_registry *registry, uint32_t pid,
					    uint32_t parent_pid, uint64_t now_ns);
/* Forgets a pid that was reused by a new process. */
void process_registry_remove(struct process_registry *registry, uint32_t pid);
/* Marks a live process ended; false when it was not alive. */
bool process_registry_end(struct process_registry *registry, struct traced_process *process,
			  int exit_code, uint64_t now_ns);
/*
 * Reads what /proc says of the process: command, rank, world size.
 * 'command_before_exec' stands for the command of a process started by the
 * tool and not yet let through to its exec (NULL otherwise).
 */
void process_registry_refresh(struct traced_process *process, char *const *command_before_exec);
/* The arguments the exec notice carries, where they say more than /proc. */
void process_registry_take_exec_command(struct traced_process *process,
					const struct tcheck_process_record *notice);
/*
 * RANK, LOCAL_RANK and WORLD_SIZE as the exec notice read them from the new
 * image's environment, where it could: they hold when the process ended
 * before /proc could be read (a rank that dies at once).
 */
void process_registry_take_exec_environment(struct traced_process *process,
					    const struct tcheck_process_record *notice);
/* The trace record of the process (its command borrowed from it). */
void process_registry_record(const struct traced_process *process, struct trace_record *record);
/* Iteration over every process: for (size_t i = 0; (p = process_registry_next(r, &i));) */
struct traced_process *process_registry_next(const struct process_registry *registry,
					     size_t *position);

#endif /* TCHECK_PROCESS_REGISTRY_H */
