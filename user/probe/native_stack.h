/* SPDX-License-Identifier: MIT */
/*
 * Where a thread of another process is blocked, read without stopping it:
 * its stack pointer from /proc/PID/task/TID/syscall, the words of its stack
 * from there up with process_vm_readv, and each word that falls inside a
 * function the tracer knows (the NCCL API, c10d's and gloo's functions in
 * libtorch) taken as a return address. libtorch is built without frame
 * pointers, so the words are scanned rather than a frame chain followed: a
 * stale word may name a function the thread has left, which is why only
 * the functions of interest are matched.
 * Functions return 0 or a negative errno and fill error with a sentence.
 */
#ifndef TCHECK_NATIVE_STACK_H
#define TCHECK_NATIVE_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "probe/process_maps.h"

enum native_function_family {
	NATIVE_FUNCTION_NCCL, /* the NCCL API: ncclAllReduce */
	NATIVE_FUNCTION_C10D, /* c10d:: in libtorch: ProcessGroupGloo, Reducer, Work */
	NATIVE_FUNCTION_GLOO, /* gloo:: */
};

/* A known function of one file, by file offsets (as uprobes name places). */
struct native_function {
	uint64_t start; /* file offset of its first byte */
	uint64_t end;	/* exclusive */
	char *name;	/* readable: "ncclAllReduce", "c10d::ProcessGroupGloo::AsyncWork::wait" */
	enum native_function_family family;
};

/* The known functions of one file, sorted by start once finished. */
struct native_function_table {
	struct native_function *functions;
	size_t count;
	size_t capacity;
};

int native_function_table_add(struct native_function_table *table, uint64_t start, uint64_t size,
			      const char *name, enum native_function_family family);
void native_function_table_finish(struct native_function_table *table);
const struct native_function *native_function_table_find(const struct native_function_table *table,
							 uint64_t file_offset);
void native_function_table_free(struct native_function_table *table);

/*
 * The functions of interest an ELF file defines: the NCCL API (libnccl, or
 * a library it is linked into) and c10d:: and gloo:: functions. An empty
 * table is no error (most files hold none).
 */
int native_function_table_of_file(const char *path, struct native_function_table *table,
				  char *error, size_t error_size);

/*
 * "c10d::ProcessGroupGloo::AsyncWork::wait" from the mangled
 * "_ZN4c10d16ProcessGroupGloo9AsyncWork4waitEv": the nested name only,
 * templates and arguments left out; the mangled text when it is not a name
 * of that form.
 */
void native_readable_name(const char *mangled, char *text, size_t size);

/* The stack and program counter of a thread, from /proc/PID/task/TID/syscall. */
struct native_thread_registers {
	bool running;	  /* on a CPU at the moment of reading: no stack pointer given */
	long system_call; /* the call it is blocked in, -1 when none */
	uint64_t stack_pointer;
	uint64_t program_counter;
};

/* Parses one line of /proc/PID/task/TID/syscall; -EINVAL when it is not one. */
int native_thread_registers_parse(const char *text, struct native_thread_registers *registers);

/* A word of the stack that falls inside a known function. */
struct native_stack_hit {
	size_t word_index; /* 0 at the stack pointer */
	const struct native_function *function;
};

/*
 * Looks each word up in the files of maps that have a table
 * (tables[i] belongs to maps->files[i], NULL when that file has none) and
 * writes up to max hits, innermost (nearest the stack pointer) first;
 * returns how many it found in all.
 */
size_t native_stack_scan(const uint64_t *words, size_t count, const struct mapped_file_list *maps,
			 const struct native_function_table *const *tables,
			 struct native_stack_hit *hits, size_t max);

/*
 * Reads the registers of thread tid of pid and the words of its stack from
 * the stack pointer to the end of its mapping, at most max_bytes; *words is
 * allocated (free it). -EAGAIN when the thread is running (try again).
 */
int native_thread_stack_read(pid_t pid, pid_t tid, size_t max_bytes,
			     struct native_thread_registers *registers, uint64_t **words,
			     size_t *count, char *error, size_t error_size);

#endif /* TCHECK_NATIVE_STACK_H */
