// SPDX-License-Identifier: MIT
/* The process registry hands every stage's slot of an entry back before the entry goes. */
#include <stdlib.h>

#include "record/process_registry.h"
#include "unit.h"

struct released {
	uint32_t pids[8];
	int count;
};

static void note_release(void *context, struct traced_process *process)
{
	struct released *released = context;

	if (released->count < 8)
		released->pids[released->count++] = process->record.pid;
	/* What a stage does with its slot: free what it made and empty it. */
	free(process->stages.call_builder);
	process->stages.call_builder = NULL;
}

UNIT_TEST(process_registry, removed_and_destroyed_entries_release_their_slots_once)
{
	struct released released = { 0 };
	struct process_registry registry;
	struct traced_process *process;

	process_registry_init(&registry);
	process_registry_set_release(&registry, note_release, &released);
	for (uint32_t pid = 10; pid < 13; pid++) {
		process = process_registry_add(&registry, pid, 1, 100);
		CU_ASSERT_PTR_NOT_NULL_FATAL(process);
		CU_ASSERT_PTR_NULL(process->stages.call_builder);
		/* A stage's state, as the call builder makes on a first call. */
		process->stages.call_builder = malloc(16);
	}
	/* One look-up finds the entry and, in it, each stage's state. */
	CU_ASSERT_PTR_NOT_NULL(process_registry_find(&registry, 11)->stages.call_builder);

	/* A pid reused by a new process: its old entry goes, with its slots. */
	process_registry_remove(&registry, 11);
	CU_ASSERT_EQUAL(released.count, 1);
	CU_ASSERT_EQUAL(released.pids[0], 11);
	CU_ASSERT_PTR_NULL(process_registry_find(&registry, 11));
	/* Ended processes keep their entry (and slots) until the registry goes. */
	CU_ASSERT_TRUE(
		process_registry_end(&registry, process_registry_find(&registry, 12), 0, 200));
	CU_ASSERT_EQUAL(released.count, 1);

	process_registry_destroy(&registry);
	CU_ASSERT_EQUAL(released.count, 3);
	CU_ASSERT_TRUE((released.pids[1] == 10 && released.pids[2] == 12) ||
		       (released.pids[1] == 12 && released.pids[2] == 10));
}
