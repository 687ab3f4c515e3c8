// SPDX-License-Identifier: MIT
/* c10d process groups and their calls, as trace records. */
#include "record/c10d_calls.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "model/c10d_api.h"
#include "record/c10d_pending.h"

struct c10d_group {
	uint64_t object; /* the backend's 'this' */
	int32_t rank;
	int32_t size;
	uint64_t comm_id; /* 0: not shared across ranks */
	int64_t next_seq;
	bool built; /* seen being built; false: first seen in a call */
	bool announced;
};

#define C10D_STORES_KEPT 4096

/* A PrefixStore a process built: its full prefix names the group built next on its thread. */
struct c10d_store {
	uint32_t tid;
	uint64_t object;
	bool taken; /* a group was built on it already */
	char name[4 *
		  TCHECK_STORE_PREFIX_BYTES]; /* the prefixes of the stores it wraps, then its */
};

/* One process's groups and stores, kept in its slot of the caller's process registry. */
struct c10d_process {
	struct c10d_group *groups; /* in the order seen: its first built group is its world */
	size_t count;
	size_t capacity;
	struct c10d_store *stores; /* in the order built */
	size_t store_count;
	size_t store_capacity;
};

struct c10d_calls {
	c10d_calls_emit_fn emit;
	c10d_calls_emit_fn in_flight;
	void *context;
	struct c10d_pending pending; /* awaited calls whose work has not ended, of every process */
};

struct c10d_calls *c10d_calls_new(c10d_calls_emit_fn emit, c10d_calls_emit_fn in_flight,
				  void *context)
{
	struct c10d_calls *calls = calloc(1, sizeof(*calls));

	if (calls) {
		calls->emit = emit;
		calls->in_flight = in_flight;
		calls->context = context;
	}
	return calls;
}

void c10d_calls_free(struct c10d_calls *calls)
{
	if (!calls)
		return;
	c10d_pending_free(&calls->pending);
	free(calls);
}

void c10d_calls_forget_process(struct c10d_calls *calls, struct c10d_process **process)
{
	if (!*process)
		return;
	free((*process)->groups);
	free((*process)->stores);
	free(*process);
	*process = NULL;
}

/* The process's state, made on its first group or store; NULL when out of memory. */
static struct c10d_process *process_in(struct c10d_process **slot)
{
	if (!*slot)
		*slot = calloc(1, sizeof(**slot));
	return *slot;
}

static struct c10d_group *find_group(struct c10d_process *process, uint64_t object)
{
	if (!object)
		return NULL;
	for (size_t i = 0; i < process->count; i++)
		if (process->groups[i].object == object)
			return &process->groups[i];
	return NULL;
}

/* The process's world size: the size of the first group it built, or -1. */
static int32_t world_size_of(const struct c10d_process *process)
{
	for (size_t i = 0; i < process->count; i++)
		if (process->groups[i].built)
			return process->groups[i].size;
	return -1;
}

/* Groups of this process that share 'built' and 'size', before the new one. */
static uint32_t groups_before(const struct c10d_process *process, bool built, int32_t size)
{
	uint32_t count = 0;

	for (size_t i = 0; i < process->count; i++)
		if (process->groups[i].built == built && process->groups[i].size == size)
			count++;
	return count;
}

/* How a group's identity was told: the same on every rank for the same group. */
enum group_numbering {
	NUMBERED_BUILT = 1,  /* the n-th group of its size the process built */
	NUMBERED_BY_USE = 2, /* built before tracing: the n-th of its size first used */
	NAMED = 3	     /* a subgroup: by the name torch gave it (ordinal: its hash) */
};

static uint64_t group_identity(enum group_numbering numbering, int32_t size, uint64_t ordinal)
{
	uint64_t words[3] = { numbering, (uint64_t)(uint32_t)size, ordinal };

	return fnv1a_add_bytes(fnv1a_string("c10d"), words, sizeof(words));
}

static struct c10d_store *find_store(struct c10d_process *process, uint64_t object)
{
	/* The latest first: an address freed and reused names the newer store. */
	for (size_t i = process->store_count; object && i-- > 0;)
		if (process->stores[i].object == object)
			return &process->stores[i];
	return NULL;
}

int c10d_calls_store_prefix(struct c10d_calls *calls, struct c10d_process **slot,
			    const struct tcheck_store_prefix_record *record)
{
	struct c10d_process *process = process_in(slot);
	const struct c10d_store *parent;
	uint32_t length = record->length < TCHECK_STORE_PREFIX_BYTES
				  ? record->length
				  : TCHECK_STORE_PREFIX_BYTES - 1;
	struct c10d_store *store;

	if (!process)
		return -ENOMEM;
	/* Stores are made with groups, a few per job; a process making many forgets the oldest. */
	if (process->store_count == C10D_STORES_KEPT) {
		memmove(process->stores, process->stores + C10D_STORES_KEPT / 2,
			(C10D_STORES_KEPT / 2) * sizeof(*process->stores));
		process->store_count = C10D_STORES_KEPT / 2;
	}
	if (growable_array_room_for_one((void **)&process->stores, process->store_count,
					&process->store_capacity, sizeof(*process->stores)))
		return -ENOMEM;
	/* Looked up once the array has its room: growing it moves the stores. */
	parent = find_store(process, record->parent);
	store = &process->stores[process->store_count++];
	memset(store, 0, sizeof(*store));
	store->tid = record->header.tid;
	store->object = record->store;
	/* Cut alike on every rank when too long: it stays one name for one group. */
	if (snprintf(store->name, sizeof(store->name), "%s%.*s", parent ? parent->name : "",
		     (int)length, record->prefix) < 0)
		store->name[0] = '\0';
	return 0;
}

/*
 * The name of the group 'tid' builds now: its thread's last store, if no
 * group was built on it yet. NULL when there is none.
 */
static const char *take_store_name(struct c10d_process *process, uint32_t tid)
{
	for (size_t i = process->store_count; i-- > 0;) {
		struct c10d_store *store = &process->stores[i];

		if (store->tid != tid)
			continue;
		if (store->taken || !store->name[0])
			return NULL;
		store->taken = true;
		return store->name;
	}
	return NULL;
}

static struct c10d_group *add_group(struct c10d_process *process, uint64_t object)
{
	struct c10d_group *group;

	if (growable_array_room_for_one((void **)&process->groups, process->count,
					&process->capacity, sizeof(*process->groups)))
		return NULL;
	group = &process->groups[process->count++];
	memset(group, 0, sizeof(*group));
	group->object = object;
	group->rank = -1;
	group->size = -1;
	return group;
}

int c10d_calls_group_built(struct c10d_calls *calls, struct c10d_process **slot,
			   const struct tcheck_process_group_record *record)
{
	struct c10d_process *process = process_in(slot);
	struct c10d_group *group;
	const char *name;
	int32_t world;
	uint32_t ordinal;

	if (!process)
		return -ENOMEM;
	name = take_store_name(process, record->header.tid);
	/* An object built again at a freed group's address is a new group; the old one still
	 * counts. */
	group = find_group(process, record->group);
	if (group)
		group->object = 0;
	world = world_size_of(process);
	ordinal = groups_before(process, true, record->size);
	group = add_group(process, record->group);
	if (!group)
		return -ENOMEM;
	group->rank = record->rank;
	group->size = record->size;
	group->built = true;
	/* The first group is the world; so is any later one of its size. */
	if (record->size > 0 && (world < 0 || record->size == world))
		group->comm_id = group_identity(NUMBERED_BUILT, record->size, ordinal);
	/* A subgroup: by its name, when its thread built its store just before. */
	else if (record->size > 0 && name)
		group->comm_id = group_identity(NAMED, record->size, fnv1a_string(name));
	return 0;
}

/* A group first seen in a call: the world, where the process's rank and size are known. */
static struct c10d_group *unseen_group(struct c10d_process *process, uint64_t object,
				       int32_t job_rank, int32_t job_size)
{
	uint32_t ordinal = groups_before(process, false, job_size);
	struct c10d_group *group = add_group(process, object);

	if (group && job_rank >= 0 && job_size > 0 && job_rank < job_size) {
		group->rank = job_rank;
		group->size = job_size;
		group->comm_id = group_identity(NUMBERED_BY_USE, job_size, ordinal);
	}
	return group;
}

static int announce(struct c10d_calls *calls, struct c10d_group *group, uint32_t pid,
		    uint64_t seen_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_COMMUNICATOR };
	struct trace_communicator *communicator = &record.communicator;

	group->announced = true;
	communicator->pid = pid;
	communicator->origin = group->built ? TRACE_COMM_CREATED : TRACE_COMM_UNKNOWN;
	communicator->handle = group->object;
	communicator->comm_id = group->comm_id;
	communicator->rank = group->rank;
	communicator->nranks = group->size;
	communicator->seen_ns = seen_ns;
	if (!group->comm_id)
		communicator->note = group->built ? "a c10d subgroup built with no store of its "
						    "name seen: not matched across ranks"
						  : "a c10d group built before tracing began, "
						    "in a process whose rank is unknown";
	else if (!group->built)
		communicator->note = "a c10d group built before tracing began: "
				     "taken as the world group, numbered by first use";
	else
		communicator->note = "";
	return calls->emit(calls->context, &record);
}

static int await_work(struct c10d_calls *calls, struct trace_record *record);

int c10d_calls_add(struct c10d_calls *calls, struct c10d_process **slot,
		   const struct tcheck_c10d_call_record *raw, int32_t job_rank, int32_t job_size,
		   const struct trace_python_context *python)
{
	const struct c10d_operation *operation = c10d_operation_at(raw->operation);
	struct trace_record record = { .kind = TRACE_RECORD_NCCL_CALL };
	struct trace_nccl_call *call = &record.call;
	struct c10d_process *process;
	struct c10d_group *group;
	int result;

	if (!operation)
		return 0;
	process = process_in(slot);
	if (!process)
		return -ENOMEM;
	group = find_group(process, raw->group);
	if (!group)
		group = unseen_group(process, raw->group, job_rank, job_size);
	if (!group)
		return -ENOMEM;
	if (!group->announced &&
	    (result = announce(calls, group, raw->header.pid, raw->header.timestamp_ns)))
		return result;
	call->entry_ns = raw->header.timestamp_ns;
	call->pid = raw->header.pid;
	call->tid = raw->header.tid;
	call->function = operation->api.name;
	call->api = &operation->api;
	call->param_count = (uint32_t)operation->api.param_count;
	call->params[C10D_PARAM_GROUP] = raw->group;
	call->params[C10D_PARAM_TENSORS] = raw->tensor_count;
	call->params[C10D_PARAM_COUNT] = raw->numel;
	call->params[C10D_PARAM_DTYPE] = (uint64_t)(int64_t)raw->dtype;
	if (operation->api.kind == NCCL_KIND_POINT_TO_POINT)
		call->params[C10D_PARAM_PEER] = (uint64_t)(int64_t)raw->peer;
	/* The table's last parameter, measured at the entry. */
	call->params[operation->api.param_count - 1] = raw->cpu_wait_ns;
	call->comm = raw->group;
	call->comm_id = group->comm_id;
	call->rank = group->rank;
	call->nranks = group->size;
	call->seq = group->next_seq++;
	call->step = python ? python->step : -1;
	call->stage = python ? python->stage : TRACE_STAGE_UNKNOWN;
	if (!(raw->flags & TCHECK_C10D_CALL_AWAITS_WORK))
		return calls->emit(calls->context, &record);
	return await_work(calls, &record);
}

/* Writes a call taken from the pending ones as its flags say it is. */
static int emit_taken(struct c10d_calls *calls, const struct trace_nccl_call *call)
{
	struct trace_record record = { .kind = TRACE_RECORD_NCCL_CALL, .call = *call };

	return calls->emit(calls->context, &record);
}

static int emit_ended(void *context, struct c10d_pending_call *taken)
{
	return emit_taken(context, &taken->call);
}

/* A call no work was built for (it failed before queueing one): seen entered only. */
static int emit_entered_only(void *context, struct c10d_pending_call *taken)
{
	struct c10d_calls *calls = context;
	int result;

	taken->call.flags &= ~TRACE_CALL_WORK_AWAITED;
	result = emit_taken(calls, &taken->call);
	/* The thread's calls queued behind it whose work ended go with it. */
	return result ? result
		      : c10d_pending_take_ended(&calls->pending, taken->call.pid, taken->call.tid,
						emit_ended, calls);
}

int c10d_calls_work(struct c10d_calls *calls, const struct tcheck_c10d_work_record *raw)
{
	uint32_t tid;

	if (raw->event == TCHECK_C10D_WORK_BUILT) {
		c10d_pending_work_built(&calls->pending, raw->header.pid, raw->header.tid,
					raw->work);
		return 0;
	}
	tid = c10d_pending_work_ended(
		&calls->pending, raw->header.pid, raw->work, raw->header.timestamp_ns,
		raw->event == TCHECK_C10D_WORK_FAILED ? TRACE_CALL_WORK_FAILED : 0);
	if (!tid)
		return 0;
	return c10d_pending_take_ended(&calls->pending, raw->header.pid, tid, emit_ended, calls);
}

/*
 * Awaited: kept until its work ends, and meanwhile handed to the
 * detectors as a call in flight. A call of the same thread still without
 * a work built none: entered only.
 */
static int await_work(struct c10d_calls *calls, struct trace_record *record)
{
	struct c10d_pending_filter earlier = { .pid = record->call.pid,
					       .tid = record->call.tid,
					       .without_work_only = true };
	int result = c10d_pending_take_each(&calls->pending, &earlier, emit_entered_only, calls);

	if (result)
		return result;
	record->call.flags |= TRACE_CALL_WORK_AWAITED;
	if (c10d_pending_add(&calls->pending, &record->call))
		return -ENOMEM;
	if (!calls->in_flight)
		return 0;
	record->call.flags |= TRACE_CALL_OPEN;
	return calls->in_flight(calls->context, record);
}

int c10d_calls_tick(struct c10d_calls *calls, uint64_t now_ns)
{
	struct c10d_pending_filter stale = { .without_work_only = true };

	if (now_ns <= C10D_WORK_BUILT_WITHIN_NS)
		return 0;
	stale.entered_before = now_ns - C10D_WORK_BUILT_WITHIN_NS;
	return c10d_pending_take_each(&calls->pending, &stale, emit_entered_only, calls);
}

/*
 * Still waiting when its process or the recording ended: an open call, as
 * long as it lasted. One whose work ended, queued behind it, as it ended.
 */
struct open_until {
	struct c10d_calls *calls;
	uint64_t end_ns;
};

static int emit_open(void *context, struct c10d_pending_call *taken)
{
	struct open_until *until = context;
	struct trace_nccl_call *call = &taken->call;

	if (!taken->ended && !taken->work) {
		call->flags &= ~TRACE_CALL_WORK_AWAITED; /* no work built: entered only */
	} else if (!taken->ended) {
		call->flags |= TRACE_CALL_OPEN;
		call->duration_ns =
			until->end_ns > call->entry_ns ? until->end_ns - call->entry_ns : 0;
	}
	return emit_taken(until->calls, call);
}

int c10d_calls_end(struct c10d_calls *calls, uint32_t pid, uint64_t end_ns)
{
	struct c10d_pending_filter ended = { .pid = pid };
	struct open_until until = { calls, end_ns };

	return c10d_pending_take_each(&calls->pending, &ended, emit_open, &until);
}
