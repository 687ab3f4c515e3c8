// SPDX-License-Identifier: MIT
/*
 * The verbs test double's libibverbs.so.1: the exported verbs API of
 * rdma-core over the double's provider, with one device. ibv_post_send,
 * ibv_post_recv and ibv_poll_cq are not here: <infiniband/verbs.h> makes
 * them inline calls through the context's ops table, into the provider.
 */
#include <stdlib.h>
#include <string.h>

#include "verbs_double_driver.h"

static struct ibv_device device = {
	.node_type = IBV_NODE_CA,
	.transport_type = IBV_TRANSPORT_IB,
	.name = "double0",
	.dev_name = "uverbs0",
};

struct ibv_device **ibv_get_device_list(int *count)
{
	struct ibv_device **list = calloc(2, sizeof(*list));

	if (!list)
		return NULL;
	list[0] = &device;
	if (count)
		*count = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *which)
{
	return which->name;
}

struct ibv_context *ibv_open_device(struct ibv_device *which)
{
	return verbs_double_provider()->alloc_context(which);
}

int ibv_close_device(struct ibv_context *context)
{
	verbs_double_provider()->free_context(context);
	return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	return verbs_double_provider()->alloc_pd(context);
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	verbs_double_provider()->dealloc_pd(pd);
	return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int entries, void *user_context,
			     struct ibv_comp_channel *channel, int vector)
{
	struct ibv_cq *cq = verbs_double_provider()->create_cq(context, entries);

	(void)channel;
	(void)vector;
	if (cq)
		cq->cq_context = user_context;
	return cq;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	verbs_double_provider()->destroy_cq(cq);
	return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attributes)
{
	return verbs_double_provider()->create_qp(pd, attributes);
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	verbs_double_provider()->destroy_qp(qp);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attributes, int mask)
{
	if (mask & IBV_QP_DEST_QPN)
		return verbs_double_provider()->connect_qp(qp, attributes->dest_qp_num);
	return 0;
}
