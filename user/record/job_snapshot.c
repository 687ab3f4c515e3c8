// SPDX-License-Identifier: MIT
/* Reads one process of a running job: Python stacks, blocked calls, communicator counts. */
#include "record/job_snapshot_process.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "base/remote_memory.h"
#include "base/u64_map.h"
#include "model/nccl_api.h"
#include "probe/elf_symbols.h"
#include "probe/native_stack.h"
#include "probe/nccl_comm_layout.h"
#include "probe/process_info.h"
#include "probe/process_maps.h"

#define HITS_MAX 64
#define RUNNING_RETRIES 20
/* Bounds that a communicator's members hold; anything else is another object. */
#define COMMUNICATOR_RANKS_MAX 65536
#define OPERATION_COUNT_MAX (1ull << 40)

/* The tables of the files a snapshot met, shared by the processes that map them. */
struct snapshot_file_tables {
	char **paths;
	struct native_function_table **tables; /* NULL: the file holds no known function */
	size_t count;
	size_t capacity;
	size_t table_capacity;
	struct process_group_layouts group_layouts;
};

/* Says what a reading is about to do: a step that never finishes is named by it. */
struct step_reporter {
	snapshot_step_fn step;
	void *context;
};

static void step_say(const struct step_reporter *reporter, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

static void step_say(const struct step_reporter *reporter, const char *format, ...)
{
	char what[320];
	va_list arguments;

	if (!reporter->step)
		return;
	va_start(arguments, format);
	vsnprintf(what, sizeof(what), format, arguments);
	va_end(arguments);
	reporter->step(reporter->context, what);
}

static const struct native_function_table *file_table_for(struct snapshot_file_tables *cache,
							  const char *host_path,
							  const struct step_reporter *reporter)
{
	struct native_function_table *table;
	char error[256];

	for (size_t i = 0; i < cache->count; i++)
		if (strcmp(cache->paths[i], host_path) == 0)
			return cache->tables[i];
	step_say(reporter, "reading the symbols of %s", host_path);
	table = calloc(1, sizeof(*table));
	if (!table)
		return NULL;
	if (native_function_table_of_file(host_path, table, error, sizeof(error)) != 0 ||
	    table->count == 0) {
		native_function_table_free(table);
		free(table);
		table = NULL;
	}
	if (growable_array_room_for_one((void **)&cache->paths, cache->count, &cache->capacity,
					sizeof(*cache->paths)) ||
	    growable_array_room_for_one((void **)&cache->tables, cache->count,
					&cache->table_capacity, sizeof(*cache->tables))) {
		if (table)
			native_function_table_free(table);
		free(table);
		return NULL;
	}
	cache->paths[cache->count] = strdup(host_path);
	cache->tables[cache->count++] = table;
	return table;
}

struct snapshot_file_tables *snapshot_file_tables_new(void)
{
	return calloc(1, sizeof(struct snapshot_file_tables));
}

void snapshot_file_tables_free(struct snapshot_file_tables *cache)
{
	if (!cache)
		return;
	for (size_t i = 0; i < cache->count; i++) {
		free(cache->paths[i]);
		if (cache->tables[i])
			native_function_table_free(cache->tables[i]);
		free(cache->tables[i]);
	}
	free(cache->paths);
	free(cache->tables);
	process_group_layouts_free(&cache->group_layouts);
	free(cache);
}

/*
 * The collectives a c10d or gloo function name can be about, longest
 * first, so that "reduce_scatter" is not taken for "reduce". Point-to-
 * point last: gloo's collectives run over its own send and receive.
 */
static const char *const c10d_collectives[] = {
	"reduce_scatter", "allgather", "alltoall", "allreduce", "broadcast", "barrier",
	"gather",	  "scatter",   "reduce",   "send",	"recv",
};

/* Lower case without underscores: "AsyncAllreduceWork" and "all_reduce" meet as "allreduce". */
static void folded(const char *text, char *out, size_t size)
{
	size_t used = 0;

	for (; *text && used + 1 < size; text++)
		if (*text != '_')
			out[used++] =
				(char)(*text >= 'A' && *text <= 'Z' ? *text - 'A' + 'a' : *text);
	out[used] = '\0';
}

/* The rank of a collective word in c10d_collectives, or -1 when the name names none. */
static int collective_of_name(const char *name)
{
	char folded_name[256], folded_word[32];

	folded(name, folded_name, sizeof(folded_name));
	for (size_t i = 0; i < sizeof(c10d_collectives) / sizeof(c10d_collectives[0]); i++) {
		folded(c10d_collectives[i], folded_word, sizeof(folded_word));
		if (strstr(folded_name, folded_word))
			return (int)i;
	}
	return -1;
}

/* The innermost known function, and the collective the thread's calls are about. */
static void thread_describe_hits(struct snapshot_thread *thread,
				 const struct native_stack_hit *hits, size_t count)
{
	int best = -1;

	if (count == 0)
		return;
	snprintf(thread->native_function, sizeof(thread->native_function), "%s",
		 hits[0].function->name);
	snprintf(thread->family, sizeof(thread->family), "%s",
		 hits[0].function->family == NATIVE_FUNCTION_NCCL   ? "nccl"
		 : hits[0].function->family == NATIVE_FUNCTION_GLOO ? "gloo"
								    : "c10d");
	for (size_t i = 0; i < count; i++) {
		const struct native_function *function = hits[i].function;
		const struct nccl_function *api;
		int word;

		if (function->family == NATIVE_FUNCTION_NCCL) {
			api = nccl_function_by_name(function->name);
			if (api && (api->kind == NCCL_KIND_COLLECTIVE ||
				    api->kind == NCCL_KIND_POINT_TO_POINT)) {
				snprintf(thread->collective, sizeof(thread->collective), "%s",
					 function->name);
				return;
			}
			continue;
		}
		/* Collectives are process-group operations or gloo's algorithms; the
		 * DDP Reducer and the like only lead to them. */
		if (function->family != NATIVE_FUNCTION_GLOO &&
		    !strstr(function->name, "ProcessGroup"))
			continue;
		word = collective_of_name(function->name);
		if (word >= 0 && (best < 0 || word < best))
			best = word;
	}
	/*
	 * DDP's end of backward waits for its buckets' all-reduce. Where the
	 * gloo worker running it shows no exported frame (torch 2.14), the
	 * waiting Reducer is what names the collective.
	 */
	for (size_t i = 0; best < 0 && i < count; i++)
		if (strstr(hits[i].function->name, "Reducer::finalize_backward"))
			best = collective_of_name("allreduce");
	if (best >= 0)
		snprintf(thread->collective, sizeof(thread->collective), "c10d::%s",
			 c10d_collectives[best]);
}

/*
 * Whether a word found on a stack points at a struct ncclComm: where the
 * library's layout has NCCL's magics, they decide (a stale word whose
 * members happen to look like a rank and a width does not pass); the
 * members' ranges are checked either way.
 */
static bool plausible_communicator(const struct nccl_comm_values *values,
				   const struct nccl_comm_layout *layout)
{
	if (layout->start_magic.offset >= 0 &&
	    (!(values->valid & NCCL_COMM_HAS_MAGIC) || !values->magic_matches))
		return false;
	return (values->valid & NCCL_COMM_HAS_RANK) && (values->valid & NCCL_COMM_HAS_NRANKS) &&
	       (values->valid & NCCL_COMM_HAS_OP_COUNT) &&
	       (values->valid & NCCL_COMM_HAS_COMM_HASH) && values->nranks >= 1 &&
	       values->nranks <= COMMUNICATOR_RANKS_MAX && values->rank >= 0 &&
	       values->rank < values->nranks && values->comm_hash != 0 &&
	       values->op_count < OPERATION_COUNT_MAX;
}

/* Tries every word of a stack that may point at a struct ncclComm; keeps what reads as one. */
static int communicators_from_words(struct snapshot_process *process, const uint64_t *words,
				    size_t count, const struct mapped_file_list *maps,
				    const struct nccl_comm_layout *layout, struct u64_map *tried,
				    size_t *capacity)
{
	for (size_t i = 0; i < count; i++) {
		struct nccl_comm_values values;
		struct snapshot_communicator *communicator;
		uint64_t word = words[i];

		/* Heap pointers only: aligned, user space, not inside a mapped file. */
		if (word < 0x10000 || word >= 0x800000000000ull || (word & 7) ||
		    u64_map_get(tried, word) || mapped_file_list_find_address(maps, word, NULL))
			continue;
		if (u64_map_put(tried, word, (void *)1))
			return -ENOMEM;
		if (nccl_comm_read(process->pid, word, layout, &values, NULL, 0) != 0 ||
		    !plausible_communicator(&values, layout))
			continue;
		if (growable_array_room_for_one((void **)&process->communicators,
						process->communicator_count, capacity,
						sizeof(*process->communicators)))
			return -ENOMEM;
		communicator = &process->communicators[process->communicator_count++];
		communicator->pointer = word;
		communicator->comm_hash = values.comm_hash;
		communicator->rank = values.rank;
		communicator->nranks = values.nranks;
		communicator->op_count = values.op_count;
	}
	return 0;
}

/* The NCCL library a process maps and its struct ncclComm layout; false when there is none. */
static bool nccl_layout_of(struct snapshot_process *process, const struct mapped_file_list *maps,
			   struct nccl_comm_layout *layout)
{
	char error[256];

	for (size_t i = 0; i < maps->count; i++) {
		const struct mapped_file *file = &maps->files[i];

		if (!strchr(file->permissions, 'x') ||
		    elf_file_has_nccl(file->host_path, NULL, 0) <= 0)
			continue;
		if (nccl_comm_layout_find(file->host_path, layout, error, sizeof(error)) == 0)
			return true;
		snprintf(process->communicator_note, sizeof(process->communicator_note),
			 "the communicators of %s cannot be read: %s", file->path, error);
		return false;
	}
	return false;
}

static void thread_name_read(pid_t pid, pid_t tid, char *name, size_t size)
{
	char path[96];
	FILE *file;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	name[0] = '\0';
	file = fopen(path, "re");
	if (!file)
		return;
	if (fgets(name, (int)size, file))
		name[strcspn(name, "\n")] = '\0';
	fclose(file);
}

/*
 * The work a gloo worker thread runs is an object on its stack whose C++
 * type (an AsyncAllreduceWork in an anonymous namespace: no exported
 * symbol) names the collective.
 */
static int work_collective_of_words(pid_t pid, const uint64_t *words, size_t count,
				    const struct mapped_file_list *maps)
{
	int best = -1;

	for (size_t i = 0; i < count; i++) {
		char name[128];
		int word;

		if (remote_object_type_name(pid, words[i], maps, name, sizeof(name), NULL) != 0 ||
		    !strstr(name, "Work") || !strstr(name, "c10d"))
			continue;
		word = collective_of_name(name);
		if (word >= 0 && (best < 0 || word < best))
			best = word;
	}
	return best;
}

/* One thread: its name, its stack's known functions, and the communicators on it. */
static int thread_read(struct snapshot_process *process, struct snapshot_thread *thread,
		       const struct mapped_file_list *maps,
		       const struct native_function_table *const *tables,
		       const struct nccl_comm_layout *layout, struct u64_map *tried,
		       size_t *communicator_capacity, struct process_group_layouts *group_layouts,
		       size_t *group_capacity, const struct step_reporter *reporter)
{
	struct native_thread_registers registers;
	struct native_stack_hit hits[HITS_MAX];
	uint64_t *words = NULL;
	size_t count = 0, found;
	int err = -EAGAIN;

	step_say(reporter, "reading thread %d's stack", (int)thread->tid);
	thread_name_read(process->pid, thread->tid, thread->name, sizeof(thread->name));
	/* A thread on a CPU gives no stack pointer: it is read again when it stops. */
	for (int attempt = 0; attempt < RUNNING_RETRIES && err == -EAGAIN; attempt++) {
		err = native_thread_stack_read(process->pid, thread->tid, JOB_SNAPSHOT_STACK_BYTES,
					       &registers, &words, &count, thread->native_note,
					       sizeof(thread->native_note));
		if (err == -EAGAIN)
			nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	if (err)
		return 0;
	found = native_stack_scan(words, count, maps, tables, hits, HITS_MAX);
	thread_describe_hits(thread, hits, found < HITS_MAX ? found : HITS_MAX);
	if (found && !thread->collective[0] && strstr(thread->native_function, "Work")) {
		int word = work_collective_of_words(process->pid, words, count, maps);

		if (word >= 0)
			snprintf(thread->collective, sizeof(thread->collective), "c10d::%s",
				 c10d_collectives[word]);
	}
	err = layout ? communicators_from_words(process, words, count, maps, layout, tried,
						communicator_capacity)
		     : 0;
	if (!err && process->maps_collectives)
		err = process_groups_from_words(
			process->pid, words, count, maps, group_layouts, &process->process_groups,
			&process->process_group_count, group_capacity, process->process_group_note,
			sizeof(process->process_group_note));
	free(words);
	return err;
}

static int threads_read(struct snapshot_process *process, struct snapshot_file_tables *cache,
			const struct step_reporter *reporter, char *error, size_t error_size)
{
	const struct native_function_table **tables = NULL;
	struct nccl_comm_layout layout;
	bool has_layout;
	struct mapped_file_list maps;
	struct u64_map tried;
	size_t capacity = 0, communicator_capacity = 0, group_capacity = 0;
	struct dirent *entry;
	char path[64];
	DIR *directory;
	int err;

	err = process_maps_read(process->pid, &maps, error, error_size);
	if (err)
		return err;
	tables = calloc(maps.count ? maps.count : 1, sizeof(*tables));
	if (!tables) {
		mapped_file_list_free(&maps);
		return error_fail(error, error_size, ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < maps.count; i++)
		if (strchr(maps.files[i].permissions, 'x')) {
			tables[i] = file_table_for(cache, maps.files[i].host_path, reporter);
			process->maps_collectives |= tables[i] != NULL;
		}
	has_layout = nccl_layout_of(process, &maps, &layout);
	u64_map_init(&tried);
	snprintf(path, sizeof(path), "/proc/%d/task", (int)process->pid);
	directory = opendir(path);
	if (!directory)
		err = error_fail(error, error_size, errno, "cannot list the threads of pid %d: %s",
				 (int)process->pid, strerror(errno));
	while (!err && directory && (entry = readdir(directory))) {
		struct snapshot_thread *thread;

		if (entry->d_name[0] < '0' || entry->d_name[0] > '9')
			continue;
		if (growable_array_room_for_one((void **)&process->threads, process->thread_count,
						&capacity, sizeof(*process->threads))) {
			err = -ENOMEM;
			break;
		}
		thread = &process->threads[process->thread_count++];
		memset(thread, 0, sizeof(*thread));
		thread->tid = (pid_t)atoi(entry->d_name);
		err = thread_read(process, thread, &maps, tables, has_layout ? &layout : NULL,
				  &tried, &communicator_capacity, &cache->group_layouts,
				  &group_capacity, reporter);
	}
	if (directory)
		closedir(directory);
	u64_map_free(&tried);
	free(tables);
	mapped_file_list_free(&maps);
	if (err == -ENOMEM)
		return error_fail(error, error_size, ENOMEM, "out of memory reading pid %d",
				  (int)process->pid);
	return err;
}

static void python_read(struct snapshot_process *process)
{
	struct python_runtime runtime;
	struct python_layout layout;
	char error[sizeof(process->python_note)];

	if (python_runtime_find(process->pid, &runtime, error, sizeof(error)) != 0 ||
	    python_layout_for(&runtime, &layout, error, sizeof(error)) != 0 ||
	    python_stacks_read(process->pid, &layout, &process->python, error, sizeof(error)) !=
		    0) {
		snprintf(process->python_note, sizeof(process->python_note), "%s", error);
		return;
	}
	for (size_t i = 0; i < process->thread_count; i++)
		for (size_t j = 0; j < process->python.count; j++)
			if (process->python.threads[j].native_id == process->threads[i].tid)
				process->threads[i].python = &process->python.threads[j];
}

int snapshot_process_read(struct snapshot_process *process, struct snapshot_file_tables *cache,
			  snapshot_step_fn step, void *context, char *error, size_t error_size)
{
	const struct step_reporter reporter = { step, context };
	struct process_info info;
	int err;

	step_say(&reporter, "reading its command line and environment");
	err = process_info_read(process->pid, &info, error, error_size);
	if (err)
		return err;
	process->rank = info.rank;
	snprintf(process->command, sizeof(process->command), "%s", info.command);
	process_info_free(&info);
	err = threads_read(process, cache, &reporter, error, error_size);
	if (err)
		return err;
	step_say(&reporter, "reading its Python stacks");
	python_read(process);
	if (process->maps_collectives && !process->communicator_count &&
	    !process->process_group_count && !process->process_group_note[0])
		snprintf(process->process_group_note, sizeof(process->process_group_note),
			 "no c10d process group was found on the stacks of pid %d's threads",
			 (int)process->pid);
	/*
	 * A spawned worker has no RANK: the widest c10d group it holds (the
	 * world's) gives its rank. A communicator's rank is the job's own word,
	 * above both; RANK is the launcher's.
	 */
	for (size_t i = 0, widest = 0; process->rank < 0 && i < process->process_group_count; i++)
		if (process->process_groups[i].rank >= 0 &&
		    (size_t)process->process_groups[i].size > widest) {
			widest = (size_t)process->process_groups[i].size;
			process->rank = process->process_groups[i].rank;
		}
	for (size_t i = 0, widest = 0; i < process->communicator_count; i++)
		if ((size_t)process->communicators[i].nranks > widest) {
			widest = (size_t)process->communicators[i].nranks;
			process->rank = process->communicators[i].rank;
		}
	return 0;
}

void snapshot_process_free(struct snapshot_process *process)
{
	python_stacks_free(&process->python);
	free(process->threads);
	free(process->communicators);
	free(process->process_groups);
	process->threads = NULL;
	process->communicators = NULL;
	process->process_groups = NULL;
	process->thread_count = process->communicator_count = process->process_group_count = 0;
}
