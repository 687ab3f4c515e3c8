// SPDX-License-Identifier: MIT
/*
 * Where a thread is blocked natively: the known functions of a file, the
 * registers /proc gives for a thread, and the scan of its stack words.
 */
#include "probe/native_stack.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "base/remote_memory.h"
#include "model/nccl_api.h"
#include "probe/elf_symbol_lookup.h"
#include "probe/elf_symbols.h"

/* The mangled prefixes of c10d's and gloo's functions, const members included. */
static const char *const torch_prefixes[] = { "_ZN4c10d", "_ZNK4c10d", "_ZN4gloo", "_ZNK4gloo" };

int native_function_table_add(struct native_function_table *table, uint64_t start, uint64_t size,
			      const char *name, enum native_function_family family)
{
	struct native_function *function;
	char *copy = strdup(name);

	if (!copy || growable_array_room_for_one((void **)&table->functions, table->count,
						 &table->capacity, sizeof(*table->functions))) {
		free(copy);
		return -ENOMEM;
	}
	function = &table->functions[table->count++];
	function->start = start;
	function->end = start + size;
	function->name = copy;
	function->family = family;
	return 0;
}

static int compare_functions(const void *left, const void *right)
{
	const struct native_function *a = left, *b = right;

	return a->start < b->start ? -1 : a->start > b->start;
}

void native_function_table_finish(struct native_function_table *table)
{
	if (table->count)
		qsort(table->functions, table->count, sizeof(*table->functions), compare_functions);
}

const struct native_function *native_function_table_find(const struct native_function_table *table,
							 uint64_t file_offset)
{
	size_t low = 0, high = table->count;

	/* The last function starting at or before the offset; aliases share a start. */
	while (low < high) {
		size_t middle = low + (high - low) / 2;

		if (table->functions[middle].start <= file_offset)
			low = middle + 1;
		else
			high = middle;
	}
	if (low == 0)
		return NULL;
	/* A return address lies after the call: strictly inside the function. */
	if (file_offset > table->functions[low - 1].start &&
	    file_offset < table->functions[low - 1].end)
		return &table->functions[low - 1];
	return NULL;
}

void native_function_table_free(struct native_function_table *table)
{
	for (size_t i = 0; i < table->count; i++)
		free(table->functions[i].name);
	free(table->functions);
	memset(table, 0, sizeof(*table));
}

/* Skips a <template-args> "I ... E" with nesting; returns past its E, or NULL. */
static const char *skip_template_arguments(const char *cursor)
{
	int depth = 0;

	do {
		if (*cursor == 'I')
			depth++;
		else if (*cursor == 'E')
			depth--;
		else if (*cursor == '\0')
			return NULL;
		cursor++;
	} while (depth > 0);
	return cursor;
}

void native_readable_name(const char *mangled, char *text, size_t size)
{
	const char *cursor = mangled;
	size_t used = 0;
	bool nested;

	snprintf(text, size, "%s", mangled);
	if (strncmp(cursor, "_Z", 2) != 0)
		return;
	cursor += 2;
	nested = *cursor == 'N';
	if (nested) {
		cursor++;
		while (*cursor == 'K' || *cursor == 'V' || *cursor == 'r')
			cursor++;
	}
	while (*cursor && *cursor != 'E') {
		char *end;
		unsigned long length;

		if (*cursor == 'I') {
			cursor = skip_template_arguments(cursor);
			if (!cursor)
				break;
			continue;
		}
		if (*cursor == 'B') { /* an ABI tag: B5cxx11 */
			length = strtoul(cursor + 1, &end, 10);
			cursor = end + length;
			continue;
		}
		if (*cursor == 'C' ||
		    *cursor == 'D') { /* constructor, destructor: the class again */
			break;
		}
		if (!isdigit((unsigned char)*cursor))
			break;
		length = strtoul(cursor, &end, 10);
		if (length == 0 || strnlen(end, length) < length)
			break;
		if (used + length + 3 >= size)
			break;
		if (used) {
			memcpy(text + used, "::", 2);
			used += 2;
		}
		memcpy(text + used, end, length);
		used += length;
		text[used] = '\0';
		cursor = end + length;
		if (!nested)
			break;
	}
	if (used == 0)
		snprintf(text, size, "%s", mangled);
}

static int add_torch_function(void *context, const char *name,
			      const struct elf_symbol_location *location)
{
	struct native_function_table *table = context;
	char readable[256];
	enum native_function_family family;

	native_readable_name(name, readable, sizeof(readable));
	family = strncmp(readable, "gloo::", 6) == 0 ? NATIVE_FUNCTION_GLOO : NATIVE_FUNCTION_C10D;
	return native_function_table_add(table, location->file_offset, location->size, readable,
					 family);
}

static bool is_torch_library(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libtorch", 8) == 0;
}

int native_function_table_of_file(const char *path, struct native_function_table *table,
				  char *error, size_t error_size)
{
	struct nccl_library *library = NULL;
	int err = 0;

	if (elf_file_has_nccl(path, NULL, 0) > 0 &&
	    nccl_library_scan(path, &library, error, error_size) == 0) {
		for (size_t i = 0; i < library->symbol_count && !err; i++) {
			const struct nccl_symbol *symbol = &library->symbols[i];

			err = native_function_table_add(
				table, symbol->file_offset, symbol->size,
				nccl_function_at((size_t)symbol->function_index)->name,
				NATIVE_FUNCTION_NCCL);
		}
		nccl_library_free(library);
	}
	if (!err && is_torch_library(path))
		err = elf_functions_with_prefixes(
			path, torch_prefixes, sizeof(torch_prefixes) / sizeof(torch_prefixes[0]),
			add_torch_function, table, error, error_size);
	if (err == -ENOMEM)
		return error_fail(error, error_size, ENOMEM, "out of memory naming %s", path);
	native_function_table_finish(table);
	return err == -ENODATA ? 0 : err;
}

int native_thread_registers_parse(const char *text, struct native_thread_registers *registers)
{
	unsigned long long words[8];
	long number;
	int fields;

	memset(registers, 0, sizeof(*registers));
	registers->system_call = -1;
	if (strncmp(text, "running", 7) == 0) {
		registers->running = true;
		return 0;
	}
	fields =
		sscanf(text, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &number, &words[0],
		       &words[1], &words[2], &words[3], &words[4], &words[5], &words[6], &words[7]);
	/* "-1 SP PC" outside a system call; "NR ARG1..ARG6 SP PC" inside one. */
	if (fields == 3 && number < 0) {
		registers->stack_pointer = words[0];
		registers->program_counter = words[1];
		return 0;
	}
	if (fields == 9 && number >= 0) {
		registers->system_call = number;
		registers->stack_pointer = words[6];
		registers->program_counter = words[7];
		return 0;
	}
	return -EINVAL;
}

size_t native_stack_scan(const uint64_t *words, size_t count, const struct mapped_file_list *maps,
			 const struct native_function_table *const *tables,
			 struct native_stack_hit *hits, size_t max)
{
	size_t found = 0;

	for (size_t i = 0; i < count; i++) {
		const struct mapped_file *file;
		const struct native_function *function;
		uint64_t file_offset;

		file = mapped_file_list_find_address(maps, words[i], &file_offset);
		if (!file || !tables[file - maps->files])
			continue;
		function = native_function_table_find(tables[file - maps->files], file_offset);
		if (!function)
			continue;
		if (found < max) {
			hits[found].word_index = i;
			hits[found].function = function;
		}
		found++;
	}
	return found;
}

/* The end of the mapping of pid that holds address, from /proc/PID/maps; 0 when none does. */
static uint64_t mapping_end_of(pid_t pid, uint64_t address)
{
	char path[64], line[512];
	uint64_t end = 0;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return 0;
	while (fgets(line, sizeof(line), maps)) {
		unsigned long long start, stop;

		if (sscanf(line, "%llx-%llx", &start, &stop) == 2 && address >= start &&
		    address < stop) {
			end = stop;
			break;
		}
	}
	fclose(maps);
	return end;
}

static int registers_read(pid_t pid, pid_t tid, struct native_thread_registers *registers,
			  char *error, size_t error_size)
{
	char path[96], line[512];
	FILE *file;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	file = fopen(path, "re");
	if (!file) {
		err = errno;
		return error_fail(error, error_size, err,
				  "cannot read %s: %s (reading another process's registers needs "
				  "root or CAP_SYS_PTRACE)",
				  path, strerror(err));
	}
	if (!fgets(line, sizeof(line), file))
		line[0] = '\0';
	fclose(file);
	if (native_thread_registers_parse(line, registers) != 0)
		return error_fail(error, error_size, EINVAL, "%s holds \"%s\", not registers", path,
				  line);
	if (registers->running)
		return error_fail(error, error_size, EAGAIN,
				  "thread %d of pid %d was running on a CPU when read: it is not "
				  "blocked",
				  (int)tid, (int)pid);
	return 0;
}

int native_thread_stack_read(pid_t pid, pid_t tid, size_t max_bytes,
			     struct native_thread_registers *registers, uint64_t **words,
			     size_t *count, char *error, size_t error_size)
{
	uint64_t end, bytes;
	size_t got;
	int err;

	*words = NULL;
	*count = 0;
	err = registers_read(pid, tid, registers, error, error_size);
	if (err)
		return err;
	end = mapping_end_of(pid, registers->stack_pointer);
	if (end <= registers->stack_pointer)
		return error_fail(error, error_size, EFAULT,
				  "the stack pointer 0x%" PRIx64 " of thread %d of pid %d lies in "
				  "no mapping",
				  registers->stack_pointer, (int)tid, (int)pid);
	bytes = end - registers->stack_pointer;
	if (bytes > max_bytes)
		bytes = max_bytes;
	bytes &= ~(uint64_t)7;
	*words = malloc(bytes ? bytes : 8);
	if (!*words)
		return error_fail(error, error_size, ENOMEM, "out of memory reading a stack");
	/* The stack ends at the guard of the thread above it, which maps may not show. */
	err = remote_memory_read_prefix(pid, registers->stack_pointer, *words, bytes, &got, error,
					error_size);
	if (err) {
		free(*words);
		*words = NULL;
		return err;
	}
	*count = got / 8;
	return 0;
}
