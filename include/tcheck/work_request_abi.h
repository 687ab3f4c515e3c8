/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What the work-request probes and the daemon share: the per-process
 * counters, the notice of a newly opened verbs device, and the layout of
 * the rdma-core structures the probes read (rdma-core 44, x86-64; checked
 * against <infiniband/verbs.h> by a unit test).
 */
#ifndef TCHECK_WORK_REQUEST_ABI_H
#define TCHECK_WORK_REQUEST_ABI_H

#include "tcheck/probe_abi.h"

/* struct ibv_context: the provider's function pointers (ops). */
#define VERBS_CONTEXT_POLL_CQ_OFFSET 96
#define VERBS_CONTEXT_POST_SEND_OFFSET 208
#define VERBS_CONTEXT_POST_RECV_OFFSET 216
/* struct ibv_qp */
#define VERBS_QP_NUMBER_OFFSET 52
/* struct ibv_send_wr (128 bytes) */
#define VERBS_SEND_WR_ID_OFFSET 0
#define VERBS_SEND_WR_NEXT_OFFSET 8
#define VERBS_SEND_WR_SG_LIST_OFFSET 16
#define VERBS_SEND_WR_NUM_SGE_OFFSET 24
#define VERBS_SEND_WR_FLAGS_OFFSET 32
#define VERBS_SEND_SIGNALED 2 /* IBV_SEND_SIGNALED */
/* struct ibv_recv_wr (32 bytes) */
#define VERBS_RECV_WR_NEXT_OFFSET 8
#define VERBS_RECV_WR_SG_LIST_OFFSET 16
#define VERBS_RECV_WR_NUM_SGE_OFFSET 24
/* struct ibv_sge (16 bytes) */
#define VERBS_SGE_SIZE 16
#define VERBS_SGE_LENGTH_OFFSET 8
/* struct ibv_wc (48 bytes) */
#define VERBS_WC_SIZE 48
#define VERBS_WC_ID_OFFSET 0
#define VERBS_WC_STATUS_OFFSET 8
#define VERBS_WC_OPCODE_OFFSET 12
#define VERBS_WC_BYTE_LEN_OFFSET 20
#define VERBS_WC_QP_NUMBER_OFFSET 28
#define VERBS_WC_RECV 128 /* IBV_WC_RECV: opcodes from here on are receives */

/* Bounds of the probes' walks: longer chains are counted up to here. */
#define WORK_REQUEST_CHAIN_MAX 32
#define WORK_REQUEST_SGE_MAX 4
#define WORK_COMPLETION_MAX 32
#define NCCL_IB_RECEIVES_MAX 8

/* Where the counts come from (trace_network_sample.source). */
enum work_request_source {
	WORK_REQUEST_SOURCE_NCCL_IB = 1, /* NCCL's ncclIb* transport functions */
	WORK_REQUEST_SOURCE_VERBS = 2,	 /* the verbs provider's post/poll functions */
};

/* The probe a work-request uprobe stands for, in its cookie's low byte. */
enum work_request_probe {
	WORK_REQUEST_PROBE_NCCL_ISEND = 1,
	WORK_REQUEST_PROBE_NCCL_IRECV = 2,
	WORK_REQUEST_PROBE_NCCL_TEST = 3,
	WORK_REQUEST_PROBE_NCCL_MULTI_SEND = 4,
};
/* Cookie bit: the NCCL build passes sizes as int (2.23 and older), not size_t. */
#define WORK_REQUEST_COOKIE_INT_SIZES (1ULL << 8)

/* Per process, cumulative since the probes were attached. */
struct tcheck_network_counters {
	tcheck_u64 requests_posted;
	tcheck_u64 requests_signalled;
	tcheck_u64 completions;
	tcheck_u64 completion_errors;
	tcheck_u64 bytes_posted;
	tcheck_u64 bytes_completed;
	tcheck_u64 last_post_ns;
	tcheck_u64 last_completion_ns;
	tcheck_u32 source; /* enum work_request_source, of the last probe that counted */
	tcheck_u32 reserved;
};

/* A traced process opened a verbs device: its struct ibv_context. */
struct tcheck_verbs_context_record {
	struct tcheck_record_header header;
	tcheck_u64 context;
};

#endif /* TCHECK_WORK_REQUEST_ABI_H */
