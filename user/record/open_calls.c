// SPDX-License-Identifier: MIT
/* The library calls in flight, from the open_calls task storage, as call records flagged open. */
#include "record/open_calls.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/growable_array.h"

void open_call_record(const struct tcheck_open_call *call, uint32_t pid, uint32_t tid,
		      uint32_t depth, uint64_t now_ns, struct tcheck_call_record *record)
{
	memset(record, 0, sizeof(*record));
	record->header.type = TCHECK_RECORD_CALL;
	record->header.pid = pid;
	record->header.tid = tid;
	record->header.timestamp_ns = call->entry_ns;
	record->return_ns = now_ns;
	memcpy(record->args, call->args, sizeof(record->args));
	record->function_index = (uint32_t)(call->cookie & TCHECK_COOKIE_FUNCTION_MASK);
	record->depth = depth;
	record->flags = TCHECK_CALL_OPEN | call->py_flags | call->call_flags;
	record->comm_op_count = call->comm_op_count;
	if (call->cookie & TCHECK_COOKIE_BLOB_FROM_STACK) {
		memcpy(record->blob, call->blob, sizeof(record->blob));
		record->flags |= TCHECK_CALL_HAS_BLOB;
	}
	record->py_depth = call->py_depth;
	memcpy(record->py_code, call->py_code, sizeof(record->py_code));
	memcpy(record->py_name, call->py_name, sizeof(record->py_name));
}

/* What the iterator writes per thread: its ids, then its open calls. */
struct thread_open_calls {
	uint32_t pid;
	uint32_t tid;
	struct tcheck_thread_calls calls;
};

/* Reads the whole of an iterator's output; *size is its length. NULL on failure (errno). */
static uint8_t *read_iterator(int iterator_fd, size_t *size)
{
	size_t capacity = 64 * 1024, used = 0;
	uint8_t *buffer = malloc(capacity);
	int fd = bpf_iter_create(iterator_fd);
	ssize_t got = 0;

	if (!buffer || fd < 0) {
		int error = fd < 0 ? -fd : ENOMEM;

		free(buffer);
		if (fd >= 0)
			close(fd);
		errno = error;
		return NULL;
	}
	for (;;) {
		if (growable_array_reserve((void **)&buffer, used, &capacity, 1, 1))
			break;
		got = read(fd, buffer + used, capacity - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	if (got < 0 || used == capacity) {
		int error = got < 0 ? errno : ENOMEM;

		free(buffer);
		errno = error;
		return NULL;
	}
	*size = used;
	return buffer;
}

int open_calls_read(int iterator_fd, uint64_t now_ns, open_call_fn visit, void *context)
{
	struct tcheck_call_record record;
	size_t size = 0;
	uint8_t *buffer = read_iterator(iterator_fd, &size);
	int handed = 0;

	if (!buffer)
		return -errno;
	for (size_t at = 0; at + sizeof(struct thread_open_calls) <= size;
	     at += sizeof(struct thread_open_calls)) {
		struct thread_open_calls thread;

		memcpy(&thread, buffer + at, sizeof(thread));
		for (uint32_t depth = 0; depth < thread.calls.depth && depth < TCHECK_MAX_NESTING;
		     depth++) {
			/* A poll (ncclCommGetAsyncError) is in flight all the time: no news. */
			if (thread.calls.frames[depth].cookie & TCHECK_COOKIE_ONLY_FAILURES)
				continue;
			open_call_record(&thread.calls.frames[depth], thread.pid, thread.tid, depth,
					 now_ns, &record);
			handed++;
			if (visit(context, &record)) {
				free(buffer);
				return handed;
			}
		}
	}
	free(buffer);
	return handed;
}
