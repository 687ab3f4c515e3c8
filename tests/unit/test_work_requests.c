// SPDX-License-Identifier: MIT
/*
 * Work-request tracking without a kernel: the rdma-core layout the probes
 * read, checked against <infiniband/verbs.h>; in-flight requests from
 * signalled requests and completions (NCCL signals one request of a chain);
 * and the sliding-window bandwidth against a hand computation.
 */
#include <infiniband/verbs.h>
#include <stddef.h>

#include "network/network_window.h"
#include "tcheck/work_request_abi.h"
#include "unit.h"

UNIT_TEST(work_requests, probe_offsets_match_rdma_core_verbs_h)
{
	CU_ASSERT_EQUAL(offsetof(struct ibv_context, ops.poll_cq), VERBS_CONTEXT_POLL_CQ_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_context, ops.post_send),
			VERBS_CONTEXT_POST_SEND_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_context, ops.post_recv),
			VERBS_CONTEXT_POST_RECV_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_qp, qp_num), VERBS_QP_NUMBER_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_send_wr, wr_id), VERBS_SEND_WR_ID_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_send_wr, next), VERBS_SEND_WR_NEXT_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_send_wr, sg_list), VERBS_SEND_WR_SG_LIST_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_send_wr, num_sge), VERBS_SEND_WR_NUM_SGE_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_send_wr, send_flags), VERBS_SEND_WR_FLAGS_OFFSET);
	CU_ASSERT_EQUAL(IBV_SEND_SIGNALED, VERBS_SEND_SIGNALED);
	CU_ASSERT_EQUAL(offsetof(struct ibv_recv_wr, next), VERBS_RECV_WR_NEXT_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_recv_wr, sg_list), VERBS_RECV_WR_SG_LIST_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_recv_wr, num_sge), VERBS_RECV_WR_NUM_SGE_OFFSET);
	CU_ASSERT_EQUAL(sizeof(struct ibv_sge), VERBS_SGE_SIZE);
	CU_ASSERT_EQUAL(offsetof(struct ibv_sge, length), VERBS_SGE_LENGTH_OFFSET);
	CU_ASSERT_EQUAL(sizeof(struct ibv_wc), VERBS_WC_SIZE);
	CU_ASSERT_EQUAL(offsetof(struct ibv_wc, wr_id), VERBS_WC_ID_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_wc, status), VERBS_WC_STATUS_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_wc, opcode), VERBS_WC_OPCODE_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_wc, byte_len), VERBS_WC_BYTE_LEN_OFFSET);
	CU_ASSERT_EQUAL(offsetof(struct ibv_wc, qp_num), VERBS_WC_QP_NUMBER_OFFSET);
	CU_ASSERT_EQUAL(IBV_WC_RECV, VERBS_WC_RECV);
	CU_ASSERT(IBV_WC_RECV_RDMA_WITH_IMM & VERBS_WC_RECV);
	CU_ASSERT_FALSE(IBV_WC_RDMA_WRITE & VERBS_WC_RECV);
}

UNIT_TEST(work_requests, in_flight_counts_signalled_requests_not_posted_ones)
{
	/* Ten chains of eight sends, the last of each signalled, seven completed. */
	struct trace_network_sample sample = {
		.requests_posted = 80,
		.requests_signalled = 10,
		.completions = 7,
		.bytes_posted = 80 * 4096,
		.bytes_completed = 7 * 8 * 4096,
	};

	CU_ASSERT_EQUAL(network_requests_in_flight(&sample), 3);
	CU_ASSERT_EQUAL(network_bytes_in_flight(&sample), 3 * 8 * 4096);
	/* Everything completed: nothing in flight, whatever was posted unsignalled. */
	sample.completions = 10;
	sample.bytes_completed = sample.bytes_posted;
	CU_ASSERT_EQUAL(network_requests_in_flight(&sample), 0);
	CU_ASSERT_EQUAL(network_bytes_in_flight(&sample), 0);
	/* Completions seen before their posts (probes attached mid-flight) never go negative. */
	sample.completions = 12;
	sample.bytes_completed = sample.bytes_posted + 5;
	CU_ASSERT_EQUAL(network_requests_in_flight(&sample), 0);
	CU_ASSERT_EQUAL(network_bytes_in_flight(&sample), 0);
}

static struct trace_network_sample at(uint64_t seconds_tenths, uint64_t bytes)
{
	return (struct trace_network_sample){ .timestamp_ns = seconds_tenths * 100000000ULL,
					      .bytes_completed = bytes };
}

UNIT_TEST(work_requests, window_bandwidth_over_the_last_samples)
{
	struct network_window window;
	struct trace_network_sample sample;

	network_window_init(&window, 1000000000ULL);
	CU_ASSERT_EQUAL(network_window_bandwidth(&window), 0);
	sample = at(10, 1000);
	network_window_add(&window, &sample);
	CU_ASSERT_EQUAL(network_window_bandwidth(&window), 0);
	/* 1 MB per 0.1 s for a second: 10 MB/s. */
	for (uint64_t tenth = 11; tenth <= 20; tenth++) {
		sample = at(tenth, 1000 + (tenth - 10) * 1000000);
		network_window_add(&window, &sample);
	}
	CU_ASSERT_DOUBLE_EQUAL(network_window_bandwidth(&window), 10e6, 1);
	/* Then idle for half a second: the window (1 s) holds 5 MB. */
	for (uint64_t tenth = 21; tenth <= 25; tenth++) {
		sample = at(tenth, 1000 + 10 * 1000000);
		network_window_add(&window, &sample);
	}
	CU_ASSERT_DOUBLE_EQUAL(network_window_bandwidth(&window), 5e6, 1);
	/* Idle for a whole window: nothing. */
	for (uint64_t tenth = 26; tenth <= 40; tenth++) {
		sample = at(tenth, 1000 + 10 * 1000000);
		network_window_add(&window, &sample);
	}
	CU_ASSERT_DOUBLE_EQUAL(network_window_bandwidth(&window), 0, 1e-9);
	/* A sample out of order, or counters going back (a restarted process), is ignored. */
	sample = at(39, 0);
	network_window_add(&window, &sample);
	sample = at(41, 5);
	network_window_add(&window, &sample);
	CU_ASSERT_DOUBLE_EQUAL(network_window_bandwidth(&window), 0, 1e-9);
}

UNIT_TEST(work_requests, window_keeps_a_bounded_number_of_samples)
{
	struct network_window window;
	struct trace_network_sample sample;

	/* A window longer than the samples kept: the oldest kept sample bounds it. */
	network_window_init(&window, 1000000000000ULL);
	for (uint64_t tenth = 1; tenth <= 3 * NETWORK_WINDOW_SAMPLES; tenth++) {
		sample = at(tenth, tenth * 100);
		network_window_add(&window, &sample);
	}
	CU_ASSERT_EQUAL(window.count, NETWORK_WINDOW_SAMPLES);
	CU_ASSERT_DOUBLE_EQUAL(network_window_bandwidth(&window), 1000, 1e-6);
}
