// SPDX-License-Identifier: MIT
/*
 * Calls a real NCCL library (loaded with dlopen) the ways that work without
 * a GPU, and logs every call it made with its arguments and return code:
 * the ground truth for tracing the real library's argument capture.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
	char internal[128];
} unique_id;

typedef int (*get_version_fn)(int *);
typedef int (*get_unique_id_fn)(unique_id *);
typedef int (*init_rank_fn)(void **, int, unique_id, int);
typedef int (*all_reduce_fn)(const void *, void *, size_t, int, int, void *, void *);
typedef int (*send_fn)(const void *, size_t, int, int, void *, void *);
typedef int (*reduce_fn)(const void *, void *, size_t, int, int, int, void *, void *);
typedef int (*group_fn)(void);

static uint64_t id_hash(const unique_id *id)
{
	uint64_t hash = 5381;

	for (size_t i = 0; i < sizeof(id->internal); i++)
		hash = ((hash << 5) + hash) ^ (uint64_t)(int64_t)(signed char)id->internal[i];
	return hash;
}

static void *need(void *library, const char *name)
{
	void *symbol = dlsym(library, name);

	if (!symbol) {
		fprintf(stderr, "nccl-real-probe: %s has no %s\n", "library", name);
		exit(2);
	}
	return symbol;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/usr/local/cuda/lib/libnccl.so.2";
	FILE *log = argc > 2 ? fopen(argv[2], "w") : stdout;
	int calls = argc > 3 ? atoi(argv[3]) : 10;
	long tid = syscall(SYS_gettid);
	void *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	void *comm = NULL;
	float buffer[16] = { 0 };
	unique_id id;
	int version = 0, result;

	if (!library || !log) {
		fprintf(stderr, "nccl-real-probe: cannot load %s: %s\n", path, dlerror());
		return 2;
	}
	/* The tracer attaches while we wait for the go file. */
	if (argc > 4)
		while (access(argv[4], F_OK) != 0)
			usleep(10000);
	result = ((get_version_fn)need(library, "ncclGetVersion"))(&version);
	result = ((get_unique_id_fn)need(library, "ncclGetUniqueId"))(&id);
	fprintf(log,
		"{\"name\":\"ncclGetUniqueId\",\"tid\":%ld,\"ret\":%d,\"uniqueId\":%" PRIu64 "}\n",
		tid, result, id_hash(&id));
	result = ((init_rank_fn)need(library, "ncclCommInitRank"))(&comm, 2, id, 1);
	fprintf(log,
		"{\"name\":\"ncclCommInitRank\",\"tid\":%ld,\"ret\":%d,\"nranks\":2,\"rank\":1,"
		"\"commId\":%" PRIu64 "}\n",
		tid, result, id_hash(&id));
	for (int i = 0; i < calls; i++) {
		size_t count = 100 + (size_t)i;
		int datatype = i % 10, op = i % 5;

		result = ((all_reduce_fn)need(library, "ncclAllReduce"))(
			buffer, buffer + 1, count, datatype, op, NULL, (void *)0x5150);
		fprintf(log,
			"{\"name\":\"ncclAllReduce\",\"tid\":%ld,\"ret\":%d,\"sendbuff\":%" PRIuPTR
			",\"recvbuff\":%" PRIuPTR ",\"count\":%zu,\"datatype\":%d,\"op\":%d,"
			"\"comm\":0,\"stream\":%d}\n",
			tid, result, (uintptr_t)buffer, (uintptr_t)(buffer + 1), count, datatype,
			op, 0x5150);
	}
	/* pncclReduce has eight arguments: two on the stack. */
	result = ((reduce_fn)need(library, "pncclReduce"))(buffer, buffer, 7, 7, 0, 3, NULL,
							   (void *)0x6160);
	fprintf(log,
		"{\"name\":\"ncclReduce\",\"tid\":%ld,\"ret\":%d,\"count\":7,\"datatype\":7,\"op\":"
		"0,"
		"\"root\":3,\"comm\":0,\"stream\":%d}\n",
		tid, result, 0x6160);
	result = ((group_fn)need(library, "ncclGroupStart"))();
	fprintf(log, "{\"name\":\"ncclGroupStart\",\"tid\":%ld,\"ret\":%d}\n", tid, result);
	result = ((send_fn)need(library, "ncclSend"))(buffer, 5, 2, 1, NULL, NULL);
	fprintf(log,
		"{\"name\":\"ncclSend\",\"tid\":%ld,\"ret\":%d,\"count\":5,\"datatype\":2,\"peer\":"
		"1,"
		"\"comm\":0,\"stream\":0}\n",
		tid, result);
	result = ((group_fn)need(library, "ncclGroupEnd"))();
	fprintf(log, "{\"name\":\"ncclGroupEnd\",\"tid\":%ld,\"ret\":%d}\n", tid, result);
	fclose(log);
	return 0;
}
