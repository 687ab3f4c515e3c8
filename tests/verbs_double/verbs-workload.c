// SPDX-License-Identifier: MIT
/*
 * A workload on the verbs API: two joined queue pairs; each iteration posts
 * a chain of receives on one, a chain of sends on the other with only the
 * last send signalled (as NCCL does), and polls both completion queues.
 * Optional sends with no receive posted complete in error. It logs what it
 * did (the ground truth of a work-request trace) as key=value lines.
 *
 *   verbs-workload [--iterations N] [--chain K] [--bytes B] [--errors E]
 *                  [--open-gate PATH] [--gate PATH] [--pause-us U] [--log PATH]
 *
 * --open-gate: wait until a byte can be read from PATH (a FIFO) before
 * opening the device; --gate: likewise after opening it, so that a tracer
 * can probe the provider before the first post. --pause-us: sleep between
 * iterations.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/workloads/program_options.h"

#define MAX_CHAIN 32
#define POLL_BATCH 16

struct totals {
	unsigned long long posted, signalled, completions, errors, bytes_posted, bytes_completed;
};

static void fail(const char *what)
{
	fprintf(stderr, "verbs-workload: %s failed\n", what);
	exit(1);
}

/* Waits until a byte can be read from the FIFO at path (none: no wait). */
static void wait_at(const char *path)
{
	char byte;
	int fd;

	if (!path)
		return;
	fd = open(path, O_RDONLY);
	if (fd < 0 || read(fd, &byte, 1) != 1)
		fail("waiting at a gate");
	close(fd);
}

/* Polls cq until wanted completions arrived; counts them and their bytes. */
static void poll_until(struct ibv_cq *cq, int wanted, unsigned long long send_bytes,
		       struct totals *totals)
{
	struct ibv_wc completions[POLL_BATCH];

	while (wanted > 0) {
		int polled = ibv_poll_cq(cq, POLL_BATCH, completions);

		if (polled < 0)
			fail("ibv_poll_cq");
		for (int i = 0; i < polled; i++) {
			totals->completions++;
			if (completions[i].status != IBV_WC_SUCCESS)
				totals->errors++;
			else if (completions[i].opcode & IBV_WC_RECV)
				totals->bytes_completed += completions[i].byte_len;
			else
				totals->bytes_completed += send_bytes;
		}
		wanted -= polled;
	}
}

static void usage(FILE *out)
{
	fprintf(out, "usage: verbs-workload [--iterations N] [--chain K] [--bytes B] [--errors E]\n"
		     "                      [--open-gate PATH] [--gate PATH] [--pause-us U]\n"
		     "                      [--log PATH]\n");
}

int main(int argc, char **argv)
{
	int iterations = 100, chain = 8, bytes = 4096, errors = 0;
	const char *gate = NULL, *open_gate = NULL, *log_path = NULL;
	int pause_us = 0;
	struct ibv_send_wr sends[MAX_CHAIN], *bad_send;
	struct ibv_recv_wr receives[MAX_CHAIN], *bad_receive;
	struct ibv_sge send_lists[MAX_CHAIN], receive_lists[MAX_CHAIN];
	struct ibv_qp_init_attr init = { 0 };
	struct ibv_qp_attr attributes = { 0 };
	struct totals totals = { 0 };
	struct ibv_device **devices;
	struct ibv_context *context;
	struct ibv_cq *send_cq, *receive_cq;
	struct ibv_qp *sender, *receiver;
	struct ibv_pd *pd;
	char *source, *target;
	FILE *log = stdout;

	const struct program_option options[] = {
		{ "iterations", PROGRAM_OPTION_INT, &iterations, 0, INT_MAX },
		{ "chain", PROGRAM_OPTION_INT, &chain, 1, MAX_CHAIN },
		{ "bytes", PROGRAM_OPTION_INT, &bytes, 1, 1 << 30 },
		{ "errors", PROGRAM_OPTION_INT, &errors, 0, INT_MAX },
		{ "gate", PROGRAM_OPTION_TEXT, &gate },
		{ "log", PROGRAM_OPTION_TEXT, &log_path },
		{ "open-gate", PROGRAM_OPTION_TEXT, &open_gate },
		{ "pause-us", PROGRAM_OPTION_INT, &pause_us, 0, INT_MAX },
	};

	if (program_options_parse("verbs-workload", argc, argv, options,
				  sizeof(options) / sizeof(options[0]), usage))
		return 2;
	source = calloc((size_t)chain, (size_t)bytes);
	target = calloc((size_t)chain, (size_t)bytes);
	devices = ibv_get_device_list(NULL);
	if (!source || !target || !devices || !devices[0])
		fail("ibv_get_device_list");
	wait_at(open_gate);
	context = ibv_open_device(devices[0]);
	if (!context)
		fail("ibv_open_device");
	wait_at(gate);
	pd = ibv_alloc_pd(context);
	send_cq = ibv_create_cq(context, 4096, NULL, NULL, 0);
	receive_cq = ibv_create_cq(context, 4096, NULL, NULL, 0);
	if (!pd || !send_cq || !receive_cq)
		fail("creating the protection domain and queues");
	init.send_cq = send_cq;
	init.recv_cq = receive_cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = init.cap.max_recv_wr = 4096;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	sender = ibv_create_qp(pd, &init);
	receiver = ibv_create_qp(pd, &init);
	if (!sender || !receiver)
		fail("ibv_create_qp");
	attributes.dest_qp_num = receiver->qp_num;
	if (ibv_modify_qp(sender, &attributes, IBV_QP_DEST_QPN))
		fail("ibv_modify_qp");
	for (int i = 0; i < chain; i++) {
		memset(source + (size_t)i * bytes, i + 1, (size_t)bytes);
		send_lists[i] = (struct ibv_sge){ .addr = (uintptr_t)(source + (size_t)i * bytes),
						  .length = (uint32_t)bytes };
		receive_lists[i] =
			(struct ibv_sge){ .addr = (uintptr_t)(target + (size_t)i * bytes),
					  .length = (uint32_t)bytes };
		sends[i] = (struct ibv_send_wr){ .wr_id = (uint64_t)i,
						 .next = i + 1 < chain ? &sends[i + 1] : NULL,
						 .sg_list = &send_lists[i],
						 .num_sge = 1,
						 .opcode = IBV_WR_SEND,
						 .send_flags =
							 i + 1 == chain ? IBV_SEND_SIGNALED : 0 };
		receives[i] = (struct ibv_recv_wr){ .wr_id = (uint64_t)i,
						    .next = i + 1 < chain ? &receives[i + 1] : NULL,
						    .sg_list = &receive_lists[i],
						    .num_sge = 1 };
	}
	for (int iteration = 0; iteration < iterations; iteration++) {
		if (ibv_post_recv(receiver, receives, &bad_receive))
			fail("ibv_post_recv");
		if (ibv_post_send(sender, sends, &bad_send))
			fail("ibv_post_send");
		totals.posted += 2ULL * chain;
		totals.signalled += chain + 1ULL;
		totals.bytes_posted += 2ULL * chain * bytes;
		poll_until(receive_cq, chain, 0, &totals);
		poll_until(send_cq, 1, (unsigned long long)chain * bytes, &totals);
		if (memcmp(source, target, (size_t)chain * bytes))
			fail("checking the received data");
		if (pause_us)
			usleep((useconds_t)pause_us);
	}
	/* A signalled send with no receive posted: an error completion. */
	for (int i = 0; i < errors; i++) {
		struct ibv_send_wr lone = sends[chain - 1];

		lone.next = NULL;
		if (ibv_post_send(sender, &lone, &bad_send))
			fail("ibv_post_send");
		totals.posted++;
		totals.signalled++;
		totals.bytes_posted += (unsigned long long)bytes;
		poll_until(send_cq, 1, 0, &totals);
	}
	if (log_path && !(log = fopen(log_path, "w")))
		fail("opening the log");
	fprintf(log,
		"pid=%d\nrequests_posted=%llu\nrequests_signalled=%llu\ncompletions=%llu\n"
		"completion_errors=%llu\nbytes_posted=%llu\nbytes_completed=%llu\n",
		(int)getpid(), totals.posted, totals.signalled, totals.completions, totals.errors,
		totals.bytes_posted, totals.bytes_completed);
	if (log != stdout)
		fclose(log);
	ibv_destroy_qp(sender);
	ibv_destroy_qp(receiver);
	ibv_destroy_cq(send_cq);
	ibv_destroy_cq(receive_cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(context);
	ibv_free_device_list(devices);
	free(source);
	free(target);
	return 0;
}
