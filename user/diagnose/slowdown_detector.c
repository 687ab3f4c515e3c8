// SPDX-License-Identifier: MIT
/* Slowdown detection over the progress model; see slowdown_detector.h. */
#include <string.h>

#include "diagnose/slowdown_detector.h"

int64_t slowdown_completed_collective(struct progress_comm *comm, int32_t rank)
{
	int64_t index;

	if (rank < 0 || rank >= comm->nranks || comm->ranks[rank].collectives <= 0)
		return -1;
	index = comm->ranks[rank].collectives - 1;
	if (index <= comm->judged_index || !progress_comm_last_arrival(comm, index))
		return -1;
	comm->judged_index = index;
	return index;
}

/* The arrivals at a collective: who came last, when, and when the others came. */
struct arrivals {
	int32_t last_rank;
	uint64_t first_ns, second_latest_ns, last_ns;
};

static void arrivals_of(const struct progress_comm *comm, const struct progress_slot *slot,
			struct arrivals *out)
{
	memset(out, 0, sizeof(*out));
	out->last_rank = -1;
	out->first_ns = UINT64_MAX;
	for (int32_t r = 0; r < comm->nranks; r++) {
		uint64_t arrival = slot->arrival_ns[r];

		if (arrival < out->first_ns)
			out->first_ns = arrival;
		if (arrival > out->last_ns) {
			out->second_latest_ns = out->last_ns;
			out->last_ns = arrival;
			out->last_rank = r;
		} else if (arrival > out->second_latest_ns) {
			out->second_latest_ns = arrival;
		}
	}
	if (comm->nranks < 2)
		out->second_latest_ns = out->last_ns;
}

static void fill_report(const struct progress_model *model, const struct progress_comm *comm,
			int64_t index, int64_t step, const struct arrivals *arrivals,
			double excess_ns, struct diagnosis_report *report)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	const struct progress_slot *previous = progress_comm_slot(comm, index - 1);
	int32_t straggler = arrivals->last_rank;

	memset(report, 0, sizeof(*report));
	report->kind = DIAGNOSIS_SLOWDOWN;
	report->comm_id = comm->comm_id;
	report->nranks = comm->nranks;
	report->detected_ns = arrivals->last_ns;
	report->expected_step_ns = progress_model_job_step_ns(model);
	report->comm_expected_step_ns = comm->expected_step_ns;
	report->function = slot->function;
	report->count = slot->count;
	report->collective_index = index;
	report->seq = slot->seq[straggler];
	report->step = step;
	report->excess_ns = excess_ns;
	report->skew_ns = arrivals->last_ns - arrivals->first_ns;
	report->lead_ns = arrivals->last_ns - arrivals->second_latest_ns;
	report->rank_count = 1;
	report->ranks[0].rank = straggler;
	report->ranks[0].job_rank = -1;
	report->ranks[0].pid = comm->ranks[straggler].pid;
	report->ranks[0].last = (struct progress_event){ slot->function,
							 slot->count,
							 slot->arrival_ns[straggler],
							 slot->duration_ns[straggler],
							 slot->seq[straggler],
							 -1 };
	/*
	 * Time spent inside the previous call by the straggler (a blocking
	 * collective) rather than computing between the two.
	 */
	if (previous) {
		report->since_ns = previous->arrival_ns[straggler];
		report->previous_function = previous->function;
		report->in_collective = (double)previous->duration_ns[straggler] > excess_ns / 2;
	}
}

/*
 * What rank 'r' did between collective index - 1 and this one: the time
 * it spent inside calls that returned (on any communicator) and the rest,
 * computing. False when either collective is not remembered.
 */
static bool time_between(const struct progress_comm *comm, int64_t index, int32_t r,
			 double *computed_ns, double *inside_ns)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	const struct progress_slot *previous = progress_comm_slot(comm, index - 1);
	double wall;

	if (!slot || !previous || !slot->arrival_ns[r] || !previous->arrival_ns[r] ||
	    slot->arrival_ns[r] < previous->arrival_ns[r] ||
	    slot->inside_before_ns[r] < previous->inside_before_ns[r])
		return false;
	wall = (double)(slot->arrival_ns[r] - previous->arrival_ns[r]);
	*inside_ns = (double)(slot->inside_before_ns[r] - previous->inside_before_ns[r]);
	*computed_ns = wall > *inside_ns ? wall - *inside_ns : 0;
	return true;
}

/*
 * The rank that computed longest since the communicator's previous
 * collective, and how much longer than the next one. Ranks that waited for
 * a straggler inside blocking calls (a receive it had not sent to yet)
 * arrive with it, but their wait went inside those calls.
 */
static bool compute_lead_of(const struct progress_comm *comm, int64_t index, int32_t *longest_rank,
			    double *lead_ns)
{
	double longest = 0, second = 0, computed, inside;

	*longest_rank = -1;
	if (comm->nranks < 2)
		return false;
	for (int32_t r = 0; r < comm->nranks; r++) {
		if (!time_between(comm, index, r, &computed, &inside))
			return false;
		if (*longest_rank < 0 || computed > longest) {
			second = *longest_rank < 0 ? 0 : longest;
			longest = computed;
			*longest_rank = r;
		} else if (computed > second) {
			second = computed;
		}
	}
	*lead_ns = longest - second;
	return true;
}

/*
 * How much longer 'rank' spent inside calls since the communicator's
 * previous collective than the other rank that spent least there, and
 * than the one that spent most (negative when that one spent longer).
 * False when no other rank can be compared.
 */
static bool inside_against_others(const struct progress_comm *comm, int64_t index, int32_t rank,
				  double *over_least_ns, double *over_most_ns)
{
	double computed, inside, own, least = -1, most = -1;

	if (!time_between(comm, index, rank, &computed, &own))
		return false;
	for (int32_t r = 0; r < comm->nranks; r++) {
		if (r == rank || !time_between(comm, index, r, &computed, &inside))
			continue;
		if (least < 0 || inside < least)
			least = inside;
		if (inside > most)
			most = inside;
	}
	*over_least_ns = own - least;
	*over_most_ns = own - most;
	return least >= 0;
}

/*
 * Whether the rank that arrived last spent most of its lead waiting inside
 * blocking calls (for a rank elsewhere) rather than computing: more than
 * half the lead longer inside calls than the other rank that spent least
 * there.
 */
static bool waited_inside_calls(const struct progress_comm *comm, int64_t index, int32_t late_rank,
				double lead_ns)
{
	double over_least, over_most;

	return inside_against_others(comm, index, late_rank, &over_least, &over_most) &&
	       over_least > lead_ns / 2;
}

/*
 * Whether another rank waited for 'straggler' inside calls: one spent more
 * than half its lead longer there than the straggler. Calls seen at their
 * entry only (gloo's, whose waits are not timed) show no wait, and a rank
 * that merely computed less is no evidence.
 */
static bool someone_waited_for(const struct progress_comm *comm, int64_t index, int32_t straggler,
			       double lead_ns)
{
	double over_least, over_most;

	return inside_against_others(comm, index, straggler, &over_least, &over_most) &&
	       -over_most > lead_ns / 2;
}

/*
 * Whether 'straggler' spent at least half its lead runnable but waiting for
 * a CPU between the communicator's previous collective and this one (its
 * thread's run delay, where the calls say it): the host's scheduler made it
 * late, not the rank's work.
 */
static bool waited_for_a_cpu(const struct progress_comm *comm, int64_t index, int32_t straggler,
			     double lead_ns)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	const struct progress_slot *previous = progress_comm_slot(comm, index - 1);

	if (!slot || !previous || !slot->cpu_wait_ns[straggler] ||
	    !previous->cpu_wait_ns[straggler] || slot->tid[straggler] != previous->tid[straggler] ||
	    slot->cpu_wait_ns[straggler] < previous->cpu_wait_ns[straggler])
		return false;
	return (double)(slot->cpu_wait_ns[straggler] - previous->cpu_wait_ns[straggler]) >=
	       lead_ns / 2;
}

enum lead_kind { ARRIVAL_LEAD, COMPUTE_LEAD };

static const struct progress_lead *lead_of(const struct progress_comm *comm, enum lead_kind kind)
{
	return kind == ARRIVAL_LEAD ? &comm->arrival_lead : &comm->compute_lead;
}

/*
 * Whether 'lead_ns' is beyond what the job does all the time: the
 * communicator's own jitter once learned, before that the widest bound of
 * any communicator of the job that learned it (the host's noise is the
 * same for all), and nothing before any did.
 */
static bool beyond_jitter(const struct progress_model *model, const struct progress_comm *comm,
			  enum lead_kind kind, double lead_ns)
{
	const struct progress_lead *own = lead_of(comm, kind);
	double bound = -1;

	if (own->samples >= SLOWDOWN_JITTER_SAMPLES)
		return lead_ns > own->mean_ns + SLOWDOWN_JITTER_FACTOR * own->jitter_ns;
	for (unsigned i = 0; i < model->comm_count; i++) {
		const struct progress_lead *other = lead_of(&model->comms[i], kind);
		double other_bound = other->mean_ns + SLOWDOWN_JITTER_FACTOR * other->jitter_ns;

		if (other->samples >= SLOWDOWN_JITTER_SAMPLES && other_bound > bound)
			bound = other_bound;
	}
	return bound >= 0 && lead_ns > bound;
}

bool slowdown_detector_check(const struct progress_model *model, const struct progress_comm *comm,
			     int64_t index, struct diagnosis_report *report)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	double threshold_ns, expected_so_far = 0, late_ns, excess_ns, remaining = 0, lead_ns;
	int32_t waited_for = -1;
	int64_t step, position;
	uint64_t start_ns, previous_ns;
	struct arrivals arrivals;

	/* Judged once the expected waits come from two job steps or more. */
	if (!slot || !comm->period || index < comm->offset ||
	    (double)comm->learned_steps * comm->steps_per_period < 2)
		return false;
	step = (index - comm->offset) / comm->period;
	position = (index - comm->offset) % comm->period;
	if (step < 1 || comm->period > PROGRESS_MAX_PERIOD)
		return false;
	start_ns = progress_comm_last_arrival(comm, progress_comm_step_end(comm, step - 1));
	previous_ns = progress_comm_last_arrival(comm, index - 1);
	arrivals_of(comm, slot, &arrivals);
	if (!start_ns || !previous_ns || arrivals.last_rank < 0 || arrivals.last_ns <= start_ns ||
	    arrivals.last_ns < previous_ns)
		return false;
	/*
	 * A step that spans time tcheck-bpf did not watch is not judged, nor one
	 * that ends after its ticks stopped: the tick to come may end a gap (watched_time.h).
	 */
	if (watched_time_spans_gap(&model->watched, start_ns, arrivals.last_ns) ||
	    !watched_time_current(&model->watched, arrivals.last_ns))
		return false;
	/* A guessed arrival (a call that never reached the model) is a bound, not a time. */
	if (slot->guessed || progress_comm_guessed(comm, index - 1) ||
	    progress_comm_guessed(comm, progress_comm_step_end(comm, step - 1)))
		return false;
	for (int64_t p = 0; p < comm->period; p++) {
		if (p <= position)
			expected_so_far += comm->expected_gap_ns[p];
		else
			remaining += comm->expected_gap_ns[p];
	}
	/*
	 * Judged against the job's step, so a communicator whose pattern
	 * spans several steps sees a one-step delay as the others do.
	 */
	threshold_ns = (model->options.slowdown_threshold - 1) * progress_model_job_step_ns(model);
	if (threshold_ns < model->options.slowdown_min_ns)
		threshold_ns = model->options.slowdown_min_ns;
	/* The step is late here, and the time went just before this collective. */
	late_ns = (double)(arrivals.last_ns - start_ns) - expected_so_far;
	excess_ns = (double)(arrivals.last_ns - previous_ns) - comm->expected_gap_ns[position];
	if (late_ns <= threshold_ns || excess_ns <= threshold_ns)
		return false;
	/*
	 * One rank explains it: it came more than the threshold after the
	 * latest of the others, beyond the job's own jitter. Every rank late
	 * together names no straggler, unless the others spent the time
	 * waiting inside blocking calls while one rank computed it.
	 */
	lead_ns = (double)(arrivals.last_ns - arrivals.second_latest_ns);
	if (lead_ns <= threshold_ns ||
	    waited_inside_calls(comm, index, arrivals.last_rank, lead_ns)) {
		if (!compute_lead_of(comm, index, &waited_for, &lead_ns) ||
		    lead_ns <= threshold_ns || !beyond_jitter(model, comm, COMPUTE_LEAD, lead_ns) ||
		    !someone_waited_for(comm, index, waited_for, lead_ns))
			return false;
		arrivals.last_rank = waited_for;
	} else if (!beyond_jitter(model, comm, ARRIVAL_LEAD, lead_ns)) {
		return false;
	}
	if (waited_for_a_cpu(comm, index, arrivals.last_rank, lead_ns))
		return false;
	fill_report(model, comm, index, step, &arrivals, excess_ns, report);
	if (waited_for >= 0) {
		report->lead_ns = (uint64_t)lead_ns;
		report->others_waited = true;
		report->in_collective = 0;
	}
	report->late_ns = late_ns;
	/* What the step will take if the rest of it keeps to the expected waits. */
	report->step_ns = (double)(arrivals.last_ns - start_ns) + remaining;
	return true;
}

static void learn_lead(struct progress_lead *lead, double lead_ns)
{
	double weight;

	if (lead->samples++ == 0) {
		lead->mean_ns = lead_ns; /* the first sample sets the mean, with no deviation */
		return;
	}
	weight = 1.0 / (lead->samples < 64 ? lead->samples : 64);
	/* Upwards only: a rank earlier than usual (a delay a bubble absorbed) is no jitter. */
	lead->jitter_ns +=
		((lead_ns > lead->mean_ns ? lead_ns - lead->mean_ns : 0.0) - lead->jitter_ns) *
		weight;
	lead->mean_ns += (lead_ns - lead->mean_ns) * weight;
}

void slowdown_detector_learn(struct progress_comm *comm, int64_t index)
{
	const struct progress_slot *slot = progress_comm_slot(comm, index);
	struct arrivals arrivals;
	int32_t longest_rank;
	double compute_lead;

	if (!slot || comm->nranks < 2 || index <= comm->lead_learned_index || !comm->period ||
	    slot->guessed || progress_comm_guessed(comm, index - 1))
		return;
	arrivals_of(comm, slot, &arrivals);
	if (arrivals.last_rank < 0 || !arrivals.second_latest_ns)
		return;
	comm->lead_learned_index = index;
	learn_lead(&comm->arrival_lead, (double)(arrivals.last_ns - arrivals.second_latest_ns));
	if (compute_lead_of(comm, index, &longest_rank, &compute_lead))
		learn_lead(&comm->compute_lead, compute_lead);
}
