// SPDX-License-Identifier: MIT
/* The detectors on a record stream, with their output; see job_diagnosis.h. */
#include <stdlib.h>

#include "diagnosis_report.h"
#include "export_jsonl.h"
#include "hang_detector.h"
#include "job_diagnosis.h"
#include "slowdown_detector.h"

#define HANG_REPORTS_PER_CHECK 16
#define MAX_PROCESSES 4096
#define MAX_PENDING_SLOWDOWNS 16

/* The RANK its launcher gave a process. */
struct process_rank {
	uint32_t pid;
	int32_t rank;
};

struct job_diagnosis {
	struct progress_model *model;
	struct network_samples samples;
	FILE *text, *events;
	unsigned hangs, slowdowns;
	/*
	 * A slow step shows on every communicator of the job: the reports of
	 * one slow stretch wait one expected step, and the one with the
	 * latest straggler (the largest arrival skew) is published.
	 */
	struct diagnosis_report pending[MAX_PENDING_SLOWDOWNS];
	unsigned pending_count;
	struct diagnosis_report published[MAX_PENDING_SLOWDOWNS]; /* the latest, a ring */
	unsigned published_count;
	struct process_rank processes[MAX_PROCESSES];
	unsigned process_count;
	job_step_fn on_step;
	void *step_context;
};

static int32_t job_rank_of(const struct job_diagnosis *diagnosis, uint32_t pid)
{
	for (unsigned i = diagnosis->process_count; i > 0; i--)
		if (diagnosis->processes[i - 1].pid == pid)
			return diagnosis->processes[i - 1].rank;
	return -1;
}

struct job_diagnosis *job_diagnosis_new(const struct progress_options *options, FILE *text,
					FILE *events)
{
	struct job_diagnosis *diagnosis = calloc(1, sizeof(*diagnosis));

	if (!diagnosis)
		return NULL;
	diagnosis->model = progress_model_new(options);
	if (!diagnosis->model) {
		free(diagnosis);
		return NULL;
	}
	diagnosis->text = text;
	diagnosis->events = events;
	return diagnosis;
}

void job_diagnosis_free(struct job_diagnosis *diagnosis)
{
	if (!diagnosis)
		return;
	progress_model_free(diagnosis->model);
	free(diagnosis);
}

static void publish(struct job_diagnosis *diagnosis, struct diagnosis_report *report)
{
	char line[4096];

	report->reported_ns = diagnosis->model->now_ns;
	for (unsigned i = 0; i < report->rank_count; i++)
		report->ranks[i].job_rank = job_rank_of(diagnosis, report->ranks[i].pid);
	if (report->kind == DIAGNOSIS_HANG)
		diagnosis->hangs++;
	else
		diagnosis->slowdowns++;
	if (diagnosis->text) {
		diagnosis_report_text(report, line, sizeof(line));
		fprintf(diagnosis->text, "tcheck-bpf: %s\n", line);
		fflush(diagnosis->text);
	}
	if (diagnosis->events) {
		json_t *object = diagnosis_report_json(report);

		if (object) {
			export_json_write(diagnosis->events, "", object, JSON_COMPACT, "\n");
			fflush(diagnosis->events);
			json_decref(object);
		}
	}
}

static bool overlaps(const struct diagnosis_report *a, const struct diagnosis_report *b)
{
	double a_start = (double)a->detected_ns - a->step_ns;
	double b_start = (double)b->detected_ns - b->step_ns;

	return a_start < (double)b->detected_ns && b_start < (double)a->detected_ns;
}

/* Publishes the held slowdowns that ended 'age_ns' or more before now. */
static void release_slowdowns(struct job_diagnosis *diagnosis, double age_ns)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < diagnosis->pending_count; i++) {
		struct diagnosis_report *report = &diagnosis->pending[i];

		if ((double)diagnosis->model->now_ns - (double)report->detected_ns >= age_ns) {
			publish(diagnosis, report);
			diagnosis->published[diagnosis->published_count++ % MAX_PENDING_SLOWDOWNS] =
				*report;
		} else
			diagnosis->pending[kept++] = *report;
	}
	diagnosis->pending_count = kept;
}

static void hold_slowdown(struct job_diagnosis *diagnosis, const struct diagnosis_report *report)
{
	unsigned published = diagnosis->published_count < MAX_PENDING_SLOWDOWNS
				     ? diagnosis->published_count
				     : MAX_PENDING_SLOWDOWNS;

	/* The same slow stretch seen later on another communicator. */
	for (unsigned i = 0; i < published; i++)
		if (overlaps(&diagnosis->published[i], report))
			return;
	for (unsigned i = 0; i < diagnosis->pending_count; i++) {
		if (!overlaps(&diagnosis->pending[i], report))
			continue;
		if (report->skew_ns > diagnosis->pending[i].skew_ns)
			diagnosis->pending[i] = *report;
		return;
	}
	if (diagnosis->pending_count == MAX_PENDING_SLOWDOWNS)
		release_slowdowns(diagnosis, 0);
	diagnosis->pending[diagnosis->pending_count++] = *report;
}

static void check_hangs(struct job_diagnosis *diagnosis)
{
	static struct diagnosis_report reports[HANG_REPORTS_PER_CHECK];
	unsigned found = hang_detector_check(diagnosis->model, &diagnosis->samples, reports,
					     HANG_REPORTS_PER_CHECK);

	for (unsigned i = 0; i < found; i++)
		publish(diagnosis, &reports[i]);
}

static void shift(uint64_t *time_ns, int64_t shift_ns)
{
	if (*time_ns)
		*time_ns = (uint64_t)((int64_t)*time_ns + shift_ns);
}

void job_diagnosis_record(struct job_diagnosis *diagnosis, const struct trace_record *record,
			  int64_t time_shift_ns)
{
	struct trace_nccl_call call;
	struct diagnosis_report report;
	struct progress_comm *comm;
	int64_t step;

	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		call = record->call;
		shift(&call.entry_ns, time_shift_ns);
		/* A hang is judged before the call that would end it is counted. */
		job_diagnosis_tick(diagnosis, call.entry_ns);
		comm = progress_model_add_call(diagnosis->model, &call, &step);
		if (comm && step >= 0 &&
		    slowdown_detector_check(diagnosis->model, comm, step, &report))
			hold_slowdown(diagnosis, &report);
		if (comm && step >= 0 && diagnosis->on_step)
			diagnosis->on_step(diagnosis->step_context, comm, step);
		break;
	case TRACE_RECORD_PROCESS:
		if (record->process.end_ns)
			progress_model_process_ended(diagnosis->model, record->process.pid);
		if (diagnosis->process_count < MAX_PROCESSES)
			diagnosis->processes[diagnosis->process_count++] =
				(struct process_rank){ record->process.pid, record->process.rank };
		break;
	case TRACE_RECORD_STATS:
		job_diagnosis_tick(diagnosis,
				   (uint64_t)((int64_t)record->stats.timestamp_ns + time_shift_ns));
		break;
	case TRACE_RECORD_NETWORK:
		job_diagnosis_network_sample(diagnosis, &record->network, time_shift_ns);
		break;
	default:
		break;
	}
}

void job_diagnosis_network_sample(struct job_diagnosis *diagnosis,
				  const struct trace_network_sample *sample, int64_t time_shift_ns)
{
	struct trace_network_sample shifted = *sample;

	shift(&shifted.timestamp_ns, time_shift_ns);
	shift(&shifted.last_post_ns, time_shift_ns);
	shift(&shifted.last_completion_ns, time_shift_ns);
	network_samples_add(&diagnosis->samples, &shifted);
}

void job_diagnosis_tick(struct job_diagnosis *diagnosis, uint64_t now_ns)
{
	progress_model_advance(diagnosis->model, now_ns);
	check_hangs(diagnosis);
	release_slowdowns(diagnosis, progress_model_job_step_ns(diagnosis->model));
}

void job_diagnosis_finish(struct job_diagnosis *diagnosis)
{
	release_slowdowns(diagnosis, 0);
}

void job_diagnosis_on_step(struct job_diagnosis *diagnosis, job_step_fn on_step, void *context)
{
	diagnosis->on_step = on_step;
	diagnosis->step_context = context;
}

unsigned job_diagnosis_hang_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->hangs;
}

unsigned job_diagnosis_slowdown_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->slowdowns;
}
