// SPDX-License-Identifier: MIT
/* Loads libnccl.so.2 late with dlopen(), runs all-reduces on a 1-rank comm, logs ground truth. */
#include <dlfcn.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"
#include "rank_launcher.h"

#define ELEMENT_COUNT 1024

/*
 * Every entry point is looked up at run time: the program must not link against the library,
 * or the library would be mapped at start and a tracer could not watch it arrive.
 */
struct nccl_library {
	__typeof__(ncclGetUniqueId) *get_unique_id;
	__typeof__(ncclCommInitRank) *comm_init_rank;
	__typeof__(ncclAllReduce) *all_reduce;
	__typeof__(ncclCommDestroy) *comm_destroy;
	__typeof__(ncclGetErrorString) *get_error_string;
	__typeof__(doubleStreamCreate) *stream_create;
	__typeof__(doubleStreamSynchronize) *stream_synchronize;
	__typeof__(doubleStreamDestroy) *stream_destroy;
	__typeof__(doubleCommGetHash) *comm_get_hash;
};

struct options {
	long delay_ms;
	long settle_ms;
	long calls;
	const char *library;
	const char *log_path;
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nccl-dlopen [--delay-ms D] [--settle-ms S] [--lib PATH] [--calls K]\n"
		"                   [--log PATH]\n"
		"Sleeps D ms (default 500), dlopen()s PATH (default: lib/libnccl.so.2 next to\n"
		"this program), waits S ms (default 0, as a framework's set-up would), makes a\n"
		"1-rank communicator, runs K all-reduces (default 20) and writes every NCCL\n"
		"call made to PATH as JSON lines when --log is given.\n");
}

static int fail(const char *what, const char *detail)
{
	fprintf(stderr, "nccl-dlopen: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	return 1;
}

static int parse_options(int argc, char **argv, struct options *options)
{
	const struct program_option table[] = {
		{ "delay-ms", PROGRAM_OPTION_LONG, &options->delay_ms, 0, INT_MAX },
		{ "settle-ms", PROGRAM_OPTION_LONG, &options->settle_ms, 0, INT_MAX },
		{ "lib", PROGRAM_OPTION_TEXT, &options->library },
		{ "calls", PROGRAM_OPTION_LONG, &options->calls, 0, INT_MAX },
		{ "log", PROGRAM_OPTION_TEXT, &options->log_path },
	};

	*options = (struct options){ .delay_ms = 500, .calls = 20 };
	return program_options_parse("nccl-dlopen", argc, argv, table,
				     sizeof(table) / sizeof(table[0]), usage);
}

/* "lib/libnccl.so.2" in the directory of this executable, where the build puts the double. */
static int default_library(char *path, size_t size)
{
	char executable[PATH_MAX];

	if (own_executable(executable, sizeof(executable)) < 0)
		return -1;
	snprintf(path, size, "%s/lib/libnccl.so.2", dirname(executable));
	return 0;
}

/* POSIX's way to store a dlsym() result into a function pointer. */
static int resolve(void *handle, const char *name, void **function)
{
	*function = dlsym(handle, name);
	return *function ? 0 : fail("symbol not found in the library", name);
}

static int load_library(const char *path, struct nccl_library *nccl)
{
	void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!handle)
		return fail("cannot load the library", dlerror());
	/* The test helpers are optional: the real library has none (NULL stream, no hash). */
	*(void **)&nccl->stream_create = dlsym(handle, "doubleStreamCreate");
	*(void **)&nccl->stream_synchronize = dlsym(handle, "doubleStreamSynchronize");
	*(void **)&nccl->stream_destroy = dlsym(handle, "doubleStreamDestroy");
	*(void **)&nccl->comm_get_hash = dlsym(handle, "doubleCommGetHash");
	return resolve(handle, "ncclGetUniqueId", (void **)&nccl->get_unique_id) ||
	       resolve(handle, "ncclCommInitRank", (void **)&nccl->comm_init_rank) ||
	       resolve(handle, "ncclAllReduce", (void **)&nccl->all_reduce) ||
	       resolve(handle, "ncclCommDestroy", (void **)&nccl->comm_destroy) ||
	       resolve(handle, "ncclGetErrorString", (void **)&nccl->get_error_string);
}

static int run(const struct nccl_library *nccl, const struct options *options,
	       struct ground_truth_log *log)
{
	static float send[ELEMENT_COUNT], received[ELEMENT_COUNT];
	cudaStream_t stream = NULL;
	ncclComm_t comm = NULL;
	uint64_t comm_hash = 0;
	ncclUniqueId id;
	ncclResult_t ret;

	ret = nccl->get_unique_id(&id);
	if (log->file)
		ground_truth_unique_id(log, ret, &id);
	if (ret != ncclSuccess)
		return fail("ncclGetUniqueId failed", nccl->get_error_string(ret));
	ret = nccl->comm_init_rank(&comm, 1, id, 0);
	if (comm && nccl->comm_get_hash)
		nccl->comm_get_hash(comm, &comm_hash);
	if (log->file)
		ground_truth_init_rank(log, ret, &comm, 1, &id, 0, false, NULL, comm_hash);
	if (ret != ncclSuccess)
		return fail("ncclCommInitRank failed", nccl->get_error_string(ret));
	if (nccl->stream_create && nccl->stream_create(&stream) != ncclSuccess)
		return fail("doubleStreamCreate failed", NULL);

	for (long call = 0; call < options->calls; call++) {
		for (int i = 0; i < ELEMENT_COUNT; i++)
			send[i] = (float)(call + i);
		log->step = (int)call;
		ret = nccl->all_reduce(send, received, ELEMENT_COUNT, ncclFloat32, ncclSum, comm,
				       stream);
		if (log->file)
			ground_truth_collective(log, ret, "ncclAllReduce", send, received,
						ELEMENT_COUNT, ncclFloat32, ncclSum, -1, comm,
						stream);
		if (ret != ncclSuccess)
			return fail("ncclAllReduce failed", nccl->get_error_string(ret));
		if (!nccl->stream_synchronize)
			continue;
		ret = nccl->stream_synchronize(stream);
		if (ret != ncclSuccess)
			return fail("an all-reduce failed", nccl->get_error_string(ret));
		/* One rank: the sum is the input. */
		for (int i = 0; i < ELEMENT_COUNT; i++)
			if (received[i] != send[i])
				return fail("wrong all-reduce result", NULL);
	}

	log->step = -1;
	if (nccl->stream_destroy)
		nccl->stream_destroy(stream);
	ret = nccl->comm_destroy(comm);
	if (log->file)
		ground_truth_comm_only(log, "ncclCommDestroy", ret, comm);
	if (ret != ncclSuccess)
		return fail("ncclCommDestroy failed", nccl->get_error_string(ret));
	return 0;
}

int main(int argc, char **argv)
{
	struct ground_truth_log log = { .file = NULL, .step = -1 };
	struct nccl_library nccl;
	struct options options;
	char library[PATH_MAX];
	int status;

	if (parse_options(argc, argv, &options) < 0)
		return 2;
	if (options.library)
		snprintf(library, sizeof(library), "%s", options.library);
	else if (default_library(library, sizeof(library)) < 0)
		return fail("cannot find my own executable", strerror(errno));
	if (options.log_path && ground_truth_open(&log, options.log_path) < 0)
		return fail("cannot create the log", strerror(errno));

	sleep_ns(options.delay_ms * 1000000L);
	if (load_library(library, &nccl) != 0)
		return 1;
	sleep_ns(options.settle_ms * 1000000L);
	status = run(&nccl, &options, &log);
	ground_truth_close(&log);
	return status;
}
