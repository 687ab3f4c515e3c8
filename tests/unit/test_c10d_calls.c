// SPDX-License-Identifier: MIT
/*
 * Tests of the c10d call builder: gloo collectives of hand-built probe
 * records become trace calls whose communicator identity, rank, size and
 * sequence agree across the ranks of a job as torch builds its groups.
 */
#include <stdlib.h>
#include <string.h>

#include "model/c10d_api.h"
#include "record/c10d_calls.h"
#include "unit.h"

#define MAX_EMITTED 32

struct emitted {
	struct trace_record records[MAX_EMITTED];
	unsigned count;
};

static int keep(void *context, const struct trace_record *record)
{
	struct emitted *emitted = context;

	if (emitted->count < MAX_EMITTED)
		emitted->records[emitted->count++] = *record;
	return 0;
}

/*
 * Each process's state, kept per pid as the recorder's process registry
 * keeps it in a slot: the calls below take the slot of their record's pid.
 */
#define TEST_PROCESSES 8

static uint32_t slot_pids[TEST_PROCESSES];
static struct c10d_process *slots[TEST_PROCESSES];

static struct c10d_process **slot_of(uint32_t pid)
{
	for (int i = 0; i < TEST_PROCESSES; i++)
		if (slot_pids[i] == pid || !slot_pids[i]) {
			slot_pids[i] = pid;
			return &slots[i];
		}
	CU_FAIL_FATAL("more processes than the test keeps");
	return NULL;
}

static int test_group_built(struct c10d_calls *calls,
			    const struct tcheck_process_group_record *record)
{
	return c10d_calls_group_built(calls, slot_of(record->header.pid), record);
}

static int test_store_prefix(struct c10d_calls *calls,
			     const struct tcheck_store_prefix_record *record)
{
	return c10d_calls_store_prefix(calls, slot_of(record->header.pid), record);
}

static int test_add(struct c10d_calls *calls, const struct tcheck_c10d_call_record *record,
		    int32_t job_rank, int32_t job_size, const struct trace_python_context *python)
{
	return c10d_calls_add(calls, slot_of(record->header.pid), record, job_rank, job_size,
			      python);
}

static void test_forget(struct c10d_calls *calls, uint32_t pid)
{
	c10d_calls_forget_process(calls, slot_of(pid));
}

/* Frees the calls and every process's state; the slots are free for the next test. */
static void test_free(struct c10d_calls *calls)
{
	for (int i = 0; i < TEST_PROCESSES; i++) {
		c10d_calls_forget_process(calls, &slots[i]);
		slot_pids[i] = 0;
	}
	c10d_calls_free(calls);
}

static struct tcheck_process_group_record group_built(uint32_t pid, uint64_t object, int rank,
						      int size)
{
	struct tcheck_process_group_record record;

	memset(&record, 0, sizeof(record));
	record.header.type = TCHECK_RECORD_PROCESS_GROUP;
	record.header.pid = pid;
	record.header.tid = pid;
	record.group = object;
	record.rank = rank;
	record.size = size;
	return record;
}

/* The probe's record of operation 'name' ("allreduce") on 'object', one tensor. */
static struct tcheck_c10d_call_record c10d_call(uint32_t pid, uint64_t object, const char *name,
						uint64_t numel, uint64_t entry_ns)
{
	struct tcheck_c10d_call_record record;

	memset(&record, 0, sizeof(record));
	record.header.type = TCHECK_RECORD_C10D_CALL;
	record.header.pid = pid;
	record.header.tid = pid;
	record.header.timestamp_ns = entry_ns;
	record.group = object;
	record.tensor_count = 1;
	record.numel = numel;
	record.dtype = 6; /* Float */
	record.peer = -1;
	for (size_t i = 0; i < c10d_operation_count(); i++)
		if (strcmp(c10d_operation_at(i)->method, name) == 0)
			record.operation = (uint32_t)i;
	return record;
}

/* The last call emitted. */
static const struct trace_nccl_call *last_call(const struct emitted *emitted)
{
	for (unsigned i = emitted->count; i > 0; i--)
		if (emitted->records[i - 1].kind == TRACE_RECORD_NCCL_CALL)
			return &emitted->records[i - 1].call;
	return NULL;
}

/*
 * torch 2.x builds a ProcessGroup and its gloo Backend, both of the world's
 * size, on every rank, at other addresses: the backend's calls of the two
 * ranks share one identity, and each rank numbers its calls from 0.
 */
UNIT_TEST(c10d_calls, world_group_has_one_identity_on_every_rank)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_process_group_record built;
	struct tcheck_c10d_call_record raw;
	const struct trace_nccl_call *call;
	uint64_t identity;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	for (int rank = 0; rank < 2; rank++) {
		built = group_built(100 + (uint32_t)rank, 0x1000 + 0x100 * (uint64_t)rank, rank, 2);
		CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
		built = group_built(100 + (uint32_t)rank, 0x2000 + 0x100 * (uint64_t)rank, rank, 2);
		CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	}
	raw = c10d_call(100, 0x2000, "allreduce", 1732, 5000);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(emitted.count, 2);
	CU_ASSERT_EQUAL(emitted.records[0].kind, TRACE_RECORD_COMMUNICATOR);
	CU_ASSERT_EQUAL(emitted.records[0].communicator.rank, 0);
	CU_ASSERT_EQUAL(emitted.records[0].communicator.nranks, 2);
	call = last_call(&emitted);
	CU_ASSERT_STRING_EQUAL(call->function, "c10d::allreduce");
	CU_ASSERT_PTR_EQUAL(call->api, nccl_function_by_name("c10d::allreduce"));
	CU_ASSERT_EQUAL(call->api->kind, NCCL_KIND_COLLECTIVE);
	CU_ASSERT_EQUAL(call->params[C10D_PARAM_COUNT], 1732);
	CU_ASSERT_STRING_EQUAL(torch_scalar_type_name((int64_t)call->params[C10D_PARAM_DTYPE]),
			       "Float");
	CU_ASSERT_EQUAL(call->rank, 0);
	CU_ASSERT_EQUAL(call->nranks, 2);
	CU_ASSERT_EQUAL(call->seq, 0);
	identity = call->comm_id;
	CU_ASSERT_NOT_EQUAL(identity, 0);

	raw = c10d_call(101, 0x2100, "allreduce", 1732, 5100);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	call = last_call(&emitted);
	CU_ASSERT_EQUAL(call->comm_id, identity);
	CU_ASSERT_EQUAL(call->rank, 1);
	CU_ASSERT_EQUAL(call->seq, 0);
	/* The group is announced once; its next call is numbered on. */
	raw = c10d_call(101, 0x2100, "barrier", 0, 5200);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	CU_ASSERT_EQUAL(emitted.count, 5);
	CU_ASSERT_STRING_EQUAL(last_call(&emitted)->function, "c10d::barrier");
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 1);
	test_free(calls);
}

/* A subgroup whose new_group call was not counted: its calls are kept, not matched across ranks. */
UNIT_TEST(c10d_calls, subgroup_has_no_shared_identity)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_process_group_record built = group_built(100, 0x1000, 2, 4);
	struct tcheck_c10d_call_record raw;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	built = group_built(100, 0x3000, 0, 2);
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	raw = c10d_call(100, 0x3000, "broadcast", 10, 5000);
	CU_ASSERT_EQUAL(test_add(calls, &raw, 2, 4, NULL), 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->rank, 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->nranks, 2);
	CU_ASSERT_NOT_EQUAL(strlen(emitted.records[0].communicator.note), 0);
	test_free(calls);
}

/* The identity of the group 'object' of process 'pid', from its first call. */
static uint64_t identity_of(struct c10d_calls *calls, struct emitted *emitted, uint32_t pid,
			    uint64_t object, int32_t *rank)
{
	struct tcheck_c10d_call_record raw = c10d_call(pid, object, "allreduce", 16, 6000);

	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	*rank = last_call(emitted)->rank;
	return last_call(emitted)->comm_id;
}

/* Process 'pid' builds the PrefixStore 'object' of 'prefix' over 'parent'. */
static void store_built(struct c10d_calls *calls, uint32_t pid, uint64_t object, uint64_t parent,
			const char *prefix)
{
	struct tcheck_store_prefix_record record;

	memset(&record, 0, sizeof(record));
	record.header.type = TCHECK_RECORD_STORE_PREFIX;
	record.header.pid = pid;
	record.header.tid = pid;
	record.store = object;
	record.parent = parent;
	record.length = (uint32_t)strlen(prefix);
	memcpy(record.prefix, prefix, record.length);
	CU_ASSERT_EQUAL(test_store_prefix(calls, &record), 0);
}

/*
 * Three ranks, as torch 2.x builds groups: each group on a store of its
 * name ("1/", "2/"), wrapped in one of its device ("cpu/"). Every rank
 * names new_group([0, 1]) "1" and new_group([1, 2]) "2", and only the
 * members build each. Each subgroup has one identity on its two members,
 * and the two differ although each is the first group of size 2 that
 * ranks 0 and 2 build. A group built with no store of its own before it
 * (the last store's group already built) is not matched.
 */
UNIT_TEST(c10d_calls, subgroups_are_matched_by_their_store_name)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_process_group_record built;
	uint64_t first_on_0, first_on_1, second_on_1, second_on_2, world;
	int32_t rank;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	for (uint32_t r = 0; r < 3; r++) {
		store_built(calls, 100 + r, 0x500, 0x400, "0/");
		store_built(calls, 100 + r, 0x600, 0x500, "cpu/");
		built = group_built(100 + r, 0x1000, (int)r, 3);
		CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	}
	for (uint32_t r = 0; r < 2; r++) {
		store_built(calls, 100 + r, 0x700, 0x400, "1/");
		store_built(calls, 100 + r, 0x780, 0x700, "cpu/");
		built = group_built(100 + r, 0x2000, (int)r, 2);
		CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	}
	for (uint32_t r = 1; r < 3; r++) {
		store_built(calls, 100 + r, 0x800, 0x400, "2/");
		store_built(calls, 100 + r, 0x880, 0x800, "cpu/");
		built = group_built(100 + r, r == 1 ? 0x3000 : 0x2800, (int)r - 1, 2);
		CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	}
	world = identity_of(calls, &emitted, 100, 0x1000, &rank);
	first_on_0 = identity_of(calls, &emitted, 100, 0x2000, &rank);
	CU_ASSERT_EQUAL(rank, 0);
	first_on_1 = identity_of(calls, &emitted, 101, 0x2000, &rank);
	CU_ASSERT_EQUAL(rank, 1);
	second_on_1 = identity_of(calls, &emitted, 101, 0x3000, &rank);
	CU_ASSERT_EQUAL(rank, 0);
	second_on_2 = identity_of(calls, &emitted, 102, 0x2800, &rank);
	CU_ASSERT_EQUAL(rank, 1);
	CU_ASSERT_NOT_EQUAL(first_on_0, 0);
	CU_ASSERT_NOT_EQUAL(second_on_1, 0);
	CU_ASSERT_EQUAL(first_on_0, first_on_1);
	CU_ASSERT_EQUAL(second_on_1, second_on_2);
	CU_ASSERT_NOT_EQUAL(first_on_0, second_on_2);
	CU_ASSERT_NOT_EQUAL(first_on_0, world);
	CU_ASSERT_NOT_EQUAL(second_on_1, world);
	/* Another group on the same thread with no new store: no name to take. */
	built = group_built(102, 0x2900, 0, 2);
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	CU_ASSERT_EQUAL(identity_of(calls, &emitted, 102, 0x2900, &rank), 0);
	test_free(calls);
}

/*
 * Attached after the groups were built: a group first seen in a call is
 * the world where the process's rank is known (numbered by first use on
 * every rank alike), and has no identity where it is not.
 */
UNIT_TEST(c10d_calls, group_built_before_tracing_is_the_world_when_the_rank_is_known)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_c10d_call_record raw;
	uint64_t identity;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	raw = c10d_call(100, 0x1000, "allreduce", 5, 5000);
	CU_ASSERT_EQUAL(test_add(calls, &raw, 0, 2, NULL), 0);
	identity = last_call(&emitted)->comm_id;
	CU_ASSERT_NOT_EQUAL(identity, 0);
	CU_ASSERT_EQUAL(emitted.records[0].communicator.origin, TRACE_COMM_UNKNOWN);
	raw = c10d_call(101, 0x1800, "allreduce", 5, 5000);
	CU_ASSERT_EQUAL(test_add(calls, &raw, 1, 2, NULL), 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, identity);
	CU_ASSERT_EQUAL(last_call(&emitted)->rank, 1);
	raw = c10d_call(102, 0x1000, "allreduce", 5, 5000);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->rank, -1);
	test_free(calls);
}

/* A group destroyed and another built at its address is a new group: a new identity, seq 0. */
UNIT_TEST(c10d_calls, group_rebuilt_at_the_same_address_is_new)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_process_group_record built = group_built(100, 0x1000, 0, 2);
	struct tcheck_c10d_call_record raw = c10d_call(100, 0x1000, "allreduce", 5, 5000);
	uint64_t first;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	first = last_call(&emitted)->comm_id;
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 1);
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	CU_ASSERT_NOT_EQUAL(last_call(&emitted)->comm_id, first);
	CU_ASSERT_NOT_EQUAL(last_call(&emitted)->comm_id, 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 0);
	/* Forgotten with its process: the next call is of a group never seen. */
	test_forget(calls, 100);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, 0);
	test_free(calls);
}

/* Point-to-point calls carry their peer; the table's names resolve both ways. */
UNIT_TEST(c10d_calls, send_carries_its_peer)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_process_group_record built = group_built(100, 0x1000, 0, 2);
	struct tcheck_c10d_call_record raw = c10d_call(100, 0x1000, "send", 5, 5000);
	const struct trace_nccl_call *call;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	raw.peer = 1;
	raw.cpu_wait_ns = 777000;
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	call = last_call(&emitted);
	CU_ASSERT_EQUAL(call->api->kind, NCCL_KIND_POINT_TO_POINT);
	CU_ASSERT_EQUAL(call->param_count, 6);
	CU_ASSERT_EQUAL((int64_t)call->params[C10D_PARAM_PEER], 1);
	/* The thread's wait for a CPU, measured at the entry, comes last. */
	CU_ASSERT_EQUAL(trace_call_cpu_wait(call), 777000);
	CU_ASSERT_PTR_NULL(nccl_function_by_name("c10d::nothing"));
	CU_ASSERT_EQUAL(nccl_function_index(call->api), -1);
	for (size_t i = 0; i < c10d_operation_count(); i++)
		CU_ASSERT_PTR_EQUAL(nccl_function_by_name(c10d_operation_at(i)->api.name),
				    &c10d_operation_at(i)->api);
	test_free(calls);
}

static struct tcheck_c10d_work_record work_event(uint32_t pid, uint32_t tid, uint64_t work,
						 enum tcheck_c10d_work_event event, uint64_t at_ns)
{
	struct tcheck_c10d_work_record record;

	memset(&record, 0, sizeof(record));
	record.header.type = TCHECK_RECORD_C10D_WORK;
	record.header.pid = pid;
	record.header.tid = tid;
	record.header.timestamp_ns = at_ns;
	record.work = work;
	record.event = event;
	return record;
}

/* The calls handed over in flight, apart from those emitted for the trace. */
static struct emitted in_flight_calls;

static int keep_in_flight(void *context, const struct trace_record *record)
{
	(void)context;
	return keep(&in_flight_calls, record);
}

/*
 * An awaited gloo all-reduce: in flight from its entry (to the detectors
 * only), emitted when the work built inside it ends on a worker thread, its
 * duration up to then. Two calls of one thread in a row each get their own
 * work; a work ending with an error is flagged.
 */
UNIT_TEST(c10d_calls, awaited_call_lasts_until_its_work_ends)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, keep_in_flight, &emitted);
	struct tcheck_process_group_record built = group_built(100, 0x2000, 0, 2);
	struct tcheck_c10d_call_record raw = c10d_call(100, 0x2000, "allreduce", 64, 5000);
	struct tcheck_c10d_work_record work;
	const struct trace_nccl_call *call;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	memset(&in_flight_calls, 0, sizeof(in_flight_calls));
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	raw.flags = TCHECK_C10D_CALL_AWAITS_WORK;
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	/* The group's announcement only; the call is in flight. */
	CU_ASSERT_EQUAL(emitted.count, 1);
	CU_ASSERT_PTR_NULL(last_call(&emitted));
	CU_ASSERT_EQUAL_FATAL(in_flight_calls.count, 1);
	call = last_call(&in_flight_calls);
	CU_ASSERT_EQUAL(call->flags & (TRACE_CALL_OPEN | TRACE_CALL_WORK_AWAITED),
			TRACE_CALL_OPEN | TRACE_CALL_WORK_AWAITED);
	CU_ASSERT_EQUAL(call->entry_ns, 5000);
	work = work_event(100, 100, 0xaa00, TCHECK_C10D_WORK_BUILT, 5010);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	/* The next one, on the same thread, before the first ends. */
	raw = c10d_call(100, 0x2000, "broadcast", 64, 6000);
	raw.flags = TCHECK_C10D_CALL_AWAITS_WORK;
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	work = work_event(100, 100, 0xbb00, TCHECK_C10D_WORK_BUILT, 6010);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL(emitted.count, 1);
	/* The worker thread ends the first work, then the second with an error. */
	work = work_event(100, 107, 0xaa00, TCHECK_C10D_WORK_FINISHED, 9000);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL_FATAL(emitted.count, 2);
	call = last_call(&emitted);
	CU_ASSERT_STRING_EQUAL(call->function, "c10d::allreduce");
	CU_ASSERT_EQUAL(call->entry_ns, 5000);
	CU_ASSERT_EQUAL(call->duration_ns, 4000);
	CU_ASSERT_EQUAL(call->tid, 100);
	CU_ASSERT_EQUAL(call->seq, 0);
	CU_ASSERT_EQUAL(
		call->flags & (TRACE_CALL_OPEN | TRACE_CALL_WORK_AWAITED | TRACE_CALL_WORK_FAILED),
		TRACE_CALL_WORK_AWAITED);
	work = work_event(100, 107, 0xbb00, TCHECK_C10D_WORK_FAILED, 9500);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL_FATAL(emitted.count, 3);
	call = last_call(&emitted);
	CU_ASSERT_STRING_EQUAL(call->function, "c10d::broadcast");
	CU_ASSERT_EQUAL(call->duration_ns, 3500);
	CU_ASSERT_EQUAL(call->seq, 1);
	CU_ASSERT(call->flags & TRACE_CALL_WORK_FAILED);
	/* A work nobody waits on (its call came before tracing) is ignored. */
	work = work_event(100, 107, 0xcc00, TCHECK_C10D_WORK_FINISHED, 9900);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL(emitted.count, 3);
	test_free(calls);
}

/*
 * An awaited call whose work is never built (it failed before queueing
 * one) is emitted entered only: at the thread's next call, or once the
 * time a work takes to be built has passed. One still waiting when its
 * process ends is an open call that lasted until then.
 */
UNIT_TEST(c10d_calls, awaited_calls_without_work_or_end_are_still_written)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_process_group_record built = group_built(100, 0x2000, 0, 2);
	struct tcheck_c10d_call_record raw = c10d_call(100, 0x2000, "allreduce", 64, 5000);
	struct tcheck_c10d_work_record work;
	const struct trace_nccl_call *call;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	raw.flags = TCHECK_C10D_CALL_AWAITS_WORK;
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	raw = c10d_call(100, 0x2000, "allreduce", 64, 6000);
	raw.flags = TCHECK_C10D_CALL_AWAITS_WORK;
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	CU_ASSERT_EQUAL_FATAL(emitted.count, 2);
	call = last_call(&emitted);
	CU_ASSERT_EQUAL(call->entry_ns, 5000);
	CU_ASSERT_EQUAL(call->flags & (TRACE_CALL_OPEN | TRACE_CALL_WORK_AWAITED), 0);
	/* The second gets no work either: written at the first tick a second later. */
	CU_ASSERT_EQUAL(c10d_calls_tick(calls, 6000 + C10D_WORK_BUILT_WITHIN_NS - 1), 0);
	CU_ASSERT_EQUAL(emitted.count, 2);
	CU_ASSERT_EQUAL(c10d_calls_tick(calls, 6001 + C10D_WORK_BUILT_WITHIN_NS), 0);
	CU_ASSERT_EQUAL_FATAL(emitted.count, 3);
	CU_ASSERT_EQUAL(last_call(&emitted)->entry_ns, 6000);
	/* A third whose work never ends: open when its process ends, for as long as it lasted. */
	raw = c10d_call(100, 0x2000, "allreduce", 64, 7000000000ull);
	raw.flags = TCHECK_C10D_CALL_AWAITS_WORK;
	CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
	work = work_event(100, 100, 0xaa00, TCHECK_C10D_WORK_BUILT, 7000000100ull);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL(c10d_calls_tick(calls, 9000000000ull), 0);
	CU_ASSERT_EQUAL(emitted.count, 3);
	CU_ASSERT_EQUAL(c10d_calls_end(calls, 101, 9500000000ull), 0);
	CU_ASSERT_EQUAL(emitted.count, 3);
	CU_ASSERT_EQUAL(c10d_calls_end(calls, 100, 9500000000ull), 0);
	CU_ASSERT_EQUAL_FATAL(emitted.count, 4);
	call = last_call(&emitted);
	CU_ASSERT_EQUAL(call->flags & (TRACE_CALL_OPEN | TRACE_CALL_WORK_AWAITED),
			TRACE_CALL_OPEN | TRACE_CALL_WORK_AWAITED);
	CU_ASSERT_EQUAL(call->duration_ns, 2500000000ull);
	CU_ASSERT_EQUAL(call->seq, 2);
	/* Its work ending later finds nothing to end. */
	work = work_event(100, 107, 0xaa00, TCHECK_C10D_WORK_FINISHED, 9600000000ull);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL(emitted.count, 4);
	test_free(calls);
}

/*
 * gloo runs a group's works on two worker threads: a thread's second call
 * may end first. Its calls still leave in the order it made them, each with
 * its own duration, so every rank's collectives reach the detectors in one
 * order.
 */
UNIT_TEST(c10d_calls, a_threads_calls_leave_in_the_order_made)
{
	struct emitted emitted = { .count = 0 };
	struct c10d_calls *calls = c10d_calls_new(keep, NULL, &emitted);
	struct tcheck_process_group_record built = group_built(100, 0x2000, 0, 2);
	struct tcheck_c10d_work_record work;

	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	CU_ASSERT_EQUAL(test_group_built(calls, &built), 0);
	for (int i = 0; i < 2; i++) {
		struct tcheck_c10d_call_record raw = c10d_call(
			100, 0x2000, "allreduce", 64 + (uint64_t)i, 5000 + 1000 * (uint64_t)i);

		raw.flags = TCHECK_C10D_CALL_AWAITS_WORK;
		CU_ASSERT_EQUAL(test_add(calls, &raw, -1, -1, NULL), 0);
		work = work_event(100, 100, 0xaa00 + 0x100 * (uint64_t)i, TCHECK_C10D_WORK_BUILT,
				  5010 + 1000 * (uint64_t)i);
		CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	}
	work = work_event(100, 108, 0xab00, TCHECK_C10D_WORK_FINISHED, 8000);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL(emitted.count, 1); /* the announcement: the first still runs */
	work = work_event(100, 107, 0xaa00, TCHECK_C10D_WORK_FINISHED, 9000);
	CU_ASSERT_EQUAL(c10d_calls_work(calls, &work), 0);
	CU_ASSERT_EQUAL_FATAL(emitted.count, 3);
	CU_ASSERT_EQUAL(emitted.records[1].call.params[C10D_PARAM_COUNT], 64);
	CU_ASSERT_EQUAL(emitted.records[1].call.duration_ns, 4000);
	CU_ASSERT_EQUAL(emitted.records[1].call.seq, 0);
	CU_ASSERT_EQUAL(emitted.records[2].call.params[C10D_PARAM_COUNT], 65);
	CU_ASSERT_EQUAL(emitted.records[2].call.duration_ns, 2000);
	CU_ASSERT_EQUAL(emitted.records[2].call.seq, 1);
	test_free(calls);
}
