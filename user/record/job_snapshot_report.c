// SPDX-License-Identifier: MIT
/*
 * What a job's state on arrival says: which rank lags, in which collective
 * and sequence number the others wait, and the snapshot written out as
 * JSON (what a Flight Recorder dump gives) or as lines for people.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "record/job_snapshot.h"

struct finding_list {
	struct snapshot_diagnosis *diagnosis;
	size_t capacity;
};

/* The first Python frame of the process's main thread that is the program's, for "doing". */
static void process_doing(const struct snapshot_process *process, char *text, size_t size)
{
	const struct snapshot_thread *blocked = NULL;

	text[0] = '\0';
	for (size_t i = 0; i < process->thread_count; i++) {
		const struct snapshot_thread *thread = &process->threads[i];

		if (thread->native_function[0] && !blocked)
			blocked = thread;
		if (thread->tid == process->pid && thread->python && thread->python->frame_count) {
			const struct python_stack_frame *top = &thread->python->frames[0];

			snprintf(text, size, "in Python %.200s (%.200s, def at line %d)",
				 top->qualified_name, top->filename, top->first_line);
			return;
		}
	}
	if (blocked)
		snprintf(text, size, "thread %d in %s", (int)blocked->tid,
			 blocked->native_function);
	else
		snprintf(text, size, "inside no NCCL, c10d or gloo call%s",
			 process->python_note[0] ? " (no Python stack)" : "");
}

/* The collective most threads of the other processes are inside, "" when none is. */
static const char *process_collective(const struct snapshot_process *process)
{
	for (size_t i = 0; i < process->thread_count; i++)
		if (process->threads[i].collective[0])
			return process->threads[i].collective;
	return "";
}

/* The Python stack a process's record carries: its main thread's, else the first one read. */
static const struct python_thread_stack *process_main_stack(const struct snapshot_process *process)
{
	for (size_t i = 0; i < process->thread_count; i++)
		if (process->threads[i].tid == process->pid && process->threads[i].python &&
		    process->threads[i].python->frame_count)
			return process->threads[i].python;
	for (size_t i = 0; i < process->python.count; i++)
		if (process->python.threads[i].frame_count)
			return &process->python.threads[i];
	return NULL;
}

static struct snapshot_finding *finding_add(struct finding_list *list,
					    const struct snapshot_process *process)
{
	struct snapshot_diagnosis *diagnosis = list->diagnosis;
	struct snapshot_finding *finding;

	if (growable_array_room_for_one((void **)&diagnosis->findings, diagnosis->count,
					&list->capacity, sizeof(*diagnosis->findings)))
		return NULL;
	finding = &diagnosis->findings[diagnosis->count++];
	memset(finding, 0, sizeof(*finding));
	finding->rank = process->rank;
	finding->pid = process->pid;
	finding->sequence = -1;
	finding->last_sequence = -1;
	process_doing(process, finding->doing, sizeof(finding->doing));
	return finding;
}

static void append_rank(char *text, size_t size, int rank)
{
	size_t used = strlen(text);

	snprintf(text + used, size - used, "%s%d", used ? ", " : "", rank);
}

/* The ranks past operation 'lowest' on the finding's communicator, and what they are in. */
static void finding_fill_waiters(const struct job_snapshot *snapshot,
				 struct snapshot_finding *finding, uint64_t lowest)
{
	for (size_t r = 0; r < snapshot->count; r++) {
		const struct snapshot_process *waiter = &snapshot->processes[r];

		for (size_t e = 0; e < waiter->communicator_count; e++) {
			if (waiter->communicators[e].comm_hash != finding->comm_hash ||
			    waiter->communicators[e].op_count <= lowest)
				continue;
			append_rank(finding->waiting, sizeof(finding->waiting), waiter->rank);
			if (!finding->collective[0])
				snprintf(finding->collective, sizeof(finding->collective), "%s",
					 process_collective(waiter));
		}
	}
}

/*
 * NCCL: per communicator (by commHash), the ranks whose operation count is
 * the lowest while another's is higher never issued operation number
 * min: the others wait in it.
 */
static int judge_communicators(const struct job_snapshot *snapshot, struct finding_list *list,
			       bool *any_communicator)
{
	for (size_t p = 0; p < snapshot->count; p++) {
		for (size_t c = 0; c < snapshot->processes[p].communicator_count; c++) {
			const struct snapshot_communicator *first =
				&snapshot->processes[p].communicators[c];
			uint64_t lowest = UINT64_MAX, highest = 0;
			bool seen_before = false;
			size_t members = 0;

			*any_communicator = true;
			/* Each communicator once: at the first process that holds it. */
			for (size_t q = 0; q < p && !seen_before; q++)
				for (size_t d = 0; d < snapshot->processes[q].communicator_count;
				     d++)
					if (snapshot->processes[q].communicators[d].comm_hash ==
					    first->comm_hash)
						seen_before = true;
			if (seen_before)
				continue;
			for (size_t q = 0; q < snapshot->count; q++)
				for (size_t d = 0; d < snapshot->processes[q].communicator_count;
				     d++) {
					const struct snapshot_communicator *other =
						&snapshot->processes[q].communicators[d];

					if (other->comm_hash != first->comm_hash)
						continue;
					members++;
					lowest =
						other->op_count < lowest ? other->op_count : lowest;
					highest = other->op_count > highest ? other->op_count
									    : highest;
				}
			/* A word that only looked like a communicator is in one process alone. */
			if (lowest == highest || members < 2)
				continue;
			for (size_t q = 0; q < snapshot->count; q++) {
				const struct snapshot_process *process = &snapshot->processes[q];

				for (size_t d = 0; d < process->communicator_count; d++) {
					const struct snapshot_communicator *mine =
						&process->communicators[d];
					struct snapshot_finding *finding;

					if (mine->comm_hash != first->comm_hash ||
					    mine->op_count != lowest)
						continue;
					finding = finding_add(list, process);
					if (!finding)
						return -ENOMEM;
					finding->sequence = (int64_t)lowest;
					finding->comm_hash = mine->comm_hash;
					finding->nranks = mine->nranks;
					finding_fill_waiters(snapshot, finding, lowest);
				}
			}
		}
	}
	return 0;
}

/* Whether the process a finding names is itself waiting inside a collective. */
static bool finding_is_waiting(const struct job_snapshot *snapshot,
			       const struct snapshot_finding *finding)
{
	for (size_t p = 0; p < snapshot->count; p++)
		if (snapshot->processes[p].pid == finding->pid)
			return process_collective(&snapshot->processes[p])[0] != '\0';
	return false;
}

/*
 * A rank blocked inside a collective falls behind on its other
 * communicators too: that is the stall spreading, not its cause. Where some
 * lagging rank is inside no collective, only such ranks are named.
 */
static void drop_waiting_laggards(const struct job_snapshot *snapshot,
				  struct snapshot_diagnosis *diagnosis)
{
	size_t kept = 0;
	bool any_free = false;

	for (size_t i = 0; i < diagnosis->count; i++)
		any_free |= !finding_is_waiting(snapshot, &diagnosis->findings[i]);
	if (!any_free)
		return;
	for (size_t i = 0; i < diagnosis->count; i++)
		if (!finding_is_waiting(snapshot, &diagnosis->findings[i]))
			diagnosis->findings[kept++] = diagnosis->findings[i];
	diagnosis->count = kept;
}

/*
 * The lagging process's group the others are ahead on: the collective they
 * wait in is the first it did not issue, its own last + 1. A group is
 * matched by its backend and by the others being ahead on it; more than one
 * such group, or none, leaves the number unknown.
 */
static void finding_fill_group_sequence(const struct job_snapshot *snapshot,
					struct snapshot_finding *finding,
					const struct snapshot_process *lagging)
{
	const struct process_group_reading *chosen = NULL;

	for (size_t g = 0; g < lagging->process_group_count; g++) {
		const struct process_group_reading *mine = &lagging->process_groups[g];
		bool ahead = false;

		for (size_t p = 0; mine->sequence >= 0 && p < snapshot->count; p++) {
			const struct snapshot_process *other = &snapshot->processes[p];

			if (other == lagging || !process_collective(other)[0])
				continue;
			for (size_t h = 0; h < other->process_group_count; h++)
				ahead |= strcmp(other->process_groups[h].backend, mine->backend) ==
						 0 &&
					 other->process_groups[h].sequence > mine->sequence;
		}
		if (!ahead)
			continue;
		if (chosen && chosen->sequence != mine->sequence)
			return;
		chosen = mine;
	}
	if (!chosen)
		return;
	finding->last_sequence = chosen->sequence;
	finding->sequence = chosen->sequence + 1;
}

/* c10d and the rest: a process no thread of which is in the collective the others are in. */
static int judge_blocked_threads(const struct job_snapshot *snapshot, struct finding_list *list)
{
	const char *collective = NULL;
	char waiting[128] = "";
	size_t inside = 0;

	size_t ranks = 0;

	for (size_t p = 0; p < snapshot->count; p++) {
		const char *mine = process_collective(&snapshot->processes[p]);

		ranks += snapshot->processes[p].maps_collectives;
		if (!mine[0])
			continue;
		inside++;
		collective = collective ? collective : mine;
		append_rank(waiting, sizeof(waiting), snapshot->processes[p].rank);
	}
	if (!collective || inside == ranks)
		return 0;
	for (size_t p = 0; p < snapshot->count; p++) {
		struct snapshot_finding *finding;

		/* A launcher that maps no collective library is no rank to lag. */
		if (process_collective(&snapshot->processes[p])[0] ||
		    !snapshot->processes[p].maps_collectives)
			continue;
		finding = finding_add(list, &snapshot->processes[p]);
		if (!finding)
			return -ENOMEM;
		snprintf(finding->collective, sizeof(finding->collective), "%s", collective);
		snprintf(finding->waiting, sizeof(finding->waiting), "%s", waiting);
		finding_fill_group_sequence(snapshot, finding, &snapshot->processes[p]);
	}
	return 0;
}

/*
 * A process's widest c10d group of a backend whose sequence number was read
 * (the world group, in a job with subgroups), or NULL when it has none or
 * two of that size.
 */
static const struct process_group_reading *widest_group(const struct snapshot_process *process,
							const char *backend)
{
	const struct process_group_reading *widest = NULL;
	bool tied = false;

	for (size_t g = 0; g < process->process_group_count; g++) {
		const struct process_group_reading *group = &process->process_groups[g];

		if (group->sequence < 0 || strcmp(group->backend, backend) != 0)
			continue;
		if (widest && group->size == widest->size) {
			tied = true;
		} else if (!widest || group->size > widest->size) {
			widest = group;
			tied = false;
		}
	}
	return tied ? NULL : widest;
}

/* widest_group of a rank; NULL for a launcher (it maps no collective library). */
static const struct process_group_reading *rank_group(const struct snapshot_process *process,
						      const char *backend)
{
	return process->maps_collectives ? widest_group(process, backend) : NULL;
}

/*
 * c10d, where the threads do not tell (every rank's stack words name a
 * collective: a thread that ran the last one can keep its address in a
 * frame it waits in now): on each backend's widest group, the ranks whose
 * sequence number is the lowest while another's is higher never issued
 * the collective after it, in which the others wait. The second reading
 * (snapshot_diagnosis_confirm) drops a rank that was only on its way.
 */
static int judge_group_sequences(const struct job_snapshot *snapshot, struct finding_list *list)
{
	static const char *const backends[] = { "gloo", "nccl" };

	for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
		int64_t lowest = INT64_MAX, highest = -1;
		size_t readings = 0;
		bool one_size = true;
		int size = 0;

		for (size_t p = 0; p < snapshot->count; p++) {
			const struct process_group_reading *group =
				rank_group(&snapshot->processes[p], backends[b]);

			if (!group)
				continue;
			/* Groups of other sizes are not one group. */
			one_size &= readings == 0 || group->size == size;
			size = group->size;
			readings++;
			lowest = group->sequence < lowest ? group->sequence : lowest;
			highest = group->sequence > highest ? group->sequence : highest;
		}
		if (!one_size || readings < 2 || lowest == highest)
			continue;
		for (size_t p = 0; p < snapshot->count; p++) {
			const struct snapshot_process *process = &snapshot->processes[p];
			const struct process_group_reading *group =
				rank_group(process, backends[b]);
			struct snapshot_finding *finding;

			if (!group || group->sequence != lowest)
				continue;
			finding = finding_add(list, process);
			if (!finding)
				return -ENOMEM;
			finding->last_sequence = lowest;
			finding->sequence = lowest + 1;
			for (size_t q = 0; q < snapshot->count; q++) {
				const struct snapshot_process *other = &snapshot->processes[q];
				const struct process_group_reading *theirs =
					rank_group(other, backends[b]);

				if (!theirs || theirs->sequence <= lowest)
					continue;
				append_rank(finding->waiting, sizeof(finding->waiting),
					    other->rank);
				if (!finding->collective[0])
					snprintf(finding->collective, sizeof(finding->collective),
						 "%s", process_collective(other));
			}
		}
		return 0;
	}
	return 0;
}

static bool same_frame(const struct python_stack_frame *a, const struct python_stack_frame *b)
{
	return a->first_line == b->first_line &&
	       strcmp(a->qualified_name, b->qualified_name) == 0 &&
	       strcmp(a->filename, b->filename) == 0;
}

/*
 * The first call the lagging rank did not make, from the pattern a waiting
 * rank followed: their main threads' Python stacks agree from the outermost
 * frame down to some function, and the call the waiting rank made from
 * there (its next frame) is one the lagging rank did not make, its stack
 * going elsewhere or ending there. Left "" when no waiting rank shares an
 * outer frame with it or goes deeper.
 */
static void finding_fill_missed(const struct job_snapshot *snapshot,
				struct snapshot_finding *finding)
{
	const struct snapshot_process *lagging = NULL;
	const struct python_thread_stack *mine;

	for (size_t p = 0; p < snapshot->count; p++)
		if (snapshot->processes[p].pid == finding->pid)
			lagging = &snapshot->processes[p];
	mine = lagging ? process_main_stack(lagging) : NULL;
	for (size_t p = 0; mine && p < snapshot->count; p++) {
		const struct snapshot_process *other = &snapshot->processes[p];
		const struct python_thread_stack *theirs = process_main_stack(other);
		const struct python_stack_frame *next, *caller;
		const char *file;
		size_t shared = 0;

		if (other == lagging || !theirs || !process_collective(other)[0])
			continue;
		while (shared < mine->frame_count && shared < theirs->frame_count &&
		       same_frame(&mine->frames[mine->frame_count - 1 - shared],
				  &theirs->frames[theirs->frame_count - 1 - shared]))
			shared++;
		if (shared == 0 || shared == theirs->frame_count)
			continue;
		next = &theirs->frames[theirs->frame_count - 1 - shared];
		caller = &theirs->frames[theirs->frame_count - shared];
		file = strrchr(next->filename, '/');
		snprintf(finding->missed, sizeof(finding->missed),
			 "%.120s (%.100s), called from %.120s as rank %d did", next->qualified_name,
			 file ? file + 1 : next->filename, caller->qualified_name, other->rank);
		return;
	}
}

static void finding_summary_write(const struct job_snapshot *snapshot,
				  struct snapshot_diagnosis *diagnosis, bool any_communicator)
{
	const struct snapshot_finding *finding;
	char sequence[96];
	size_t inside = 0, ranks = 0;

	for (size_t p = 0; p < snapshot->count; p++) {
		inside += process_collective(&snapshot->processes[p])[0] != '\0';
		ranks += snapshot->processes[p].maps_collectives;
	}
	if (diagnosis->count == 0) {
		snprintf(
			diagnosis->summary, sizeof(diagnosis->summary),
			inside == ranks && inside > 1
				? "every rank is inside a collective%s: no rank lags behind the "
				  "others; if they stay there, the wait is in the network or device"
				: "no rank waits for another in a collective%s",
			any_communicator ? " and every communicator's count agrees" : "");
		return;
	}
	finding = &diagnosis->findings[0];
	if (finding->sequence >= 0 && finding->last_sequence >= 0)
		snprintf(sequence, sizeof(sequence), " seq %" PRId64 " (its last: %" PRId64 ")",
			 finding->sequence, finding->last_sequence);
	else if (finding->sequence >= 0)
		snprintf(sequence, sizeof(sequence), " seq %" PRId64, finding->sequence);
	else
		snprintf(sequence, sizeof(sequence),
			 " (its sequence number is not readable from a c10d process group)");
	snprintf(diagnosis->summary, sizeof(diagnosis->summary),
		 "rank %d (pid %d) never joined %.60s%s that rank(s) %.100s wait in; it is %.200s",
		 finding->rank, (int)finding->pid,
		 finding->collective[0] ? finding->collective : "the collective", sequence,
		 finding->waiting, finding->doing[0] ? finding->doing : "not readable");
	if (finding->missed[0]) {
		size_t used = strlen(diagnosis->summary);

		snprintf(diagnosis->summary + used, sizeof(diagnosis->summary) - used,
			 "; the first call it did not make: %s", finding->missed);
	}
}

/* The summary, with the processes that could not be read named after it. */
static void summary_write(const struct job_snapshot *snapshot, struct snapshot_diagnosis *diagnosis,
			  bool any_communicator)
{
	size_t unread = 0, used;
	pid_t first = 0;

	finding_summary_write(snapshot, diagnosis, any_communicator);
	for (size_t p = 0; p < snapshot->count; p++)
		if (snapshot->processes[p].unread_note[0] && !unread++)
			first = snapshot->processes[p].pid;
	if (!unread)
		return;
	used = strlen(diagnosis->summary);
	snprintf(diagnosis->summary + used, sizeof(diagnosis->summary) - used,
		 "; %zu process(es) not read (pid %d%s), so not judged", unread, (int)first,
		 unread > 1 ? " and others" : "");
}

static bool any_communicator_read(const struct job_snapshot *snapshot)
{
	for (size_t p = 0; p < snapshot->count; p++)
		if (snapshot->processes[p].communicator_count)
			return true;
	return false;
}

static bool found_before(const struct snapshot_diagnosis *earlier,
			 const struct snapshot_finding *finding)
{
	for (size_t i = 0; i < earlier->count; i++)
		if (earlier->findings[i].pid == finding->pid &&
		    earlier->findings[i].comm_hash == finding->comm_hash &&
		    earlier->findings[i].sequence == finding->sequence)
			return true;
	return false;
}

void snapshot_diagnosis_confirm(const struct job_snapshot *snapshot,
				struct snapshot_diagnosis *later,
				const struct snapshot_diagnosis *earlier, snapshot_busy_fn busy,
				void *context)
{
	struct snapshot_finding dropped = { 0 };
	char why[192] = "";
	size_t kept = 0;

	for (size_t i = 0; i < later->count; i++) {
		const struct snapshot_finding *finding = &later->findings[i];
		char reason[sizeof(why)] = "";

		if (!found_before(earlier, finding))
			snprintf(reason, sizeof(reason), "was not there at the first reading");
		else if (busy && busy(context, finding->pid, reason, sizeof(reason)))
			;
		else {
			later->findings[kept++] = *finding;
			continue;
		}
		if (!dropped.pid) {
			dropped = *finding;
			snprintf(why, sizeof(why), "%s", reason);
		}
	}
	if (kept == later->count)
		return;
	later->count = kept;
	if (kept) {
		summary_write(snapshot, later, any_communicator_read(snapshot));
		return;
	}
	snprintf(later->summary, sizeof(later->summary),
		 "rank %d (pid %d) was behind the others, but it %.190s: no hang judged on "
		 "arrival (the live detectors judge it from its calls)",
		 dropped.rank, (int)dropped.pid, why);
}

int job_snapshot_diagnose(const struct job_snapshot *snapshot, struct snapshot_diagnosis *diagnosis)
{
	struct finding_list list = { .diagnosis = diagnosis };
	bool any_communicator = false;
	int err;

	memset(diagnosis, 0, sizeof(*diagnosis));
	for (size_t p = 0; p < snapshot->count; p++)
		diagnosis->judged |= !snapshot->processes[p].unread_note[0];
	if (!diagnosis->judged) {
		snprintf(diagnosis->summary, sizeof(diagnosis->summary), "no process was read%s",
			 snapshot->count ? ": each one's read stalled (said under it)" : "");
		return 0;
	}
	err = judge_communicators(snapshot, &list, &any_communicator);
	if (!err)
		drop_waiting_laggards(snapshot, diagnosis);
	if (!err && diagnosis->count == 0)
		err = judge_blocked_threads(snapshot, &list);
	if (!err && diagnosis->count == 0)
		err = judge_group_sequences(snapshot, &list);
	if (err) {
		snapshot_diagnosis_free(diagnosis);
		return err;
	}
	for (size_t i = 0; i < diagnosis->count; i++)
		finding_fill_missed(snapshot, &diagnosis->findings[i]);
	summary_write(snapshot, diagnosis, any_communicator);
	return 0;
}

void snapshot_diagnosis_free(struct snapshot_diagnosis *diagnosis)
{
	free(diagnosis->findings);
	memset(diagnosis, 0, sizeof(*diagnosis));
}

/* The first finding naming 'pid', NULL when none does. */
static const struct snapshot_finding *finding_of(const struct snapshot_diagnosis *diagnosis,
						 pid_t pid)
{
	for (size_t i = 0; i < diagnosis->count; i++)
		if (diagnosis->findings[i].pid == pid)
			return &diagnosis->findings[i];
	return NULL;
}

/* Where a process stands without a finding: its collective and its widest communicator. */
static void state_of_process(const struct snapshot_process *process,
			     struct trace_arrival_state *state)
{
	size_t widest = 0;

	state->collective = process_collective(process);
	for (size_t i = 0; i < process->thread_count; i++)
		if (process->threads[i].native_function[0]) {
			state->blocked_in = process->threads[i].native_function;
			break;
		}
	for (size_t i = 0; i < process->communicator_count; i++)
		if ((size_t)process->communicators[i].nranks > widest) {
			widest = (size_t)process->communicators[i].nranks;
			state->nranks = process->communicators[i].nranks;
			state->comm_hash = process->communicators[i].comm_hash;
			state->seq = (int64_t)process->communicators[i].op_count;
		}
	/* Without a communicator, its c10d group's number where it has one group. */
	if (!widest && process->process_group_count == 1)
		state->seq = process->process_groups[0].sequence;
}

static int emit_process(const struct job_snapshot *snapshot, const struct snapshot_process *process,
			const struct snapshot_finding *finding, job_snapshot_record_fn emit,
			void *context)
{
	struct trace_record record = { .kind = TRACE_RECORD_ARRIVAL };
	struct trace_arrival_state *state = &record.arrival;
	const struct python_thread_stack *stack = process_main_stack(process);
	char doing[sizeof(((struct snapshot_finding *)NULL)->doing)];

	state->timestamp_ns = snapshot->monotonic_ns;
	state->pid = (uint32_t)process->pid;
	state->rank = process->rank;
	state->seq = -1;
	state->collective = state->blocked_in = state->waiting = state->missed = "";
	state->flags = (process->maps_collectives ? TRACE_ARRIVAL_RANK : 0) |
		       (stack ? 0 : TRACE_ARRIVAL_NO_PYTHON);
	state_of_process(process, state);
	process_doing(process, doing, sizeof(doing));
	state->doing = doing;
	if (finding) {
		state->flags |= TRACE_ARRIVAL_LAGGING;
		state->collective = finding->collective;
		state->seq = finding->sequence;
		state->comm_hash = finding->comm_hash;
		state->nranks = finding->nranks;
		state->waiting = finding->waiting;
		state->missed = finding->missed;
	}
	for (size_t i = 0; stack && i < stack->frame_count && i < TRACE_PY_STACK_MAX; i++)
		state->py_stack.frames[state->py_stack.depth++] = stack->frames[i].qualified_name;
	return emit(context, &record);
}

int job_snapshot_emit_records(const struct job_snapshot *snapshot,
			      const struct snapshot_diagnosis *diagnosis,
			      job_snapshot_record_fn emit, void *context)
{
	int err = 0;

	/* The others first: whoever reads a finding knows where every rank stood. */
	for (size_t p = 0; p < snapshot->count && !err; p++)
		if (!finding_of(diagnosis, snapshot->processes[p].pid))
			err = emit_process(snapshot, &snapshot->processes[p], NULL, emit, context);
	/* Then one record a finding: a rank behind on several communicators has several. */
	for (size_t f = 0; f < diagnosis->count && !err; f++)
		for (size_t p = 0; p < snapshot->count && !err; p++)
			if (snapshot->processes[p].pid == diagnosis->findings[f].pid)
				err = emit_process(snapshot, &snapshot->processes[p],
						   &diagnosis->findings[f], emit, context);
	return err;
}
