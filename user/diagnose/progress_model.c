// SPDX-License-Identifier: MIT
/*
 * The progress model: per communicator and rank, what was issued and when;
 * the step found as the period of the collective pattern; the expected
 * step time learned online. See progress_model.h.
 */
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "diagnose/progress_model.h"
#include "diagnose/progress_processes.h"
#include "model/nccl_api.h"

void progress_options_default(struct progress_options *options)
{
	options->hang_factor = 2.0;
	/* A GPU job's 2 ms step pauses for milliseconds all the time (GC, scheduling). */
	options->hang_min_ns = 1e9;
	/* Before the job's step is learned: a rank left behind this long (start-up is slow). */
	options->hang_unlearned_ns = 10e9;
	/* A stall outside any collective: longer than a checkpoint or an evaluation usually takes.
	 */
	options->stall_min_ns = 30e9;
	options->slowdown_threshold = 1.4;
	/*
	 * A step late by a few milliseconds is scheduling noise, not a
	 * straggler: a busy host's scheduler delays a rank by 10-20 ms now and then.
	 */
	options->slowdown_min_ns = 20e6;
	options->alpha = 1.15;
	options->warmup_steps = 2;
}

bool progress_is_collective(const struct nccl_function *function)
{
	return function && function->kind == NCCL_KIND_COLLECTIVE;
}

bool progress_is_point_to_point(const struct nccl_function *function)
{
	return function && function->kind == NCCL_KIND_POINT_TO_POINT;
}

static bool ends_communicator(const struct nccl_function *function)
{
	return function && function->kind == NCCL_KIND_COMM_END;
}

struct progress_model *progress_model_new(const struct progress_options *options)
{
	struct progress_model *model = calloc(1, sizeof(*model));

	if (!model)
		return NULL;
	if (options)
		model->options = *options;
	else
		progress_options_default(&model->options);
	return model;
}

void progress_model_free(struct progress_model *model)
{
	if (!model)
		return;
	for (unsigned i = 0; i < model->comm_count; i++)
		free(model->comms[i].window);
	free(model->comms);
	free(model);
}

static struct progress_comm *find_comm(struct progress_model *model, uint64_t comm_id,
				       int32_t nranks)
{
	struct progress_comm *comm;

	for (unsigned i = 0; i < model->comm_count; i++)
		if (model->comms[i].comm_id == comm_id)
			return &model->comms[i];
	if (growable_array_room_for_one((void **)&model->comms, model->comm_count,
					&model->comm_capacity, sizeof(*model->comms)))
		return NULL;
	comm = &model->comms[model->comm_count];
	memset(comm, 0, sizeof(*comm));
	comm->window = calloc(PROGRESS_WINDOW, sizeof(*comm->window));
	if (!comm->window)
		return NULL;
	for (unsigned i = 0; i < PROGRESS_WINDOW; i++)
		comm->window[i].index = -1;
	comm->comm_id = comm_id;
	comm->nranks = nranks;
	comm->slot_width = nranks;
	comm->lead_learned_index = -1;
	comm->judged_index = -1;
	model->comm_count++;
	return comm;
}

const struct progress_slot *progress_comm_slot(const struct progress_comm *comm, int64_t index)
{
	const struct progress_slot *slot;

	if (index < 0)
		return NULL;
	slot = &comm->window[index % PROGRESS_WINDOW];
	return slot->index == index ? slot : NULL;
}

uint64_t progress_comm_last_arrival(const struct progress_comm *comm, int64_t index)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	uint64_t latest = 0;

	if (!slot)
		return 0;
	for (int32_t r = 0; r < comm->nranks; r++) {
		if (!slot->arrival_ns[r])
			return 0;
		if (slot->arrival_ns[r] > latest)
			latest = slot->arrival_ns[r];
	}
	return latest;
}

bool progress_comm_guessed(const struct progress_comm *comm, int64_t index)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);

	return slot && slot->guessed;
}

uint64_t progress_call_count(const struct trace_nccl_call *call)
{
	const struct nccl_function *function = call->api;
	int param = function ? nccl_param_find(function, NCCL_PARAM_SIZE) : -1;

	return param >= 0 && (uint32_t)param < call->param_count ? call->params[param] : 0;
}

static uint64_t signature_of(const char *function, uint64_t count)
{
	return fnv1a_add_u64(fnv1a_string(function), count);
}

/* Whether every remembered signature after 'offset' repeats with 'period'. */
static bool follows_period(const struct progress_comm *comm, int32_t offset, int32_t period)
{
	int64_t seen = comm->signature_count < PROGRESS_SIGNATURES ? comm->signature_count
								   : PROGRESS_SIGNATURES;

	for (int64_t i = offset; i + period < seen; i++)
		if (comm->signatures[i] != comm->signatures[i + period])
			return false;
	return true;
}

/*
 * The smallest period (with the fewest leading collectives before it)
 * that the signatures seen so far follow, seen at least three times over
 * (twice for periods of four or more) so one coincidence does not make a
 * step. A period that a later
 * collective breaks is dropped and searched again, with what was learned
 * from it.
 */
static void find_period(struct progress_comm *comm)
{
	int64_t seen = comm->signature_count;

	if (comm->period && follows_period(comm, comm->offset, comm->period))
		return;
	comm->period = 0;
	comm->offset = 0;
	comm->steps_completed = 0;
	comm->expected_step_ns = 0;
	comm->learned_steps = 0;
	comm->disputed_step_ns = 0;
	for (int32_t period = 1; period <= PROGRESS_MAX_PERIOD; period++) {
		/*
		 * A short pattern must repeat three times to be a step; a long
		 * one (a communicator used once every few steps) twice, or it
		 * would be learned too late to judge anything.
		 */
		int32_t repeats = period >= 4 ? 2 : 3;

		for (int32_t offset = 0; offset <= 8; offset++) {
			if (offset + repeats * period > seen)
				break;
			if (follows_period(comm, offset, period)) {
				comm->period = period;
				comm->offset = offset;
				return;
			}
		}
	}
}

int64_t progress_comm_step_end(const struct progress_comm *comm, int64_t step)
{
	return comm->offset + (step + 1) * comm->period - 1;
}

/* The wait before each position of the step that ended with 'step' (its last arrivals). */
static void step_gaps(const struct progress_comm *comm, int64_t step, double *gaps)
{
	for (int32_t p = 0; p < comm->period && p < PROGRESS_MAX_PERIOD; p++) {
		int64_t index = progress_comm_step_end(comm, step - 1) + 1 + p;

		gaps[p] = (double)(progress_comm_last_arrival(comm, index) -
				   progress_comm_last_arrival(comm, index - 1));
	}
}

/*
 * One sample is no anchor: a first step faster than the job's usual ones
 * (1.4 ms where the others take 2 to 10) would keep every later one out,
 * and the step time would never be learned. While the first step is the
 * only sample, a slower one is kept aside; the next step that does not
 * agree with the first either settles it: the median of the three becomes
 * the expectation, with its waits.
 */
static void settle_disputed_start(struct progress_comm *comm, double duration_ns,
				  const double *gaps)
{
	double first = comm->expected_step_ns, disputed = comm->disputed_step_ns;
	size_t bytes = sizeof(comm->expected_gap_ns);

	if (comm->learned_steps != 1)
		return;
	if (disputed == 0) {
		comm->disputed_step_ns = duration_ns;
		memcpy(comm->disputed_gap_ns, gaps, bytes);
		return;
	}
	comm->disputed_step_ns = 0;
	comm->learned_steps = 2;
	/* The median of first, disputed and this one. */
	if ((disputed - first) * (disputed - duration_ns) <= 0) {
		comm->expected_step_ns = disputed;
		memcpy(comm->expected_gap_ns, comm->disputed_gap_ns, bytes);
	} else if ((duration_ns - first) * (duration_ns - disputed) <= 0) {
		comm->expected_step_ns = duration_ns;
		memcpy(comm->expected_gap_ns, gaps, bytes);
	}
}

static void learn(struct progress_model *model, struct progress_comm *comm, double duration_ns,
		  int64_t step)
{
	const struct progress_options *options = &model->options;
	double job_step_ns = progress_model_job_step_ns(model);
	/* Job steps this communicator's step spans: warm-up counts job steps. */
	double span = job_step_ns > 0 ? duration_ns / job_step_ns : 1;
	double gaps[PROGRESS_MAX_PERIOD] = { 0 };

	if (span < 1)
		span = 1;
	if ((double)step * span < (double)options->warmup_steps)
		return;
	comm->steps_per_period = span;
	step_gaps(comm, step, gaps);
	if (comm->expected_step_ns == 0) {
		comm->expected_step_ns = duration_ns;
		comm->learned_steps = 1;
		comm->disputed_step_ns = 0;
		memcpy(comm->expected_gap_ns, gaps, sizeof(gaps));
		return;
	}
	if (duration_ns / comm->expected_step_ns > options->alpha) {
		settle_disputed_start(comm, duration_ns, gaps);
		return;
	}
	comm->disputed_step_ns = 0;
	comm->expected_step_ns = (comm->expected_step_ns * comm->learned_steps + duration_ns) /
				 (comm->learned_steps + 1);
	comm->learned_steps++;
	for (int32_t p = 0; p < comm->period && p < PROGRESS_MAX_PERIOD; p++)
		comm->expected_gap_ns[p] +=
			(gaps[p] - comm->expected_gap_ns[p]) / comm->learned_steps;
}

/* Completes every step whose last collective all ranks reached; returns the last one or -1. */
static int64_t complete_steps(struct progress_model *model, struct progress_comm *comm)
{
	int64_t completed = -1;

	while (comm->period) {
		int64_t step = comm->steps_completed;
		uint64_t end = progress_comm_last_arrival(comm, progress_comm_step_end(comm, step));
		uint64_t start = step > 0 ? progress_comm_last_arrival(
						    comm, progress_comm_step_end(comm, step - 1))
					  : 0;

		if (!end)
			break;
		comm->steps_completed++;
		comm->last_boundary_ns = end;
		/* A guessed arrival is a bound, not a time: the step is not learned from. */
		if (step > 0 && start && end > start &&
		    !progress_comm_guessed(comm, progress_comm_step_end(comm, step)) &&
		    !progress_comm_guessed(comm, progress_comm_step_end(comm, step - 1)))
			learn(model, comm, (double)(end - start), step);
		completed = step;
	}
	return completed;
}

/*
 * Empties a slot for collective 'index'. Only the entries of ranks the
 * communicator can have are cleared: those past comm->slot_width were
 * never written (the window starts zeroed). A whole slot is 4 KB of 64
 * ranks; an 8-rank job's calls spent a third of their time in the model
 * clearing it.
 */
static void clear_slot(struct progress_slot *slot, int32_t width, int64_t index)
{
	size_t ranks = (size_t)width;

	slot->index = index;
	slot->function = NULL;
	slot->count = 0;
	slot->guessed = 0;
	memset(slot->arrival_ns, 0, ranks * sizeof(slot->arrival_ns[0]));
	memset(slot->duration_ns, 0, ranks * sizeof(slot->duration_ns[0]));
	memset(slot->seq, 0, ranks * sizeof(slot->seq[0]));
	memset(slot->functions, 0, ranks * sizeof(slot->functions[0]));
	memset(slot->counts, 0, ranks * sizeof(slot->counts[0]));
	memset(slot->inside_before_ns, 0, ranks * sizeof(slot->inside_before_ns[0]));
	memset(slot->cpu_wait_ns, 0, ranks * sizeof(slot->cpu_wait_ns[0]));
	memset(slot->tid, 0, ranks * sizeof(slot->tid[0]));
}

/* clear_slot names every field: one added to struct progress_slot goes there too. */
_Static_assert(sizeof(struct progress_slot) ==
		       4 * sizeof(uint64_t) +
			       PROGRESS_MAX_RANKS * (6 * sizeof(uint64_t) + sizeof(const char *) +
						     sizeof(uint32_t)),
	       "clear_slot clears every field of struct progress_slot");

/* The window's slot of collective 'index', emptied for it if it held an older one. */
static struct progress_slot *claim_slot(struct progress_comm *comm, int64_t index)
{
	struct progress_slot *slot = &comm->window[index % PROGRESS_WINDOW];

	if (slot->index != index)
		clear_slot(slot, comm->slot_width, index);
	return slot;
}

static void add_collective(struct progress_comm *comm, struct progress_rank *rank, int32_t r,
			   const struct progress_process *process,
			   const struct trace_nccl_call *call)
{
	int64_t index = rank->collectives++;
	struct progress_slot *slot = claim_slot(comm, index);
	uint64_t count = progress_call_count(call);

	/* The first rank that made the call, not one whose call there was missed, names it. */
	if (!slot->function) {
		slot->function = call->function;
		slot->count = count;
	}
	slot->arrival_ns[r] = call->entry_ns ? call->entry_ns : 1;
	slot->duration_ns[r] = call->duration_ns;
	slot->seq[r] = call->seq;
	slot->cpu_wait_ns[r] = trace_call_cpu_wait(call);
	slot->tid[r] = call->tid;
	slot->functions[r] = call->function;
	slot->counts[r] = count;
	/* The calls before this one returned before it was entered; this one is not counted yet. */
	slot->inside_before_ns[r] =
		process ? process->inside_ns -
				  (progress_call_counts_inside(call) ? call->duration_ns : 0)
			: 0;
	if (index == comm->signature_count && index < PROGRESS_SIGNATURES) {
		comm->signatures[index] = signature_of(call->function, count);
		comm->signature_count++;
		find_period(comm);
	}
}

/*
 * A collective of the rank that never reached the model (a record lost on
 * its way): its place is taken, arrived at by the time the rank's next
 * call came, guessed.
 */
static void add_missed_collective(struct progress_comm *comm, struct progress_rank *rank, int32_t r,
				  uint64_t arrived_by_ns)
{
	struct progress_slot *slot = claim_slot(comm, rank->collectives++);

	slot->arrival_ns[r] = arrived_by_ns ? arrived_by_ns : 1;
	slot->seq[r] = -1;
	slot->guessed |= 1ULL << r;
}

/*
 * Keeps a rank's n-th collective the others' n-th. The tracer numbers
 * every call a rank made on the communicator; when a call's number runs
 * ahead of the rank's count, calls between never reached the model, and
 * their places are taken (add_missed_collective) so that the rank's next
 * call is not paired with its peers' earlier one. A count that runs ahead
 * of the numbering (a failed call counted, not numbered) moves the base.
 */
static void skip_missed_collectives(struct progress_comm *comm, struct progress_rank *rank,
				    int32_t r, const struct trace_nccl_call *call)
{
	int64_t offset, missed;

	if (call->seq < 0)
		return;
	offset = call->seq - rank->p2p_calls - rank->collectives;
	missed = offset - rank->numbering_offset;
	if (!rank->numbered || missed < 0 || missed >= PROGRESS_WINDOW) {
		rank->numbered = true;
		rank->numbering_offset = offset;
		return;
	}
	for (; missed > 0; missed--)
		add_missed_collective(comm, rank, r, call->entry_ns);
}

/* A rank's init call seen open (entered) or returned: communicators being created. */
static void track_init(struct progress_model *model, const struct trace_nccl_call *call)
{
	struct progress_init *init = NULL;

	for (unsigned i = 0; i < model->init_count && !init; i++)
		if (model->inits[i].comm_id == call->comm_id &&
		    model->inits[i].nranks == call->nranks)
			init = &model->inits[i];
	if (!init) {
		/* A ring: the oldest creation gives way. */
		init = &model->inits[model->inits_seen++ % PROGRESS_INITS_MAX];
		if (model->init_count < PROGRESS_INITS_MAX)
			model->init_count++;
		memset(init, 0, sizeof(*init));
		init->comm_id = call->comm_id;
		init->nranks = call->nranks;
		init->function = call->function;
	}
	if (!init->entry_ns[call->rank])
		init->entry_ns[call->rank] = call->entry_ns ? call->entry_ns : 1;
	init->pid[call->rank] = call->pid;
	if (!(call->flags & TRACE_CALL_OPEN))
		init->returned[call->rank] = true;
}

/* Where a thread's latest call on no communicator is kept: its slot, or a free one. */
static struct progress_blocked *blocked_slot(struct progress_model *model, uint32_t pid,
					     uint32_t tid)
{
	struct progress_blocked *returned = NULL;

	for (unsigned i = 0; i < model->blocked_count; i++) {
		if (model->blocked[i].tid == tid && model->blocked[i].pid == pid)
			return &model->blocked[i];
		if (!model->blocked[i].open && !returned)
			returned = &model->blocked[i];
	}
	if (model->blocked_count < PROGRESS_BLOCKED_MAX)
		return &model->blocked[model->blocked_count++];
	/* Full: a thread not blocked gives way (its next sighting is then taken as new). */
	return returned;
}

/* A call on no communicator seen open (blocked) or returned (no longer). */
static void track_blocked(struct progress_model *model, const struct trace_nccl_call *call)
{
	struct progress_blocked *slot = blocked_slot(model, call->pid, call->tid);
	bool open = (call->flags & TRACE_CALL_OPEN) != 0;

	if (!slot)
		return;
	if (slot->pid == call->pid && slot->tid == call->tid) {
		/* Seen open, then returned before it was handed over: the return stands. */
		if (open && call->entry_ns <= slot->entry_ns && !slot->open)
			return;
		/* A return of an older call than the one it is inside changes nothing. */
		if (!open && call->entry_ns < slot->entry_ns)
			return;
	}
	*slot = (struct progress_blocked){ call->pid, call->tid, call->entry_ns, open };
}

bool progress_model_blocked_elsewhere(const struct progress_model *model,
				      const struct progress_comm *comm, uint32_t pid)
{
	for (unsigned i = 0; i < model->blocked_count; i++)
		if (model->blocked[i].pid == pid && model->blocked[i].open)
			return true;
	for (unsigned i = 0; i < model->comm_count; i++) {
		const struct progress_comm *other = &model->comms[i];

		if (other == comm)
			continue;
		for (int32_t r = 0; r < other->nranks; r++)
			if (other->ranks[r].pid == pid && other->ranks[r].last.open)
				return true;
	}
	return false;
}

/*
 * Where a rank's first collective goes. Traced from the communicator's
 * start, each rank's n-th collective is the n-th of the others. Attached
 * mid-run, ranks are found at different points of their work: where their
 * sequence numbers count from the library's own count (or from a creation
 * the piece of a cut recording does not begin with), a rank starts at its
 * distance from the first collective seen, and one found behind that
 * collective is left out until it reaches it. Returns whether the call
 * is counted.
 */
static bool place_rank(struct progress_comm *comm, struct progress_rank *rank,
		       const struct trace_nccl_call *call)
{
	if (rank->placed)
		return true;
	if (!(call->flags & (TRACE_CALL_SEQ_FROM_LIBRARY | TRACE_CALL_SEQ_FROM_CREATION)) ||
	    call->seq < 0) {
		rank->placed = true;
		return true;
	}
	if (!comm->seq_origin_known) {
		comm->seq_origin = call->seq;
		comm->seq_origin_known = true;
	}
	if (call->seq < comm->seq_origin)
		return false;
	rank->collectives = call->seq - comm->seq_origin;
	rank->placed = true;
	return true;
}

/* A call counted while open, seen again: its duration so far, or its end. */
static void taken_again(struct progress_comm *comm, struct progress_rank *rank,
			const struct trace_nccl_call *call, bool collective)
{
	bool open = (call->flags & TRACE_CALL_OPEN) != 0;
	int32_t r = (int32_t)(rank - comm->ranks);

	rank->last.duration_ns = call->duration_ns;
	rank->last.open = open;
	if (collective && rank->collectives > 0) {
		struct progress_slot *slot =
			&comm->window[(rank->collectives - 1) % PROGRESS_WINDOW];

		if (slot->index == rank->collectives - 1)
			slot->duration_ns[r] = call->duration_ns;
	}
}

/* Where a call counted while open is among those the rank remembers; -1 when it is not. */
static int remembered_open_call(const struct progress_rank *rank,
				const struct trace_nccl_call *call)
{
	for (unsigned i = 0; i < PROGRESS_OPEN_REMEMBERED && i < rank->open_calls_seen; i++)
		if (rank->open_calls[i].entry_ns == call->entry_ns &&
		    rank->open_calls[i].tid == call->tid)
			return (int)i;
	return -1;
}

static void remember_open_call(struct progress_rank *rank, const struct trace_nccl_call *call,
			       int64_t collective_index)
{
	rank->open_calls[rank->open_calls_seen++ % PROGRESS_OPEN_REMEMBERED] =
		(struct progress_open_call){ call->entry_ns, call->tid, collective_index };
}

/*
 * A call counted while open, seen again after later calls of the rank:
 * its duration goes to its collective's slot; it is not counted again.
 */
static void taken_again_later(struct progress_comm *comm, struct progress_rank *rank,
			      const struct trace_nccl_call *call, int remembered)
{
	int64_t index = rank->open_calls[remembered].collective_index;
	int32_t r = (int32_t)(rank - comm->ranks);

	if (call->flags & TRACE_CALL_OPEN)
		return;
	if (index >= 0) {
		struct progress_slot *slot = &comm->window[index % PROGRESS_WINDOW];

		if (slot->index == index)
			slot->duration_ns[r] = call->duration_ns;
	}
	rank->open_calls[remembered].entry_ns = 0;
}

struct progress_comm *progress_model_add_call(struct progress_model *model,
					      const struct trace_nccl_call *call,
					      int64_t *completed_step)
{
	return progress_model_add_process_call(model, progress_process_of(model, call->pid), call,
					       completed_step);
}

struct progress_comm *progress_model_add_process_call(struct progress_model *model,
						      struct progress_process *process,
						      const struct trace_nccl_call *call,
						      int64_t *completed_step)
{
	bool collective = progress_is_collective(call->api);
	bool point_to_point = progress_is_point_to_point(call->api);
	struct progress_comm *comm;
	struct progress_rank *rank;

	*completed_step = -1;
	/* An open call's duration is as last seen (the end of a trace): only its entry is now. */
	progress_model_advance(
		model, call->entry_ns + ((call->flags & TRACE_CALL_OPEN) ? 0 : call->duration_ns));
	if (call->depth == 0 && !call->comm)
		track_blocked(model, call);
	progress_process_count_inside(process, call);
	if (!call->comm_id || call->rank < 0 || call->nranks <= 0 ||
	    call->nranks > PROGRESS_MAX_RANKS || call->rank >= call->nranks || call->depth > 0)
		return NULL;
	if (call->api && call->api->kind == NCCL_KIND_COMM_INIT) {
		track_init(model, call);
		return NULL;
	}
	if (!collective && !point_to_point && !ends_communicator(call->api))
		return NULL;
	comm = find_comm(model, call->comm_id, call->nranks);
	if (!comm)
		return NULL;
	rank = &comm->ranks[call->rank];
	if (call->rank >= comm->slot_width)
		comm->slot_width = call->rank + 1;
	if (ends_communicator(call->api)) {
		rank->finished = true;
		return NULL;
	}
	rank->present = true;
	rank->pid = call->pid;
	/* Calls outside nccl.h's table are c10d's: entered only, unless their work is awaited. */
	if (nccl_function_index(call->api) < 0 && !(call->flags & TRACE_CALL_WORK_AWAITED))
		comm->entries_only = true;
	else if (nccl_function_index(call->api) < 0)
		comm->work_awaited = true;
	if (rank->last.open && rank->last.entry_ns == call->entry_ns &&
	    rank->last_tid == call->tid) {
		/* Counted while in flight: now it returned, or is still open. */
		taken_again(comm, rank, call, collective);
		return comm;
	}
	if (remembered_open_call(rank, call) >= 0) {
		taken_again_later(comm, rank, call, remembered_open_call(rank, call));
		return comm;
	}
	/* Seen open, then returned before it was handed over: the return counted it. */
	if ((call->flags & TRACE_CALL_OPEN) && call->entry_ns <= rank->last.entry_ns)
		return comm;
	/*
	 * An awaited c10d call whose work ended after its thread made a later
	 * one: counted when it was seen in flight at its entry (a thread's
	 * calls reach the model in the order made).
	 */
	if ((call->flags & TRACE_CALL_WORK_AWAITED) && rank->last_tid == call->tid &&
	    call->entry_ns < rank->last.entry_ns)
		return comm;
	rank->last_tid = call->tid;
	progress_process_remember(process, call);
	rank->last = (struct progress_event){ call->function,
					      progress_call_count(call),
					      call->entry_ns,
					      call->duration_ns,
					      call->seq,
					      -1,
					      (call->flags & TRACE_CALL_OPEN) != 0 };
	if (call->entry_ns > comm->last_progress_ns) {
		comm->last_progress_ns = call->entry_ns;
		comm->hang_reported = false; /* it moves again: a later stall is a new hang */
	}
	if (point_to_point) {
		rank->p2p_calls++;
		if (call->flags & TRACE_CALL_OPEN)
			remember_open_call(rank, call, -1);
		return comm;
	}
	if (!place_rank(comm, rank, call))
		return comm;
	skip_missed_collectives(comm, rank, call->rank, call);
	add_collective(comm, rank, call->rank, process, call);
	if (call->flags & TRACE_CALL_OPEN)
		remember_open_call(rank, call, rank->collectives - 1);
	*completed_step = complete_steps(model, comm);
	return comm;
}

void progress_model_advance(struct progress_model *model, uint64_t now_ns)
{
	if (now_ns > model->now_ns)
		model->now_ns = now_ns;
}

double progress_model_silence_ns(const struct progress_model *model, uint64_t since_ns)
{
	uint64_t since = watched_time_silent_since(&model->watched, since_ns);

	return model->now_ns > since ? (double)(model->now_ns - since) : 0;
}

double progress_model_job_step_ns(const struct progress_model *model)
{
	double shortest = 0;

	for (unsigned i = 0; i < model->comm_count; i++) {
		const struct progress_comm *comm = &model->comms[i];
		double span = comm->steps_per_period > 1 ? comm->steps_per_period : 1;
		double expected = comm->expected_step_ns;

		/* One step's time is one sample: the expectation needs two job steps. */
		if ((double)comm->learned_steps * span < 2)
			continue;
		if (expected > 0 && (shortest == 0 || expected < shortest))
			shortest = expected;
	}
	return shortest;
}

void progress_model_process_ended(struct progress_model *model, uint32_t pid)
{
	for (unsigned i = 0; i < model->blocked_count;)
		if (model->blocked[i].pid == pid)
			model->blocked[i] = model->blocked[--model->blocked_count];
		else
			i++;
	for (unsigned i = 0; i < model->comm_count; i++)
		for (int32_t r = 0; r < model->comms[i].nranks; r++)
			if (model->comms[i].ranks[r].pid == pid)
				model->comms[i].ranks[r].finished = true;
	/* A rank that died inside an init call no longer waits there. */
	for (unsigned i = 0; i < model->init_count; i++)
		for (int32_t r = 0; r < model->inits[i].nranks; r++)
			if (model->inits[i].pid[r] == pid)
				model->inits[i].returned[r] = true;
}
