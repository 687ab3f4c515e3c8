// SPDX-License-Identifier: MIT
/*
 * Reads the traces of one run into per-rank call sequences (run_model.h).
 * A call's job rank is its process's RANK; a process launched without one
 * takes its rank in the first communicator it created. Without a step
 * from Python (record --python --step-marker), a rank's step is one turn of
 * the period of its whole call pattern (call_period.h); a rank whose calls
 * have no period starts a step at each recurrence of its first call.
 * A communicator is named by one number across the job: see
 * number_communicators.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "diff/call_period.h"
#include "diff/run_model.h"
#include "diff/run_python_calls.h"
#include "trace/trace_losses.h"
#include "trace/trace_reader.h"

/* A process of one trace and the job rank it was given. */
struct run_process {
	int trace;
	uint32_t pid;
	int job_rank;
	/* Python events seen while its rank was unknown: see place_unranked. */
	struct run_rank *unranked;
};

struct run_model {
	struct run_rank **ranks; /* indexed by job rank */
	int rank_limit;
	size_t rank_capacity;
	struct trace_reader **readers; /* kept open: the records' strings live in them */
	int reader_count;
	struct run_process *processes;
	size_t process_count, process_capacity;
};

static struct run_process *process_find(struct run_model *model, int trace, uint32_t pid)
{
	for (size_t i = model->process_count; i-- > 0;)
		if (model->processes[i].trace == trace && model->processes[i].pid == pid)
			return &model->processes[i];
	return NULL;
}

/* The process, added with an unknown rank when first seen; NULL when out of memory. */
static struct run_process *process_get(struct run_model *model, int trace, uint32_t pid)
{
	struct run_process *process = process_find(model, trace, pid);

	if (process)
		return process;
	if (growable_array_room_for_one((void **)&model->processes, model->process_count,
					&model->process_capacity, sizeof(*model->processes)))
		return NULL;
	process = &model->processes[model->process_count++];
	*process = (struct run_process){ trace, pid, -1 };
	return process;
}

/* The rank's entry, made when first needed; NULL when out of memory. */
static struct run_rank *rank_get(struct run_model *model, int job_rank)
{
	if (job_rank >= model->rank_limit) {
		size_t more = (size_t)(job_rank + 1 - model->rank_limit);

		if (growable_array_reserve((void **)&model->ranks, (size_t)model->rank_limit,
					   &model->rank_capacity, more, sizeof(*model->ranks)))
			return NULL;
		memset(model->ranks + model->rank_limit, 0, more * sizeof(*model->ranks));
		model->rank_limit = job_rank + 1;
	}
	if (!model->ranks[job_rank]) {
		model->ranks[job_rank] = calloc(1, sizeof(struct run_rank));
		if (model->ranks[job_rank])
			model->ranks[job_rank]->job_rank = job_rank;
	}
	return model->ranks[job_rank];
}

/* The index of the communicator in the rank's order of first use, added when new; -1: no memory. */
static int communicator_index(struct run_rank *rank, uint64_t key, bool shared, int32_t nranks)
{
	for (size_t i = 0; i < rank->communicator_count; i++)
		if (rank->communicators[i].key == key)
			return (int)i;
	if (growable_array_room_for_one((void **)&rank->communicators, rank->communicator_count,
					&rank->communicator_capacity, sizeof(*rank->communicators)))
		return -1;
	rank->communicators[rank->communicator_count] =
		(struct run_communicator){ .key = key, .shared = shared, .nranks = nranks };
	return (int)rank->communicator_count++;
}

/* The value of the call's parameter at 'index' (nccl.h order), or RUN_VALUE_NONE. */
static int64_t call_param(const struct trace_nccl_call *call, int index)
{
	return index >= 0 && (uint32_t)index < call->param_count ? (int64_t)call->params[index]
								 : RUN_VALUE_NONE;
}

/* The int parameter named 'name' ("root", "peer"), or RUN_VALUE_NONE. */
static int64_t call_int_param(const struct trace_nccl_call *call, const char *name)
{
	for (int i = 0; i < call->api->param_count; i++) {
		int64_t value;

		if (call->api->params[i].type != NCCL_PARAM_INT ||
		    strcmp(call->api->params[i].name, name) != 0)
			continue;
		value = call_param(call, i);
		return value == RUN_VALUE_NONE ? value : (int64_t)(int32_t)value;
	}
	return RUN_VALUE_NONE;
}

static int add_call(struct run_rank *rank, const struct trace_nccl_call *call, int64_t shift_ns)
{
	uint64_t key = call->comm_id ? call->comm_id : call->comm;
	int communicator = communicator_index(rank, key, call->comm_id != 0, call->nranks);
	struct run_call *entry;

	if (communicator < 0 ||
	    growable_array_room_for_one((void **)&rank->calls, rank->call_count,
					&rank->call_capacity, sizeof(*rank->calls)))
		return -ENOMEM;
	entry = &rank->calls[rank->call_count++];
	*entry = (struct run_call){
		.api = call->api,
		.communicator = communicator,
		.step = call->step,
		.count = call_param(call, nccl_param_find(call->api, NCCL_PARAM_SIZE)),
		.datatype = call_param(call, nccl_param_find(call->api, NCCL_PARAM_DATATYPE)),
		.op = call_param(call, nccl_param_find(call->api, NCCL_PARAM_REDOP)),
		.root = call->api->kind == NCCL_KIND_POINT_TO_POINT ? call_int_param(call, "peer")
								    : call_int_param(call, "root"),
		.entry_ns = (uint64_t)((int64_t)call->entry_ns + shift_ns),
		.duration_ns = call->duration_ns,
	};
	rank->communicators[communicator].calls++;
	return 0;
}

static int take_nccl_call(struct run_model *model, int trace, const struct trace_nccl_call *call,
			  int64_t shift_ns)
{
	struct run_process *process = process_get(model, trace, call->pid);
	struct run_rank *rank;

	if (!process)
		return -ENOMEM;
	if (!call->api || call->depth > 0)
		return 0;
	/* No RANK in the environment: the rank in the first communicator made. */
	if (process->job_rank < 0 && call->api->kind == NCCL_KIND_COMM_INIT && call->rank >= 0)
		process->job_rank = call->rank;
	if (!nccl_function_is_communication(call->api) || process->job_rank < 0)
		return 0;
	rank = rank_get(model, process->job_rank);
	return rank ? add_call(rank, call, shift_ns) : -ENOMEM;
}

static int take_python_call(struct run_model *model, int trace,
			    const struct trace_python_call *call, int64_t shift_ns)
{
	struct run_process *process = process_get(model, trace, call->pid);
	struct run_python_event *event;
	struct run_rank *rank;

	if (!process)
		return -ENOMEM;
	if (process->job_rank < 0 && call->rank >= 0)
		process->job_rank = call->rank;
	if (run_python_runs_at_import(call))
		return 0;
	if (process->job_rank >= 0)
		rank = rank_get(model, process->job_rank);
	else
		rank = process->unranked ? process->unranked
					 : (process->unranked = calloc(1, sizeof(*rank)));
	if (!rank || growable_array_room_for_one((void **)&rank->python, rank->python_count,
						 &rank->python_capacity, sizeof(*rank->python)))
		return -ENOMEM;
	event = &rank->python[rank->python_count];
	*event = (struct run_python_event){
		.name = call->qualified_name ? call->qualified_name : "",
		.arguments = run_python_arguments(call),
		.torch = !!(call->flags & (TRACE_PYTHON_TORCH_SCOPE | TRACE_PYTHON_TORCH_OP)),
		.step = call->step,
		.entry_ns = (uint64_t)((int64_t)call->entry_ns + shift_ns),
	};
	if (!event->arguments)
		return -ENOMEM;
	rank->python_count++;
	return 0;
}

int run_model_add_record(struct run_model *model, int trace, const struct trace_record *record,
			 int64_t shift_ns)
{
	struct run_process *process;

	switch (record->kind) {
	case TRACE_RECORD_PROCESS:
		process = process_get(model, trace, record->process.pid);
		if (!process)
			return -ENOMEM;
		if (record->process.rank >= 0)
			process->job_rank = record->process.rank;
		return 0;
	case TRACE_RECORD_NCCL_CALL:
		return take_nccl_call(model, trace, &record->call, shift_ns);
	case TRACE_RECORD_PYTHON_CALL:
		return take_python_call(model, trace, &record->python_call, shift_ns);
	default:
		return 0;
	}
}

static int read_trace(struct run_model *model, int trace, const char *path, int several,
		      char *error, size_t error_size)
{
	struct trace_reader *reader = trace_reader_open(path, error, error_size);
	const struct trace_header *header;
	struct trace_record record;
	int64_t shift_ns = 0;
	int result;

	if (!reader)
		return -errno ? -errno : -EINVAL;
	model->readers[model->reader_count++] = reader;
	header = trace_reader_header(reader);
	/* Several hosts: one clock, CLOCK_REALTIME through each trace's anchor. */
	if (several)
		shift_ns = (int64_t)(header->anchor_realtime_ns - header->anchor_monotonic_ns);
	while ((result = trace_reader_next(reader, &record)) > 0)
		if (run_model_add_record(model, trace, &record, shift_ns))
			return error_fail(error, error_size, ENOMEM, "out of memory reading %s",
					  path);
	if (result < 0)
		return error_fail(error, error_size, -result, "%s", trace_reader_error(reader));
	trace_incomplete_warn(reader);
	return 0;
}

int run_call_same(const struct run_call *a, const struct run_call *b)
{
	return a->api == b->api && a->count == b->count && a->datatype == b->datatype &&
	       a->op == b->op && a->root == b->root;
}

/* The same call on the same communicator: one item of a rank's call pattern. */
static bool calls_alike(const struct run_call *a, const struct run_call *b)
{
	return a->communicator == b->communicator && run_call_same(a, b);
}

/* A rank's calls and those of them that make its steps (indices into calls). */
struct step_pattern {
	const struct run_call *calls;
	size_t *core;
	size_t core_count;
};

static bool core_item_same(const void *sequence, size_t a, size_t b)
{
	const struct step_pattern *pattern = sequence;

	return calls_alike(&pattern->calls[pattern->core[a]], &pattern->calls[pattern->core[b]]);
}

/* Each call's signature (an index) and how often each signature occurs. */
static size_t count_signatures(const struct run_call *calls, size_t call_count, size_t *signature,
			       size_t *occurrences, size_t *first)
{
	size_t signatures = 0;

	for (size_t i = 0; i < call_count; i++) {
		size_t k = 0;

		while (k < signatures && !calls_alike(&calls[first[k]], &calls[i]))
			k++;
		if (k == signatures) {
			first[signatures++] = i;
			occurrences[k] = 0;
		}
		occurrences[k]++;
		signature[i] = k;
	}
	return signatures;
}

/* The calls whose signature occurs at least 'least' times, and their period; 0: none. */
static size_t core_period(struct step_pattern *pattern, size_t call_count, const size_t *signature,
			  const size_t *occurrences, size_t least, size_t *start)
{
	pattern->core_count = 0;
	for (size_t i = 0; i < call_count; i++)
		if (occurrences[signature[i]] >= least)
			pattern->core[pattern->core_count++] = i;
	return call_period_find(pattern, pattern->core_count, core_item_same, start);
}

/*
 * The steps' calls: those whose signature occurs at least as often as some
 * signature made once a step. Tried for each number of occurrences 'n': the
 * calls whose signature occurs n times or more must turn with a period
 * exactly n times and be three quarters of the calls at least; the most
 * turns win. Set-up calls, made once, and calls made every few steps (an
 * evaluation, a logging all-reduce) are so left out: they neither break the
 * period nor stretch a step over several. Returns the period, 0: none.
 */
static size_t step_calls(struct step_pattern *pattern, size_t call_count, size_t *scratch,
			 size_t *start)
{
	size_t *signature = scratch, *occurrences = scratch + call_count,
	       *first = scratch + 2 * call_count;
	size_t signatures =
		count_signatures(pattern->calls, call_count, signature, occurrences, first);
	size_t best_least = 0;

	for (size_t k = 0; k < signatures; k++) {
		size_t least = occurrences[k], from = 0,
		       period = core_period(pattern, call_count, signature, occurrences, least,
					    &from);

		if (!period || (pattern->core_count - from + period - 1) / period != least ||
		    pattern->core_count * 4 < call_count * 3 || least <= best_least)
			continue;
		best_least = least;
	}
	return best_least
		       ? core_period(pattern, call_count, signature, occurrences, best_least, start)
		       : 0;
}

/*
 * The step of a call made every few steps, between step calls 'before' and
 * 'after' (either may be absent): theirs when they share one; before the
 * first, -1; at a step's edge, the step whose call it is nearer to in time.
 */
static int rare_call_step(const struct run_call *calls, size_t call, const struct run_call *before,
			  const struct run_call *after)
{
	uint64_t gap_before, gap_after;

	if (!after || (before && before->step == after->step))
		return before ? before->step : -1;
	if (!before)
		return -1; /* set-up, before the first step */
	gap_before = calls[call].entry_ns - (before->entry_ns + before->duration_ns);
	gap_after = after->entry_ns - (calls[call].entry_ns + calls[call].duration_ns);
	return gap_after < gap_before ? after->step : before->step;
}

/*
 * Steps from the period of the steps' calls (call_period.h), set-up calls
 * before it -1, the others placed by rare_call_step. False when there is
 * no period (or no memory).
 */
static bool steps_from_period(struct run_rank *rank)
{
	size_t *scratch = calloc(rank->call_count * 4 + 1, sizeof(*scratch));
	struct step_pattern pattern = { .calls = rank->calls, .core = scratch };
	size_t start = 0, period, next_core = 0;

	if (!scratch)
		return false;
	period = step_calls(&pattern, rank->call_count, scratch + rank->call_count, &start);
	for (size_t k = 0; period && k < pattern.core_count; k++)
		rank->calls[pattern.core[k]].step = k < start ? -1 : (int)((k - start) / period);
	for (size_t i = 0; period && i < rank->call_count; i++) {
		if (next_core < pattern.core_count && pattern.core[next_core] == i) {
			next_core++;
			continue;
		}
		rank->calls[i].step = rare_call_step(
			rank->calls, i,
			next_core ? &rank->calls[pattern.core[next_core - 1]] : NULL,
			next_core < pattern.core_count ? &rank->calls[pattern.core[next_core]]
						       : NULL);
	}
	free(scratch);
	return period != 0;
}

/*
 * Without a step from Python: a step is one turn of the period of the
 * rank's call pattern; with no period, a step starts at each recurrence of
 * the rank's first call.
 */
static void derive_steps(struct run_rank *rank)
{
	int step = -1;

	for (size_t i = 0; i < rank->call_count; i++)
		if (rank->calls[i].step >= 0)
			return;
	if (steps_from_period(rank))
		return;
	for (size_t i = 0; i < rank->call_count; i++) {
		if (run_call_same(&rank->calls[i], &rank->calls[0]))
			step++;
		rank->calls[i].step = step;
	}
}

/* Python calls are written when they end: back into the order they began. */
static int python_event_order(const void *left, const void *right)
{
	const struct run_python_event *a = left, *b = right;

	if (a->entry_ns != b->entry_ns)
		return a->entry_ns < b->entry_ns ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void finish_rank(struct run_rank *rank)
{
	derive_steps(rank);
	if (rank->python_count)
		qsort(rank->python, rank->python_count, sizeof(*rank->python), python_event_order);
	rank->steps = 0;
	for (size_t i = 0; i < rank->call_count; i++)
		if (rank->calls[i].step + 1 > rank->steps)
			rank->steps = rank->calls[i].step + 1;
	for (size_t i = 0; i < rank->python_count; i++)
		if (rank->python[i].step + 1 > rank->steps)
			rank->steps = rank->python[i].step + 1;
}

/* Appends the events of 'from' to 'to', and frees 'from'. */
static int move_python_events(struct run_rank *to, struct run_rank *from)
{
	for (size_t i = 0; i < from->python_count; i++) {
		if (growable_array_room_for_one((void **)&to->python, to->python_count,
						&to->python_capacity, sizeof(*to->python)))
			return -ENOMEM;
		to->python[to->python_count++] = from->python[i];
	}
	free(from->python);
	free(from);
	return 0;
}

/*
 * Python events of processes whose rank was unknown when they came: those of
 * a process that got its rank later join it; in a run with no rank at all (a
 * one-process job), the process with the most events is rank 0. The others
 * (a launcher) are not part of any rank.
 */
static int place_unranked(struct run_model *model)
{
	struct run_process *busiest = NULL;
	bool any_rank = false;

	for (int i = 0; i < model->rank_limit; i++)
		any_rank |= model->ranks[i] != NULL;
	for (size_t i = 0; i < model->process_count; i++) {
		struct run_process *process = &model->processes[i];

		if (!process->unranked)
			continue;
		if (process->job_rank < 0 && !any_rank) {
			if (!busiest ||
			    process->unranked->python_count > busiest->unranked->python_count)
				busiest = process;
			continue;
		}
		if (process->job_rank >= 0) {
			struct run_rank *rank = rank_get(model, process->job_rank);

			if (!rank || move_python_events(rank, process->unranked))
				return -ENOMEM;
			process->unranked = NULL;
		}
	}
	if (busiest) {
		struct run_rank *rank = rank_get(model, 0);

		busiest->job_rank = 0;
		if (!rank || move_python_events(rank, busiest->unranked))
			return -ENOMEM;
		busiest->unranked = NULL;
	}
	return 0;
}

struct run_model *run_model_new(void)
{
	return calloc(1, sizeof(struct run_model));
}

/*
 * One number per communicator across the job, the same in every rank's
 * reports and in two runs of one job: communicators in the order of the
 * lowest job rank that used each, then that rank's order of first use. A
 * communicator whose identity is not shared (comm_id unknown) cannot be
 * matched across ranks: it is numbered as its rank's alone.
 */
/* Gives 'number' to the communicator 'key' on the ranks after 'rank'. */
static void number_on_later_ranks(struct run_model *model, int rank, uint64_t key, int number)
{
	for (int other = rank + 1; other < model->rank_limit; other++) {
		struct run_rank *later = model->ranks[other];

		for (size_t c = 0; later && c < later->communicator_count; c++)
			if (later->communicators[c].shared && later->communicators[c].key == key)
				later->communicators[c].number = number;
	}
}

static void number_communicators(struct run_model *model)
{
	int next = 0;

	for (int r = 0; r < model->rank_limit; r++)
		for (size_t c = 0; model->ranks[r] && c < model->ranks[r]->communicator_count; c++)
			model->ranks[r]->communicators[c].number = -1;
	for (int r = 0; r < model->rank_limit; r++) {
		struct run_rank *rank = model->ranks[r];

		for (size_t c = 0; rank && c < rank->communicator_count; c++) {
			struct run_communicator *communicator = &rank->communicators[c];

			if (communicator->number >= 0)
				continue;
			communicator->number = next;
			if (communicator->shared)
				number_on_later_ranks(model, r, communicator->key, next);
			next++;
		}
	}
}

void run_model_finish(struct run_model *model)
{
	/* Out of memory here leaves those events out, as reading them would have. */
	place_unranked(model);
	for (int i = 0; i < model->rank_limit; i++)
		if (model->ranks[i])
			finish_rank(model->ranks[i]);
	number_communicators(model);
}

struct run_model *run_model_load(const char *const *paths, int count, char *error,
				 size_t error_size)
{
	struct run_model *model = run_model_new();

	if (!model || !(model->readers = calloc((size_t)count, sizeof(*model->readers)))) {
		free(model);
		error_format(error, error_size, "out of memory");
		return NULL;
	}
	for (int i = 0; i < count; i++)
		if (read_trace(model, i, paths[i], count > 1, error, error_size)) {
			run_model_free(model);
			return NULL;
		}
	run_model_finish(model);
	return model;
}

static void rank_free(struct run_rank *rank)
{
	if (!rank)
		return;
	for (size_t i = 0; i < rank->python_count; i++)
		free(rank->python[i].arguments);
	free(rank->python);
	free(rank->calls);
	free(rank->communicators);
	free(rank);
}

void run_model_free(struct run_model *model)
{
	if (!model)
		return;
	for (int i = 0; i < model->rank_limit; i++)
		rank_free(model->ranks[i]);
	for (int i = 0; i < model->reader_count; i++)
		trace_reader_close(model->readers[i]);
	for (size_t i = 0; i < model->process_count; i++)
		rank_free(model->processes[i].unranked);
	free(model->readers);
	free(model->ranks);
	free(model->processes);
	free(model);
}

int run_model_rank_limit(const struct run_model *model)
{
	return model->rank_limit;
}

const struct run_rank *run_model_rank(const struct run_model *model, int job_rank)
{
	if (job_rank < 0 || job_rank >= model->rank_limit)
		return NULL;
	return model->ranks[job_rank];
}

size_t run_model_event_count(const struct run_model *model)
{
	size_t count = 0;

	for (int i = 0; i < model->rank_limit; i++)
		if (model->ranks[i])
			count += model->ranks[i]->call_count + model->ranks[i]->python_count;
	return count;
}

int run_model_rank_count(const struct run_model *model)
{
	int count = 0;

	for (int i = 0; i < model->rank_limit; i++)
		count += model->ranks[i] != NULL;
	return count;
}

void run_communicator_name(const struct run_rank *rank, int communicator, char *text, size_t size)
{
	if (!rank || communicator < 0 || (size_t)communicator >= rank->communicator_count) {
		snprintf(text, size, "none");
		return;
	}
	if (rank->communicators[communicator].nranks > 0)
		snprintf(text, size, "comm %d (%d ranks)", rank->communicators[communicator].number,
			 rank->communicators[communicator].nranks);
	else
		snprintf(text, size, "comm %d", rank->communicators[communicator].number);
}
