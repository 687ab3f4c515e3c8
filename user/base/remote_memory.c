// SPDX-License-Identifier: MIT
/* Reads another process's memory with process_vm_readv, with one set of sentences. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "base/error_message.h"
#include "base/remote_memory.h"

/* At most this many spans in one call: more than any reader here needs. */
#define REMOTE_SPANS_MAX 16

static int read_failure(pid_t pid, uint64_t address, const char *what, int err, char *error,
			size_t error_size)
{
	if (err == ESRCH)
		return error_fail(error, error_size, err, "no process with pid %d", (int)pid);
	if (err == EPERM || err == EACCES)
		return error_fail(error, error_size, EPERM,
				  "cannot read the memory of pid %d: permission denied; run "
				  "tcheck-bpf as root (or with CAP_SYS_PTRACE)",
				  (int)pid);
	if (err == EFAULT)
		return error_fail(error, error_size, err,
				  "cannot read %s of pid %d at 0x%llx: the address is not mapped; "
				  "the pointer is stale or wrong",
				  what, (int)pid, (unsigned long long)address);
	return error_fail(error, error_size, err, "cannot read %s of pid %d at 0x%llx: %s", what,
			  (int)pid, (unsigned long long)address, strerror(err));
}

int remote_memory_read_spans(pid_t pid, const struct remote_span *spans, size_t count,
			     const char *what, char *error, size_t error_size)
{
	struct iovec local[REMOTE_SPANS_MAX], remote[REMOTE_SPANS_MAX];
	size_t wanted = 0;
	ssize_t got;

	if (count == 0 || count > REMOTE_SPANS_MAX)
		return error_fail(error, error_size, EINVAL,
				  "cannot read %s of pid %d in %zu pieces (1 to %d)", what,
				  (int)pid, count, REMOTE_SPANS_MAX);
	for (size_t i = 0; i < count; i++) {
		if (spans[i].address == 0)
			return error_fail(error, error_size, EFAULT,
					  "cannot read %s of pid %d at address 0: the pointer "
					  "is NULL",
					  what, (int)pid);
		local[i].iov_base = spans[i].buffer;
		local[i].iov_len = spans[i].size;
		remote[i].iov_base = (void *)(uintptr_t)spans[i].address;
		remote[i].iov_len = spans[i].size;
		wanted += spans[i].size;
	}
	got = process_vm_readv(pid, local, (unsigned long)count, remote, (unsigned long)count, 0);
	if (got < 0)
		return read_failure(pid, spans[0].address, what, errno, error, error_size);
	/* The read stops at the first unmapped page: half an object is no object. */
	if ((size_t)got != wanted)
		return error_fail(error, error_size, EFAULT,
				  "cannot read %s of pid %d at 0x%llx: only %zd of %zu bytes are "
				  "mapped; the pointer is stale or wrong",
				  what, (int)pid, (unsigned long long)spans[0].address, got,
				  wanted);
	return 0;
}

int remote_memory_read(pid_t pid, uint64_t address, void *buffer, size_t size, char *error,
		       size_t error_size)
{
	struct remote_span span = { .address = address, .buffer = buffer, .size = size };
	char what[32];

	snprintf(what, sizeof(what), "%zu bytes", size);
	return remote_memory_read_spans(pid, &span, 1, what, error, error_size);
}

int remote_memory_read_prefix(pid_t pid, uint64_t address, void *buffer, size_t size, size_t *got,
			      char *error, size_t error_size)
{
	struct iovec local = { .iov_base = buffer, .iov_len = size };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)address, .iov_len = size };
	ssize_t read_bytes;

	*got = 0;
	if (address == 0)
		return error_fail(error, error_size, EFAULT,
				  "cannot read pid %d at address 0: the pointer is NULL", (int)pid);
	read_bytes = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (read_bytes < 0) {
		char what[32];

		snprintf(what, sizeof(what), "%zu bytes", size);
		return read_failure(pid, address, what, errno, error, error_size);
	}
	*got = (size_t)read_bytes;
	return 0;
}

int remote_memory_read_u64(pid_t pid, uint64_t address, uint64_t *value)
{
	return remote_memory_read(pid, address, value, sizeof(*value), NULL, 0);
}
