// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Work requests of the traced processes: posted, signalled, completed, and
 * their bytes, counted per process. Two sources: the verbs provider's
 * post_send/post_recv/poll_cq (found at run time through the ops table of
 * each context ibv_open_device returns), or NCCL's own IB transport
 * functions when the library keeps them in .symtab. The daemon reads the
 * counters periodically; nothing here writes to the traced process.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "tcheck/probe_abi.h"
#include "tcheck/work_request_abi.h"
#include "thread_stack.bpf.h"
#include "tracer_maps.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, struct tcheck_network_counters);
} network_counters SEC(".maps");

/* A signalled send's bytes (and those of the unsignalled ones before it), until it completes. */
struct pending_send_key {
	__u32 pid;
	__u32 qp_number;
	__u64 work_request_id;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct pending_send_key);
	__type(value, __u64);
} pending_send_bytes SEC(".maps");

/* Per thread, what a poll or test entry saw, for its return. */
struct pending_poll {
	__u64 array; /* struct ibv_wc * of poll_cq, int *done of ncclIbTest */
	__u64 sizes; /* ncclIbTest's int *sizes */
	__u64 cookie;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct pending_poll);
} pending_polls SEC(".maps");

static __always_inline struct tcheck_network_counters *counters_of(__u32 pid)
{
	struct tcheck_network_counters *counters, empty = {};

	counters = bpf_map_lookup_elem(&network_counters, &pid);
	if (counters)
		return counters;
	bpf_map_update_elem(&network_counters, &pid, &empty, BPF_NOEXIST);
	return bpf_map_lookup_elem(&network_counters, &pid);
}

/*
 * NCCL's transport functions, once they counted for a process, are its
 * source: the verbs posts and polls they make inside are not counted twice.
 */
static __always_inline struct tcheck_network_counters *verbs_counters_of(__u32 pid)
{
	struct tcheck_network_counters *counters = counters_of(pid);

	if (counters && counters->source == WORK_REQUEST_SOURCE_NCCL_IB)
		return NULL;
	return counters;
}

static __always_inline void add_posted(struct tcheck_network_counters *counters, __u32 source,
				       __u64 requests, __u64 signalled, __u64 bytes)
{
	__sync_fetch_and_add(&counters->requests_posted, requests);
	__sync_fetch_and_add(&counters->requests_signalled, signalled);
	__sync_fetch_and_add(&counters->bytes_posted, bytes);
	counters->last_post_ns = bpf_ktime_get_ns();
	counters->source = source;
}

static __always_inline void add_completed(struct tcheck_network_counters *counters, __u32 source,
					  __u64 completions, __u64 errors, __u64 bytes)
{
	__sync_fetch_and_add(&counters->completions, completions);
	__sync_fetch_and_add(&counters->completion_errors, errors);
	__sync_fetch_and_add(&counters->bytes_completed, bytes);
	counters->last_completion_ns = bpf_ktime_get_ns();
	counters->source = source;
}

/* Bytes named by a scatter/gather list, its first WORK_REQUEST_SGE_MAX entries. */
static __always_inline __u64 list_bytes(__u64 sg_list, __u32 entries)
{
	__u64 bytes = 0;

	for (__u32 i = 0; i < WORK_REQUEST_SGE_MAX; i++) {
		if (i >= entries)
			break;
		bytes += user_u32(sg_list + i * VERBS_SGE_SIZE + VERBS_SGE_LENGTH_OFFSET);
	}
	return bytes;
}

/* int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr) */
SEC("uprobe")
int verbs_post_send(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 request = PT_REGS_PARM2(ctx), requests = 0, signalled = 0, bytes = 0, unsignalled = 0;
	struct pending_send_key key = { .pid = pid };
	struct tcheck_network_counters *counters;

	if (!is_traced(pid))
		return 0;
	key.qp_number = user_u32(PT_REGS_PARM1(ctx) + VERBS_QP_NUMBER_OFFSET);
	for (int i = 0; i < WORK_REQUEST_CHAIN_MAX && request; i++) {
		__u64 chunk = list_bytes(user_u64(request + VERBS_SEND_WR_SG_LIST_OFFSET),
					 user_u32(request + VERBS_SEND_WR_NUM_SGE_OFFSET));

		requests++;
		bytes += chunk;
		unsignalled += chunk;
		if (user_u32(request + VERBS_SEND_WR_FLAGS_OFFSET) & VERBS_SEND_SIGNALED) {
			signalled++;
			key.work_request_id = user_u64(request + VERBS_SEND_WR_ID_OFFSET);
			bpf_map_update_elem(&pending_send_bytes, &key, &unsignalled, BPF_ANY);
			unsignalled = 0;
		}
		request = user_u64(request + VERBS_SEND_WR_NEXT_OFFSET);
	}
	counters = verbs_counters_of(pid);
	if (counters)
		add_posted(counters, WORK_REQUEST_SOURCE_VERBS, requests, signalled, bytes);
	return 0;
}

/* int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr) */
SEC("uprobe")
int verbs_post_recv(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 request = PT_REGS_PARM2(ctx), requests = 0, bytes = 0;
	struct tcheck_network_counters *counters;

	if (!is_traced(pid))
		return 0;
	for (int i = 0; i < WORK_REQUEST_CHAIN_MAX && request; i++) {
		requests++;
		bytes += list_bytes(user_u64(request + VERBS_RECV_WR_SG_LIST_OFFSET),
				    user_u32(request + VERBS_RECV_WR_NUM_SGE_OFFSET));
		request = user_u64(request + VERBS_RECV_WR_NEXT_OFFSET);
	}
	counters = verbs_counters_of(pid);
	/* Every receive produces a completion. */
	if (counters)
		add_posted(counters, WORK_REQUEST_SOURCE_VERBS, requests, requests, bytes);
	return 0;
}

static __always_inline void remember_poll(__u64 array, __u64 sizes, __u64 cookie)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct pending_poll poll = { .array = array, .sizes = sizes, .cookie = cookie };

	if (!is_traced(pid_tgid >> 32))
		return;
	bpf_map_update_elem(&pending_polls, &tid, &poll, BPF_ANY);
}

static __always_inline int take_poll(struct pending_poll *poll)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending_poll *found = bpf_map_lookup_elem(&pending_polls, &tid);

	if (!found)
		return -1;
	*poll = *found;
	bpf_map_delete_elem(&pending_polls, &tid);
	return 0;
}

/* int poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc) */
SEC("uprobe")
int verbs_poll_cq_entry(struct pt_regs *ctx)
{
	remember_poll(PT_REGS_PARM3(ctx), 0, 0);
	return 0;
}

SEC("uretprobe")
int verbs_poll_cq_return(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	int polled = (int)PT_REGS_RC(ctx);
	__u64 errors = 0, bytes = 0, completions = 0;
	struct pending_send_key key = { .pid = pid };
	struct tcheck_network_counters *counters;
	struct pending_poll poll;

	if (take_poll(&poll) || polled <= 0)
		return 0;
	for (int i = 0; i < WORK_COMPLETION_MAX; i++) {
		__u64 completion = poll.array + (__u64)i * VERBS_WC_SIZE;
		__u64 *send_bytes;

		if (i >= polled)
			break;
		completions++;
		if (user_u32(completion + VERBS_WC_STATUS_OFFSET)) {
			errors++;
			continue;
		}
		if (user_u32(completion + VERBS_WC_OPCODE_OFFSET) & VERBS_WC_RECV) {
			bytes += user_u32(completion + VERBS_WC_BYTE_LEN_OFFSET);
			continue;
		}
		/* A send completion's byte_len is undefined: take what was posted. */
		key.qp_number = user_u32(completion + VERBS_WC_QP_NUMBER_OFFSET);
		key.work_request_id = user_u64(completion + VERBS_WC_ID_OFFSET);
		send_bytes = bpf_map_lookup_elem(&pending_send_bytes, &key);
		if (send_bytes) {
			bytes += *send_bytes;
			bpf_map_delete_elem(&pending_send_bytes, &key);
		}
	}
	/* More than WORK_COMPLETION_MAX at once: counted, their bytes not read. */
	if (polled > WORK_COMPLETION_MAX)
		completions = polled;
	counters = verbs_counters_of(pid);
	if (counters)
		add_completed(counters, WORK_REQUEST_SOURCE_VERBS, completions, errors, bytes);
	return 0;
}

/*
 * ncclIbIsend(comm, data, size, tag, mhandle, [phandle,] request) posts one
 * request; ncclIbIrecv(comm, n, data, sizes, tags, mhandles, [phandles,]
 * request) posts n receives completed together; ncclIbTest(request, done,
 * sizes) completes one request when *done is set. ncclIbMultiSend posts the
 * WRs of sends already counted: it only marks activity.
 */
SEC("uprobe")
int nccl_ib_entry(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	__u64 cookie = bpf_get_attach_cookie(ctx), bytes = 0, sizes;
	bool int_sizes = cookie & WORK_REQUEST_COOKIE_INT_SIZES;
	struct tcheck_network_counters *counters;
	int receives;

	if (!is_traced(pid))
		return 0;
	switch (cookie & 0xff) {
	case WORK_REQUEST_PROBE_NCCL_ISEND:
		bytes = PT_REGS_PARM3(ctx);
		if (int_sizes)
			bytes = (__u32)bytes;
		counters = counters_of(pid);
		if (counters)
			add_posted(counters, WORK_REQUEST_SOURCE_NCCL_IB, 1, 1, bytes);
		return 0;
	case WORK_REQUEST_PROBE_NCCL_IRECV:
		receives = (int)PT_REGS_PARM2(ctx);
		sizes = PT_REGS_PARM4(ctx);
		if (receives <= 0)
			return 0;
		for (int i = 0; i < NCCL_IB_RECEIVES_MAX; i++) {
			if (i >= receives)
				break;
			if (int_sizes)
				bytes += user_u32(sizes + (__u64)i * 4);
			else
				bytes += user_u64(sizes + (__u64)i * 8);
		}
		counters = counters_of(pid);
		if (counters)
			add_posted(counters, WORK_REQUEST_SOURCE_NCCL_IB, (__u64)receives, 1,
				   bytes);
		return 0;
	case WORK_REQUEST_PROBE_NCCL_TEST:
		remember_poll(PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx), cookie);
		return 0;
	case WORK_REQUEST_PROBE_NCCL_MULTI_SEND:
		counters = counters_of(pid);
		if (counters)
			counters->last_post_ns = bpf_ktime_get_ns();
		return 0;
	default:
		return 0;
	}
}

SEC("uretprobe")
int nccl_ib_test_return(struct pt_regs *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct tcheck_network_counters *counters;
	struct pending_poll poll;
	__u64 bytes = 0;

	if (take_poll(&poll))
		return 0;
	/* ncclResult_t: a failed test is an error completion. */
	if (PT_REGS_RC(ctx)) {
		counters = counters_of(pid);
		if (counters)
			add_completed(counters, WORK_REQUEST_SOURCE_NCCL_IB, 1, 1, 0);
		return 0;
	}
	if (!poll.array || user_u32(poll.array) != 1)
		return 0;
	/* The first size only: a test does not say how many receives it completed. */
	if (poll.sizes)
		bytes = user_u32(poll.sizes);
	counters = counters_of(pid);
	if (counters)
		add_completed(counters, WORK_REQUEST_SOURCE_NCCL_IB, 1, 0, bytes);
	return 0;
}

/* struct ibv_context *ibv_open_device(struct ibv_device *device): tell the daemon. */
SEC("uretprobe")
int verbs_open_device_return(struct pt_regs *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct tcheck_verbs_context_record *record;
	__u32 pid = pid_tgid >> 32;
	__u64 context = PT_REGS_RC(ctx);

	if (!context || !is_traced(pid))
		return 0;
	record = bpf_ringbuf_reserve(&events, sizeof(*record), 0);
	if (!record) {
		count(TCHECK_COUNTER_PROCESS_DROPS);
		return 0;
	}
	fill_header(&record->header, TCHECK_RECORD_VERBS_CONTEXT, pid, (__u32)pid_tgid,
		    bpf_ktime_get_ns());
	record->context = context;
	/* The provider's probes must be in place before the first post: wake the reader. */
	bpf_ringbuf_submit(record, BPF_RB_FORCE_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
