// SPDX-License-Identifier: MIT
/*
 * Tests of judging a job's state on arrival, of its JSON dump, and of its
 * trace records: judged live and read back from a trace, they give one
 * finding naming the lagging rank, its collective and every rank's stack.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/job_diagnosis.h"
#include "record/job_snapshot.h"
#include "scratch_files.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"
#include "unit.h"

#define WORLD_HASH 0x8376206730ef9202ull

struct two_ranks {
	struct job_snapshot snapshot;
	struct snapshot_process processes[2];
	struct snapshot_thread threads[2][2];
	struct snapshot_communicator communicators[2];
	struct python_stack_frame frames[2];
	struct python_thread_stack python;
};

/* Rank 0 waits in an all-reduce (worker thread); rank 1 sleeps in Python. */
static void two_ranks_init(struct two_ranks *job)
{
	memset(job, 0, sizeof(*job));
	for (int rank = 0; rank < 2; rank++) {
		struct snapshot_process *process = &job->processes[rank];

		process->pid = 100 + rank;
		process->rank = rank;
		process->maps_collectives = true;
		process->threads = job->threads[rank];
		process->thread_count = 2;
		job->threads[rank][0].tid = process->pid;
		job->threads[rank][1].tid = process->pid + 10;
		snprintf(job->threads[rank][1].native_function,
			 sizeof(job->threads[rank][1].native_function),
			 "c10d::ProcessGroupGloo::runLoop");
	}
	snprintf(job->threads[0][1].native_function, sizeof(job->threads[0][1].native_function),
		 "c10d::ProcessGroupGloo::AsyncWork::execute");
	snprintf(job->threads[0][1].collective, sizeof(job->threads[0][1].collective),
		 "c10d::allreduce");
	snprintf(job->frames[0].qualified_name, sizeof(job->frames[0].qualified_name), "hook");
	snprintf(job->frames[0].filename, sizeof(job->frames[0].filename), "train.py");
	job->frames[0].first_line = 182;
	snprintf(job->frames[1].qualified_name, sizeof(job->frames[1].qualified_name), "<module>");
	snprintf(job->frames[1].filename, sizeof(job->frames[1].filename), "train.py");
	job->frames[1].first_line = 1;
	job->python.frames = job->frames;
	job->python.frame_count = 2;
	job->python.native_id = 101;
	job->threads[1][0].python = &job->python;
	job->snapshot.processes = job->processes;
	job->snapshot.count = 2;
}

/* Rank 0 issued operations 0..22 on the world communicator, rank 1 0..21. */
static void two_ranks_behind(struct two_ranks *job)
{
	job->communicators[0] = (struct snapshot_communicator){ 1, WORLD_HASH, 0, 2, 23 };
	job->communicators[1] = (struct snapshot_communicator){ 2, WORLD_HASH, 1, 2, 22 };
	for (int rank = 0; rank < 2; rank++) {
		job->processes[rank].communicators = &job->communicators[rank];
		job->processes[rank].communicator_count = 1;
	}
}

UNIT_TEST(job_snapshot, names_the_rank_outside_the_collective_the_others_wait_in)
{
	struct snapshot_diagnosis diagnosis;
	struct two_ranks job;

	two_ranks_init(&job);
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_TRUE(diagnosis.judged);
	CU_ASSERT_EQUAL_FATAL(diagnosis.count, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].rank, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].pid, 101);
	CU_ASSERT_STRING_EQUAL(diagnosis.findings[0].collective, "c10d::allreduce");
	CU_ASSERT_EQUAL(diagnosis.findings[0].sequence, -1);
	CU_ASSERT_STRING_EQUAL(diagnosis.findings[0].waiting, "0");
	CU_ASSERT_PTR_NOT_NULL(strstr(diagnosis.findings[0].doing, "hook"));
	snapshot_diagnosis_free(&diagnosis);

	/* Both inside: nobody lags, and that is said. */
	job.threads[1][1] = job.threads[0][1];
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL(diagnosis.count, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(diagnosis.summary, "network or device"));
	snapshot_diagnosis_free(&diagnosis);
}

UNIT_TEST(job_snapshot, names_the_rank_whose_operation_count_is_behind)
{
	struct snapshot_diagnosis diagnosis;
	struct snapshot_communicator stray = { .pointer = 3, .comm_hash = 0x2d, .nranks = 2 };
	struct snapshot_communicator with_stray[2];
	struct two_ranks job;

	two_ranks_init(&job);
	/* Rank 0 issued operations 0..22, rank 1 0..21: all wait in number 22. */
	job.communicators[0] = (struct snapshot_communicator){ 1, WORLD_HASH, 0, 2, 23 };
	job.communicators[1] = (struct snapshot_communicator){ 2, WORLD_HASH, 1, 2, 22 };
	job.processes[0].communicators = &job.communicators[0];
	job.processes[0].communicator_count = 1;
	/* A word that read like a communicator in one process only judges nothing. */
	with_stray[0] = stray;
	with_stray[1] = job.communicators[1];
	job.processes[1].communicators = with_stray;
	job.processes[1].communicator_count = 2;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(diagnosis.count, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].rank, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].sequence, 22);
	CU_ASSERT_EQUAL(diagnosis.findings[0].comm_hash, WORLD_HASH);
	CU_ASSERT_EQUAL(diagnosis.findings[0].nranks, 2);
	CU_ASSERT_STRING_EQUAL(diagnosis.findings[0].collective, "c10d::allreduce");
	CU_ASSERT_PTR_NOT_NULL(strstr(diagnosis.summary, "seq 22"));
	snapshot_diagnosis_free(&diagnosis);
}

UNIT_TEST(job_snapshot, dumps_findings_and_every_stack_as_one_json_object)
{
	struct snapshot_diagnosis diagnosis;
	struct two_ranks job;
	json_t *root, *finding, *process, *thread, *frame;
	json_error_t json_error;
	char *text = NULL;
	size_t size = 0;
	FILE *out;

	two_ranks_init(&job);
	job.communicators[0] = (struct snapshot_communicator){ 1, WORLD_HASH, 0, 2, 23 };
	job.communicators[1] = (struct snapshot_communicator){ 2, WORLD_HASH, 1, 2, 22 };
	job.processes[0].communicators = &job.communicators[0];
	job.processes[0].communicator_count = 1;
	job.processes[1].communicators = &job.communicators[1];
	job.processes[1].communicator_count = 1;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	out = open_memstream(&text, &size);
	CU_ASSERT_EQUAL_FATAL(job_snapshot_write_json(&job.snapshot, &diagnosis, out), 0);
	fclose(out);
	CU_ASSERT_EQUAL(strchr(text, '\n'), text + size - 1);
	root = json_loads(text, 0, &json_error);
	CU_ASSERT_PTR_NOT_NULL_FATAL(root);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(root, "kind")), "snapshot");
	CU_ASSERT_TRUE(json_is_true(json_object_get(root, "judged")));
	finding = json_array_get(json_object_get(root, "findings"), 0);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(finding, "rank")), 1);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(finding, "seq")), 22);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(finding, "comm_id")),
			       "0x8376206730ef9202");
	CU_ASSERT_EQUAL(json_array_size(json_object_get(root, "processes")), 2);
	process = json_array_get(json_object_get(root, "processes"), 1);
	CU_ASSERT_EQUAL(
		json_integer_value(json_object_get(
			json_array_get(json_object_get(process, "communicators"), 0), "op_count")),
		22);
	thread = json_array_get(json_object_get(process, "threads"), 0);
	CU_ASSERT_TRUE(json_is_null(json_object_get(thread, "native")));
	frame = json_array_get(json_object_get(thread, "python"), 0);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(frame, "function")), "hook");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(frame, "first_line")), 182);
	thread = json_array_get(
		json_object_get(json_array_get(json_object_get(root, "processes"), 0), "threads"),
		1);
	CU_ASSERT_STRING_EQUAL(
		json_string_value(json_object_get(json_object_get(thread, "native"), "collective")),
		"c10d::allreduce");
	json_decref(root);
	free(text);
	snapshot_diagnosis_free(&diagnosis);
}

struct judged {
	struct job_diagnosis *diagnosis;
	struct trace_writer *writer;
	unsigned records;
	int lagging_position; /* the index of the record flagged lagging, -1 none */
};

static int judge_record(void *context, const struct trace_record *record)
{
	struct judged *judged = context;

	CU_ASSERT_EQUAL(record->kind, TRACE_RECORD_ARRIVAL);
	if (record->arrival.flags & TRACE_ARRIVAL_LAGGING)
		judged->lagging_position = (int)judged->records;
	judged->records++;
	job_diagnosis_record(judged->diagnosis, record, 0);
	if (judged->writer)
		CU_ASSERT_EQUAL(trace_writer_add(judged->writer, record), 0);
	return 0;
}

static char *finding_text(FILE *stream, char **buffer)
{
	fflush(stream);
	return *buffer;
}

/* The trace at 'path' replayed into a new diagnosis that writes its findings to 'out'. */
static struct job_diagnosis *read_back(const char *path, FILE *out)
{
	struct job_diagnosis *diagnosis = job_diagnosis_new(NULL, out, NULL);
	struct trace_record record;
	struct trace_reader *reader;
	char error[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(diagnosis);
	reader = trace_reader_open(path, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(reader);
	while (trace_reader_next(reader, &record) > 0)
		job_diagnosis_record(diagnosis, &record, 0);
	trace_reader_close(reader);
	return diagnosis;
}

UNIT_TEST(job_snapshot, live_and_offline_name_the_same_lagging_rank_with_every_stack)
{
	struct two_ranks job;
	struct snapshot_diagnosis snapshot_diagnosis;
	struct trace_header header = { .anchor_monotonic_ns = 1, .anchor_realtime_ns = 2 };
	const char *path = scratch_path("arrival.trace");
	char *live = NULL, *offline = NULL, *events = NULL, error[512];
	size_t live_size = 0, offline_size = 0, events_size = 0;
	FILE *live_out = open_memstream(&live, &live_size);
	FILE *offline_out = open_memstream(&offline, &offline_size);
	FILE *events_out = open_memstream(&events, &events_size);
	struct judged judged = { .lagging_position = -1 };
	json_t *finding, *ranks;
	json_error_t json_error;
	struct job_diagnosis *offline_diagnosis;

	two_ranks_init(&job);
	two_ranks_behind(&job);
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &snapshot_diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(snapshot_diagnosis.count, 1);
	judged.diagnosis = job_diagnosis_new(NULL, live_out, events_out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(judged.diagnosis);
	(void)remove(path);
	judged.writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(judged.writer);
	CU_ASSERT_EQUAL(job_snapshot_emit_records(&job.snapshot, &snapshot_diagnosis, judge_record,
						  &judged),
			0);
	CU_ASSERT_EQUAL(trace_writer_close(judged.writer, error, sizeof(error)), 0);
	/* One record a process, the lagging one last. */
	CU_ASSERT_EQUAL(judged.records, 2);
	CU_ASSERT_EQUAL(judged.lagging_position, 1);
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(judged.diagnosis), 1);
	CU_ASSERT_TRUE(job_diagnosis_judged_count(judged.diagnosis) > 0);
	finding_text(live_out, &live);
	CU_ASSERT_PTR_NOT_NULL_FATAL(live);
	CU_ASSERT_PTR_NOT_NULL(strstr(live, "hang on arrival: rank 1 (pid 101) never joined "
					    "c10d::allreduce seq 22 that rank(s) 0 wait in; it is "
					    "in Python hook (train.py, def at line 182)"));
	CU_ASSERT_PTR_NOT_NULL(strstr(live, "rank 0 (pid 100): not read"));
	CU_ASSERT_PTR_NOT_NULL(strstr(live, "rank 1 (pid 101): hook < <module>"));

	finding_text(events_out, &events);
	finding = json_loads(events, JSON_DISABLE_EOF_CHECK, &json_error);
	CU_ASSERT_PTR_NOT_NULL_FATAL(finding);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(finding, "kind")), "hang");
	CU_ASSERT_TRUE(json_is_true(json_object_get(finding, "on_arrival")));
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(finding, "rank")), 1);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(finding, "seq")), 22);
	CU_ASSERT_STRING_EQUAL(json_string_value(json_object_get(finding, "collective")),
			       "c10d::allreduce");
	ranks = json_object_get(finding, "ranks");
	CU_ASSERT_EQUAL(json_array_size(ranks), 2);
	CU_ASSERT_STRING_EQUAL(
		json_string_value(json_object_get(json_array_get(ranks, 0), "inside")),
		"c10d::allreduce");
	json_decref(finding);

	/* Offline: the trace read back makes the same finding. */
	offline_diagnosis = read_back(path, offline_out);
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(offline_diagnosis), 1);
	finding_text(offline_out, &offline);
	CU_ASSERT_PTR_NOT_NULL_FATAL(offline);
	CU_ASSERT_STRING_EQUAL(offline, live);

	job_diagnosis_free(offline_diagnosis);
	job_diagnosis_free(judged.diagnosis);
	snapshot_diagnosis_free(&snapshot_diagnosis);
	fclose(live_out);
	fclose(offline_out);
	fclose(events_out);
	free(live);
	free(offline);
	free(events);
}

/*
 * gloo: rank 1 issued 11 collectives on its process group, rank 0 12. The
 * others wait in number 12, the first rank 1 did not issue; live and the
 * ranks' list say each rank's own number.
 */
/* Whether a captured output (NULL when the stream failed) holds 'needle'. */
static bool text_contains(const char *text, const char *needle)
{
	return text && strstr(text, needle);
}

UNIT_TEST(job_snapshot, names_the_c10d_sequence_number_the_others_wait_in)
{
	struct process_group_reading groups[3] = { { 0x1000, "gloo", 12 },
						   { 0x2000, "gloo", 11 },
						   { 0x3000, "gloo", 9 } };
	struct snapshot_diagnosis diagnosis;
	struct judged judged = { .lagging_position = -1 };
	char *live = NULL, *events = NULL;
	size_t live_size = 0, events_size = 0;
	FILE *live_out = open_memstream(&live, &live_size);
	FILE *events_out = open_memstream(&events, &events_size);
	struct two_ranks job;
	json_t *finding, *ranks;

	two_ranks_init(&job);
	job.processes[0].process_groups = &groups[0];
	job.processes[1].process_groups = &groups[1];
	job.processes[0].process_group_count = job.processes[1].process_group_count = 1;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(diagnosis.count, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].sequence, 12);
	CU_ASSERT_EQUAL(diagnosis.findings[0].last_sequence, 11);
	CU_ASSERT_PTR_NOT_NULL(strstr(diagnosis.summary, "c10d::allreduce seq 12 (its last: 11)"));
	judged.diagnosis = job_diagnosis_new(NULL, live_out, events_out);
	CU_ASSERT_PTR_NOT_NULL_FATAL(judged.diagnosis);
	CU_ASSERT_EQUAL(job_snapshot_emit_records(&job.snapshot, &diagnosis, judge_record, &judged),
			0);
	finding_text(live_out, &live);
	CU_ASSERT_PTR_NOT_NULL_FATAL(live);
	CU_ASSERT_TRUE(text_contains(live, "never joined c10d::allreduce seq 12 (its last: 11)"));
	finding_text(events_out, &events);
	finding = json_loads(events, JSON_DISABLE_EOF_CHECK, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(finding);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(finding, "seq")), 12);
	ranks = json_object_get(finding, "ranks");
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_array_get(ranks, 0), "seq")), 12);
	CU_ASSERT_EQUAL(json_integer_value(json_object_get(json_array_get(ranks, 1), "seq")), 11);
	json_decref(finding);
	job_diagnosis_free(judged.diagnosis);
	snapshot_diagnosis_free(&diagnosis);

	/* Two groups of rank 1 behind by different numbers: which one is not known. */
	job.processes[1].process_group_count = 2;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(diagnosis.count, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].sequence, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(diagnosis.summary, "not readable"));
	snapshot_diagnosis_free(&diagnosis);

	/* A number that could not be read is no number. */
	job.processes[1].process_group_count = 1;
	groups[1].sequence = -1;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL(diagnosis.findings[0].sequence, -1);
	snapshot_diagnosis_free(&diagnosis);
	fclose(live_out);
	fclose(events_out);
	free(live);
	free(events);
}

/*
 * gloo, where both ranks' threads name a collective (rank 1's worker keeps
 * the address of the all-reduce it ran last in a frame it waits in now):
 * the sequence numbers still say rank 1 never issued number 12.
 */
UNIT_TEST(job_snapshot, names_the_rank_behind_on_its_group_when_every_thread_names_a_collective)
{
	struct process_group_reading groups[2] = { { 0x1000, "gloo", 12, 0, 2 },
						   { 0x2000, "gloo", 11, 1, 2 } };
	struct snapshot_diagnosis diagnosis;
	struct two_ranks job;

	two_ranks_init(&job);
	job.threads[1][1] = job.threads[0][1];
	job.threads[1][1].tid = 111;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL(diagnosis.count, 0);
	snapshot_diagnosis_free(&diagnosis);

	job.processes[0].process_groups = &groups[0];
	job.processes[1].process_groups = &groups[1];
	job.processes[0].process_group_count = job.processes[1].process_group_count = 1;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(diagnosis.count, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].rank, 1);
	CU_ASSERT_EQUAL(diagnosis.findings[0].sequence, 12);
	CU_ASSERT_EQUAL(diagnosis.findings[0].last_sequence, 11);
	CU_ASSERT_STRING_EQUAL(diagnosis.findings[0].waiting, "0");
	CU_ASSERT_PTR_NOT_NULL(
		strstr(diagnosis.summary,
		       "rank 1 (pid 101) never joined c10d::allreduce seq 12 (its last: 11)"));
	snapshot_diagnosis_free(&diagnosis);

	/* The same number on both: none lags. */
	groups[1].sequence = 12;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL(diagnosis.count, 0);
	snapshot_diagnosis_free(&diagnosis);

	/* Groups of other sizes are other groups: their numbers are not compared. */
	groups[1].sequence = 11;
	groups[1].size = 4;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL(diagnosis.count, 0);
	snapshot_diagnosis_free(&diagnosis);
}

/*
 * Rank 0 went from <module> into Tensor.backward, where it waits in the
 * all-reduce; rank 1 is in a hook <module> called instead. Live and read
 * back from a trace, the finding names Tensor.backward as the first call
 * rank 1 did not make.
 */
UNIT_TEST(job_snapshot, names_the_first_call_the_lagging_rank_did_not_make)
{
	struct python_stack_frame waiting_frames[2] = {
		{ "Tensor.backward", "/usr/lib/python3/dist-packages/torch/_tensor.py", 429 },
		{ "<module>", "train.py", 1 },
	};
	struct python_thread_stack waiting = { .frames = waiting_frames, .frame_count = 2 };
	struct trace_header header = { .anchor_monotonic_ns = 1, .anchor_realtime_ns = 2 };
	const char *path = scratch_path("missed.trace");
	const char *expected = "the first call it did not make: Tensor.backward (_tensor.py), "
			       "called from <module> as rank 0 did";
	struct judged judged = { .lagging_position = -1 };
	char *live = NULL, *offline = NULL, error[512];
	size_t live_size = 0, offline_size = 0;
	FILE *live_out = open_memstream(&live, &live_size);
	FILE *offline_out = open_memstream(&offline, &offline_size);
	struct job_diagnosis *offline_diagnosis;
	struct snapshot_diagnosis diagnosis;
	struct two_ranks job;

	two_ranks_init(&job);
	job.threads[0][0].python = &waiting;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(diagnosis.count, 1);
	CU_ASSERT_STRING_EQUAL(diagnosis.findings[0].missed,
			       "Tensor.backward (_tensor.py), called from <module> as rank 0 did");
	CU_ASSERT_PTR_NOT_NULL(strstr(diagnosis.summary, expected));
	judged.diagnosis = job_diagnosis_new(NULL, live_out, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(judged.diagnosis);
	(void)remove(path);
	judged.writer = trace_writer_new(path, &header, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(judged.writer);
	CU_ASSERT_EQUAL(job_snapshot_emit_records(&job.snapshot, &diagnosis, judge_record, &judged),
			0);
	CU_ASSERT_EQUAL(trace_writer_close(judged.writer, error, sizeof(error)), 0);
	finding_text(live_out, &live);
	CU_ASSERT_PTR_NOT_NULL_FATAL(live);
	CU_ASSERT_TRUE(text_contains(live, expected));
	offline_diagnosis = read_back(path, offline_out);
	finding_text(offline_out, &offline);
	CU_ASSERT_PTR_NOT_NULL_FATAL(offline);
	CU_ASSERT_TRUE(offline && live && strcmp(offline, live) == 0);
	snapshot_diagnosis_free(&diagnosis);

	/* Stacks with no outer frame in common: no pattern, nothing named. */
	snprintf(waiting_frames[1].filename, sizeof(waiting_frames[1].filename), "other.py");
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &diagnosis), 0);
	CU_ASSERT_STRING_EQUAL(diagnosis.findings[0].missed, "");
	CU_ASSERT_PTR_NULL(strstr(diagnosis.summary, "did not make"));
	snapshot_diagnosis_free(&diagnosis);
	job_diagnosis_free(offline_diagnosis);
	job_diagnosis_free(judged.diagnosis);
	fclose(live_out);
	fclose(offline_out);
	free(live);
	free(offline);
}

UNIT_TEST(job_snapshot, a_job_where_no_rank_lags_is_judged_without_a_hang)
{
	struct two_ranks job;
	struct snapshot_diagnosis snapshot_diagnosis;
	struct judged judged = { .lagging_position = -1 };

	two_ranks_init(&job);
	two_ranks_behind(&job);
	/* Both ranks issued 23 operations and are inside the all-reduce: none lags. */
	job.communicators[1].op_count = 23;
	job.threads[1][1] = job.threads[0][1];
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &snapshot_diagnosis), 0);
	judged.diagnosis = job_diagnosis_new(NULL, NULL, NULL);
	CU_ASSERT_EQUAL(job_snapshot_emit_records(&job.snapshot, &snapshot_diagnosis, judge_record,
						  &judged),
			0);
	CU_ASSERT_EQUAL(judged.records, 2);
	CU_ASSERT_EQUAL(judged.lagging_position, -1);
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(judged.diagnosis), 0);
	/* Something was judged: not "nothing to judge". */
	CU_ASSERT_EQUAL(job_diagnosis_judged_count(judged.diagnosis), 2);
	job_diagnosis_free(judged.diagnosis);
	snapshot_diagnosis_free(&snapshot_diagnosis);
}

static bool always_busy(void *context, pid_t pid, char *why, size_t why_size)
{
	(void)context;
	snprintf(why, why_size, "wrote a checkpoint (pid %d)", (int)pid);
	return true;
}

UNIT_TEST(job_snapshot, a_lagging_rank_stays_named_only_when_a_second_reading_agrees)
{
	struct snapshot_diagnosis earlier, later;
	struct two_ranks job;

	two_ranks_init(&job);
	two_ranks_behind(&job);
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &earlier), 0);
	/* Still at 22 of 23: the finding stands. */
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &later), 0);
	snapshot_diagnosis_confirm(&job.snapshot, &later, &earlier, NULL, NULL);
	CU_ASSERT_EQUAL(later.count, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(later.summary, "rank 1 (pid 101) never joined"));
	snapshot_diagnosis_free(&later);

	/* Both moved on by one and rank 1 lags at 23 now: caught mid-step twice, not stuck. */
	job.communicators[0].op_count = 24;
	job.communicators[1].op_count = 23;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &later), 0);
	CU_ASSERT_EQUAL_FATAL(later.count, 1);
	snapshot_diagnosis_confirm(&job.snapshot, &later, &earlier, NULL, NULL);
	CU_ASSERT_EQUAL(later.count, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(later.summary, "was not there at the first reading"));
	CU_ASSERT_PTR_NOT_NULL(strstr(later.summary, "no hang judged on arrival"));
	snapshot_diagnosis_free(&later);

	/* In the same place but working between the readings: a pause, no hang. */
	job.communicators[0].op_count = 23;
	job.communicators[1].op_count = 22;
	CU_ASSERT_EQUAL_FATAL(job_snapshot_diagnose(&job.snapshot, &later), 0);
	snapshot_diagnosis_confirm(&job.snapshot, &later, &earlier, always_busy, NULL);
	CU_ASSERT_EQUAL(later.count, 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(later.summary, "wrote a checkpoint (pid 101)"));
	snapshot_diagnosis_free(&later);
	snapshot_diagnosis_free(&earlier);
}
