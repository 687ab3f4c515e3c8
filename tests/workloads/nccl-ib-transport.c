// SPDX-License-Identifier: MIT
/*
 * A stand-in for NCCL's IB transport (net_ib): internal functions under the
 * mangled names and signatures of NCCL 2.26-2.28 (ncclIbIsend, ncclIbIrecv,
 * ncclIbTest, ncclIbMultiSend), local symbols in .symtab as in libnccl.
 * Requests complete after a few tests. It logs, as key=value lines, what
 * the work-request counters must read: requests posted (a send is one, a
 * receive of n buffers n), signalled (one per request), completions (tests
 * that said done), errors (tests that failed), bytes posted, and bytes
 * completed (the first size a completed test reports).
 *
 *   nccl-ib-transport [--requests N] [--gate PATH] [--log PATH]
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "program_options.h"

#define MAX_REQUESTS 4096

struct ib_request {
	int tests_left; /* tests that answer "not done" before the one that does */
	int failing;
	int size;
};

struct ncclIbSendComm {
	int posted;
};

static struct ib_request requests[MAX_REQUESTS];
static int request_count;

#define TRANSPORT(name) __asm__(name) __attribute__((noinline, used))

static int ib_multi_send(struct ncclIbSendComm *comm, int slot)
	TRANSPORT("_Z15ncclIbMultiSendP14ncclIbSendCommi");
static int ib_isend(void *comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
		    void **request) TRANSPORT("_Z11ncclIbIsendPvS_miS_S_PS_");
static int ib_irecv(void *comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
		    void **phandles, void **request)
	TRANSPORT("_Z11ncclIbIrecvPviPS_PmPiS0_S0_S0_");
static int ib_test(void *request, int *done, int *sizes) TRANSPORT("_Z10ncclIbTestPvPiS0_");

static int ib_multi_send(struct ncclIbSendComm *comm, int slot)
{
	comm->posted += slot + 1;
	return 0;
}

static struct ib_request *new_request(int size)
{
	struct ib_request *request = &requests[request_count % MAX_REQUESTS];

	request->tests_left = request_count % 3;
	request->failing = request_count % 50 == 49;
	request->size = size;
	request_count++;
	return request;
}

static int ib_isend(void *comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
		    void **request)
{
	(void)data;
	(void)tag;
	(void)mhandle;
	(void)phandle;
	*request = new_request((int)size);
	return ib_multi_send(comm, 0);
}

static int ib_irecv(void *comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
		    void **phandles, void **request)
{
	(void)comm;
	(void)data;
	(void)tags;
	(void)mhandles;
	(void)phandles;
	*request = new_request(n > 0 ? (int)sizes[0] : 0);
	return 0;
}

static int ib_test(void *request, int *done, int *sizes)
{
	struct ib_request *pending = request;

	*done = 0;
	if (pending->tests_left-- > 0)
		return 0;
	if (pending->failing)
		return 2; /* ncclSystemError */
	*done = 1;
	if (sizes)
		sizes[0] = pending->size;
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: nccl-ib-transport [--requests N] [--gate PATH] [--log PATH]\n"
		     "Posts N requests (default 1000) through the IB transport stand-in, after\n"
		     "reading a byte from PATH when --gate is given, and logs the counters.\n");
}

int main(int argc, char **argv)
{
	unsigned long long posted = 0, signalled = 0, completions = 0, errors = 0;
	unsigned long long bytes_posted = 0, bytes_completed = 0;
	const char *gate = NULL, *log_path = NULL;
	struct ncclIbSendComm comm = { 0 };
	int count = 1000;
	static char buffer[1 << 16];
	FILE *log = stdout;

	const struct program_option options[] = {
		{ "requests", PROGRAM_OPTION_INT, &count, 0, INT_MAX },
		{ "gate", PROGRAM_OPTION_TEXT, &gate },
		{ "log", PROGRAM_OPTION_TEXT, &log_path },
	};

	if (program_options_parse("nccl-ib-transport", argc, argv, options,
				  sizeof(options) / sizeof(options[0]), usage))
		return 2;
	if (gate) {
		int fd = open(gate, O_RDONLY);
		char byte;

		if (fd < 0 || read(fd, &byte, 1) != 1) {
			fprintf(stderr, "nccl-ib-transport: waiting at the gate failed\n");
			return 1;
		}
		close(fd);
	}
	for (int i = 0; i < count; i++) {
		size_t sizes[3] = { 1000 + (size_t)i, 2000, 3000 };
		int receives = 1 + i % 3, tags[3] = { 0 }, done = 0, reported[3] = { 0 }, result;
		void *data[3] = { buffer, buffer, buffer }, *handles[3] = { 0 }, *request = NULL;

		if (i % 2) {
			ib_isend(&comm, buffer, sizes[0], 7, NULL, NULL, &request);
			posted++;
			bytes_posted += sizes[0];
		} else {
			ib_irecv(&comm, receives, data, sizes, tags, handles, handles, &request);
			posted += (unsigned long long)receives;
			for (int j = 0; j < receives; j++)
				bytes_posted += sizes[j];
		}
		signalled++;
		do {
			result = ib_test(request, &done, reported);
		} while (!result && !done);
		completions++;
		if (result)
			errors++;
		else
			bytes_completed += (unsigned long long)reported[0];
	}
	if (log_path && !(log = fopen(log_path, "w"))) {
		fprintf(stderr, "nccl-ib-transport: cannot open %s\n", log_path);
		return 1;
	}
	fprintf(log,
		"pid=%d\nrequests_posted=%llu\nrequests_signalled=%llu\ncompletions=%llu\n"
		"completion_errors=%llu\nbytes_posted=%llu\nbytes_completed=%llu\n",
		(int)getpid(), posted, signalled, completions, errors, bytes_posted,
		bytes_completed);
	if (log != stdout)
		fclose(log);
	return comm.posted == count / 2 ? 0 : 1;
}
