// SPDX-License-Identifier: MIT
/* The detectors on a record stream, with their output; see job_diagnosis.h. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/system_clock.h"
#include "base/u64_map.h"
#include "base/watched_time.h"
#include "diagnose/arrival_finding.h"
#include "diagnose/crash_report.h"
#include "diagnose/diagnosis_report.h"
#include "diagnose/flight_recorder.h"
#include "diagnose/hang_detector.h"
#include "diagnose/job_diagnosis.h"
#include "diagnose/mismatch_detector.h"
#include "diagnose/pause_tracker.h"
#include "diagnose/progress_processes.h"
#include "diagnose/slowdown_detector.h"
#include "diagnose/step_stall_detector.h"
#include "export/export_jsonl.h"

#define HANG_REPORTS_PER_CHECK 16
#define MAX_RECENT_SLOWDOWNS 16

/*
 * A process the records name, once per pid: the RANK its launcher gave it
 * and each detector's state for it, so that a record's process is looked up
 * once and each detector is handed its own state. A detector's slot is
 * filled the first time that detector takes a record of the process.
 */
struct diagnosis_process {
	bool recorded;	     /* a process record of it came */
	int32_t rank;	     /* the RANK of its latest process record, -1 none */
	bool crash_reported; /* its death was reported */
	bool error_reported; /* its NCCL error was reported */
	struct progress_process *progress;
	struct flight_process *flight;
	struct step_stall_process *stall;
	struct pause_process *pause; /* NULL again once it ended: the tracker frees its slot */
};

struct job_diagnosis {
	struct progress_model *model;
	struct network_samples samples;
	struct pause_tracker pauses;   /* what each process did since its last call */
	struct arrival_ranks arrivals; /* the processes' state when the tracer arrived */
	FILE *text, *events;
	unsigned hangs, slowdowns, mismatches, crashes, pauses_found;
	uint64_t judged; /* calls, processes, Python events: none is nothing to judge */
	struct flight_recorder flights;	   /* each process's last calls, for crash reports */
	struct step_stall_detector stalls; /* step progress of processes with Python steps */
	struct diagnosis_report published[MAX_RECENT_SLOWDOWNS]; /* the latest, a ring */
	unsigned published_count;
	struct u64_map processes; /* pid -> struct diagnosis_process */
	job_step_fn on_step;
	void *step_context;
	job_pause_fn on_pause;
	void *pause_context;
	/* CLOCK_REALTIME less the clock the records' times are on, for each finding's wall clock.
	 */
	int64_t wall_clock_offset_ns;
	uint64_t hangs_checked_ns; /* when hangs were last judged, on the records' clock */
};

/*
 * Between two calls closer than this, hangs are not judged again: the check
 * walks every communicator's ranks, and a hang is a wait of a second or more,
 * so judging it a few milliseconds later changes nothing but its cost (a live
 * loop's own tick is no finer).
 */
#define HANG_CHECK_SPACING_NS (10ULL * 1000 * 1000)

/* The process's entry, added when new; NULL when out of memory (its records go unjudged). */
static struct diagnosis_process *process_of(struct job_diagnosis *diagnosis, uint32_t pid)
{
	int added = 0;
	struct diagnosis_process *process =
		u64_map_get_or_add(&diagnosis->processes, pid, sizeof(*process), &added);

	if (process && added)
		process->rank = -1;
	return process;
}

/* Whether a process record of 'pid' came. */
static bool recorded(const struct job_diagnosis *diagnosis, uint32_t pid)
{
	const struct diagnosis_process *process = u64_map_get(&diagnosis->processes, pid);

	return process && process->recorded;
}

static int32_t job_rank_of(const struct job_diagnosis *diagnosis, uint32_t pid)
{
	const struct diagnosis_process *process = u64_map_get(&diagnosis->processes, pid);

	return process && process->recorded ? process->rank : -1;
}

/* A process record kept once per process, with the rank its latest record gives. */
static void keep_process(struct diagnosis_process *process, const struct trace_process *record)
{
	process->recorded = true;
	process->rank = record->rank;
}

/*
 * Whether a process did the job's own work (trace_exit_crashed): it has a
 * rank, the tracer followed calls of it (NCCL, c10d, Python, torch), or it
 * is the command the tracer started or attached to (its parent is not
 * traced).
 */
static bool does_job_work(const struct job_diagnosis *diagnosis,
			  const struct trace_process *process)
{
	return process->rank >= 0 || job_rank_of(diagnosis, process->pid) >= 0 ||
	       flight_recorder_find(&diagnosis->flights, process->pid) ||
	       !recorded(diagnosis, process->parent_pid);
}

/* CLOCK_REALTIME less CLOCK_MONOTONIC now: the wall clock of what is diagnosed live. */
static int64_t live_wall_clock_offset_ns(void)
{
	struct timespec wall;

	if (clock_gettime(CLOCK_REALTIME, &wall))
		return 0;
	return (int64_t)wall.tv_sec * 1000000000LL + wall.tv_nsec - (int64_t)monotonic_ns();
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
	diagnosis->wall_clock_offset_ns = live_wall_clock_offset_ns();
	u64_map_init(&diagnosis->processes);
	flight_recorder_init(&diagnosis->flights, options ? options->flight_calls : 0);
	return diagnosis;
}

void job_diagnosis_free(struct job_diagnosis *diagnosis)
{
	if (!diagnosis)
		return;
	progress_model_free(diagnosis->model);
	flight_recorder_free(&diagnosis->flights);
	u64_map_free_with_values(&diagnosis->processes);
	free(diagnosis);
}

void job_diagnosis_set_wall_clock(struct job_diagnosis *diagnosis, int64_t offset_ns)
{
	diagnosis->wall_clock_offset_ns = offset_ns;
}

/*
 * A finding's line for people ('line', when there is a text stream) and its
 * JSON object (taken), each with the wall-clock time of 'at_ns' (on the
 * records' clock) beside it, so it can be put beside the job's own log.
 */
static void write_finding(struct job_diagnosis *diagnosis, const char *line, json_t *object,
			  uint64_t at_ns)
{
	char wall_clock[48];

	realtime_text((uint64_t)((int64_t)at_ns + diagnosis->wall_clock_offset_ns), wall_clock,
		      sizeof(wall_clock));
	if (diagnosis->text) {
		fprintf(diagnosis->text, "tcheck-bpf: %s %s\n", wall_clock, line);
		fflush(diagnosis->text);
	}
	if (diagnosis->events && object) {
		json_object_set_new(object, "wall_clock", json_string(wall_clock));
		export_json_write(diagnosis->events, "", object, JSON_COMPACT, "\n");
	}
	if (diagnosis->events)
		fflush(diagnosis->events);
	json_decref(object);
}

static void publish(struct job_diagnosis *diagnosis, struct diagnosis_report *report)
{
	char line[4096] = "";

	report->reported_ns = diagnosis->model->now_ns;
	for (unsigned i = 0; i < report->rank_count; i++)
		report->ranks[i].job_rank = job_rank_of(diagnosis, report->ranks[i].pid);
	if (report->kind == DIAGNOSIS_HANG)
		diagnosis->hangs++;
	else if (report->kind == DIAGNOSIS_MISMATCH)
		diagnosis->mismatches++;
	else
		diagnosis->slowdowns++;
	if (diagnosis->text)
		diagnosis_report_text(report, line, sizeof(line));
	write_finding(diagnosis, line, diagnosis->events ? diagnosis_report_json(report) : NULL,
		      report->detected_ns);
}

/*
 * A straggler is late at every collective it issues after its delay, on
 * every communicator it belongs to, and a rank that waited on it is late
 * after it on communicators of its own, by up to one step of work after
 * the straggler came: the first late arrival of a slow stretch is the
 * report, the others within one expected step of it belong to it. So does a
 * later one naming the same straggler on a communicator it used less
 * often, whose previous collective came before the first report: its
 * delay is in that stretch.
 */
static bool already_published(const struct job_diagnosis *diagnosis,
			      const struct diagnosis_report *report)
{
	unsigned published = diagnosis->published_count < MAX_RECENT_SLOWDOWNS
				     ? diagnosis->published_count
				     : MAX_RECENT_SLOWDOWNS;
	double window_ns = progress_model_job_step_ns(diagnosis->model);

	for (unsigned i = 0; i < published; i++) {
		const struct diagnosis_report *earlier = &diagnosis->published[i];
		double after_ns = (double)report->detected_ns - (double)earlier->detected_ns;

		if (after_ns >= 0 && after_ns < window_ns)
			return true;
		if (after_ns >= 0 && report->ranks[0].pid == earlier->ranks[0].pid &&
		    report->since_ns && report->since_ns <= earlier->detected_ns)
			return true;
	}
	return false;
}

/*
 * A rank that lagged while at work of its own: reported as a pause, and
 * kept with the slowdowns published, so that the lateness it caused its
 * peers within the next step is taken as part of it.
 */
static void publish_pause(struct job_diagnosis *diagnosis, struct pause_finding *pause,
			  const struct trace_nccl_call *call)
{
	struct diagnosis_report *kept =
		&diagnosis->published[diagnosis->published_count++ % MAX_RECENT_SLOWDOWNS];
	char line[1024] = "";

	pause->job_rank = job_rank_of(diagnosis, pause->pid);
	if (!pause->comm_id)
		pause->comm_id = call->comm_id;
	pause->resumed_with = call->function;
	pause->resumed_seq = call->seq;
	diagnosis->pauses_found++;
	if (diagnosis->text)
		pause_finding_text(pause, line, sizeof(line));
	write_finding(diagnosis, line, diagnosis->events ? pause_finding_json(pause) : NULL,
		      pause->end_ns);
	if (diagnosis->on_pause)
		diagnosis->on_pause(diagnosis->pause_context, pause);
	memset(kept, 0, sizeof(*kept));
	kept->kind = DIAGNOSIS_SLOWDOWN;
	kept->detected_ns = pause->end_ns;
	kept->rank_count = 1;
	kept->ranks[0].pid = pause->pid;
}

/* A slowdown whose straggler was reading or writing files for its lead is a pause. */
static bool publish_slowdown(struct job_diagnosis *diagnosis, struct diagnosis_report *report,
			     const struct trace_nccl_call *call)
{
	struct pause_finding pause;

	if (already_published(diagnosis, report))
		return false;
	if (report->rank_count &&
	    pause_tracker_explains_lead(&diagnosis->pauses, report->ranks[0].pid, report->lead_ns,
					&pause)) {
		publish_pause(diagnosis, &pause, call);
		return true;
	}
	publish(diagnosis, report);
	diagnosis->published[diagnosis->published_count++ % MAX_RECENT_SLOWDOWNS] = *report;
	return false;
}

static void write_crash(struct job_diagnosis *diagnosis, struct crash_report *report);

/* A process's state on arrival; the one the others wait for is a hang. */
static void judge_arrival(struct job_diagnosis *diagnosis, const struct trace_arrival_state *state)
{
	char line[4096] = "";

	if (!arrival_ranks_add(&diagnosis->arrivals, state))
		return;
	diagnosis->hangs++;
	if (diagnosis->text)
		arrival_finding_text(&diagnosis->arrivals, state, line, sizeof(line));
	write_finding(diagnosis, line,
		      diagnosis->events ? arrival_finding_json(&diagnosis->arrivals, state) : NULL,
		      state->timestamp_ns);
}

/* A process that died: reported once, from what was kept of it and of its peers. */
static void publish_crash(struct job_diagnosis *diagnosis, struct diagnosis_process *entry,
			  const struct trace_process *process)
{
	static struct crash_report report;

	if (entry->crash_reported)
		return;
	entry->crash_reported = true;
	crash_report_fill(diagnosis->model, &diagnosis->flights, process, &report);
	write_crash(diagnosis, &report);
}

/* An NCCL call of a process that reported an error: its first one, once. */
static void publish_nccl_error(struct job_diagnosis *diagnosis, struct diagnosis_process *entry,
			       const struct trace_nccl_call *call, int32_t result)
{
	static struct crash_report report;

	if (entry->error_reported)
		return;
	entry->error_reported = true;
	crash_report_fill_nccl_error(diagnosis->model, &diagnosis->flights, call, result,
				     entry->recorded ? entry->rank : -1, &report);
	write_crash(diagnosis, &report);
}

/* Counts a crash report and writes it out, job ranks filled in. */
static void write_crash(struct job_diagnosis *diagnosis, struct crash_report *report)
{
	char line[8192] = "";

	diagnosis->crashes++;
	if (report->job_rank < 0)
		report->job_rank = job_rank_of(diagnosis, report->pid);
	for (unsigned c = 0; c < report->comm_count; c++)
		for (int32_t r = 0; r < report->comms[c].nranks; r++)
			report->comms[c].ranks[r].job_rank =
				report->comms[c].ranks[r].pid
					? job_rank_of(diagnosis, report->comms[c].ranks[r].pid)
					: -1;
	if (diagnosis->text)
		crash_report_text(report, line, sizeof(line));
	write_finding(diagnosis, line, diagnosis->events ? crash_report_json(report) : NULL,
		      report->ended_ns);
}

/* A process that ended: a crash of the job, or said with -v when it is a helper's failure. */
static void judge_end(struct job_diagnosis *diagnosis, struct diagnosis_process *entry,
		      const struct trace_process *process)
{
	bool job_work = does_job_work(diagnosis, process);

	if (trace_exit_crashed(process->exit_code, job_work))
		publish_crash(diagnosis, entry, process);
	else if (!job_work && trace_exit_status(process->exit_code))
		log_info("process %u (%s) exited with status %d: a helper of the job (no rank, no "
			 "call followed, a traced parent), not reported as a crash",
			 process->pid, process->command ? process->command : "?",
			 trace_exit_status(process->exit_code));
}

static void check_hangs(struct job_diagnosis *diagnosis)
{
	static struct diagnosis_report reports[HANG_REPORTS_PER_CHECK];
	unsigned found = hang_detector_check(diagnosis->model, &diagnosis->samples,
					     &diagnosis->pauses, reports, HANG_REPORTS_PER_CHECK);

	for (unsigned i = 0; i < found; i++)
		publish(diagnosis, &reports[i]);
	if (step_stall_check(&diagnosis->stalls, diagnosis->model, &diagnosis->flights,
			     &reports[0]))
		publish(diagnosis, &reports[0]);
}

static void shift(uint64_t *time_ns, int64_t shift_ns)
{
	if (*time_ns)
		*time_ns = (uint64_t)((int64_t)*time_ns + shift_ns);
}

/* Each detector's state for the process, made the first time that detector needs it. */
static struct progress_process *progress_of(struct job_diagnosis *diagnosis,
					    struct diagnosis_process *process, uint32_t pid)
{
	if (!process->progress)
		process->progress = progress_process_of(diagnosis->model, pid);
	return process->progress;
}

static struct flight_process *flight_of(struct job_diagnosis *diagnosis,
					struct diagnosis_process *process, uint32_t pid)
{
	if (!process->flight)
		process->flight = flight_recorder_process(&diagnosis->flights, pid);
	return process->flight;
}

static struct step_stall_process *stall_of(struct job_diagnosis *diagnosis,
					   struct diagnosis_process *process, uint32_t pid)
{
	if (!process->stall)
		process->stall = step_stall_process(&diagnosis->stalls, pid);
	return process->stall;
}

static struct pause_process *pause_of(struct job_diagnosis *diagnosis,
				      struct diagnosis_process *process, uint32_t pid)
{
	if (!process->pause)
		process->pause = pause_tracker_process(&diagnosis->pauses, pid);
	return process->pause;
}

static void judge_call(struct job_diagnosis *diagnosis, struct diagnosis_process *process,
		       const struct trace_nccl_call *recorded_call, int64_t time_shift_ns)
{
	struct trace_nccl_call call = *recorded_call;
	struct diagnosis_report report;
	struct pause_finding pause;
	struct progress_comm *comm;
	int64_t step, completed;
	bool paused = false;
	int32_t error;

	diagnosis->judged++;
	shift(&call.entry_ns, time_shift_ns);
	/* A hang is judged before the call that would end it is counted. */
	if (call.entry_ns - diagnosis->hangs_checked_ns >= HANG_CHECK_SPACING_NS)
		job_diagnosis_tick(diagnosis, call.entry_ns);
	else
		progress_model_advance(diagnosis->model, call.entry_ns);
	comm = progress_model_add_process_call(
		diagnosis->model, progress_of(diagnosis, process, call.pid), &call, &step);
	if (comm &&
	    pause_process_call(pause_of(diagnosis, process, call.pid), call.entry_ns, &pause)) {
		publish_pause(diagnosis, &pause, &call);
		paused = true;
	}
	flight_recorder_keep_call(&diagnosis->flights, flight_of(diagnosis, process, call.pid),
				  &call);
	step_stall_nccl(&diagnosis->stalls, stall_of(diagnosis, process, call.pid), &call);
	error = crash_nccl_error_of(&call);
	if (error)
		publish_nccl_error(diagnosis, process, &call, error);
	completed = comm ? slowdown_completed_collective(comm, call.rank) : -1;
	if (completed >= 0 && progress_is_collective(call.api) &&
	    mismatch_detector_check(diagnosis->model, comm, completed, &report))
		publish(diagnosis, &report);
	if (completed >= 0 && progress_is_collective(call.api) &&
	    slowdown_detector_check(diagnosis->model, comm, completed, &report))
		paused |= publish_slowdown(diagnosis, &report, &call);
	/*
	 * Learned after it is judged, so that it is not judged against itself;
	 * a pause is not the job's jitter.
	 */
	if (completed >= 0 && progress_is_collective(call.api) && !paused)
		slowdown_detector_learn(comm, completed);
	if (comm && step >= 0 && diagnosis->on_step)
		diagnosis->on_step(diagnosis->step_context, comm, step);
}

static void judge_process(struct job_diagnosis *diagnosis, struct diagnosis_process *process,
			  const struct trace_process *record, int64_t time_shift_ns)
{
	diagnosis->judged++;
	if (record->end_ns) {
		/* Judged as of its end, as a live check would have before it. */
		job_diagnosis_tick(diagnosis, (uint64_t)((int64_t)record->end_ns + time_shift_ns));
		/* Reported before the model forgets where the process stood. */
		judge_end(diagnosis, process, record);
		progress_model_process_ended(diagnosis->model, record->pid);
		/* Made if new: records of it that come after its end do not make it step. */
		step_stall_process_ended(stall_of(diagnosis, process, record->pid));
		pause_tracker_forget(&diagnosis->pauses, record->pid);
		process->pause = NULL;
	}
	keep_process(process, record);
}

/* Whether a record is of one process, with its pid. */
static bool record_pid(const struct trace_record *record, uint32_t *pid)
{
	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		*pid = record->call.pid;
		return true;
	case TRACE_RECORD_PROCESS:
		*pid = record->process.pid;
		return true;
	case TRACE_RECORD_ACTIVITY:
		*pid = record->activity.pid;
		return true;
	case TRACE_RECORD_PYTHON_CALL:
		*pid = record->python_call.pid;
		return true;
	default:
		return false;
	}
}

void job_diagnosis_record(struct job_diagnosis *diagnosis, const struct trace_record *record,
			  int64_t time_shift_ns)
{
	uint32_t pid = 0;
	/* The one look-up of the record's process: each detector is handed its state. */
	struct diagnosis_process *process =
		record_pid(record, &pid) ? process_of(diagnosis, pid) : NULL;
	struct trace_activity_sample activity;

	switch (record->kind) {
	case TRACE_RECORD_NCCL_CALL:
		if (process)
			judge_call(diagnosis, process, &record->call, time_shift_ns);
		break;
	case TRACE_RECORD_PROCESS:
		if (process)
			judge_process(diagnosis, process, &record->process, time_shift_ns);
		break;
	case TRACE_RECORD_STATS:
		/* Written every 200 ms while tcheck-bpf runs: its own tick, in a trace too. */
		job_diagnosis_watch(diagnosis,
				    (uint64_t)((int64_t)record->stats.timestamp_ns + time_shift_ns),
				    0);
		break;
	case TRACE_RECORD_NETWORK:
		job_diagnosis_network_sample(diagnosis, &record->network, time_shift_ns);
		break;
	case TRACE_RECORD_ACTIVITY:
		/* Judged as each sample comes, live and offline alike. */
		activity = record->activity;
		shift(&activity.timestamp_ns, time_shift_ns);
		if (process)
			pause_process_sample(pause_of(diagnosis, process, pid), &activity);
		job_diagnosis_tick(diagnosis, activity.timestamp_ns);
		break;
	case TRACE_RECORD_ARRIVAL:
		/* The state read is something judged, whatever it says. */
		diagnosis->judged++;
		judge_arrival(diagnosis, &record->arrival);
		break;
	case TRACE_RECORD_PYTHON_CALL:
		diagnosis->judged++;
		if (!process)
			break;
		flight_recorder_keep_python(flight_of(diagnosis, process, pid),
					    &record->python_call);
		step_stall_python(&diagnosis->stalls, stall_of(diagnosis, process, pid),
				  &record->python_call, time_shift_ns);
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
	/* The first records read after a gap wait for the tick that says how long it was. */
	if (!watched_time_current(&diagnosis->model->watched, diagnosis->model->now_ns))
		return;
	check_hangs(diagnosis);
	diagnosis->hangs_checked_ns = now_ns;
}

void job_diagnosis_watch(struct job_diagnosis *diagnosis, uint64_t now_ns, uint64_t cpu_ns)
{
	struct watched_gap gap;

	if (watched_time_tick(&diagnosis->model->watched, now_ns, cpu_ns, &gap)) {
		if (gap.stopped && gap.length_ns >= WATCHED_TIME_SAID_NS)
			log_warning(
				"tcheck-bpf did not run for %.1f s (this machine was paused, or "
				"tcheck-bpf was stopped): hangs are judged on the time after it "
				"came back, not across the gap",
				(double)gap.length_ns / 1e9);
		else
			log_info("tcheck-bpf judged nothing for %.1f s (%s): hangs are judged on "
				 "the time after that, not across the gap",
				 (double)gap.length_ns / 1e9,
				 gap.stopped ? "it did not run"
				 : cpu_ns    ? "it was busy"
					     : "the trace has no statistics record over it");
	}
	job_diagnosis_tick(diagnosis, now_ns);
}

int job_diagnosis_tick_interval_ms(const struct job_diagnosis *diagnosis)
{
	double step_ms = progress_model_job_step_ns(diagnosis->model) / 1e6;

	if (step_ms <= 0 || step_ms / 10 >= 100)
		return 100;
	return step_ms / 10 < 20 ? 20 : (int)(step_ms / 10);
}

/*
 * Slowdowns are published as they are found: nothing is held. What is said
 * at the end is how much of the run was not watched (watched_time.h), so
 * that "0 hangs" is read as about the time that was; a few seconds in all
 * (a loaded machine's) are said as each gap ends, with -v.
 */
void job_diagnosis_finish(struct job_diagnosis *diagnosis)
{
	const struct watched_time *watched = &diagnosis->model->watched;

	if (watched->unwatched_ns >= WATCHED_TIME_SAID_NS)
		log_notice("%.1f s of this run went unwatched (%u gap%s of over %.0f s between "
			   "tcheck-bpf's own ticks): no hang, stall or slowdown was judged "
			   "across %s",
			   (double)watched->unwatched_ns / 1e9, watched->gaps,
			   watched->gaps == 1 ? "" : "s", (double)WATCHED_TIME_GAP_NS / 1e9,
			   watched->gaps == 1 ? "it" : "them");
}

void job_diagnosis_on_step(struct job_diagnosis *diagnosis, job_step_fn on_step, void *context)
{
	diagnosis->on_step = on_step;
	diagnosis->step_context = context;
}

void job_diagnosis_on_pause(struct job_diagnosis *diagnosis, job_pause_fn on_pause, void *context)
{
	diagnosis->on_pause = on_pause;
	diagnosis->pause_context = context;
}

const struct pause_tracker *job_diagnosis_pauses(const struct job_diagnosis *diagnosis)
{
	return &diagnosis->pauses;
}

const struct progress_model *job_diagnosis_model(const struct job_diagnosis *diagnosis)
{
	return diagnosis->model;
}

unsigned job_diagnosis_hang_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->hangs;
}

unsigned job_diagnosis_pause_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->pauses_found;
}

uint64_t job_diagnosis_judged_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->judged;
}

unsigned job_diagnosis_crash_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->crashes;
}

unsigned job_diagnosis_mismatch_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->mismatches;
}

unsigned job_diagnosis_slowdown_count(const struct job_diagnosis *diagnosis)
{
	return diagnosis->slowdowns;
}
