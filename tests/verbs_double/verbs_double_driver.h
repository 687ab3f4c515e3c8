/* SPDX-License-Identifier: MIT */
/*
 * The interface between the verbs test double's libibverbs.so.1 and its
 * provider library, as rdma-core's libibverbs talks to a provider such as
 * libmlx5: the provider allocates the device context and fills its ops
 * table with functions it does not export.
 */
#ifndef VERBS_DOUBLE_DRIVER_H
#define VERBS_DOUBLE_DRIVER_H

#include <infiniband/verbs.h>

struct verbs_double_driver {
	struct ibv_context *(*alloc_context)(struct ibv_device *device);
	void (*free_context)(struct ibv_context *context);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	void (*dealloc_pd)(struct ibv_pd *pd);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int entries);
	void (*destroy_cq)(struct ibv_cq *cq);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, const struct ibv_qp_init_attr *attributes);
	void (*destroy_qp)(struct ibv_qp *qp);
	int (*connect_qp)(struct ibv_qp *qp, uint32_t destination_qp_number);
};

/* The only symbol the provider exports. */
const struct verbs_double_driver *verbs_double_provider(void);

#endif /* VERBS_DOUBLE_DRIVER_H */
