// SPDX-License-Identifier: MIT
/* What each process did since its last communication call; see pause_tracker.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/job_rank_text.h"
#include "model/activity_interval.h"

#include "diagnose/pause_tracker.h"
#include "export/export_jsonl.h"

/* A pause of file I/O counts from this much moved over the stretch. */
#define PAUSE_STRETCH_STORAGE_BYTES (1024ULL * 1024)
#define PAUSE_STRETCH_SYSCALL_BYTES (4ULL * 1024 * 1024)

enum pause_cause pause_interval_cause(const struct trace_activity_sample *earlier,
				      const struct trace_activity_sample *later)
{
	return (enum pause_cause)activity_interval_kind(earlier, later);
}

enum pause_cause pause_stretch_cause(const struct pause_stretch *stretch, uint64_t end_ns)
{
	uint64_t length_ns = end_ns > stretch->start_ns ? end_ns - stretch->start_ns : 0;

	if (stretch->storage_bytes >= PAUSE_STRETCH_STORAGE_BYTES ||
	    stretch->syscall_bytes >= PAUSE_STRETCH_SYSCALL_BYTES)
		return PAUSE_FILE_IO;
	/* A thread caught in I/O wait once is the job's own logging: half the samples. */
	if (stretch->io_wait_samples >= 2 && 2 * stretch->io_wait_samples >= stretch->samples)
		return PAUSE_IO_WAIT;
	if (length_ns && (double)stretch->cpu_ns >= ACTIVITY_BUSY_CPU_SHARE * (double)length_ns)
		return PAUSE_COMPUTING;
	return PAUSE_IDLE;
}

const char *pause_cause_name(enum pause_cause cause)
{
	switch (cause) {
	case PAUSE_IDLE:
		return "idle";
	case PAUSE_FILE_IO:
		return "file_io";
	case PAUSE_IO_WAIT:
		return "io_wait";
	case PAUSE_COMPUTING:
		return "computing";
	case PAUSE_RECURRING:
		return "recurring";
	}
	return "unknown";
}

static const char *pause_cause_sentence(enum pause_cause cause)
{
	switch (cause) {
	case PAUSE_IDLE:
		return "idle";
	case PAUSE_FILE_IO:
		return "reading or writing files";
	case PAUSE_IO_WAIT:
		return "waiting for I/O";
	case PAUSE_COMPUTING:
		return "computing";
	case PAUSE_RECURRING:
		return "pausing where it paused before";
	}
	return "unknown";
}

static struct pause_process *find(const struct pause_tracker *tracker, uint32_t pid)
{
	for (unsigned i = 0; tracker && i < tracker->count; i++)
		if (tracker->processes[i].pid == pid)
			return (struct pause_process *)&tracker->processes[i];
	return NULL;
}

struct pause_process *pause_tracker_process(struct pause_tracker *tracker, uint32_t pid)
{
	struct pause_process *process = find(tracker, pid);

	if (process || !pid)
		return process;
	/* A forgotten process's slot first: the others stay where they are. */
	process = find(tracker, 0);
	if (!process && tracker->count == PAUSE_MAX_PROCESSES)
		return NULL;
	if (!process)
		process = &tracker->processes[tracker->count++];
	memset(process, 0, sizeof(*process));
	process->pid = pid;
	process->learned_position = -1;
	process->current.held_position = -1;
	return process;
}

void pause_tracker_sample(struct pause_tracker *tracker, const struct trace_activity_sample *sample)
{
	pause_process_sample(pause_tracker_process(tracker, sample->pid), sample);
}

void pause_process_sample(struct pause_process *process, const struct trace_activity_sample *sample)
{
	struct pause_stretch *stretch;

	if (!process)
		return;
	stretch = &process->current;
	if (process->sampled && sample->timestamp_ns > process->latest.timestamp_ns &&
	    sample->timestamp_ns > stretch->start_ns) {
		const struct trace_activity_sample *earlier = &process->latest;
		uint64_t from = earlier->timestamp_ns > stretch->start_ns ? earlier->timestamp_ns
									  : stretch->start_ns;

		stretch->sampled_ns += sample->timestamp_ns - from;
		stretch->cpu_ns += counter_growth(earlier->cpu_ns, sample->cpu_ns);
		stretch->storage_bytes += activity_storage_growth(earlier, sample);
		stretch->syscall_bytes += activity_syscall_growth(earlier, sample);
		stretch->io_wait_samples += sample->threads_io_wait > 0;
		stretch->samples++;
		if (pause_interval_cause(earlier, sample) != PAUSE_IDLE)
			stretch->busy_until_ns = sample->timestamp_ns;
	}
	process->latest = *sample;
	process->sampled = true;
}

/* Learns a pause that ended: its length, and where it came. */
static void learn(struct pause_process *process, const struct pause_stretch *stretch,
		  double length_ns)
{
	if (length_ns > process->longest_ns)
		process->longest_ns = length_ns;
	if (stretch->held && stretch->held_position >= 0) {
		bool same_place = process->learned_comm_id == stretch->held_comm_id &&
				  process->learned_position == stretch->held_position;

		process->learned_interval =
			same_place ? stretch->held_collectives - process->learned_collectives : 0;
		process->learned_comm_id = stretch->held_comm_id;
		process->learned_position = stretch->held_position;
		process->learned_collectives = stretch->held_collectives;
		process->learned_ns = length_ns;
	}
}

static void fill_finding(const struct pause_stretch *stretch, uint32_t pid, uint64_t end_ns,
			 enum pause_cause cause, struct pause_finding *ended)
{
	memset(ended, 0, sizeof(*ended));
	ended->pid = pid;
	ended->job_rank = -1;
	ended->cause = cause;
	ended->start_ns = stretch->start_ns;
	ended->end_ns = end_ns;
	ended->cpu_ns = stretch->cpu_ns;
	ended->storage_bytes = stretch->storage_bytes;
	ended->syscall_bytes = stretch->syscall_bytes;
	ended->io_wait_samples = stretch->io_wait_samples;
	ended->comm_id = stretch->held_comm_id;
	ended->resumed_seq = -1;
}

bool pause_tracker_call(struct pause_tracker *tracker, uint32_t pid, uint64_t entry_ns,
			struct pause_finding *ended)
{
	return pause_process_call(pause_tracker_process(tracker, pid), entry_ns, ended);
}

bool pause_process_call(struct pause_process *process, uint64_t entry_ns,
			struct pause_finding *ended)
{
	struct pause_stretch stretch;
	enum pause_cause cause;

	if (!process || entry_ns <= process->current.start_ns)
		return false;
	stretch = process->current;
	memset(&process->current, 0, sizeof(process->current));
	process->current.start_ns = entry_ns;
	process->current.held_position = -1;
	process->last = stretch;
	process->last_end_ns = entry_ns;
	process->last_reported = false;
	if (!stretch.start_ns || !stretch.held)
		return false; /* its first call has nothing before it to judge */
	cause = pause_stretch_cause(&stretch, entry_ns);
	fill_finding(&stretch, process->pid, entry_ns,
		     cause == PAUSE_IDLE ? PAUSE_RECURRING : cause, ended);
	learn(process, &stretch, (double)(entry_ns - stretch.start_ns));
	process->last_reported = true;
	process->returned_ns = entry_ns;
	process->returned_cause = ended->cause;
	return true;
}

bool pause_tracker_explains_lead(struct pause_tracker *tracker, uint32_t pid, uint64_t lead_ns,
				 struct pause_finding *ended)
{
	struct pause_process *process = find(tracker, pid);
	enum pause_cause cause;
	uint64_t length_ns;

	if (!process || process->last_reported || !process->last.start_ns)
		return false;
	length_ns = process->last_end_ns - process->last.start_ns;
	cause = pause_stretch_cause(&process->last, process->last_end_ns);
	if ((cause != PAUSE_FILE_IO && cause != PAUSE_IO_WAIT) || 2 * length_ns < lead_ns)
		return false;
	fill_finding(&process->last, pid, process->last_end_ns, cause, ended);
	learn(process, &process->last, (double)length_ns);
	process->last_reported = true;
	process->returned_ns = process->last_end_ns;
	process->returned_cause = cause;
	return true;
}

uint64_t pause_tracker_active_until(const struct pause_tracker *tracker, uint32_t pid,
				    uint64_t since_ns, uint64_t now_ns, enum pause_cause *cause)
{
	const struct pause_process *process = find(tracker, pid);
	double limit_ns;

	if (!process || !process->sampled)
		return 0;
	/*
	 * Back from a pause reported since: it has its peers' limit from its
	 * return to catch up on its other communicators.
	 */
	if (process->current.start_ns > since_ns) {
		if (process->returned_ns <= since_ns)
			return 0;
		if (cause)
			*cause = process->returned_cause;
		return process->returned_ns;
	}
	if (process->current.busy_until_ns <= since_ns)
		return 0;
	limit_ns = process->longest_ns > 0 ? PAUSE_LEARNED_FACTOR * process->longest_ns
					   : PAUSE_UNLEARNED_MAX_NS;
	if (now_ns > process->current.start_ns &&
	    (double)(now_ns - process->current.start_ns) > limit_ns)
		return 0;
	if (cause)
		*cause = pause_stretch_cause(&process->current, now_ns);
	return process->current.busy_until_ns;
}

double pause_tracker_recurring_ns(const struct pause_tracker *tracker, uint32_t pid,
				  uint64_t comm_id, int64_t position, int64_t collectives)
{
	const struct pause_process *process = find(tracker, pid);

	if (!process || position < 0 || process->learned_comm_id != comm_id ||
	    process->learned_position != position || process->learned_interval <= 0 ||
	    collectives - process->learned_collectives != process->learned_interval)
		return 0;
	return process->learned_ns;
}

void pause_tracker_hold(struct pause_tracker *tracker, uint32_t pid, uint64_t since_ns,
			uint64_t comm_id, int64_t position, int64_t collectives)
{
	struct pause_process *process = pause_tracker_process(tracker, pid);

	if (!process || process->current.held || process->current.start_ns > since_ns)
		return;
	process->current.held = true;
	process->current.held_comm_id = comm_id;
	process->current.held_position = position;
	process->current.held_collectives = collectives;
}

void pause_tracker_release(struct pause_tracker *tracker, uint32_t pid)
{
	struct pause_process *process = find(tracker, pid);

	if (process)
		process->current.held = false;
}

bool pause_tracker_held(const struct pause_tracker *tracker, uint32_t pid)
{
	const struct pause_process *process = find(tracker, pid);

	return process && process->current.held;
}

void pause_tracker_forget(struct pause_tracker *tracker, uint32_t pid)
{
	struct pause_process *process = find(tracker, pid);

	/* Its slot is free (pid 0) for the next process; no other process moves. */
	if (process)
		memset(process, 0, sizeof(*process));
}

void pause_finding_text(const struct pause_finding *pause, char *text, size_t size)
{
	char job_rank[JOB_RANK_TEXT_SIZE];

	snprintf(text, size,
		 "pause: %s (pid %u) %s for %.3f s outside any collective (%.3f s CPU, "
		 "%.1f MB through storage, %.1f MB through read/write calls), then %s seq %" PRId64
		 " on communicator 0x%016" PRIx64 "; not a hang",
		 job_rank_text(pause->job_rank, job_rank), pause->pid,
		 pause_cause_sentence(pause->cause),
		 (double)(pause->end_ns - pause->start_ns) / 1e9, (double)pause->cpu_ns / 1e9,
		 (double)pause->storage_bytes / 1e6, (double)pause->syscall_bytes / 1e6,
		 pause->resumed_with ? pause->resumed_with : "a call", pause->resumed_seq,
		 pause->comm_id);
}

json_t *pause_finding_json(const struct pause_finding *pause)
{
	json_t *object = json_object();
	int failed = !object;

	if (failed)
		return NULL;
	failed |= json_object_set_new(object, "kind", json_string("pause"));
	failed |= json_object_set_new(object, "pid", json_integer(pause->pid));
	failed |=
		json_object_set_new(object, "job_rank", export_json_known_or_null(pause->job_rank));
	failed |= json_object_set_new(object, "doing", json_string(pause_cause_name(pause->cause)));
	failed |= json_object_set_new(object, "start_ns", export_json_unsigned(pause->start_ns));
	failed |= json_object_set_new(object, "end_ns", export_json_unsigned(pause->end_ns));
	failed |= json_object_set_new(object, "duration_ns",
				      export_json_unsigned(pause->end_ns - pause->start_ns));
	failed |= json_object_set_new(object, "cpu_ns", export_json_unsigned(pause->cpu_ns));
	failed |= json_object_set_new(object, "storage_bytes",
				      export_json_unsigned(pause->storage_bytes));
	failed |= json_object_set_new(object, "syscall_bytes",
				      export_json_unsigned(pause->syscall_bytes));
	failed |= json_object_set_new(object, "io_wait_samples",
				      json_integer(pause->io_wait_samples));
	if (pause->comm_id) {
		char comm_id[32];

		snprintf(comm_id, sizeof(comm_id), "0x%016" PRIx64, pause->comm_id);
		failed |= json_object_set_new(object, "comm_id", json_string(comm_id));
	}
	failed |= json_object_set_new(object, "resumed_with",
				      pause->resumed_with ? json_string(pause->resumed_with)
							  : json_null());
	failed |= json_object_set_new(object, "resumed_seq",
				      export_json_known_or_null(pause->resumed_seq));
	if (failed) {
		json_decref(object);
		return NULL;
	}
	return object;
}
