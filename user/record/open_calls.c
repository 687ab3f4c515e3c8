// SPDX-License-Identifier: MIT
/* The library calls in flight, read from the open_calls map as call records flagged open. */
#include "record/open_calls.h"

#include <bpf/bpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The process a thread belongs to, from /proc; 0 when the thread has gone. */
static uint32_t process_of_thread(uint32_t tid)
{
	char path[64], line[256];
	unsigned pid = 0;
	FILE *status;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	status = fopen(path, "re");
	if (!status)
		return 0;
	while (fgets(line, sizeof(line), status))
		if (sscanf(line, "Tgid: %u", &pid) == 1)
			break;
	fclose(status);
	return pid;
}

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

int open_calls_read(int map_fd, uint64_t now_ns, open_call_fn visit, void *context)
{
	struct tcheck_thread_calls *calls = malloc(sizeof(*calls));
	struct tcheck_call_record record;
	uint32_t key, next;
	uint32_t *previous = NULL;
	int handed = 0;

	if (!calls)
		return -ENOMEM;
	while (bpf_map_get_next_key(map_fd, previous, &next) == 0) {
		uint32_t pid;

		key = next;
		previous = &key;
		/* Gone since (its exit probe reported its calls), or emptied: nothing to say. */
		if (bpf_map_lookup_elem(map_fd, &key, calls) || calls->depth == 0 ||
		    !(pid = process_of_thread(key)))
			continue;
		for (uint32_t depth = 0; depth < calls->depth && depth < TCHECK_MAX_NESTING;
		     depth++) {
			/* A poll (ncclCommGetAsyncError) is in flight all the time: no news. */
			if (calls->frames[depth].cookie & TCHECK_COOKIE_ONLY_FAILURES)
				continue;
			open_call_record(&calls->frames[depth], pid, key, depth, now_ns, &record);
			handed++;
			if (visit(context, &record)) {
				free(calls);
				return handed;
			}
		}
	}
	free(calls);
	return handed;
}
