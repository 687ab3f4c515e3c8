/* SPDX-License-Identifier: MIT */
/*
 * The one reader of another process's memory: process_vm_readv, which
 * neither stops nor writes to the process. Every failure is a sentence that
 * says what could not be read, in which process, and what to do about it.
 */
#ifndef TCHECK_REMOTE_MEMORY_H
#define TCHECK_REMOTE_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One piece of the process's memory to read into a local buffer. */
struct remote_span {
	uint64_t address;
	void *buffer;
	size_t size;
};

/*
 * Reads every span in one system call, all bytes or an error: a read that
 * stops at an unmapped page means a stale or wrong pointer, and half an
 * object is no object. 'what' names the object in the sentence ("struct
 * ncclComm", "48 bytes"). Returns 0 or a negative errno.
 */
int remote_memory_read_spans(pid_t pid, const struct remote_span *spans, size_t count,
			     const char *what, char *error, size_t error_size);

/* One span: 'size' bytes at 'address' (NULL is refused with a sentence). */
int remote_memory_read(pid_t pid, uint64_t address, void *buffer, size_t size, char *error,
		       size_t error_size);

/*
 * The readable start of 'size' bytes at 'address': *got says how many were
 * read before the first page that cannot be (a thread's stack ends where a
 * guard region begins, which glibc 2.42 installs with madvise inside one
 * mapping). An error only when not even the first byte can be read.
 */
int remote_memory_read_prefix(pid_t pid, uint64_t address, void *buffer, size_t size, size_t *got,
			      char *error, size_t error_size);

/* A pointer-sized value at 'address'; no sentence, for probing reads. */
int remote_memory_read_u64(pid_t pid, uint64_t address, uint64_t *value);

#endif /* TCHECK_REMOTE_MEMORY_H */
