// SPDX-License-Identifier: MIT
/*
 * Optional network path of the NCCL double: with NCCL_DOUBLE_VERBS_LIBRARY
 * naming a libibverbs.so.1 (the verbs double's), every launch first moves
 * its bytes as RDMA work requests over a joined pair of queue pairs, as
 * NCCL's IB transport would: receives posted, a chain of sends with only the
 * last signalled, completions polled. A provider that stops completing
 * (VERBS_DOUBLE_STALL_AFTER) makes the ranks wait here, with work requests
 * outstanding: a network-side hang. NCCL_DOUBLE_VERBS_WAIT_MS=N waits up to
 * N ms for a tracer's uprobes on ibv_open_device and on the provider's
 * post_send (a uprobe shows in the process's own code as a breakpoint
 * byte) before using them, so a trace of a young process misses nothing.
 */
#include <dlfcn.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "double_internal.h"

#define NETWORK_ENV "NCCL_DOUBLE_VERBS_LIBRARY"
#define WAIT_ENV "NCCL_DOUBLE_VERBS_WAIT_MS"
#define BREAKPOINT 0xcc
#define REQUEST_BYTES (64u << 10)
#define CHAIN_MAX 4

struct verbs_api {
	struct ibv_device **(*get_device_list)(int *count);
	struct ibv_context *(*open_device)(struct ibv_device *device);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int entries, void *user_context,
				    struct ibv_comp_channel *channel, int vector);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attributes);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attributes, int mask);
};

struct double_network {
	pid_t pid; /* the process that set it up: a forked child sets up its own */
	int usable;
	struct ibv_cq *send_cq, *receive_cq;
	struct ibv_qp *sender, *receiver;
	char source[CHAIN_MAX * REQUEST_BYTES];
	char target[CHAIN_MAX * REQUEST_BYTES];
};

static pthread_mutex_t network_lock = PTHREAD_MUTEX_INITIALIZER;
static struct double_network *network;

static int load_api(const char *path, struct verbs_api *api)
{
	void *library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);

	if (!library) {
		fprintf(stderr, "NCCL WARN double: cannot load %s: %s\n", path, dlerror());
		return -1;
	}
	*(void **)&api->get_device_list = dlsym(library, "ibv_get_device_list");
	*(void **)&api->open_device = dlsym(library, "ibv_open_device");
	*(void **)&api->alloc_pd = dlsym(library, "ibv_alloc_pd");
	*(void **)&api->create_cq = dlsym(library, "ibv_create_cq");
	*(void **)&api->create_qp = dlsym(library, "ibv_create_qp");
	*(void **)&api->modify_qp = dlsym(library, "ibv_modify_qp");
	if (!api->get_device_list || !api->open_device || !api->alloc_pd || !api->create_cq ||
	    !api->create_qp || !api->modify_qp) {
		fprintf(stderr, "NCCL WARN double: %s lacks the verbs functions it needs\n", path);
		return -1;
	}
	return 0;
}

/* Waits, as long as WAIT_ENV says, for a uprobe's breakpoint at function. */
static void wait_for_probe(const void *function)
{
	const char *text = getenv(WAIT_ENV);
	uint64_t limit = text ? strtoull(text, NULL, 10) : 0, start = double_now_ms();

	while (limit && *(const volatile unsigned char *)function != BREAKPOINT &&
	       double_now_ms() - start < limit)
		usleep(1000);
}

/* Opens the device and joins two queue pairs; leaves network->usable 0 on failure. */
static void set_up(const char *path)
{
	struct ibv_qp_init_attr init = { 0 };
	struct ibv_qp_attr attributes = { 0 };
	struct ibv_device **devices;
	struct ibv_context *context;
	struct verbs_api api = { 0 };
	struct ibv_pd *pd;

	network = calloc(1, sizeof(*network));
	if (!network || load_api(path, &api))
		return;
	network->pid = getpid();
	devices = api.get_device_list(NULL);
	wait_for_probe(*(void **)&api.open_device);
	context = devices && devices[0] ? api.open_device(devices[0]) : NULL;
	if (context) {
		wait_for_probe(*(void **)&context->ops.post_send);
		wait_for_probe(*(void **)&context->ops.post_recv);
		wait_for_probe(*(void **)&context->ops.poll_cq);
	}
	pd = context ? api.alloc_pd(context) : NULL;
	if (!pd)
		return;
	network->send_cq = api.create_cq(context, 1024, NULL, NULL, 0);
	network->receive_cq = api.create_cq(context, 1024, NULL, NULL, 0);
	init.send_cq = network->send_cq;
	init.recv_cq = network->receive_cq;
	init.qp_type = IBV_QPT_RC;
	init.cap.max_send_wr = init.cap.max_recv_wr = 1024;
	init.cap.max_send_sge = init.cap.max_recv_sge = 1;
	network->sender = api.create_qp(pd, &init);
	network->receiver = api.create_qp(pd, &init);
	if (!network->send_cq || !network->receive_cq || !network->sender || !network->receiver)
		return;
	attributes.dest_qp_num = network->receiver->qp_num;
	network->usable = api.modify_qp(network->sender, &attributes, IBV_QP_DEST_QPN) == 0;
}

/* Polls cq for wanted completions; 0, or -1 after the double's timeout without one. */
static int poll_for(struct ibv_cq *cq, int wanted)
{
	uint64_t timeout = double_timeout_ms(), last = double_now_ms();
	struct ibv_wc completions[CHAIN_MAX];

	while (wanted > 0) {
		int polled = ibv_poll_cq(cq, CHAIN_MAX, completions);

		if (polled < 0)
			return -1;
		for (int i = 0; i < polled; i++)
			if (completions[i].status != IBV_WC_SUCCESS)
				return -1;
		wanted -= polled;
		if (polled) {
			last = double_now_ms();
			continue;
		}
		if (timeout && double_now_ms() - last >= timeout)
			return -1;
		usleep(1000);
	}
	return 0;
}

/* Moves bytes (up to the chain's size) from source to target through the queue pairs. */
static int transfer(size_t bytes)
{
	struct ibv_send_wr sends[CHAIN_MAX], *bad_send;
	struct ibv_recv_wr receives[CHAIN_MAX], *bad_receive;
	struct ibv_sge send_lists[CHAIN_MAX], receive_lists[CHAIN_MAX];
	int requests = 0;

	if (bytes > sizeof(network->source))
		bytes = sizeof(network->source);
	for (size_t offset = 0; offset < bytes || requests == 0; offset += REQUEST_BYTES) {
		uint32_t length =
			(uint32_t)(bytes - offset < REQUEST_BYTES ? bytes - offset : REQUEST_BYTES);

		send_lists[requests] =
			(struct ibv_sge){ .addr = (uintptr_t)(network->source + offset),
					  .length = length };
		receive_lists[requests] =
			(struct ibv_sge){ .addr = (uintptr_t)(network->target + offset),
					  .length = REQUEST_BYTES };
		sends[requests] = (struct ibv_send_wr){ .wr_id = (uint64_t)requests,
							.sg_list = &send_lists[requests],
							.num_sge = 1,
							.opcode = IBV_WR_SEND };
		receives[requests] = (struct ibv_recv_wr){ .wr_id = (uint64_t)requests,
							   .sg_list = &receive_lists[requests],
							   .num_sge = 1 };
		if (requests) {
			sends[requests - 1].next = &sends[requests];
			receives[requests - 1].next = &receives[requests];
		}
		requests++;
		if (length < REQUEST_BYTES)
			break;
	}
	sends[requests - 1].send_flags = IBV_SEND_SIGNALED;
	if (ibv_post_recv(network->receiver, receives, &bad_receive) ||
	    ibv_post_send(network->sender, sends, &bad_send))
		return -1;
	if (poll_for(network->receive_cq, requests) || poll_for(network->send_cq, 1))
		return -1;
	return 0;
}

ncclResult_t double_network_transfer(const struct double_work *work)
{
	const char *path = getenv(NETWORK_ENV);
	ncclResult_t result = ncclSuccess;
	size_t bytes = 0;

	if (!path || !*path)
		return ncclSuccess;
	for (int i = 0; i < work->op_count; i++)
		bytes += work->ops[i].count * double_datatype_size(work->ops[i].datatype);
	pthread_mutex_lock(&network_lock);
	if (!network || network->pid != getpid())
		set_up(path);
	if (network && network->usable && transfer(bytes)) {
		fprintf(stderr, "NCCL WARN double: the network stopped completing work requests "
				"(NET/IB: timeout)\n");
		result = ncclRemoteError;
	}
	pthread_mutex_unlock(&network_lock);
	return result;
}
