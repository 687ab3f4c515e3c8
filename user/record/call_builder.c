// SPDX-License-Identifier: MIT
/* Rebuilds NCCL calls, group nesting and communicators from probe records. */
#include "record/call_builder.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/u64_map.h"

#define NCCL_SPLIT_NOCOLOR (-1)
#define NCCL_IN_PROGRESS 7

struct known_communicator {
	struct trace_communicator info;
	int64_t next_seq;
	uint32_t splits_made; /* this rank's splits of it so far */
	/*
	 * Made before the tracing started: its sequence numbers start from
	 * the library's count of the operations issued on it, once a call
	 * has brought that count (seq_counted).
	 */
	bool predates_trace, seq_counted;
};

struct thread_state {
	uint32_t group_depth;
};

struct call_builder_process {
	struct u64_map communicators; /* handle -> known_communicator */
	struct u64_map threads;	      /* tid -> thread_state */
};

struct call_builder {
	call_builder_emit_fn emit;
	call_builder_resolve_fn resolve;
	void *context;
	size_t communicator_count;
};

struct call_builder *call_builder_new(call_builder_emit_fn emit, call_builder_resolve_fn resolve,
				      void *context)
{
	struct call_builder *builder = calloc(1, sizeof(*builder));

	if (!builder)
		return NULL;
	builder->emit = emit;
	builder->resolve = resolve;
	builder->context = context;
	return builder;
}

static void free_process(struct call_builder *builder, struct call_builder_process *process)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&process->communicators, &i, &key, &value);) {
		free(value);
		builder->communicator_count--;
	}
	for (size_t i = 0; u64_map_next(&process->threads, &i, &key, &value);)
		free(value);
	u64_map_free(&process->communicators);
	u64_map_free(&process->threads);
	free(process);
}

void call_builder_forget_process(struct call_builder *builder,
				 struct call_builder_process **process)
{
	if (*process)
		free_process(builder, *process);
	*process = NULL;
}

void call_builder_free(struct call_builder *builder)
{
	free(builder);
}

size_t call_builder_communicator_count(const struct call_builder *builder)
{
	return builder->communicator_count;
}

/* The process's state, made on its first call. */
static struct call_builder_process *process_in(struct call_builder_process **slot)
{
	struct call_builder_process *process = *slot;

	if (process)
		return process;
	process = calloc(1, sizeof(*process));
	if (!process)
		return NULL;
	u64_map_init(&process->communicators);
	u64_map_init(&process->threads);
	*slot = process;
	return process;
}

static struct thread_state *thread_of(struct call_builder_process *process, uint32_t tid)
{
	return u64_map_get_or_add(&process->threads, tid, sizeof(struct thread_state), NULL);
}

static int emit_communicator(struct call_builder *builder, const struct known_communicator *known)
{
	struct trace_record record = { .kind = TRACE_RECORD_COMMUNICATOR };

	record.communicator = known->info;
	return builder->emit(builder->context, &record);
}

static void drop_communicator(struct call_builder *builder, struct call_builder_process *process,
			      uint64_t handle)
{
	struct known_communicator *known = u64_map_remove(&process->communicators, handle);

	if (known) {
		free(known);
		builder->communicator_count--;
	}
}

/* Registers a communicator; the caller fills identity. Replaces a stale handle. */
static struct known_communicator *add_communicator(struct call_builder *builder,
						   struct call_builder_process *process,
						   uint32_t pid, uint64_t handle, uint64_t seen_ns)
{
	struct known_communicator *known = calloc(1, sizeof(*known));

	if (!known)
		return NULL;
	/* A handle seen before was destroyed unseen and its memory reused. */
	drop_communicator(builder, process, handle);
	known->info.pid = pid;
	known->info.handle = handle;
	known->info.rank = -1;
	known->info.nranks = -1;
	known->info.seen_ns = seen_ns;
	known->info.note = "";
	if (u64_map_put(&process->communicators, handle, known)) {
		free(known);
		return NULL;
	}
	builder->communicator_count++;
	return known;
}

/*
 * Where the sequence numbers of a communicator made before the tracing
 * start: at the count of operations the library had seen issued on it when
 * the rank entered its first traced call, read by the probe at that entry.
 * Ranks attached at different points of their work then number the same
 * collective alike. Without that count (a library whose layout is unknown)
 * they count from the first call traced.
 */
static void count_seq_from(struct known_communicator *known,
			   const struct tcheck_call_record *record)
{
	const struct nccl_function *function =
		record ? nccl_function_at(record->function_index) : NULL;

	if (!known->predates_trace || known->seq_counted || !function ||
	    !nccl_function_is_communication(function) || record->depth != 0 ||
	    !(record->flags & TCHECK_CALL_HAS_OP_COUNT))
		return;
	known->seq_counted = true;
	known->next_seq = (int64_t)record->comm_op_count;
	known->info.seq_base = known->next_seq;
}

/* Gives a communication call the communicator's next sequence number (not consumed). */
static void number_call(struct known_communicator *known, const struct tcheck_call_record *record,
			struct trace_nccl_call *call)
{
	count_seq_from(known, record);
	call->seq = known->next_seq;
	if (known->seq_counted)
		call->flags |= TRACE_CALL_SEQ_FROM_LIBRARY;
}

/*
 * A handle seen for the first time in use: it predates the attach. record
 * is the call that brought it, or NULL for a split's parent.
 */
static struct known_communicator *recover_communicator(struct call_builder *builder,
						       struct call_builder_process *process,
						       uint32_t pid, uint64_t handle,
						       uint64_t seen_ns,
						       const struct tcheck_call_record *record)
{
	struct known_communicator *known = add_communicator(builder, process, pid, handle, seen_ns);

	if (!known)
		return NULL;
	known->info.origin = TRACE_COMM_UNKNOWN;
	known->info.note = "communicator existed before attach and no resolver was given";
	if (builder->resolve)
		builder->resolve(builder->context, pid, handle, &known->info);
	/* Whatever the resolver says, the handle and process stay ours. */
	known->info.pid = pid;
	known->info.handle = handle;
	if (!known->info.note)
		known->info.note = "";
	if (known->info.origin != TRACE_COMM_RECOVERED)
		known->info.origin = TRACE_COMM_UNKNOWN;
	known->predates_trace = true;
	known->info.seq_base = -1;
	count_seq_from(known, record);
	if (emit_communicator(builder, known))
		return NULL;
	return known;
}

/* The value of a parameter in argument slot 'slot' (-1: the struct passed in memory). */
static uint64_t param_value(const struct tcheck_call_record *record, int slot,
			    uint64_t unique_id_hash)
{
	if (slot < 0)
		return unique_id_hash;
	return slot < TCHECK_CALL_ARGS ? record->args[slot] : 0;
}

static int32_t int_param(const struct trace_nccl_call *call, const struct nccl_function *function,
			 const char *name)
{
	for (int i = 0; i < function->param_count; i++)
		if (strcmp(function->params[i].name, name) == 0)
			return (int32_t)call->params[i];
	return -1;
}

static void decode(const struct nccl_function *function, const struct tcheck_call_record *record,
		   struct trace_nccl_call *call)
{
	int slots[NCCL_MAX_PARAMS] = { 0 };

	memset(call, 0, sizeof(*call));
	call->entry_ns = record->header.timestamp_ns;
	call->duration_ns = record->return_ns >= record->header.timestamp_ns
				    ? record->return_ns - record->header.timestamp_ns
				    : 0;
	call->pid = record->header.pid;
	call->tid = record->header.tid;
	call->function = function->name;
	call->api = function;
	call->result = (int32_t)record->return_value;
	call->depth = record->depth;
	call->rank = -1;
	call->nranks = -1;
	call->seq = -1;
	call->step = -1;
	/* ncclCommInitAll's blob is the array of communicators it wrote, not an id. */
	if ((record->flags & TCHECK_CALL_HAS_BLOB) && function->kind != NCCL_KIND_COMM_INIT_ALL) {
		call->unique_id_hash = nccl_unique_id_hash(record->blob, TCHECK_BLOB_BYTES);
		call->flags |= TRACE_CALL_UNIQUE_ID_VALID;
	}
	if (record->flags & TCHECK_CALL_HAS_OUT_VALUE) {
		call->out_value = record->out_value;
		call->flags |= TRACE_CALL_OUT_VALUE_VALID;
	}
	call->param_count = (uint32_t)function->param_count;
	/* One pass over the calling convention for every parameter (this runs per call). */
	if (nccl_param_slots(function, slots) && !(record->flags & TCHECK_CALL_HAS_STACK_ARGS))
		call->flags |= TRACE_CALL_STACK_ARGS_UNREAD;
	for (int i = 0; i < function->param_count; i++)
		call->params[i] = param_value(record, slots[i], call->unique_id_hash);
}

static void update_group_depth(struct thread_state *thread, const struct nccl_function *function,
			       struct trace_nccl_call *call)
{
	/* Only the application's own calls open and close its groups. */
	if (call->depth != 0) {
		call->group_depth = thread->group_depth;
		return;
	}
	if (function->kind == NCCL_KIND_GROUP_END && thread->group_depth > 0)
		thread->group_depth--;
	call->group_depth = thread->group_depth;
	if (function->kind == NCCL_KIND_GROUP_START && call->result == 0)
		thread->group_depth++;
}

static void describe_call_communicator(struct trace_nccl_call *call,
				       const struct known_communicator *known)
{
	call->comm_id = known->info.comm_id;
	call->rank = known->info.rank;
	call->nranks = known->info.nranks;
	if (!known->info.comm_id)
		call->flags |= TRACE_CALL_COMM_UNRESOLVED;
}

static int created_handle(const struct trace_nccl_call *call, uint64_t *handle)
{
	if (call->result != 0 && call->result != NCCL_IN_PROGRESS)
		return 0;
	if (!(call->flags & TRACE_CALL_OUT_VALUE_VALID) || !call->out_value)
		return 0;
	*handle = call->out_value;
	return 1;
}

/* What the probe read from a communicator as it was created. */
static void take_created_fields(struct known_communicator *known,
				const struct tcheck_call_record *record)
{
	if (record->flags & TCHECK_CALL_HAS_COMM_HASH)
		known->info.nccl_comm_hash = record->comm_hash;
	if (record->flags & TCHECK_CALL_HAS_COMM_RANK) {
		known->info.rank = record->comm_rank;
		known->info.nranks = record->comm_nranks;
	}
}

static int handle_init(struct call_builder *builder, struct call_builder_process *process,
		       const struct nccl_function *function, struct trace_nccl_call *call,
		       const struct tcheck_call_record *record)
{
	struct known_communicator *known;
	uint64_t handle;
	int32_t id_count;

	if (!created_handle(call, &handle))
		return 0;
	known = add_communicator(builder, process, call->pid, handle, call->entry_ns);
	if (!known)
		return -ENOMEM;
	known->info.origin = TRACE_COMM_CREATED;
	known->info.nranks = int_param(call, function, "nranks");
	known->info.rank = function->kind == NCCL_KIND_COMM_INIT &&
					   nccl_param_find(function, NCCL_PARAM_UNIQUE_ID) < 0
				   ? int_param(call, function, "myrank")
				   : int_param(call, function, "rank");
	if (call->flags & TRACE_CALL_UNIQUE_ID_VALID) {
		known->info.comm_id = call->unique_id_hash;
		/* Several ids (InitRankScalable): the first one, mixed with their number. */
		id_count = int_param(call, function, "nId");
		if (nccl_param_find(function, NCCL_PARAM_UNIQUE_ID_ARRAY) >= 0 && id_count > 1)
			known->info.comm_id = nccl_split_comm_id(call->unique_id_hash, 0, id_count);
	} else {
		known->info.note = "the unique id could not be read at creation";
	}
	take_created_fields(known, record);
	describe_call_communicator(call, known);
	call->comm = handle;
	return emit_communicator(builder, known);
}

/*
 * ncclCommInitAll makes one communicator whose ranks all live in this
 * process: handle i is rank i. Its identity only has to be shared within
 * the process, so it derives from the handles themselves.
 */
static int handle_init_all(struct call_builder *builder, struct call_builder_process *process,
			   const struct nccl_function *function, struct trace_nccl_call *call,
			   const struct tcheck_call_record *record)
{
	int32_t device_count = int_param(call, function, "ndev");
	size_t kept = TCHECK_BLOB_BYTES / sizeof(uint64_t);
	uint64_t handles[TCHECK_BLOB_BYTES / sizeof(uint64_t)];
	uint64_t comm_id;

	if (call->result != 0 || !(record->flags & TCHECK_CALL_HAS_BLOB) || device_count <= 0)
		return 0;
	if ((size_t)device_count < kept)
		kept = (size_t)device_count;
	memcpy(handles, record->blob, sizeof(handles));
	comm_id = nccl_unique_id_hash((const uint8_t *)handles, kept * sizeof(uint64_t));
	for (size_t i = 0; i < kept; i++) {
		struct known_communicator *known;
		int error;

		if (!handles[i])
			continue;
		known = add_communicator(builder, process, call->pid, handles[i], call->entry_ns);
		if (!known)
			return -ENOMEM;
		known->info.origin = TRACE_COMM_CREATED;
		known->info.comm_id = comm_id;
		known->info.rank = (int32_t)i;
		known->info.nranks = device_count;
		error = emit_communicator(builder, known);
		if (error)
			return error;
	}
	return 0;
}

static int handle_split(struct call_builder *builder, struct call_builder_process *process,
			const struct nccl_function *function, struct trace_nccl_call *call,
			const struct tcheck_call_record *record)
{
	uint64_t parent_handle = call->params[nccl_param_find(function, NCCL_PARAM_COMM)];
	struct known_communicator *parent = u64_map_get(&process->communicators, parent_handle);
	struct known_communicator *known;
	uint32_t split_index;
	uint64_t handle;
	int32_t color;

	if (!parent)
		parent = recover_communicator(builder, process, call->pid, parent_handle,
					      call->entry_ns, NULL);
	if (!parent)
		return -ENOMEM;
	/*
	 * Every rank of the parent takes part in each split, so indices agree;
	 * a call the library refused before starting the split does not count.
	 */
	if (call->result != 0 && call->result != NCCL_IN_PROGRESS) {
		call->comm = parent_handle;
		describe_call_communicator(call, parent);
		return 0;
	}
	split_index = parent->splits_made++;
	if (function->kind == NCCL_KIND_COMM_SPLIT && strcmp(function->name, "ncclCommSplit") == 0)
		color = int_param(call, function, "color");
	else
		color = -1000 - int_param(call, function, "excludeRanksCount");
	if (color == NCCL_SPLIT_NOCOLOR || !created_handle(call, &handle))
		return 0;
	known = add_communicator(builder, process, call->pid, handle, call->entry_ns);
	if (!known)
		return -ENOMEM;
	known->info.origin = TRACE_COMM_SPLIT;
	known->info.parent_comm_id = parent->info.comm_id;
	known->info.color = color;
	known->info.split_index = split_index;
	if (parent->info.comm_id)
		known->info.comm_id = nccl_split_comm_id(parent->info.comm_id, split_index, color);
	else
		known->info.note = "the parent communicator's identity is unknown";
	/*
	 * Rank and size in the child depend on every rank's colour: the probe
	 * read them from the library as the call returned, or ask it now.
	 */
	take_created_fields(known, record);
	if (!(record->flags & TCHECK_CALL_HAS_COMM_RANK) && builder->resolve) {
		struct trace_communicator from_library = known->info;

		builder->resolve(builder->context, call->pid, handle, &from_library);
		if (from_library.origin == TRACE_COMM_RECOVERED) {
			known->info.rank = from_library.rank;
			known->info.nranks = from_library.nranks;
			known->info.nccl_comm_hash = from_library.nccl_comm_hash;
		}
	}
	describe_call_communicator(call, known);
	call->comm = handle;
	return emit_communicator(builder, known);
}

static int handle_communication(struct call_builder *builder, struct call_builder_process *process,
				const struct nccl_function *function, struct trace_nccl_call *call,
				const struct tcheck_call_record *record)
{
	int comm_param = nccl_param_find(function, NCCL_PARAM_COMM);
	struct known_communicator *known;

	if (comm_param < 0)
		return 0;
	call->comm = call->params[comm_param];
	if (!call->comm)
		return 0;
	known = u64_map_get(&process->communicators, call->comm);
	if (!known)
		known = recover_communicator(builder, process, call->pid, call->comm,
					     call->entry_ns, record);
	if (!known)
		return -ENOMEM;
	describe_call_communicator(call, known);
	/* Numbered: the application's own calls that NCCL accepted. */
	if (nccl_function_is_communication(function) && call->depth == 0 &&
	    (call->result == 0 || call->result == NCCL_IN_PROGRESS)) {
		number_call(known, record, call);
		known->next_seq++;
	}
	return 0;
}

static int emit_call(struct call_builder *builder, const struct trace_nccl_call *call)
{
	struct trace_record record = { .kind = TRACE_RECORD_NCCL_CALL };

	record.call = *call;
	return builder->emit(builder->context, &record);
}

/*
 * A call not returned: what it is and on which communicator, with the
 * sequence number it will have, changing nothing the calls that return
 * will find (group depth, sequence numbers, communicators). An init call
 * still open has made no communicator: it is named by its unique id, rank
 * and size.
 */
static int emit_open_call(struct call_builder *builder, const struct nccl_function *function,
			  struct thread_state *thread, struct call_builder_process *process,
			  struct trace_nccl_call *call, const struct tcheck_call_record *record)
{
	uint64_t seen_ns = record->return_ns;
	int comm_param = nccl_param_find(function, NCCL_PARAM_COMM);
	struct known_communicator *known;

	call->flags |= TRACE_CALL_OPEN;
	call->flags &= ~TRACE_CALL_OUT_VALUE_VALID;
	call->result = 0;
	call->duration_ns = seen_ns > call->entry_ns ? seen_ns - call->entry_ns : 0;
	call->group_depth = thread->group_depth;
	if (function->kind == NCCL_KIND_COMM_INIT) {
		call->nranks = int_param(call, function, "nranks");
		call->rank = nccl_param_find(function, NCCL_PARAM_UNIQUE_ID) < 0
				     ? int_param(call, function, "myrank")
				     : int_param(call, function, "rank");
		/* The identity the communicator will have: ranks waiting in one init share it. */
		if (call->flags & TRACE_CALL_UNIQUE_ID_VALID)
			call->comm_id = call->unique_id_hash;
	} else if (comm_param >= 0 && (call->comm = call->params[comm_param]) != 0) {
		known = u64_map_get(&process->communicators, call->comm);
		if (known) {
			describe_call_communicator(call, known);
			if (nccl_function_is_communication(function) && call->depth == 0)
				number_call(known, record, call);
		}
	}
	return emit_call(builder, call);
}

int call_builder_add(struct call_builder *builder, struct call_builder_process **slot,
		     const struct tcheck_call_record *record,
		     const struct trace_python_context *python)
{
	const struct nccl_function *function = nccl_function_at(record->function_index);
	struct call_builder_process *process;
	struct thread_state *thread;
	struct trace_nccl_call call;
	int error = 0;

	if (!function)
		return -EINVAL;
	process = process_in(slot);
	thread = process ? thread_of(process, record->header.tid) : NULL;
	if (!thread)
		return -ENOMEM;
	decode(function, record, &call);
	if (python) {
		call.step = python->step;
		call.stage = python->stage;
		call.py_stack = python->py_stack;
	}
	if (record->flags & TCHECK_CALL_OPEN)
		return emit_open_call(builder, function, thread, process, &call, record);
	update_group_depth(thread, function, &call);
	switch (function->kind) {
	case NCCL_KIND_COMM_INIT:
		error = handle_init(builder, process, function, &call, record);
		break;
	case NCCL_KIND_COMM_SPLIT:
		error = handle_split(builder, process, function, &call, record);
		break;
	case NCCL_KIND_COMM_INIT_ALL:
		error = handle_init_all(builder, process, function, &call, record);
		break;
	default:
		error = handle_communication(builder, process, function, &call, record);
		break;
	}
	if (error)
		return error;
	error = emit_call(builder, &call);
	/* The handle may be reused by the allocator once destroyed. */
	if (function->kind == NCCL_KIND_COMM_END && call.comm &&
	    (strcmp(function->name, "ncclCommDestroy") == 0 ||
	     strcmp(function->name, "ncclCommAbort") == 0))
		drop_communicator(builder, process, call.comm);
	return error;
}

const struct tcheck_call_record *call_record_whole(const void *data, size_t size,
						   struct tcheck_call_record *whole)
{
	if (size >= sizeof(*whole))
		return data;
	if (size < TCHECK_CALL_RECORD_SHORT_BYTES)
		return NULL;
	memcpy(whole, data, TCHECK_CALL_RECORD_SHORT_BYTES);
	memset((char *)whole + TCHECK_CALL_RECORD_SHORT_BYTES, 0,
	       sizeof(*whole) - TCHECK_CALL_RECORD_SHORT_BYTES);
	return whole;
}
