// SPDX-License-Identifier: MIT
/* Call reconstruction: argument decoding, groups, communicators, sequence numbers. */
#include <stdlib.h>
#include <string.h>

#include "export/export_jsonl.h"
#include "model/nccl_api.h"
#include "record/call_builder.h"
#include "unit.h"

#define MAX_EMITTED 64

struct emitted {
	struct trace_record records[MAX_EMITTED];
	int count;
	int resolve_calls;
	struct trace_communicator resolve_answer;
};

static int collect(void *context, const struct trace_record *record)
{
	struct emitted *emitted = context;

	if (emitted->count < MAX_EMITTED)
		emitted->records[emitted->count++] = *record;
	return 0;
}

static void answer_resolve(void *context, uint32_t pid, uint64_t handle,
			   struct trace_communicator *communicator)
{
	struct emitted *emitted = context;

	emitted->resolve_calls++;
	*communicator = emitted->resolve_answer;
}

/*
 * The builder's state for each process, in the slots the recorder keeps in
 * its process registry: one per pid these tests use.
 */
#define MAX_PIDS 4
static uint32_t slot_pids[MAX_PIDS];
static struct call_builder_process *slots[MAX_PIDS];

static struct call_builder_process **slot_of(uint32_t pid)
{
	for (int i = 0; i < MAX_PIDS; i++)
		if (slots[i] && slot_pids[i] == pid)
			return &slots[i];
	for (int i = 0; i < MAX_PIDS; i++)
		if (!slots[i]) {
			slot_pids[i] = pid;
			return &slots[i];
		}
	CU_FAIL_FATAL("more processes than slots");
	return NULL;
}

static int add(struct call_builder *builder, const struct tcheck_call_record *record)
{
	return call_builder_add(builder, slot_of(record->header.pid), record, NULL);
}

static void free_builder(struct call_builder *builder)
{
	for (int i = 0; i < MAX_PIDS; i++)
		call_builder_forget_process(builder, &slots[i]);
	CU_ASSERT_EQUAL(call_builder_communicator_count(builder), 0);
	call_builder_free(builder);
}

static struct tcheck_call_record make_call(const char *name, uint32_t tid, uint64_t entry_ns)
{
	struct tcheck_call_record record;

	memset(&record, 0, sizeof(record));
	record.header.type = TCHECK_RECORD_CALL;
	record.header.pid = 100;
	record.header.tid = tid;
	record.header.timestamp_ns = entry_ns;
	record.return_ns = entry_ns + 500;
	record.function_index = (uint32_t)nccl_function_index(nccl_function_by_name(name));
	return record;
}

static const struct trace_nccl_call *last_call(const struct emitted *emitted)
{
	for (int i = emitted->count - 1; i >= 0; i--)
		if (emitted->records[i].kind == TRACE_RECORD_NCCL_CALL)
			return &emitted->records[i].call;
	return NULL;
}

static uint8_t id_bytes[TCHECK_BLOB_BYTES];

static void create_world(struct call_builder *builder, uint64_t handle, int rank, int nranks)
{
	struct tcheck_call_record init = make_call("ncclCommInitRank", 1, 1000);

	for (int i = 0; i < TCHECK_BLOB_BYTES; i++)
		id_bytes[i] = (uint8_t)(i * 7 + 200);
	init.args[0] = 0x7000; /* comm* */
	init.args[1] = (uint64_t)nranks;
	init.args[2] = 0xffffffff00000000ULL | (uint32_t)rank; /* int in a 64-bit register */
	memcpy(init.blob, id_bytes, sizeof(id_bytes));
	init.flags = TCHECK_CALL_HAS_BLOB | TCHECK_CALL_HAS_OUT_VALUE;
	init.out_value = handle;
	add(builder, &init);
}

UNIT_TEST(call_builder, decodes_all_reduce_arguments_from_registers_and_stack)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call = make_call("ncclAllReduce", 1, 5000);
	const struct trace_nccl_call *built;

	create_world(builder, 0xc0de, 2, 4);
	call.args[0] = 0x1000; /* sendbuff */
	call.args[1] = 0x2000; /* recvbuff */
	call.args[2] = 4096;   /* count */
	call.args[3] = 7;      /* ncclFloat32 */
	call.args[4] = 0;      /* ncclSum */
	call.args[5] = 0xc0de; /* comm */
	call.args[6] = 0x5555; /* stream: the seventh argument, first stack word */
	call.flags = TCHECK_CALL_HAS_STACK_ARGS;
	call.return_value = 0;
	CU_ASSERT_EQUAL(add(builder, &call), 0);
	built = last_call(&emitted);
	CU_ASSERT_PTR_NOT_NULL_FATAL(built);
	CU_ASSERT_STRING_EQUAL(built->function, "ncclAllReduce");
	CU_ASSERT_EQUAL(built->param_count, 7);
	CU_ASSERT_EQUAL(built->params[2], 4096);
	CU_ASSERT_EQUAL(built->params[3], 7);
	CU_ASSERT_EQUAL(built->params[5], 0xc0de);
	CU_ASSERT_EQUAL(built->params[6], 0x5555);
	CU_ASSERT_FALSE(built->flags & TRACE_CALL_STACK_ARGS_UNREAD);
	CU_ASSERT_EQUAL(built->duration_ns, 500);
	CU_ASSERT_EQUAL(built->comm, 0xc0de);
	CU_ASSERT_EQUAL(built->comm_id, nccl_unique_id_hash(id_bytes, sizeof(id_bytes)));
	CU_ASSERT_EQUAL(built->rank, 2);
	CU_ASSERT_EQUAL(built->nranks, 4);
	CU_ASSERT_EQUAL(built->seq, 0);
	free_builder(builder);
}

UNIT_TEST(call_builder, reduce_root_is_the_sixth_register_and_comm_on_the_stack)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call = make_call("ncclReduce", 1, 5000);
	const struct trace_nccl_call *built;

	create_world(builder, 0xc0de, 0, 2);
	call.args[5] = 1;      /* root */
	call.args[6] = 0xc0de; /* comm */
	call.args[7] = 0x77;   /* stream */
	call.flags = TCHECK_CALL_HAS_STACK_ARGS;
	add(builder, &call);
	built = last_call(&emitted);
	CU_ASSERT_EQUAL(built->params[5], 1);
	CU_ASSERT_EQUAL(built->params[6], 0xc0de);
	CU_ASSERT_EQUAL(built->params[7], 0x77);
	CU_ASSERT_EQUAL(built->rank, 0);
	free_builder(builder);
}

UNIT_TEST(call_builder, a_stream_the_probe_did_not_read_is_flagged_unread_not_zero)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call = make_call("ncclAllReduce", 1, 5000);
	struct tcheck_call_record send = make_call("ncclSend", 1, 6000);
	const struct trace_nccl_call *built;
	json_t *args;

	create_world(builder, 0xc0de, 0, 2);
	call.args[2] = 4096;
	call.args[5] = 0xc0de;
	add(builder, &call);
	built = last_call(&emitted);
	CU_ASSERT_PTR_NOT_NULL_FATAL(built);
	CU_ASSERT(built->flags & TRACE_CALL_STACK_ARGS_UNREAD);
	CU_ASSERT_EQUAL(built->params[2], 4096);
	args = export_json_call_args(built);
	CU_ASSERT_PTR_NOT_NULL_FATAL(args);
	CU_ASSERT(json_is_null(json_object_get(args, "stream")));
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(args, "count")), 4096);
	json_decref(args);
	/* Six arguments, all in registers: nothing to read from the stack. */
	send.args[4] = 0xc0de;
	send.args[5] = 0x5555;
	add(builder, &send);
	built = last_call(&emitted);
	CU_ASSERT_FALSE(built->flags & TRACE_CALL_STACK_ARGS_UNREAD);
	args = export_json_call_args(built);
	CU_ASSERT_PTR_NOT_NULL_FATAL(args);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(args, "stream")), 0x5555);
	json_decref(args);
	free_builder(builder);
}

UNIT_TEST(call_builder, sequence_numbers_count_accepted_top_level_calls_per_communicator)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call;

	create_world(builder, 0xa, 0, 2);
	create_world(builder, 0xb, 0, 2);
	for (int i = 0; i < 3; i++) {
		call = make_call("ncclAllGather", 1, 2000 + (uint64_t)i);
		call.args[4] = 0xa;
		add(builder, &call);
		CU_ASSERT_EQUAL(last_call(&emitted)->seq, i);
	}
	call = make_call("ncclSend", 1, 3000);
	call.args[4] = 0xb;
	add(builder, &call);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 0);
	/* A rejected call was never issued. */
	call = make_call("ncclSend", 1, 3100);
	call.args[4] = 0xb;
	call.return_value = 4;
	add(builder, &call);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, -1);
	/* A call NCCL makes inside another (Bcast -> Broadcast) is not the application's. */
	call = make_call("ncclBroadcast", 1, 3200);
	call.args[5] = 0xb;
	call.depth = 1;
	add(builder, &call);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, -1);
	call = make_call("ncclRecv", 1, 3300);
	call.args[4] = 0xb;
	add(builder, &call);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 1);
	free_builder(builder);
}

/*
 * A call seen in flight (flagged open) carries the sequence number it will
 * have and its communicator, and takes nothing from the calls that return:
 * seen twice and then returned, it is numbered once. An init still open
 * made no communicator: it is named by its rank, size and unique id.
 */
UNIT_TEST(call_builder, open_calls_are_named_without_consuming_a_sequence_number)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call, init = make_call("ncclCommInitRank", 2, 900);
	const struct trace_nccl_call *built;

	create_world(builder, 0xa, 1, 4);
	for (int seen = 0; seen < 2; seen++) {
		call = make_call("ncclAllReduce", 1, 2000);
		call.args[5] = 0xa;
		call.flags = TCHECK_CALL_OPEN;
		call.return_ns = 2000 + 700 * (uint64_t)(seen + 1);
		CU_ASSERT_EQUAL(add(builder, &call), 0);
		built = last_call(&emitted);
		CU_ASSERT_TRUE(built->flags & TRACE_CALL_OPEN);
		CU_ASSERT_EQUAL(built->seq, 0);
		CU_ASSERT_EQUAL(built->rank, 1);
		CU_ASSERT_EQUAL(built->nranks, 4);
		CU_ASSERT_EQUAL(built->duration_ns, 700 * (uint64_t)(seen + 1));
	}
	call = make_call("ncclAllReduce", 1, 2000);
	call.args[5] = 0xa;
	add(builder, &call);
	CU_ASSERT_FALSE(last_call(&emitted)->flags & TRACE_CALL_OPEN);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 0);
	call = make_call("ncclAllReduce", 1, 3000);
	call.args[5] = 0xa;
	add(builder, &call);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 1);

	/* Rank 3 of 4 waiting in its init: the identity its communicator will have. */
	init.args[1] = 4;
	init.args[2] = 3;
	memcpy(init.blob, id_bytes, sizeof(id_bytes));
	init.flags = TCHECK_CALL_HAS_BLOB | TCHECK_CALL_OPEN;
	CU_ASSERT_EQUAL(add(builder, &init), 0);
	built = last_call(&emitted);
	CU_ASSERT_TRUE(built->flags & TRACE_CALL_OPEN);
	CU_ASSERT_EQUAL(built->rank, 3);
	CU_ASSERT_EQUAL(built->nranks, 4);
	CU_ASSERT_EQUAL(built->comm_id, nccl_unique_id_hash(id_bytes, TCHECK_BLOB_BYTES));
	CU_ASSERT_EQUAL(call_builder_communicator_count(builder), 1);
	free_builder(builder);
}

UNIT_TEST(call_builder, group_depth_follows_start_and_end_per_thread)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	const char *sequence[] = { "ncclGroupStart", "ncclGroupStart", "ncclSend",
				   "ncclGroupEnd",   "ncclRecv",       "ncclGroupEnd" };
	const uint32_t expected[] = { 0, 1, 2, 1, 1, 0 };
	struct tcheck_call_record call;

	create_world(builder, 0xa, 0, 2);
	for (int i = 0; i < 6; i++) {
		call = make_call(sequence[i], 1, 100 + (uint64_t)i);
		call.args[4] = 0xa;
		add(builder, &call);
		CU_ASSERT_EQUAL(last_call(&emitted)->group_depth, expected[i]);
	}
	/* Another thread has its own depth. */
	call = make_call("ncclGroupStart", 2, 200);
	add(builder, &call);
	CU_ASSERT_EQUAL(last_call(&emitted)->group_depth, 0);
	free_builder(builder);
}

UNIT_TEST(call_builder, split_identity_derives_from_parent_index_and_colour)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, answer_resolve, &emitted);
	struct tcheck_call_record split;
	uint64_t world_id;

	emitted.resolve_answer.origin = TRACE_COMM_RECOVERED;
	emitted.resolve_answer.rank = 1;
	emitted.resolve_answer.nranks = 2;
	create_world(builder, 0xa, 2, 4);
	world_id = nccl_unique_id_hash(id_bytes, sizeof(id_bytes));
	for (int i = 0; i < 2; i++) {
		split = make_call("ncclCommSplit", 1, 500 + (uint64_t)i);
		split.args[0] = 0xa;
		split.args[1] = 1; /* color */
		split.args[2] = 2; /* key */
		split.flags = TCHECK_CALL_HAS_OUT_VALUE;
		split.out_value = 0xb0 + (uint64_t)i;
		add(builder, &split);
		CU_ASSERT_EQUAL(last_call(&emitted)->comm_id,
				nccl_split_comm_id(world_id, (uint32_t)i, 1));
		CU_ASSERT_EQUAL(last_call(&emitted)->rank, 1);
		CU_ASSERT_EQUAL(last_call(&emitted)->nranks, 2);
	}
	CU_ASSERT_NOT_EQUAL(nccl_split_comm_id(world_id, 0, 1), nccl_split_comm_id(world_id, 1, 1));
	CU_ASSERT_NOT_EQUAL(nccl_split_comm_id(world_id, 0, 1), nccl_split_comm_id(world_id, 0, 2));
	CU_ASSERT_EQUAL(call_builder_communicator_count(builder), 3);
	free_builder(builder);
}

UNIT_TEST(call_builder, refused_split_does_not_advance_the_split_index)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record split;
	uint64_t world_id;

	create_world(builder, 0xa, 0, 2);
	world_id = nccl_unique_id_hash(id_bytes, sizeof(id_bytes));
	/* Refused before it started (a bad colour): the peers never saw it. */
	split = make_call("ncclCommSplit", 1, 500);
	split.args[0] = 0xa;
	split.args[1] = (uint64_t)-7;
	split.return_value = 4;
	add(builder, &split);
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, world_id);
	split = make_call("ncclCommSplit", 1, 600);
	split.args[0] = 0xa;
	split.args[1] = 3;
	split.flags = TCHECK_CALL_HAS_OUT_VALUE;
	split.out_value = 0xb0;
	add(builder, &split);
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, nccl_split_comm_id(world_id, 0, 3));
	free_builder(builder);
}

UNIT_TEST(call_builder, init_all_makes_one_communicator_of_local_ranks)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call = make_call("ncclCommInitAll", 1, 100);
	const uint64_t handles[3] = { 0xa0, 0xb0, 0xc0 };
	uint64_t first_id = 0;
	int seen = 0;

	call.args[1] = 3; /* ndev */
	call.flags = TCHECK_CALL_HAS_BLOB;
	memcpy(call.blob, handles, sizeof(handles));
	add(builder, &call);
	CU_ASSERT_FALSE(last_call(&emitted)->flags & TRACE_CALL_UNIQUE_ID_VALID);
	for (int i = 0; i < emitted.count; i++) {
		const struct trace_communicator *comm = &emitted.records[i].communicator;

		if (emitted.records[i].kind != TRACE_RECORD_COMMUNICATOR)
			continue;
		first_id = first_id ? first_id : comm->comm_id;
		CU_ASSERT_EQUAL(comm->comm_id, first_id);
		CU_ASSERT_EQUAL(comm->handle, handles[comm->rank]);
		CU_ASSERT_EQUAL(comm->nranks, 3);
		seen++;
	}
	CU_ASSERT_EQUAL(seen, 3);
	CU_ASSERT_NOT_EQUAL(first_id, 0);
	call = make_call("ncclAllReduce", 1, 200);
	call.args[5] = 0xb0;
	add(builder, &call);
	CU_ASSERT_EQUAL(last_call(&emitted)->rank, 1);
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, first_id);
	free_builder(builder);
}

UNIT_TEST(call_builder, unknown_handle_is_resolved_once_and_reported)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, answer_resolve, &emitted);
	struct tcheck_call_record call;
	int communicators = 0;

	emitted.resolve_answer.origin = TRACE_COMM_RECOVERED;
	emitted.resolve_answer.comm_id = 0x1234;
	emitted.resolve_answer.rank = 3;
	emitted.resolve_answer.nranks = 8;
	for (int i = 0; i < 3; i++) {
		call = make_call("ncclAllReduce", 1, 100 + (uint64_t)i);
		call.args[5] = 0xfeed;
		add(builder, &call);
		CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, 0x1234);
		CU_ASSERT_EQUAL(last_call(&emitted)->rank, 3);
		CU_ASSERT_EQUAL(last_call(&emitted)->seq, i);
	}
	CU_ASSERT_EQUAL(emitted.resolve_calls, 1);
	for (int i = 0; i < emitted.count; i++)
		if (emitted.records[i].kind == TRACE_RECORD_COMMUNICATOR) {
			communicators++;
			CU_ASSERT_EQUAL(emitted.records[i].communicator.origin,
					TRACE_COMM_RECOVERED);
			CU_ASSERT_EQUAL(emitted.records[i].communicator.handle, 0xfeed);
		}
	CU_ASSERT_EQUAL(communicators, 1);
	free_builder(builder);
}

/* The communicator record a process's builder emitted for a handle, or NULL. */
static const struct trace_communicator *communicator_of(const struct emitted *emitted, uint32_t pid,
							uint64_t handle)
{
	for (int i = 0; i < emitted->count; i++)
		if (emitted->records[i].kind == TRACE_RECORD_COMMUNICATOR &&
		    emitted->records[i].communicator.pid == pid &&
		    emitted->records[i].communicator.handle == handle)
			return &emitted->records[i].communicator;
	return NULL;
}

/*
 * Attached mid-run: a communicator made before is numbered from the count
 * of operations the probe read as the rank entered its first traced call,
 * whether that call returned or was seen in flight; without that count,
 * from the first call traced, unflagged.
 */
UNIT_TEST(call_builder, communicator_made_before_the_attach_counts_from_the_library)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, answer_resolve, &emitted);
	struct tcheck_call_record call;
	const struct trace_nccl_call *built;

	emitted.resolve_answer.origin = TRACE_COMM_RECOVERED;
	emitted.resolve_answer.nranks = 4;
	/* Process 100: two all-reduces, the first entered with 40 operations behind it. */
	for (int i = 0; i < 2; i++) {
		call = make_call("ncclAllReduce", 1, 1000 + (uint64_t)i * 1000);
		call.args[5] = 0xa;
		call.flags = TCHECK_CALL_HAS_OP_COUNT;
		call.comm_op_count = 40 + (uint64_t)i;
		CU_ASSERT_EQUAL(add(builder, &call), 0);
		built = last_call(&emitted);
		CU_ASSERT_EQUAL(built->seq, 40 + i);
		CU_ASSERT(built->flags & TRACE_CALL_SEQ_FROM_LIBRARY);
	}
	CU_ASSERT_PTR_NOT_NULL_FATAL(communicator_of(&emitted, 100, 0xa));
	CU_ASSERT_EQUAL(communicator_of(&emitted, 100, 0xa)->seq_base, 40);

	/* Process 200, one operation behind: first seen in flight, then returned. */
	call = make_call("ncclAllReduce", 1, 1500);
	call.header.pid = 200;
	call.args[5] = 0xb;
	call.flags = TCHECK_CALL_HAS_OP_COUNT | TCHECK_CALL_OPEN;
	call.comm_op_count = 39;
	CU_ASSERT_EQUAL(add(builder, &call), 0);
	call.flags = TCHECK_CALL_HAS_OP_COUNT;
	CU_ASSERT_EQUAL(add(builder, &call), 0);
	built = last_call(&emitted);
	CU_ASSERT_EQUAL(built->seq, 39);
	CU_ASSERT(built->flags & TRACE_CALL_SEQ_FROM_LIBRARY);
	call = make_call("ncclAllReduce", 1, 2500);
	call.header.pid = 200;
	call.args[5] = 0xb;
	CU_ASSERT_EQUAL(add(builder, &call), 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 40);

	/* Process 300: no count from the probe. */
	call = make_call("ncclAllReduce", 1, 1700);
	call.header.pid = 300;
	call.args[5] = 0xc;
	CU_ASSERT_EQUAL(add(builder, &call), 0);
	built = last_call(&emitted);
	CU_ASSERT_EQUAL(built->seq, 0);
	CU_ASSERT_FALSE(built->flags & TRACE_CALL_SEQ_FROM_LIBRARY);
	CU_ASSERT_EQUAL(communicator_of(&emitted, 300, 0xc)->seq_base, -1);
	free_builder(builder);
}

/* A communicator made while traced counts from 0 whatever the library's counter says. */
UNIT_TEST(call_builder, communicator_made_while_traced_counts_from_zero)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call;

	create_world(builder, 0xa, 1, 4);
	call = make_call("ncclAllReduce", 1, 2000);
	call.args[5] = 0xa;
	call.flags = TCHECK_CALL_HAS_OP_COUNT;
	call.comm_op_count = 7;
	CU_ASSERT_EQUAL(add(builder, &call), 0);
	CU_ASSERT_EQUAL(last_call(&emitted)->seq, 0);
	CU_ASSERT_FALSE(last_call(&emitted)->flags & TRACE_CALL_SEQ_FROM_LIBRARY);
	free_builder(builder);
}

/* The probe reads the counter of the communicator argument, register or stack. */
UNIT_TEST(nccl_api, cookie_names_the_communicator_argument_of_communication_calls)
{
	static const struct {
		const char *name;
		uint64_t field;
	} cases[] = { { "ncclAllReduce", 6 },
		      { "ncclReduce", 7 },
		      { "ncclSend", 5 },
		      { "ncclCommInitRank", 0 },
		      { "ncclCommDestroy", 0 } };

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t cookie = nccl_function_cookie(
			(size_t)nccl_function_index(nccl_function_by_name(cases[i].name)));

		CU_ASSERT_EQUAL((cookie >> TCHECK_COOKIE_COMM_ARG_SHIFT) &
					TCHECK_COOKIE_COMM_ARG_MASK,
				cases[i].field);
	}
}

UNIT_TEST(call_builder, destroyed_handle_reused_gets_a_new_identity)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, NULL, &emitted);
	struct tcheck_call_record call;

	create_world(builder, 0xa, 0, 2);
	call = make_call("ncclCommDestroy", 1, 2000);
	call.args[0] = 0xa;
	add(builder, &call);
	CU_ASSERT_EQUAL(call_builder_communicator_count(builder), 0);
	call = make_call("ncclAllReduce", 1, 3000);
	call.args[5] = 0xa;
	add(builder, &call);
	/* No resolver: the trace says the identity is unknown rather than guess. */
	CU_ASSERT_EQUAL(last_call(&emitted)->comm_id, 0);
	CU_ASSERT(last_call(&emitted)->flags & TRACE_CALL_COMM_UNRESOLVED);
	free_builder(builder);
}

UNIT_TEST(nccl_api, aliases_and_parameter_slots)
{
	const struct nccl_function *init = nccl_function_by_name("pncclCommInitRank");
	int slot = -1;

	CU_ASSERT_PTR_EQUAL(nccl_function_by_name("ncclAllReduce"),
			    nccl_function_by_name("pncclAllReduce"));
	CU_ASSERT_PTR_NULL(nccl_function_by_name("ncclNoSuchThing"));
	CU_ASSERT_PTR_NOT_NULL_FATAL(init);
	/* The by-value id uses no register: rank is the third register. */
	CU_ASSERT_EQUAL(nccl_param_location(init, 2, &slot), NCCL_SOURCE_STACK_BLOB);
	CU_ASSERT_EQUAL(nccl_param_location(init, 3, &slot), NCCL_SOURCE_ARG_SLOT);
	CU_ASSERT_EQUAL(slot, 2);
	CU_ASSERT(nccl_function_cookie((size_t)nccl_function_index(init)) &
		  TCHECK_COOKIE_BLOB_FROM_STACK);
	CU_ASSERT(nccl_function_cookie((size_t)nccl_function_index(
			  nccl_function_by_name("ncclCommGetAsyncError"))) &
		  TCHECK_COOKIE_ONLY_FAILURES);
}

static int reads_stack(const char *name)
{
	uint64_t cookie =
		nccl_function_cookie((size_t)nccl_function_index(nccl_function_by_name(name)));

	return (cookie & TCHECK_COOKIE_STACK_ARGS) != 0;
}

UNIT_TEST(nccl_api, stack_is_read_only_where_an_argument_there_is_more_than_the_stream)
{
	/* Eight arguments: comm and stream on the stack. */
	CU_ASSERT(reads_stack("ncclReduce"));
	/* Seven: only the stream is on the stack. */
	CU_ASSERT_FALSE(reads_stack("ncclAllReduce"));
	CU_ASSERT_FALSE(reads_stack("ncclBroadcast"));
	CU_ASSERT_FALSE(reads_stack("ncclReduceScatter"));
	/* Six, and four with a by-value id that is copied separately. */
	CU_ASSERT_FALSE(reads_stack("ncclSend"));
	CU_ASSERT_FALSE(reads_stack("ncclCommInitRank"));
	CU_ASSERT(nccl_param_on_stack(nccl_function_by_name("ncclAllReduce"), 6));
	CU_ASSERT_FALSE(nccl_param_on_stack(nccl_function_by_name("ncclAllReduce"), 5));
}

/* Every parameter's slot at once, as the System V calling convention places them. */
UNIT_TEST(nccl_api, parameter_slots_in_one_pass)
{
	static const int reduce[] = { 0, 1, 2, 3, 4, 5, 6, 7 }, init_rank[] = { 0, 1, -1, 2 };
	int slots[NCCL_MAX_PARAMS];

	/* ncclReduce's comm and stream are the first two stack words. */
	CU_ASSERT_EQUAL(nccl_param_slots(nccl_function_by_name("ncclReduce"), slots), 1);
	CU_ASSERT_EQUAL(memcmp(slots, reduce, sizeof(reduce)), 0);
	/* ncclCommInitRank's id is passed in memory; rank takes the third register. */
	CU_ASSERT_EQUAL(nccl_param_slots(nccl_function_by_name("ncclCommInitRank"), slots), 0);
	CU_ASSERT_EQUAL(memcmp(slots, init_rank, sizeof(init_rank)), 0);
	CU_ASSERT_EQUAL(nccl_param_slots(nccl_function_by_name("ncclSend"), slots), 0);
	CU_ASSERT_EQUAL(nccl_param_slots(nccl_function_by_name("ncclAllReduce"), slots), 1);
	CU_ASSERT_EQUAL(slots[6], 6);
}

UNIT_TEST(nccl_api, enum_names_match_nccl_h)
{
	CU_ASSERT_STRING_EQUAL(nccl_datatype_name(7), "ncclFloat32");
	CU_ASSERT_STRING_EQUAL(nccl_datatype_name(9), "ncclBfloat16");
	CU_ASSERT_PTR_NULL(nccl_datatype_name(12));
	CU_ASSERT_PTR_NULL(nccl_datatype_name(-1));
	CU_ASSERT_STRING_EQUAL(nccl_redop_name(4), "ncclAvg");
	CU_ASSERT_STRING_EQUAL(nccl_redop_name(5), "ncclPreMulSum");
	CU_ASSERT_STRING_EQUAL(nccl_result_name(4), "ncclInvalidArgument");
	CU_ASSERT_EQUAL(nccl_datatype_size(8), 8);
}

UNIT_TEST(nccl_api, unique_id_hash_is_djb2a_over_signed_bytes)
{
	/* Worked by hand: h = 5381*33 ^ 'a' for one byte; a high byte sign-extends. */
	const uint8_t one[1] = { 'a' };
	const uint8_t high[1] = { 0x80 };

	CU_ASSERT_EQUAL(nccl_unique_id_hash(one, 1), (5381ULL * 33) ^ 0x61);
	CU_ASSERT_EQUAL(nccl_unique_id_hash(high, 1), (5381ULL * 33) ^ 0xffffffffffffff80ULL);
}

UNIT_TEST(call_builder, a_forgotten_process_starts_again_with_no_communicator)
{
	struct emitted emitted = { 0 };
	struct call_builder *builder = call_builder_new(collect, answer_resolve, &emitted);
	struct call_builder_process **slot = slot_of(100);
	struct tcheck_call_record call;

	emitted.resolve_answer.origin = TRACE_COMM_RECOVERED;
	create_world(builder, 0xa, 0, 2);
	CU_ASSERT_PTR_NOT_NULL(*slot);
	CU_ASSERT_EQUAL(call_builder_communicator_count(builder), 1);
	/* The image changed (exec): the slot is emptied and its communicator dropped. */
	call_builder_forget_process(builder, slot);
	CU_ASSERT_PTR_NULL(*slot);
	CU_ASSERT_EQUAL(call_builder_communicator_count(builder), 0);
	/* The old handle is now unknown: the builder asks the resolver, as for a late attach. */
	call = make_call("ncclAllReduce", 1, 2000);
	call.args[5] = 0xa;
	CU_ASSERT_EQUAL(add(builder, &call), 0);
	CU_ASSERT_EQUAL(emitted.resolve_calls, 1);
	CU_ASSERT_PTR_NOT_NULL(*slot);
	CU_ASSERT_EQUAL(call_builder_communicator_count(builder), 1);
	free_builder(builder);
}

UNIT_TEST(call_builder, a_short_record_reads_as_the_whole_record_with_no_blob_or_python_caller)
{
	struct tcheck_call_record sent = make_call("ncclAllReduce", 1, 2000);
	struct tcheck_call_record whole;
	const struct tcheck_call_record *read;
	uint8_t ring[sizeof(sent)];

	sent.args[5] = 0xa;
	sent.comm_op_count = 41;
	/* What the probe writes: the fields before the blob; the rest of the slot is old data. */
	memset(ring, 0xee, sizeof(ring));
	memcpy(ring, &sent, TCHECK_CALL_RECORD_SHORT_BYTES);
	read = call_record_whole(ring, TCHECK_CALL_RECORD_SHORT_BYTES, &whole);
	CU_ASSERT_PTR_EQUAL(read, &whole);
	CU_ASSERT_EQUAL(read->header.type, TCHECK_RECORD_CALL);
	CU_ASSERT_EQUAL(read->args[5], 0xa);
	CU_ASSERT_EQUAL(read->comm_op_count, 41);
	CU_ASSERT_EQUAL(read->function_index, sent.function_index);
	CU_ASSERT_EQUAL(read->blob[0], 0);
	CU_ASSERT_EQUAL(read->py_depth, 0);
	CU_ASSERT_EQUAL(read->py_code[TCHECK_PY_STACK_MAX - 1], 0);
	/* A whole record is read in place; a record shorter than a short one is refused. */
	CU_ASSERT_PTR_EQUAL(call_record_whole(ring, sizeof(ring), &whole), (const void *)ring);
	CU_ASSERT_PTR_NULL(call_record_whole(ring, TCHECK_CALL_RECORD_SHORT_BYTES - 8, &whole));
}
