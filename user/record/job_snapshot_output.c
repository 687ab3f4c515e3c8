// SPDX-License-Identifier: MIT
/* A job's state on arrival written out: one JSON object (a dump), or lines for people. */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/growable_array.h"
#include "base/log.h"
#include "base/system_clock.h"
#include "model/activity_interval.h"
#include "probe/process_info.h"
#include "record/process_activity.h"

#include "record/job_snapshot.h"

static json_t *comm_id_json(uint64_t comm_hash)
{
	char text[24];

	snprintf(text, sizeof(text), "0x%016" PRIx64, comm_hash);
	return json_string(text);
}

static json_t *python_json(const struct python_thread_stack *stack)
{
	json_t *frames = json_array();

	for (size_t i = 0; i < stack->frame_count; i++)
		json_array_append_new(frames, json_pack("{s:s, s:s, s:i}", "function",
							stack->frames[i].qualified_name, "file",
							stack->frames[i].filename, "first_line",
							stack->frames[i].first_line));
	return frames;
}

static json_t *thread_json(const struct snapshot_thread *thread)
{
	json_t *object = json_pack("{s:i, s:s}", "tid", (int)thread->tid, "name", thread->name);

	if (thread->native_function[0])
		json_object_set_new(object, "native",
				    json_pack("{s:s, s:s, s:s?}", "function",
					      thread->native_function, "library", thread->family,
					      "collective",
					      thread->collective[0] ? thread->collective : NULL));
	else
		json_object_set_new(object, "native", json_null());
	if (thread->native_note[0])
		json_object_set_new(object, "native_note", json_string(thread->native_note));
	if (thread->python) {
		json_object_set_new(object, "python", python_json(thread->python));
		if (thread->python->note[0])
			json_object_set_new(object, "python_note",
					    json_string(thread->python->note));
	}
	return object;
}

static json_t *process_groups_json(const struct snapshot_process *process)
{
	json_t *groups = json_array();

	for (size_t i = 0; i < process->process_group_count; i++) {
		const struct process_group_reading *group = &process->process_groups[i];

		json_array_append_new(
			groups,
			json_pack(
				"{s:s, s:o, s:o, s:o}", "backend", group->backend, "seq",
				group->sequence >= 0 ? json_integer(group->sequence) : json_null(),
				"rank", group->rank >= 0 ? json_integer(group->rank) : json_null(),
				"size",
				group->size >= 0 ? json_integer(group->size) : json_null()));
	}
	return groups;
}

static json_t *process_json(const struct snapshot_process *process)
{
	json_t *threads = json_array(), *communicators = json_array();
	json_t *object;

	for (size_t i = 0; i < process->thread_count; i++)
		json_array_append_new(threads, thread_json(&process->threads[i]));
	for (size_t i = 0; i < process->communicator_count; i++) {
		const struct snapshot_communicator *communicator = &process->communicators[i];

		json_array_append_new(communicators,
				      json_pack("{s:o, s:i, s:i, s:I}", "comm_id",
						comm_id_json(communicator->comm_hash), "rank",
						communicator->rank, "nranks", communicator->nranks,
						"op_count", (json_int_t)communicator->op_count));
	}
	object = json_pack("{s:i, s:i, s:s, s:o, s:o}", "pid", (int)process->pid, "rank",
			   process->rank, "command", process->command, "communicators",
			   communicators, "threads", threads);
	if (process->python_note[0])
		json_object_set_new(object, "python_note", json_string(process->python_note));
	if (process->communicator_note[0])
		json_object_set_new(object, "communicator_note",
				    json_string(process->communicator_note));
	if (process->unread_note[0])
		json_object_set_new(object, "unread_note", json_string(process->unread_note));
	json_object_set_new(object, "process_groups", process_groups_json(process));
	if (process->process_group_note[0])
		json_object_set_new(object, "process_group_note",
				    json_string(process->process_group_note));
	return object;
}

static json_t *finding_json(const struct snapshot_finding *finding)
{
	json_t *object = json_pack("{s:s, s:i, s:i, s:s?, s:s, s:s}", "kind", "hang", "rank",
				   finding->rank, "pid", (int)finding->pid, "collective",
				   finding->collective[0] ? finding->collective : NULL,
				   "waiting_ranks", finding->waiting, "doing", finding->doing);

	json_object_set_new(object, "seq",
			    finding->sequence >= 0 ? json_integer(finding->sequence) : json_null());
	json_object_set_new(object, "last_seq",
			    finding->last_sequence >= 0 ? json_integer(finding->last_sequence)
							: json_null());
	json_object_set_new(object, "comm_id",
			    finding->comm_hash ? comm_id_json(finding->comm_hash) : json_null());
	if (finding->nranks)
		json_object_set_new(object, "nranks", json_integer(finding->nranks));
	json_object_set_new(object, "missed",
			    finding->missed[0] ? json_string(finding->missed) : json_null());
	return object;
}

int job_snapshot_write_json(const struct job_snapshot *snapshot,
			    const struct snapshot_diagnosis *diagnosis, FILE *out)
{
	json_t *processes = json_array(), *findings = json_array(), *object;
	int err;

	for (size_t i = 0; i < snapshot->count; i++)
		json_array_append_new(processes, process_json(&snapshot->processes[i]));
	for (size_t i = 0; i < diagnosis->count; i++)
		json_array_append_new(findings, finding_json(&diagnosis->findings[i]));
	object = json_pack("{s:s, s:I, s:f, s:b, s:s, s:o, s:o}", "kind", "snapshot", "time_ns",
			   (json_int_t)snapshot->time_ns, "read_seconds",
			   (double)snapshot->read_ns / 1e9, "judged", diagnosis->judged, "summary",
			   diagnosis->summary, "findings", findings, "processes", processes);
	if (!object)
		return -1;
	err = json_dumpf(object, out, JSON_COMPACT);
	json_decref(object);
	if (err == 0 && fputc('\n', out) == EOF)
		err = -1;
	return err;
}

void job_snapshot_write_text(const struct job_snapshot *snapshot,
			     const struct snapshot_diagnosis *diagnosis, FILE *out)
{
	fprintf(out, "snapshot of %zu process(es), read in %.3f s: %s\n", snapshot->count,
		(double)snapshot->read_ns / 1e9, diagnosis->summary);
	for (size_t p = 0; p < snapshot->count; p++) {
		const struct snapshot_process *process = &snapshot->processes[p];

		fprintf(out, "rank %d, pid %d: %s\n", process->rank, (int)process->pid,
			process->command[0] ? process->command : "(not read)");
		if (process->unread_note[0])
			fprintf(out, "  %s\n", process->unread_note);
		for (size_t c = 0; c < process->communicator_count; c++)
			fprintf(out,
				"  communicator 0x%016" PRIx64 " rank %d of %d, %" PRIu64
				" operations issued\n",
				process->communicators[c].comm_hash, process->communicators[c].rank,
				process->communicators[c].nranks,
				process->communicators[c].op_count);
		if (process->communicator_note[0])
			fprintf(out, "  %s\n", process->communicator_note);
		for (size_t g = 0; g < process->process_group_count; g++) {
			const struct process_group_reading *group = &process->process_groups[g];

			if (group->sequence < 0 && group->rank < 0)
				continue;
			fprintf(out, "  c10d %s process group", group->backend);
			if (group->rank >= 0)
				fprintf(out, ", rank %d of %d", group->rank, group->size);
			if (group->sequence >= 0)
				fprintf(out, ", sequence number %" PRId64, group->sequence);
			fputc('\n', out);
		}
		if (process->process_group_note[0])
			fprintf(out, "  %s\n", process->process_group_note);
		if (process->python_note[0])
			fprintf(out, "  no Python stacks: %s\n", process->python_note);
		for (size_t t = 0; t < process->thread_count; t++) {
			const struct snapshot_thread *thread = &process->threads[t];

			if (!thread->native_function[0] && !thread->python)
				continue;
			fprintf(out, "  thread %d (%s)%s%s\n", (int)thread->tid, thread->name,
				thread->native_function[0] ? " in " : "", thread->native_function);
			for (size_t f = 0; thread->python && f < thread->python->frame_count; f++)
				fprintf(out, "    %s (%s:%d)\n",
					thread->python->frames[f].qualified_name,
					thread->python->frames[f].filename,
					thread->python->frames[f].first_line);
		}
	}
}

/* The targets and their descendants, each once; *all is allocated. */
static size_t arrival_pids(const pid_t *pids, size_t count, bool descendants, pid_t **all)
{
	size_t total = 0, capacity = 0;

	*all = NULL;
	if (growable_array_reserve((void **)all, 0, &capacity, count, sizeof(**all)))
		return 0;
	for (size_t i = 0; i < count; i++) {
		pid_t *children = NULL;
		size_t child_count = 0;

		(*all)[total++] = pids[i];
		if (!descendants ||
		    process_children(pids[i], true, &children, &child_count, NULL, 0) != 0)
			continue;
		/* Its children, and room kept for the targets still to come. */
		if (!growable_array_reserve((void **)all, total, &capacity,
					    child_count + (count - 1 - i), sizeof(**all)))
			for (size_t j = 0; j < child_count; j++)
				(*all)[total++] = children[j];
		free(children);
	}
	return total;
}

/* Reads and judges the processes; says why not and returns -1 when that fails. */
static int read_and_judge(const pid_t *pids, size_t count, struct job_snapshot *snapshot,
			  struct snapshot_diagnosis *diagnosis)
{
	char error[512];

	if (job_snapshot_read(pids, count, snapshot, error, sizeof(error)) != 0) {
		log_warning("the job's state on arrival was not read: %s", error);
		return -1;
	}
	if (job_snapshot_diagnose(snapshot, diagnosis) != 0) {
		log_warning("the job's state on arrival was not judged: out of memory");
		job_snapshot_free(snapshot);
		return -1;
	}
	return 0;
}

/* What the lagging processes had done by the first reading. */
struct busy_check {
	struct trace_activity_sample before[16];
	size_t count;
};

/* Whether a lagging rank was at work of its own between the two readings. */
static bool lagging_rank_was_busy(void *context, pid_t pid, char *why, size_t why_size)
{
	const struct busy_check *check = context;
	struct trace_activity_sample after;

	for (size_t i = 0; i < check->count; i++) {
		const struct trace_activity_sample *before = &check->before[i];
		enum activity_kind kind;

		if (before->pid != (uint32_t)pid ||
		    process_activity_read((uint32_t)pid, monotonic_ns(), &after) != 0 ||
		    after.timestamp_ns <= before->timestamp_ns ||
		    (kind = activity_interval_kind(before, &after)) == ACTIVITY_IDLE)
			continue;
		snprintf(why, why_size,
			 "was at work of its own between two readings %.1f s apart (%.2f s of CPU, "
			 "%" PRIu64 " bytes of storage I/O, %" PRIu64
			 " through read and write calls%s)",
			 (double)(after.timestamp_ns - before->timestamp_ns) / 1e9,
			 (double)counter_growth(before->cpu_ns, after.cpu_ns) / 1e9,
			 activity_storage_growth(before, &after),
			 activity_syscall_growth(before, &after),
			 kind == ACTIVITY_IO_WAIT ? ", a thread in I/O wait" : "");
		return true;
	}
	return false;
}

int job_snapshot_confirm(const pid_t *pids, size_t count, struct job_snapshot *snapshot,
			 struct snapshot_diagnosis *diagnosis)
{
	struct timespec pause = { JOB_SNAPSHOT_CONFIRM_MS / 1000,
				  (JOB_SNAPSHOT_CONFIRM_MS % 1000) * 1000000L };
	struct snapshot_diagnosis earlier = *diagnosis;
	struct busy_check check = { .count = 0 };

	for (size_t i = 0; i < earlier.count && check.count < 16; i++)
		if (process_activity_read((uint32_t)earlier.findings[i].pid, monotonic_ns(),
					  &check.before[check.count]) == 0)
			check.count++;
	job_snapshot_free(snapshot);
	nanosleep(&pause, NULL);
	if (read_and_judge(pids, count, snapshot, diagnosis)) {
		snapshot_diagnosis_free(&earlier);
		return -1;
	}
	snapshot_diagnosis_confirm(snapshot, diagnosis, &earlier, lagging_rank_was_busy, &check);
	snapshot_diagnosis_free(&earlier);
	return 0;
}

void job_snapshot_log_arrival(const pid_t *pids, size_t count, bool descendants,
			      job_snapshot_record_fn emit, void *context)
{
	struct snapshot_diagnosis diagnosis;
	struct job_snapshot snapshot;
	char *text = NULL, *line, *saved = NULL;
	size_t size = 0, total;
	pid_t *all = NULL;
	FILE *out;
	int err;

	total = arrival_pids(pids, count, descendants, &all);
	if (!total) {
		log_warning("the job's state on arrival was not read: out of memory");
		return;
	}
	err = read_and_judge(all, total, &snapshot, &diagnosis);
	if (!err && diagnosis.count)
		err = job_snapshot_confirm(all, total, &snapshot, &diagnosis);
	free(all);
	if (err)
		return;
	out = open_memstream(&text, &size);
	if (out) {
		job_snapshot_write_text(&snapshot, &diagnosis, out);
		fclose(out);
		for (line = strtok_r(text, "\n", &saved); line; line = strtok_r(NULL, "\n", &saved))
			log_notice("on arrival: %s", line);
	}
	free(text);
	if (emit && job_snapshot_emit_records(&snapshot, &diagnosis, emit, context) != 0)
		log_warning("the job's state on arrival was not passed on to the trace and the "
			    "detectors: out of memory");
	snapshot_diagnosis_free(&diagnosis);
	job_snapshot_free(&snapshot);
}
