// SPDX-License-Identifier: MIT
/* Hang detection over the progress model; see hang_detector.h. */
#include <string.h>

#include "diagnose/hang_detector.h"
#include "model/c10d_api.h"

void network_samples_add(struct network_samples *samples, const struct trace_network_sample *sample)
{
	unsigned i;

	for (i = 0; i < samples->count; i++)
		if (samples->latest[i].pid == sample->pid)
			break;
	if (i == samples->count) {
		if (samples->count == HANG_MAX_SAMPLED_PROCESSES)
			return;
		samples->count++;
		samples->earlier[i] = *sample;
	} else {
		samples->earlier[i] = samples->latest[i];
	}
	samples->latest[i] = *sample;
}

static const struct trace_network_sample *sample_of(const struct network_samples *samples,
						    uint32_t pid)
{
	for (unsigned i = 0; samples && i < samples->count; i++)
		if (samples->latest[i].pid == pid)
			return &samples->latest[i];
	return NULL;
}

enum hang_class hang_classify_issued(const struct network_samples *samples, const uint32_t *pids,
				     unsigned pid_count, uint64_t since_ns)
{
	bool sampled = false, outstanding = false, completing = false;

	for (unsigned i = 0; i < pid_count; i++) {
		const struct trace_network_sample *sample = sample_of(samples, pids[i]);

		if (!sample)
			continue;
		sampled = true;
		if (sample->requests_signalled > sample->completions)
			outstanding = true;
		if (sample->last_completion_ns > since_ns)
			completing = true;
	}
	if (!sampled)
		return HANG_DEVICE_OR_NETWORK;
	/* Completions still arriving: the network moves, the device does not feed it. */
	if (outstanding && !completing)
		return HANG_NETWORK;
	return HANG_DEVICE;
}

static void describe_rank(const struct progress_comm *comm, int32_t r, struct diagnosis_rank *out)
{
	out->rank = r;
	out->job_rank = -1;
	out->pid = comm->ranks[r].pid;
	out->last = comm->ranks[r].last;
}

/* Fills 'report' for a communicator found stuck, silent as judged since 'quiet_ns'. */
static void report_stuck(const struct progress_model *model, const struct progress_comm *comm,
			 const struct network_samples *samples, double step_ns, double limit_ns,
			 uint64_t quiet_ns, struct diagnosis_report *report)
{
	int64_t fewest = INT64_MAX, most = 0;
	const struct progress_slot *slot;
	uint32_t pids[PROGRESS_MAX_RANKS];
	unsigned pid_count = 0;

	memset(report, 0, sizeof(*report));
	report->kind = DIAGNOSIS_HANG;
	report->comm_id = comm->comm_id;
	report->nranks = comm->nranks;
	/* The moment the silence passed the limit: a live tick sees it then. */
	report->detected_ns = quiet_ns + (uint64_t)limit_ns;
	report->expected_step_ns = step_ns;
	report->stalled_ns = model->now_ns - comm->last_progress_ns;
	report->step = -1;
	report->seq = -1;
	for (int32_t r = 0; r < comm->nranks; r++) {
		int64_t issued = comm->ranks[r].collectives;

		if (issued < fewest)
			fewest = issued;
		if (issued > most)
			most = issued;
		if (comm->ranks[r].pid)
			pids[pid_count++] = comm->ranks[r].pid;
	}
	if (fewest < most) {
		unsigned free_ranks = 0;

		/* The first collective some rank never issued. */
		report->collective_index = fewest;
		report->hang_class = HANG_HOST;
		/*
		 * Of the ranks that never issued it, those blocked inside a call
		 * on another communicator wait there: the others are the cause.
		 */
		for (int32_t r = 0; r < comm->nranks; r++)
			free_ranks +=
				comm->ranks[r].collectives == fewest &&
				!progress_model_blocked_elsewhere(model, comm, comm->ranks[r].pid);
		for (int32_t r = 0; r < comm->nranks; r++) {
			struct diagnosis_rank *out = &report->ranks[report->rank_count];

			if (comm->ranks[r].collectives != fewest ||
			    (free_ranks &&
			     progress_model_blocked_elsewhere(model, comm, comm->ranks[r].pid)))
				continue;
			describe_rank(comm, r, out);
			report->rank_count++;
			/* What it failed to make may be on another communicator (a send). */
			out->missed_from_pattern =
				free_ranks &&
				progress_model_next_call(model, out->pid, &out->missed);
		}
		report->waits_elsewhere = !free_ranks;
	} else {
		/* Every rank issued the last one: it never finished. */
		report->collective_index = most - 1;
		report->hang_class =
			hang_classify_issued(samples, pids, pid_count, comm->last_progress_ns);
	}
	for (int32_t r = 0; r < comm->nranks; r++) {
		const struct progress_rank *rank = &comm->ranks[r];

		if (!rank->last.open || rank->collectives != report->collective_index + 1)
			continue;
		if (!report->inside_count || rank->last.entry_ns < report->inside_since_ns)
			report->inside_since_ns = rank->last.entry_ns;
		report->inside_count++;
	}
	slot = progress_comm_slot(comm, report->collective_index);
	if (slot) {
		report->function = slot->function;
		report->count = slot->count;
		for (int32_t r = 0; r < comm->nranks; r++)
			if (slot->arrival_ns[r] && !(slot->guessed & (1ULL << r))) {
				report->seq = slot->seq[r];
				break;
			}
	}
	/*
	 * A rank with no pattern of its own yet (the first steps): the first
	 * call it is known not to have made is the collective its peers issued.
	 */
	for (unsigned i = 0; i < report->rank_count && fewest < most && !report->waits_elsewhere;
	     i++)
		if (!report->ranks[i].missed_from_pattern && report->function)
			report->ranks[i].missed =
				(struct progress_call_mark){ comm->comm_id, report->function,
							     report->seq };
}

static bool ranks_disagree(const struct progress_comm *comm)
{
	for (int32_t r = 1; r < comm->nranks; r++)
		if (comm->ranks[r].collectives != comm->ranks[0].collectives)
			return true;
	return false;
}

/* Whether some rank's last call on the communicator had not returned when last seen. */
static bool any_rank_inside(const struct progress_comm *comm)
{
	for (int32_t r = 0; r < comm->nranks; r++)
		if (comm->ranks[r].last.open)
			return true;
	return false;
}

/*
 * How long the communicator may stay quiet: hang_factor times the job's
 * step, or times its own longest normal wait between two collectives when
 * that is clearly longer (a communicator used once every few steps), and
 * hang_min_ns at least. A wait about one step long is the job's step
 * itself, measured with noise.
 */
static double silence_limit(const struct progress_model *model, const struct progress_comm *comm,
			    double step_ns)
{
	double longest = step_ns, floor = model->options.hang_min_ns;

	for (int32_t p = 0; p < comm->period && p < PROGRESS_MAX_PERIOD; p++)
		if (comm->expected_gap_ns[p] > 1.5 * step_ns && comm->expected_gap_ns[p] > longest)
			longest = comm->expected_gap_ns[p];
	double limit = model->options.hang_factor * longest;

	/*
	 * Every rank issued the last collective of a communicator whose calls
	 * are seen entered only (c10d's): nothing says it has not finished, and
	 * a job tearing down or between phases is as quiet. The start-up limit;
	 * so too where their work is awaited and it ended on every rank.
	 */
	if ((comm->entries_only || (comm->work_awaited && !any_rank_inside(comm))) &&
	    !ranks_disagree(comm) && model->options.hang_unlearned_ns > floor)
		floor = model->options.hang_unlearned_ns;
	return limit > floor ? limit : floor;
}

static bool any_rank_finished(const struct progress_comm *comm)
{
	for (int32_t r = 0; r < comm->nranks; r++)
		if (comm->ranks[r].finished)
			return true;
	return false;
}

static bool all_ranks_present(const struct progress_comm *comm)
{
	for (int32_t r = 0; r < comm->nranks; r++)
		if (!comm->ranks[r].present)
			return false;
	return true;
}

/*
 * Whether some communicator is stalling because a rank never issued its
 * next collective: quiet for half its limit or more with its ranks
 * disagreeing. The ranks of other stuck communicators wait on that rank
 * (they issued everything and block in their stream), so those are
 * consequences of the one stall, not hangs of their own.
 */
static bool rank_left_behind(const struct progress_model *model, double step_ns)
{
	for (unsigned i = 0; i < model->comm_count; i++) {
		const struct progress_comm *comm = &model->comms[i];

		if (comm->nranks > 0 && all_ranks_present(comm) && ranks_disagree(comm) &&
		    !any_rank_finished(comm) &&
		    progress_model_silence_ns(model, comm->last_progress_ns) >=
			    silence_limit(model, comm, step_ns) / 2)
			return true;
	}
	return false;
}

/*
 * Whether a stall already reported began about when this communicator
 * went quiet (within its limit): both are the same stall of the job.
 */
static bool part_of_reported_stall(const struct progress_model *model,
				   const struct progress_comm *comm, double limit_ns)
{
	for (unsigned i = 0; i < model->comm_count; i++) {
		const struct progress_comm *other = &model->comms[i];
		double apart_ns = (double)other->last_progress_ns - (double)comm->last_progress_ns;

		if (other != comm && other->hang_reported && apart_ns <= limit_ns &&
		    apart_ns >= -limit_ns)
			return true;
	}
	return false;
}

static int64_t fewest_collectives(const struct progress_comm *comm)
{
	int64_t fewest = INT64_MAX;

	for (int32_t r = 0; r < comm->nranks; r++)
		if (comm->ranks[r].collectives < fewest)
			fewest = comm->ranks[r].collectives;
	return fewest;
}

/* Where a rank is in the communicator's step: its collectives modulo the period, -1 unknown. */
static int64_t step_position(const struct progress_comm *comm, int32_t r)
{
	return comm->period > 0 ? comm->ranks[r].collectives % comm->period : -1;
}

/*
 * Until when a rank left behind is explained by its own doing (0: not at
 * all), and how: at work since the communicator went quiet (file I/O, I/O
 * wait, the CPU: pause_tracker) up to the end of its latest busy sample
 * interval, or idle where it paused before, hang_factor times that pause.
 */
static uint64_t explained_until(const struct progress_model *model,
				const struct pause_tracker *pauses,
				const struct progress_comm *comm, int32_t r,
				enum pause_cause *cause)
{
	uint64_t quiet = comm->last_progress_ns;
	uint32_t pid = comm->ranks[r].pid;
	uint64_t until = pause_tracker_active_until(pauses, pid, quiet, model->now_ns, cause);
	double recurring_ns = pause_tracker_recurring_ns(
		pauses, pid, comm->comm_id, step_position(comm, r), comm->ranks[r].collectives);

	if (recurring_ns > 0 &&
	    quiet + (uint64_t)(model->options.hang_factor * recurring_ns) > until) {
		until = quiet + (uint64_t)(model->options.hang_factor * recurring_ns);
		*cause = PAUSE_RECURRING;
	}
	return until;
}

/*
 * When the communicator's silence began, as judged. The ranks left behind
 * (fewest collectives) may be at work of their own. The others left
 * behind with one that reads or writes files (or pauses where it paused
 * before) wait on it, idle or spinning; a rank only computing explains
 * the lag only when every rank left behind is at work (a rank spinning in
 * a device wait on a stuck peer computes too). When explained, the
 * silence counts from the earliest end of the explaining ranks' work;
 * otherwise from the communicator's last progress. Never from before the
 * end of a gap tcheck-bpf did not watch (watched_time.h).
 */
static uint64_t silence_start(const struct progress_model *model,
			      const struct pause_tracker *pauses, const struct progress_comm *comm)
{
	uint64_t start = UINT64_MAX, quiet = comm->last_progress_ns;
	bool waited_on = false, all_at_work = true;
	int64_t fewest;

	if (!pauses || !ranks_disagree(comm))
		return watched_time_silent_since(&model->watched, quiet);
	fewest = fewest_collectives(comm);
	for (int32_t r = 0; r < comm->nranks; r++) {
		enum pause_cause cause = PAUSE_IDLE;
		uint64_t until;

		if (comm->ranks[r].collectives != fewest)
			continue;
		until = explained_until(model, pauses, comm, r, &cause);
		if (!until) {
			all_at_work = false;
			continue;
		}
		waited_on |= cause == PAUSE_FILE_IO || cause == PAUSE_IO_WAIT ||
			     cause == PAUSE_RECURRING;
		if (until < start)
			start = until;
	}
	if (start == UINT64_MAX || (!waited_on && !all_at_work))
		return watched_time_silent_since(&model->watched, quiet);
	return watched_time_silent_since(&model->watched, start > quiet ? start : quiet);
}

static bool is_stuck(const struct progress_model *model, const struct pause_tracker *pauses,
		     const struct progress_comm *comm, double step_ns)
{
	double limit = silence_limit(model, comm, step_ns);
	uint64_t quiet = silence_start(model, pauses, comm);

	if (comm->hang_reported || comm->nranks <= 0)
		return false;
	/* Before its period is known, only a rank left behind makes a communicator stuck. */
	if (!comm->period && !ranks_disagree(comm))
		return false;
	if (any_rank_finished(comm))
		return false;
	return progress_model_silence_ns(model, quiet) > limit;
}

/*
 * A communicator that would be stuck but for its lagging ranks' own work:
 * their stretches are held, to be reported as pauses when they come back.
 */
static void hold_pausing_ranks(const struct progress_model *model, struct pause_tracker *pauses,
			       const struct progress_comm *comm, double step_ns)
{
	double limit = silence_limit(model, comm, step_ns);
	int64_t fewest;

	if (!pauses || comm->hang_reported || comm->nranks <= 0 || !ranks_disagree(comm) ||
	    any_rank_finished(comm) ||
	    progress_model_silence_ns(model, comm->last_progress_ns) <= limit)
		return;
	fewest = fewest_collectives(comm);
	for (int32_t r = 0; r < comm->nranks; r++) {
		enum pause_cause cause = PAUSE_IDLE;

		if (comm->ranks[r].collectives == fewest &&
		    explained_until(model, pauses, comm, r, &cause))
			pause_tracker_hold(pauses, comm->ranks[r].pid, comm->last_progress_ns,
					   comm->comm_id, step_position(comm, r),
					   comm->ranks[r].collectives);
	}
}

/* The latest call of any lagging rank of the report on any communicator. */
static uint64_t quiet_since(const struct progress_model *model,
			    const struct diagnosis_report *report)
{
	uint64_t latest = 0;

	for (unsigned k = 0; k < report->rank_count; k++)
		for (unsigned i = 0; i < model->comm_count; i++)
			for (int32_t r = 0; r < model->comms[i].nranks; r++) {
				const struct progress_rank *rank = &model->comms[i].ranks[r];

				if (rank->pid == report->ranks[k].pid &&
				    rank->last.entry_ns > latest)
					latest = rank->last.entry_ns;
			}
	return latest;
}

static bool comes_before(const struct diagnosis_report *a, const struct diagnosis_report *b)
{
	/* A rank blocked on another communicator waits on the stall found there. */
	if (a->waits_elsewhere != b->waits_elsewhere)
		return !a->waits_elsewhere;
	if ((a->hang_class == HANG_HOST) != (b->hang_class == HANG_HOST))
		return a->hang_class == HANG_HOST;
	return a->hang_class == HANG_HOST && a->quiet_since_ns < b->quiet_since_ns;
}

/* Before any step time is known: the start-up limit, and the floor at least. */
static double startup_limit_ns(const struct progress_model *model)
{
	return model->options.hang_unlearned_ns > model->options.hang_min_ns
		       ? model->options.hang_unlearned_ns
		       : model->options.hang_min_ns;
}

/*
 * Communicators not created: ranks blocked inside the init call for the
 * start-up limit while others of its ranks never entered it. No step is
 * known before the first collective, so the limit is the start-up one.
 */
static unsigned init_hangs(struct progress_model *model, struct diagnosis_report *reports,
			   unsigned capacity)
{
	double limit = startup_limit_ns(model);
	unsigned found = 0;

	for (unsigned i = 0; i < model->init_count && found < capacity; i++) {
		struct progress_init *init = &model->inits[i];
		struct diagnosis_report *report = &reports[found];
		uint64_t since = 0;
		unsigned inside = 0, missing = 0;

		for (int32_t r = 0; r < init->nranks; r++) {
			if (init->entry_ns[r] && !init->returned[r]) {
				inside++;
				if (!since || init->entry_ns[r] < since)
					since = init->entry_ns[r];
			}
			missing += !init->entry_ns[r];
		}
		if (init->hang_reported || !inside || !missing ||
		    progress_model_silence_ns(model, since) <= limit)
			continue;
		init->hang_reported = true;
		memset(report, 0, sizeof(*report));
		report->kind = DIAGNOSIS_HANG;
		report->creating = true;
		report->comm_id = init->comm_id;
		report->nranks = init->nranks;
		report->function = init->function;
		report->seq = -1;
		report->step = -1;
		report->hang_class = HANG_HOST;
		report->detected_ns =
			watched_time_silent_since(&model->watched, since) + (uint64_t)limit;
		report->stalled_ns = model->now_ns - since;
		report->inside_count = inside;
		report->inside_since_ns = since;
		for (int32_t r = 0; r < init->nranks; r++)
			if (!init->entry_ns[r]) {
				struct diagnosis_rank *out = &report->ranks[report->rank_count++];

				out->rank = r;
				out->job_rank = -1;
				out->last.seq = -1;
				out->last.step = -1;
			}
		found++;
	}
	return found;
}

/* Whether two reports leave the same processes behind. */
static bool same_ranks_behind(const struct diagnosis_report *a, const struct diagnosis_report *b)
{
	if (a->rank_count == 0 || a->rank_count != b->rank_count)
		return false;
	for (unsigned i = 0; i < a->rank_count; i++) {
		bool found = false;

		for (unsigned j = 0; j < b->rank_count && !found; j++)
			found = a->ranks[i].pid && a->ranks[i].pid == b->ranks[j].pid;
		if (!found)
			return false;
	}
	return true;
}

/*
 * A c10d group over NCCL (ProcessGroupNCCL) stalls with the NCCL
 * communicator its calls go through: the same processes left behind, seen
 * at two layers. The NCCL report stands for both; the c10d ones are
 * dropped and returned as a count.
 */
static unsigned drop_layered_c10d_reports(struct diagnosis_report *reports, unsigned *found)
{
	unsigned kept = 0, dropped = 0;

	for (unsigned i = 0; i < *found; i++) {
		bool below = false;

		for (unsigned j = 0;
		     j < *found && !below && c10d_function_by_name(reports[i].function); j++)
			below = j != i && !c10d_function_by_name(reports[j].function) &&
				same_ranks_behind(&reports[i], &reports[j]);
		if (below)
			dropped++;
		else
			reports[kept++] = reports[i];
	}
	*found = kept;
	return dropped;
}

unsigned hang_detector_check(struct progress_model *model, const struct network_samples *samples,
			     struct pause_tracker *pauses, struct diagnosis_report *reports,
			     unsigned capacity)
{
	double step_ns = progress_model_job_step_ns(model);
	struct progress_comm *first_waiting = NULL;
	unsigned found = init_hangs(model, reports, capacity), waiting = 0;
	bool behind, reported_before = false, unlearned = false;

	if (step_ns <= 0) {
		/*
		 * No step time yet: only a rank left behind, for the start-up limit,
		 * is a hang. Its limit stands in for hang_factor steps.
		 */
		unlearned = true;
		step_ns = startup_limit_ns(model) / model->options.hang_factor;
	}
	for (unsigned i = 0; i < model->comm_count; i++)
		reported_before |= model->comms[i].hang_reported;
	behind = rank_left_behind(model, step_ns);
	/*
	 * Communicators whose ranks all issued their last collective and
	 * went quiet together are one stall of the job: the first to go
	 * quiet stands for it, unless a rank left behind explains it or it
	 * was reported already.
	 */
	for (unsigned i = 0; i < model->comm_count; i++) {
		struct progress_comm *comm = &model->comms[i];

		if (behind || ranks_disagree(comm) || !is_stuck(model, pauses, comm, step_ns) ||
		    part_of_reported_stall(model, comm, silence_limit(model, comm, step_ns)))
			continue;
		if (!first_waiting || comm->last_progress_ns < first_waiting->last_progress_ns)
			first_waiting = comm;
	}
	for (unsigned i = 0; i < model->comm_count && found < capacity; i++) {
		struct progress_comm *comm = &model->comms[i];

		if (!is_stuck(model, pauses, comm, step_ns)) {
			hold_pausing_ranks(model, pauses, comm, step_ns);
			continue;
		}
		if (unlearned && !ranks_disagree(comm))
			continue;
		comm->hang_reported = true;
		if (!ranks_disagree(comm) && comm != first_waiting) {
			waiting++;
			continue;
		}
		report_stuck(model, comm, samples, step_ns, silence_limit(model, comm, step_ns),
			     silence_start(model, pauses, comm), &reports[found]);
		for (unsigned k = 0; pauses && k < reports[found].rank_count; k++)
			pause_tracker_release(pauses, reports[found].ranks[k].pid);
		if (unlearned)
			reports[found].expected_step_ns = 0;
		found++;
	}
	/*
	 * Ranks that never issued the call come first; among them, the one
	 * that went quiet first stopped on its own, the others wait on it.
	 */
	for (unsigned i = 0; i < found; i++)
		reports[i].quiet_since_ns = quiet_since(model, &reports[i]);
	for (unsigned i = 1; i < found; i++)
		for (unsigned j = i; j > 0 && comes_before(&reports[j], &reports[j - 1]); j--) {
			struct diagnosis_report swap = reports[j];

			reports[j] = reports[j - 1];
			reports[j - 1] = swap;
		}
	waiting += drop_layered_c10d_reports(reports, &found);
	/*
	 * Stalls whose ranks all wait inside a call on another communicator
	 * are consequences of the first one: counted there, not reported.
	 */
	while (found > 0 && reports[found - 1].waits_elsewhere &&
	       ((found > 1 && !reports[0].waits_elsewhere) || reported_before)) {
		found--;
		waiting++;
	}
	if (found)
		reports[0].waiting_comms = waiting;
	return found;
}
