// SPDX-License-Identifier: MIT
/* Tests of judging a job's state on arrival and of its JSON dump. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/job_snapshot.h"
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
