// SPDX-License-Identifier: MIT
/* Hang and slowdown reports as text and as JSON Lines objects; see diagnosis_report.h. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/job_rank_text.h"

#include "diagnose/diagnosis_report.h"
#include "export/export_jsonl.h"

const char *hang_class_name(enum hang_class hang_class)
{
	switch (hang_class) {
	case HANG_HOST:
		return "host";
	case HANG_NETWORK:
		return "network";
	case HANG_DEVICE:
		return "device";
	case HANG_DEVICE_OR_NETWORK:
		return "device-or-network";
	}
	return "unknown";
}

static const char *hang_class_sentence(enum hang_class hang_class)
{
	switch (hang_class) {
	case HANG_HOST:
		return "host side: a rank never issued the call";
	case HANG_NETWORK:
		return "network: every rank issued it, work requests outstanding with no "
		       "completion";
	case HANG_DEVICE:
		return "device: every rank issued it, no work-request activity";
	case HANG_DEVICE_OR_NETWORK:
		return "every rank issued it; no work-request probes: device or network";
	}
	return "unknown";
}

static const char *name_or_unknown(const char *name)
{
	return name ? name : "an unknown call";
}

static size_t append_ranks(const struct diagnosis_report *report, char *text, size_t size,
			   size_t used)
{
	for (unsigned i = 0; i < report->rank_count && used < size; i++) {
		const struct diagnosis_rank *rank = &report->ranks[i];
		char job_rank[JOB_RANK_TEXT_SIZE];
		int written = snprintf(
			text + used, size - used, "%s rank %d (%s, pid %u, last %s seq %" PRId64,
			i ? "," : "", rank->rank, job_rank_text(rank->job_rank, job_rank),
			rank->pid, name_or_unknown(rank->last.function), rank->last.seq);

		if (written < 0)
			break;
		used += (size_t)written;
		if (rank->missed.function && used < size) {
			written = snprintf(text + used, size - used,
					   "; the first call it did not make: %s seq %" PRId64
					   " on communicator 0x%016" PRIx64,
					   rank->missed.function, rank->missed.seq,
					   rank->missed.comm_id);
			used += written > 0 ? (size_t)written : 0;
		}
		if (used < size) {
			written = snprintf(text + used, size - used, ")");
			used += written > 0 ? (size_t)written : 0;
		}
	}
	return used;
}

/* "hang: communicator X (4 ranks) not created: 3 rank(s) blocked inside ncclCommInitRank ..." */
static void creation_text(const struct diagnosis_report *report, char *text, size_t size)
{
	int written = snprintf(
		text, size,
		"hang: communicator 0x%016" PRIx64 " (%d ranks) not created: %u rank(s) blocked "
		"inside %s for %.3f s; never entered by",
		report->comm_id, report->nranks, report->inside_count,
		name_or_unknown(report->function),
		report->reported_ns > report->inside_since_ns
			? (double)(report->reported_ns - report->inside_since_ns) / 1e9
			: (double)report->stalled_ns / 1e9);
	size_t used = written > 0 ? (size_t)written : 0;

	for (unsigned i = 0; i < report->rank_count && used < size; i++) {
		written = snprintf(text + used, size - used, "%s rank %d", i ? "," : "",
				   report->ranks[i].rank);
		used += written > 0 ? (size_t)written : 0;
	}
	if (used < size)
		snprintf(text + used, size - used,
			 " (no process of the job called it as that rank: it is late, stuck "
			 "before it, or was never started)");
}

/*
 * "mismatch: ... rank 1 (job rank 1, pid P) called c10d::allreduce with 72
 * elements ...; rank 0 (job rank 0): c10d::allreduce 64, rank 1 (job rank
 * 1): c10d::allreduce 72"
 */
static void mismatch_text(const struct diagnosis_report *report, char *text, size_t size)
{
	int written = snprintf(text, size,
			       "mismatch: communicator 0x%016" PRIx64
			       " (%d ranks) at %s seq %" PRId64 ": the ranks' calls differ",
			       report->comm_id, report->nranks, name_or_unknown(report->function),
			       report->seq);
	size_t used = written > 0 ? (size_t)written : 0;

	if (report->odd_rank >= 0 && used < size) {
		const struct diagnosis_rank *odd = &report->ranks[report->odd_rank];
		char job_rank[JOB_RANK_TEXT_SIZE];

		written = snprintf(text + used, size - used,
				   "; rank %d (%s, pid %u) called %s with %" PRIu64
				   " elements where the others called %s with %" PRIu64,
				   odd->rank, job_rank_text(odd->job_rank, job_rank), odd->pid,
				   name_or_unknown(odd->last.function), odd->last.count,
				   name_or_unknown(report->function), report->count);
		used += written > 0 ? (size_t)written : 0;
	}
	/* Each communicator rank with its job rank: the one the job's own logs name. */
	for (unsigned i = 0; i < report->rank_count && used < size; i++) {
		const struct diagnosis_rank *rank = &report->ranks[i];
		char job_rank[JOB_RANK_TEXT_SIZE];

		written =
			snprintf(text + used, size - used, "%s rank %d (%s): %s %" PRIu64,
				 i ? "," : ";", rank->rank, job_rank_text(rank->job_rank, job_rank),
				 name_or_unknown(rank->last.function), rank->last.count);
		used += written > 0 ? (size_t)written : 0;
	}
}

/* A job that stopped stepping with no collective to wait on: each process's step and last call. */
static void step_progress_text(const struct diagnosis_report *report, char *text, size_t size)
{
	int written = snprintf(text, size,
			       "hang: no training step and no call for %.1f s in %d process(es) "
			       "(the longest step so far took %.3f s), none inside a call on a "
			       "communicator; the ranks stopped on the host",
			       (double)report->stalled_ns / 1e9, report->nranks,
			       report->expected_step_ns / 1e9);
	size_t used = written > 0 ? (size_t)written : 0;

	for (unsigned i = 0; i < report->rank_count && used < size; i++) {
		const struct diagnosis_rank *rank = &report->ranks[i];
		char job_rank[JOB_RANK_TEXT_SIZE];

		written = snprintf(text + used, size - used,
				   "%s pid %u (%s) at step %d, last in Python: %s", i ? "," : ";",
				   rank->pid, job_rank_text(rank->job_rank, job_rank),
				   rank->last.step,
				   rank->last.function ? rank->last.function : "nothing traced");
		used += written > 0 ? (size_t)written : 0;
	}
}

void diagnosis_report_text(const struct diagnosis_report *report, char *text, size_t size)
{
	char job_rank[JOB_RANK_TEXT_SIZE];
	size_t used;
	int written;

	if (report->kind == DIAGNOSIS_HANG && report->creating) {
		creation_text(report, text, size);
		return;
	}
	if (report->kind == DIAGNOSIS_HANG && report->step_progress) {
		step_progress_text(report, text, size);
		return;
	}
	if (report->kind == DIAGNOSIS_HANG) {
		if (report->expected_step_ns > 0)
			written = snprintf(
				text, size,
				"hang: communicator 0x%016" PRIx64 " (%d ranks) stuck at %s "
				"seq %" PRId64 " for %.1f expected steps (%.3f s); %s",
				report->comm_id, report->nranks, name_or_unknown(report->function),
				report->seq, (double)report->stalled_ns / report->expected_step_ns,
				(double)report->stalled_ns / 1e9,
				hang_class_sentence(report->hang_class));
		else
			written = snprintf(
				text, size,
				"hang: communicator 0x%016" PRIx64 " (%d ranks) stuck at %s "
				"seq %" PRId64 " for %.3f s, before its step time was "
				"learned; %s",
				report->comm_id, report->nranks, name_or_unknown(report->function),
				report->seq, (double)report->stalled_ns / 1e9,
				hang_class_sentence(report->hang_class));
		used = written > 0 ? (size_t)written : 0;
		if (report->inside_count && used < size) {
			written = snprintf(
				text + used, size - used,
				"; %u rank(s) blocked inside it for %.3f s", report->inside_count,
				report->reported_ns > report->inside_since_ns
					? (double)(report->reported_ns - report->inside_since_ns) /
						  1e9
					: 0.0);
			used += written > 0 ? (size_t)written : 0;
		}
		if (report->waiting_comms && used < size) {
			written = snprintf(text + used, size - used,
					   "; %u other communicator(s) wait on it",
					   report->waiting_comms);
			used += written > 0 ? (size_t)written : 0;
		}
		if (report->rank_count && used < size) {
			written = snprintf(text + used, size - used, "; never issued by");
			used += written > 0 ? (size_t)written : 0;
			append_ranks(report, text, size, used);
		}
		return;
	}
	if (report->kind == DIAGNOSIS_MISMATCH) {
		mismatch_text(report, text, size);
		return;
	}
	snprintf(text, size,
		 "slowdown: communicator 0x%016" PRIx64 " step %" PRId64
		 " is %.3f ms late at %s seq %" PRId64 " (%.2f expected steps of %.3f ms); "
		 "straggler rank %d (%s, pid %u) arrived %.3f ms after the first rank; "
		 "the time went %s%s",
		 report->comm_id, report->step, report->late_ns / 1e6,
		 name_or_unknown(report->function), report->seq,
		 report->expected_step_ns > 0 ? report->late_ns / report->expected_step_ns : 0,
		 report->expected_step_ns / 1e6, report->ranks[0].rank,
		 job_rank_text(report->ranks[0].job_rank, job_rank), report->ranks[0].pid,
		 (double)report->skew_ns / 1e6,
		 report->in_collective ? "inside " : "in compute before ",
		 report->in_collective ? name_or_unknown(report->previous_function)
				       : name_or_unknown(report->function));
	if (report->others_waited) {
		size_t used = strlen(text);

		snprintf(text + used, size - used,
			 " (it computed %.3f ms longer than any other rank, which waited for it "
			 "inside blocking calls)",
			 (double)report->lead_ns / 1e6);
	}
}

static json_t *missed_call_json(const struct diagnosis_rank *rank)
{
	if (!rank->missed.function)
		return json_null();
	return json_pack("{s:o, s:o, s:o, s:s}", "function",
			 export_json_text(rank->missed.function), "comm_id",
			 export_json_identity(rank->missed.comm_id), "seq",
			 export_json_known_or_null(rank->missed.seq), "from",
			 rank->missed_from_pattern ? "pattern" : "communicator");
}

static json_t *rank_json(const struct diagnosis_rank *rank)
{
	/* A rank never seen (it never entered an init call) has no process and no last call. */
	return json_pack(
		"{s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "rank", (json_int_t)rank->rank,
		"job_rank", export_json_known_or_null(rank->job_rank), "pid",
		rank->pid ? json_integer(rank->pid) : json_null(), "last_function",
		rank->last.function ? export_json_text(rank->last.function) : json_null(),
		"last_seq", export_json_known_or_null(rank->last.seq), "last_ts_ns",
		export_json_unsigned(rank->last.entry_ns), "last_count",
		export_json_unsigned(rank->last.count), "last_step",
		export_json_known_or_null(rank->last.step), "missed_call", missed_call_json(rank));
}

json_t *diagnosis_report_json(const struct diagnosis_report *report)
{
	bool hang = report->kind == DIAGNOSIS_HANG;
	bool mismatch = report->kind == DIAGNOSIS_MISMATCH;
	json_t *object, *ranks = json_array();

	for (unsigned i = 0; ranks && i < report->rank_count; i++)
		json_array_append_new(ranks, rank_json(&report->ranks[i]));
	object = json_pack("{s:s, s:o, s:i, s:o, s:o, s:o, s:o, s:f, s:o}", "kind",
			   hang	      ? "hang"
			   : mismatch ? "mismatch"
				      : "slowdown",
			   "comm_id", export_json_identity(report->comm_id), "nranks",
			   (json_int_t)report->nranks, "detected_ns",
			   export_json_unsigned(report->detected_ns), "collective",
			   export_json_text(name_or_unknown(report->function)), "seq",
			   export_json_known_or_null(report->seq), "count",
			   export_json_unsigned(report->count), "expected_step_ns",
			   report->expected_step_ns,
			   hang	      ? "lagging_ranks"
			   : mismatch ? "ranks"
				      : "stragglers",
			   ranks ? ranks : json_null());
	if (!object)
		return NULL;
	json_object_set_new(object, "reported_ns", export_json_unsigned(report->reported_ns));
	if (hang) {
		json_object_set_new(object, "class",
				    json_string(hang_class_name(report->hang_class)));
		json_object_set_new(object, "stalled_ns", export_json_unsigned(report->stalled_ns));
		json_object_set_new(object, "waiting_communicators",
				    json_integer(report->waiting_comms));
		json_object_set_new(object, "ranks_inside", json_integer(report->inside_count));
		json_object_set_new(object, "inside_since_ns",
				    report->inside_count
					    ? export_json_unsigned(report->inside_since_ns)
					    : json_null());
		json_object_set_new(object, "creating", json_boolean(report->creating));
		json_object_set_new(object, "step_progress", json_boolean(report->step_progress));
		if (report->step_progress)
			json_object_set_new(object, "collective", json_null());
		return object;
	}
	if (mismatch) {
		json_object_set_new(object, "odd_rank",
				    report->odd_rank >= 0 ? json_integer(report->odd_rank)
							  : json_null());
		return object;
	}
	json_object_set_new(object, "step", json_integer(report->step));
	json_object_set_new(object, "step_ns", json_real(report->step_ns));
	json_object_set_new(object, "comm_expected_step_ns",
			    json_real(report->comm_expected_step_ns));
	json_object_set_new(object, "late_ns", json_real(report->late_ns));
	json_object_set_new(object, "excess_ns", json_real(report->excess_ns));
	json_object_set_new(object, "skew_ns", export_json_unsigned(report->skew_ns));
	json_object_set_new(object, "lead_ns", export_json_unsigned(report->lead_ns));
	json_object_set_new(object, "others_waited", json_boolean(report->others_waited));
	json_object_set_new(object, "stage",
			    json_string(report->in_collective ? "collective" : "compute"));
	json_object_set_new(
		object, "stage_function",
		export_json_text(name_or_unknown(report->in_collective ? report->previous_function
								       : report->function)));
	return object;
}
