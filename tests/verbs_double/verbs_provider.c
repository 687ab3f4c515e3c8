// SPDX-License-Identifier: MIT
/*
 * The verbs test double's provider: queue pairs joined in one process, whose
 * sends copy into the peer's posted receives and complete at once, in
 * memory. post_send, post_recv and poll_cq are reached only through the
 * context's ops table, like a real provider's. VERBS_DOUBLE_STALL_AFTER=N
 * stops completing after N completions (a network that went quiet).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "verbs_double_driver.h"

#define EXPORTED __attribute__((visibility("default")))
#define QUEUE_DEPTH 4096
#define MAX_QPS 64

struct double_cq {
	struct ibv_cq cq;
	struct ibv_wc entries[QUEUE_DEPTH];
	size_t head, count;
};

struct posted_receive {
	uint64_t id;
	uint64_t address;
	uint32_t length;
};

struct double_qp {
	struct ibv_qp qp;
	int signal_all;
	uint32_t destination;
	struct posted_receive receives[QUEUE_DEPTH];
	size_t head, count;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct double_qp *qps[MAX_QPS];
static uint32_t qp_count;
static long stall_after = -1;
static long completed;

static void push_completion(struct ibv_cq *cq, const struct ibv_wc *completion)
{
	struct double_cq *queue = (struct double_cq *)cq;

	if (stall_after >= 0 && completed >= stall_after)
		return;
	if (queue->count == QUEUE_DEPTH)
		return;
	queue->entries[(queue->head + queue->count) % QUEUE_DEPTH] = *completion;
	queue->count++;
	completed++;
}

static struct double_qp *find_qp(uint32_t number)
{
	for (uint32_t i = 0; i < qp_count; i++)
		if (qps[i]->qp.qp_num == number)
			return qps[i];
	return NULL;
}

/* Delivers one send to the peer's oldest receive; returns the completion status of the send. */
static enum ibv_wc_status deliver(struct double_qp *source, const struct ibv_send_wr *request,
				  uint32_t bytes)
{
	struct double_qp *peer = find_qp(source->destination);
	struct ibv_wc completion = { 0 };
	struct posted_receive receive;
	uint32_t copied = 0;

	if (!peer || !peer->count)
		return IBV_WC_RNR_RETRY_EXC_ERR;
	receive = peer->receives[peer->head];
	peer->head = (peer->head + 1) % QUEUE_DEPTH;
	peer->count--;
	if (bytes > receive.length)
		return IBV_WC_LOC_LEN_ERR;
	for (int i = 0; i < request->num_sge; i++) {
		memcpy((char *)(uintptr_t)receive.address + copied,
		       (const void *)(uintptr_t)request->sg_list[i].addr,
		       request->sg_list[i].length);
		copied += request->sg_list[i].length;
	}
	completion.wr_id = receive.id;
	completion.status = IBV_WC_SUCCESS;
	completion.opcode = IBV_WC_RECV;
	completion.byte_len = bytes;
	completion.qp_num = peer->qp.qp_num;
	push_completion(peer->qp.recv_cq, &completion);
	return IBV_WC_SUCCESS;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *request, struct ibv_send_wr **bad)
{
	struct double_qp *source = (struct double_qp *)qp;

	pthread_mutex_lock(&lock);
	for (; request; request = request->next) {
		struct ibv_wc completion = { 0 };
		uint32_t bytes = 0;

		for (int i = 0; i < request->num_sge; i++)
			bytes += request->sg_list[i].length;
		completion.status = deliver(source, request, bytes);
		if (!(request->send_flags & IBV_SEND_SIGNALED) && !source->signal_all &&
		    completion.status == IBV_WC_SUCCESS)
			continue;
		completion.wr_id = request->wr_id;
		completion.opcode = IBV_WC_SEND;
		completion.qp_num = qp->qp_num;
		push_completion(qp->send_cq, &completion);
	}
	pthread_mutex_unlock(&lock);
	(void)bad;
	return 0;
}

static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *request, struct ibv_recv_wr **bad)
{
	struct double_qp *queue = (struct double_qp *)qp;
	int result = 0;

	pthread_mutex_lock(&lock);
	for (; request; request = request->next) {
		struct posted_receive *receive;

		if (queue->count == QUEUE_DEPTH || request->num_sge != 1) {
			*bad = request;
			result = -1;
			break;
		}
		receive = &queue->receives[(queue->head + queue->count) % QUEUE_DEPTH];
		receive->id = request->wr_id;
		receive->address = request->sg_list[0].addr;
		receive->length = request->sg_list[0].length;
		queue->count++;
	}
	pthread_mutex_unlock(&lock);
	return result;
}

static int poll_cq(struct ibv_cq *cq, int entries, struct ibv_wc *completions)
{
	struct double_cq *queue = (struct double_cq *)cq;
	int polled = 0;

	pthread_mutex_lock(&lock);
	while (polled < entries && queue->count) {
		completions[polled++] = queue->entries[queue->head];
		queue->head = (queue->head + 1) % QUEUE_DEPTH;
		queue->count--;
	}
	pthread_mutex_unlock(&lock);
	return polled;
}

static struct ibv_context *alloc_context(struct ibv_device *device)
{
	struct ibv_context *context = calloc(1, sizeof(*context));
	const char *stall = getenv("VERBS_DOUBLE_STALL_AFTER");

	if (!context)
		return NULL;
	if (stall && *stall)
		stall_after = strtol(stall, NULL, 10);
	context->device = device;
	context->cmd_fd = context->async_fd = -1;
	context->ops.post_send = post_send;
	context->ops.post_recv = post_recv;
	context->ops.poll_cq = poll_cq;
	pthread_mutex_init(&context->mutex, NULL);
	return context;
}

static void free_context(struct ibv_context *context)
{
	free(context);
}

static struct ibv_pd *alloc_pd(struct ibv_context *context)
{
	struct ibv_pd *pd = calloc(1, sizeof(*pd));

	if (pd)
		pd->context = context;
	return pd;
}

static void dealloc_pd(struct ibv_pd *pd)
{
	free(pd);
}

static struct ibv_cq *create_cq(struct ibv_context *context, int entries)
{
	struct double_cq *queue = calloc(1, sizeof(*queue));

	if (!queue)
		return NULL;
	queue->cq.context = context;
	queue->cq.cqe = entries;
	return &queue->cq;
}

static void destroy_cq(struct ibv_cq *cq)
{
	free(cq);
}

static struct ibv_qp *create_qp(struct ibv_pd *pd, const struct ibv_qp_init_attr *attributes)
{
	struct double_qp *queue;

	pthread_mutex_lock(&lock);
	if (qp_count == MAX_QPS) {
		pthread_mutex_unlock(&lock);
		return NULL;
	}
	queue = calloc(1, sizeof(*queue));
	if (queue) {
		queue->qp.context = pd->context;
		queue->qp.pd = pd;
		queue->qp.send_cq = attributes->send_cq;
		queue->qp.recv_cq = attributes->recv_cq;
		queue->qp.qp_type = attributes->qp_type;
		queue->qp.qp_num = 0x100 + qp_count;
		queue->signal_all = attributes->sq_sig_all;
		qps[qp_count++] = queue;
	}
	pthread_mutex_unlock(&lock);
	return queue ? &queue->qp : NULL;
}

static void destroy_qp(struct ibv_qp *qp)
{
	pthread_mutex_lock(&lock);
	for (uint32_t i = 0; i < qp_count; i++)
		if (&qps[i]->qp == qp) {
			qps[i] = qps[--qp_count];
			break;
		}
	pthread_mutex_unlock(&lock);
	free(qp);
}

static int connect_qp(struct ibv_qp *qp, uint32_t destination_qp_number)
{
	((struct double_qp *)qp)->destination = destination_qp_number;
	qp->state = IBV_QPS_RTS;
	return 0;
}

static const struct verbs_double_driver driver = {
	.alloc_context = alloc_context,
	.free_context = free_context,
	.alloc_pd = alloc_pd,
	.dealloc_pd = dealloc_pd,
	.create_cq = create_cq,
	.destroy_cq = destroy_cq,
	.create_qp = create_qp,
	.destroy_qp = destroy_qp,
	.connect_qp = connect_qp,
};

EXPORTED const struct verbs_double_driver *verbs_double_provider(void)
{
	return &driver;
}
