// SPDX-License-Identifier: MIT
/*
 * Pauses against hangs, on hand-built record streams: two ranks all-reduce
 * every 100 ms, then rank 0 stops calling while rank 1 goes on to the next
 * all-reduce. What rank 0's activity samples (CPU time, I/O counters,
 * thread states, as /proc gives them) say it did decides: a rank writing
 * files or computing is pausing (reported as a pause when it comes back,
 * no hang, no slowdown); a rank idle (no CPU, no I/O) is hung after the
 * usual limit, counted from the end of its last activity; a rank idle
 * where it paused before may pause as long as hang_factor times that.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diagnose/job_diagnosis.h"
#include "diagnose/pause_tracker.h"
#include "model/activity_interval.h"
#include "unit.h"

#define STEP_NS 100000000ull /* 100 ms */
#define SECOND_NS 1000000000ull
#define SAMPLE_NS 200000000ull /* the recorder samples every 0.2 s */
#define COMM_ID 0x5eed000000000001ull

struct pause_job {
	struct job_diagnosis *diagnosis;
	FILE *events;
	int64_t seq[2];
	/* Each rank's counters, as /proc would show them. */
	struct trace_activity_sample activity[2];
	uint64_t now_ns;
};

/* What a rank does between two samples. */
enum rank_doing { DOING_NOTHING, DOING_COMPUTE, DOING_WRITES, DOING_IO_WAIT };

static uint32_t pid_of(int rank)
{
	return 7000 + (uint32_t)rank;
}

static void all_reduce(struct pause_job *job, int rank, uint64_t entry_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_NCCL_CALL };
	struct trace_nccl_call *call = &record.call;

	call->function = "ncclAllReduce";
	call->api = nccl_function_by_name(call->function);
	call->entry_ns = entry_ns;
	call->duration_ns = 1000;
	call->pid = pid_of(rank);
	call->tid = call->pid;
	call->param_count = 7;
	call->params[2] = 256;
	call->comm = 0x5000;
	call->comm_id = COMM_ID;
	call->rank = rank;
	call->nranks = 2;
	call->seq = job->seq[rank]++;
	call->step = -1;
	job_diagnosis_record(job->diagnosis, &record, 0);
}

/* A sample of every rank at 'now_ns', rank 0 having done 'doing' since the last one. */
static void sample(struct pause_job *job, uint64_t now_ns, enum rank_doing doing)
{
	for (int rank = 0; rank < 2; rank++) {
		struct trace_record record = { .kind = TRACE_RECORD_ACTIVITY };
		struct trace_activity_sample *activity = &job->activity[rank];
		uint64_t elapsed = now_ns - activity->timestamp_ns;

		activity->timestamp_ns = now_ns;
		activity->pid = pid_of(rank);
		activity->threads = 6;
		activity->threads_running = 0;
		activity->threads_io_wait = 0;
		if (rank == 1 || doing == DOING_COMPUTE) {
			activity->cpu_ns += elapsed * 9 / 10;
			activity->threads_running = 1;
		}
		if (rank == 0 && doing == DOING_WRITES) {
			activity->cpu_ns += elapsed / 10;
			activity->write_bytes += 40ull << 20;
			activity->write_chars += 40ull << 20;
		}
		if (rank == 0 && doing == DOING_IO_WAIT)
			activity->threads_io_wait = 1;
		record.activity = *activity;
		job_diagnosis_record(job->diagnosis, &record, 0);
	}
	job->now_ns = now_ns;
}

/* A sample of a process that is no rank (a data loader's worker) at 'now_ns'. */
static void sample_helper(struct pause_job *job, uint32_t pid, uint64_t now_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_ACTIVITY };

	record.activity.timestamp_ns = now_ns;
	record.activity.pid = pid;
	record.activity.threads = 2;
	job_diagnosis_record(job->diagnosis, &record, 0);
}

static void end_process(struct pause_job *job, uint32_t pid, uint64_t end_ns)
{
	struct trace_record record = { .kind = TRACE_RECORD_PROCESS };

	record.process.pid = pid;
	record.process.parent_pid = pid_of(0);
	record.process.rank = -1;
	record.process.start_ns = 1;
	record.process.end_ns = end_ns;
	job_diagnosis_record(job->diagnosis, &record, 0);
}

static void start_pause_job(struct pause_job *job)
{
	memset(job, 0, sizeof(*job));
	job->events = tmpfile();
	CU_ASSERT_PTR_NOT_NULL_FATAL(job->events);
	job->diagnosis = job_diagnosis_new(NULL, NULL, job->events);
	CU_ASSERT_PTR_NOT_NULL_FATAL(job->diagnosis);
}

/* 20 steps of both ranks, sampled; the step time is learned. */
static void run_first_steps(struct pause_job *job)
{
	for (int step = 0; step < 20; step++) {
		uint64_t start = SECOND_NS + (uint64_t)step * STEP_NS;

		all_reduce(job, 0, start + STEP_NS / 2);
		all_reduce(job, 1, start + STEP_NS / 2 + 1000);
		if (step % 2 == 1)
			sample(job, start + STEP_NS, DOING_COMPUTE);
	}
}

static void new_pause_job(struct pause_job *job)
{
	start_pause_job(job);
	run_first_steps(job);
}

/*
 * Rank 1 issues the next all-reduce; rank 0 does 'doing' for 'seconds'
 * (sampled every 0.2 s, the detectors ticked between), then stays idle
 * until 'comes_back_ns' after the pause started, when it all-reduces too
 * (0: never).
 */
static void pause_rank_0(struct pause_job *job, double seconds, enum rank_doing doing,
			 uint64_t comes_back_ns)
{
	uint64_t start = job->now_ns + STEP_NS / 2, now;

	all_reduce(job, 1, start);
	for (now = job->now_ns + SAMPLE_NS; now <= start + (uint64_t)(seconds * 1e9);
	     now += SAMPLE_NS) {
		job_diagnosis_tick(job->diagnosis, now - SAMPLE_NS / 2);
		sample(job, now, doing);
	}
	for (; comes_back_ns && now < start + comes_back_ns; now += SAMPLE_NS) {
		job_diagnosis_tick(job->diagnosis, now - SAMPLE_NS / 2);
		sample(job, now, DOING_NOTHING);
	}
	if (comes_back_ns) {
		all_reduce(job, 0, start + comes_back_ns);
		job->now_ns = start + comes_back_ns;
		all_reduce(job, 0, job->now_ns + STEP_NS);
		all_reduce(job, 1, job->now_ns + STEP_NS + 1000);
	}
}

/* The value of "key": in the first event of 'kind'; -1 when there is none. */
static double event_field(struct pause_job *job, const char *kind, const char *key)
{
	char line[4096], pattern[64], *at;

	snprintf(pattern, sizeof(pattern), "\"kind\":\"%s\"", kind);
	rewind(job->events);
	while (fgets(line, sizeof(line), job->events)) {
		if (!strstr(line, pattern))
			continue;
		snprintf(pattern, sizeof(pattern), "\"%s\":", key);
		at = strstr(line, pattern);
		if (!at)
			return -1;
		at += strlen(pattern);
		return *at == '"' ? 1 : strtod(at, NULL);
	}
	return -1;
}

static bool event_says(struct pause_job *job, const char *kind, const char *text)
{
	char line[4096], pattern[64];

	snprintf(pattern, sizeof(pattern), "\"kind\":\"%s\"", kind);
	rewind(job->events);
	while (fgets(line, sizeof(line), job->events))
		if (strstr(line, pattern) && strstr(line, text))
			return true;
	return false;
}

static void pause_job_free(struct pause_job *job)
{
	job_diagnosis_free(job->diagnosis);
	fclose(job->events);
}

UNIT_TEST(pause_detection, an_interval_is_judged_by_what_the_counters_did)
{
	struct trace_activity_sample earlier = { .timestamp_ns = SECOND_NS, .cpu_ns = SECOND_NS };
	struct trace_activity_sample later = earlier;

	later.timestamp_ns += SAMPLE_NS;
	CU_ASSERT_EQUAL(pause_interval_cause(&earlier, &later), PAUSE_IDLE);
	/* Sleeping threads wake now and then: a few percent of a CPU is idle. */
	later.cpu_ns += SAMPLE_NS / 20;
	CU_ASSERT_EQUAL(pause_interval_cause(&earlier, &later), PAUSE_IDLE);
	later.cpu_ns = earlier.cpu_ns + SAMPLE_NS / 2;
	CU_ASSERT_EQUAL(pause_interval_cause(&earlier, &later), PAUSE_COMPUTING);
	later.cpu_ns = earlier.cpu_ns;
	later.write_bytes = ACTIVITY_BUSY_STORAGE_BYTES;
	CU_ASSERT_EQUAL(pause_interval_cause(&earlier, &later), PAUSE_FILE_IO);
	later.write_bytes = 0;
	/* Files on tmpfs reach no storage: the bytes through write() tell. */
	later.write_chars = ACTIVITY_BUSY_SYSCALL_BYTES;
	CU_ASSERT_EQUAL(pause_interval_cause(&earlier, &later), PAUSE_FILE_IO);
	later.write_chars = ACTIVITY_BUSY_SYSCALL_BYTES / 4;
	CU_ASSERT_EQUAL(pause_interval_cause(&earlier, &later), PAUSE_IDLE);
	later.threads_io_wait = 1;
	CU_ASSERT_EQUAL(pause_interval_cause(&earlier, &later), PAUSE_IO_WAIT);
}

/*
 * The snapshot's second reading comes 0.3 s after the first. A rank asleep in
 * Python on torch 2.14 has a thread that polls every 10 ms: two 10 ms clock
 * ticks of CPU (6.7% of the window) and a log line's page are no work of its own.
 */
UNIT_TEST(pause_detection, a_short_window_with_a_pollers_ticks_is_idle)
{
	struct trace_activity_sample earlier = { .timestamp_ns = SECOND_NS, .cpu_ns = SECOND_NS };
	struct trace_activity_sample later = earlier;

	later.timestamp_ns += 300 * 1000000ULL;
	later.cpu_ns += 2 * 10 * 1000000ULL;
	later.write_bytes = 4096;
	later.write_chars = 200;
	CU_ASSERT_EQUAL(activity_interval_kind(&earlier, &later), ACTIVITY_IDLE);
	/* A rank still computing its step uses the CPU it is given. */
	later.cpu_ns = earlier.cpu_ns + 250 * 1000000ULL;
	CU_ASSERT_EQUAL(activity_interval_kind(&earlier, &later), ACTIVITY_COMPUTING);
}

UNIT_TEST(pause_detection, a_rank_writing_a_checkpoint_is_a_pause_not_a_hang)
{
	struct pause_job job;

	new_pause_job(&job);
	pause_rank_0(&job, 3.0, DOING_WRITES, (uint64_t)(3.1 * 1e9));
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL(job_diagnosis_slowdown_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(job_diagnosis_pause_count(job.diagnosis), 1);
	CU_ASSERT(event_says(&job, "pause", "\"doing\":\"file_io\""));
	CU_ASSERT_EQUAL(event_field(&job, "pause", "pid"), pid_of(0));
	CU_ASSERT_DOUBLE_EQUAL(event_field(&job, "pause", "duration_ns"), 3.1e9, 0.11e9);
	pause_job_free(&job);
}

UNIT_TEST(pause_detection, a_rank_computing_or_in_io_wait_is_a_pause)
{
	struct pause_job job;

	new_pause_job(&job);
	pause_rank_0(&job, 4.0, DOING_COMPUTE, (uint64_t)(4.1 * 1e9));
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL(job_diagnosis_slowdown_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL(job_diagnosis_pause_count(job.diagnosis), 1);
	CU_ASSERT(event_says(&job, "pause", "\"doing\":\"computing\""));
	pause_job_free(&job);

	new_pause_job(&job);
	pause_rank_0(&job, 2.5, DOING_IO_WAIT, (uint64_t)(2.6 * 1e9));
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL(job_diagnosis_pause_count(job.diagnosis), 1);
	CU_ASSERT(event_says(&job, "pause", "\"doing\":\"io_wait\""));
	pause_job_free(&job);
}

UNIT_TEST(pause_detection, an_idle_rank_is_a_hang_after_the_usual_limit)
{
	struct pause_job job;
	uint64_t last_call_ns;

	new_pause_job(&job);
	last_call_ns = job.now_ns - STEP_NS / 2;
	pause_rank_0(&job, 3.0, DOING_NOTHING, 0);
	CU_ASSERT_EQUAL_FATAL(job_diagnosis_hang_count(job.diagnosis), 1);
	CU_ASSERT_EQUAL(job_diagnosis_pause_count(job.diagnosis), 0);
	/* The limit: 2 steps, 1 s at least, from the last call of the communicator. */
	CU_ASSERT(event_field(&job, "hang", "detected_ns") >= (double)(last_call_ns + SECOND_NS));
	CU_ASSERT(event_field(&job, "hang", "detected_ns") <=
		  (double)(last_call_ns + SECOND_NS + SAMPLE_NS + STEP_NS));
	pause_job_free(&job);
}

UNIT_TEST(pause_detection, a_rank_that_works_then_sits_idle_is_a_hang_from_its_last_work)
{
	struct pause_job job;
	uint64_t start_ns;

	new_pause_job(&job);
	start_ns = job.now_ns;
	/* 2 s of writing, then nothing: hung 1 s after the writing stopped. */
	pause_rank_0(&job, 2.0, DOING_WRITES, 0);
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 0);
	for (uint64_t now = job.now_ns + SAMPLE_NS; now < start_ns + 4 * SECOND_NS;
	     now += SAMPLE_NS)
		sample(&job, now, DOING_NOTHING);
	CU_ASSERT_EQUAL_FATAL(job_diagnosis_hang_count(job.diagnosis), 1);
	CU_ASSERT(event_field(&job, "hang", "detected_ns") >= (double)(start_ns + 3 * SECOND_NS));
	CU_ASSERT(event_field(&job, "hang", "detected_ns") <=
		  (double)(start_ns + 3 * SECOND_NS + 2 * SAMPLE_NS));
	pause_job_free(&job);
}

/* 'steps' steps of both ranks after the current time, sampled. */
static void run_more_steps(struct pause_job *job, int steps)
{
	uint64_t start = job->now_ns;

	for (int step = 0; step < steps; step++) {
		all_reduce(job, 0, start + (uint64_t)step * STEP_NS + STEP_NS / 2);
		all_reduce(job, 1, start + (uint64_t)step * STEP_NS + STEP_NS / 2 + 1000);
		if (step % 2 == 1)
			sample(job, start + (uint64_t)(step + 1) * STEP_NS, DOING_COMPUTE);
	}
	job->now_ns = start + (uint64_t)steps * STEP_NS;
}

UNIT_TEST(pause_detection, an_idle_pause_in_the_pattern_of_pauses_is_a_pause_up_to_twice_as_long)
{
	struct pause_job job;

	new_pause_job(&job);
	/* Two pauses 10 steps apart, at the same place of the step: the job's pattern. */
	pause_rank_0(&job, 3.0, DOING_WRITES, (uint64_t)(3.1 * 1e9));
	run_more_steps(&job, 8);
	pause_rank_0(&job, 3.0, DOING_WRITES, (uint64_t)(3.1 * 1e9));
	CU_ASSERT_EQUAL_FATAL(job_diagnosis_pause_count(job.diagnosis), 2);
	/* 10 steps on, idle this time (waiting on a remote store): a pause. */
	run_more_steps(&job, 8);
	pause_rank_0(&job, 0, DOING_NOTHING, (uint64_t)(3.0 * 1e9));
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL(job_diagnosis_slowdown_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(job_diagnosis_pause_count(job.diagnosis), 3);
	CU_ASSERT(event_says(&job, "pause", "\"doing\":\"recurring\""));
	/* Idle out of the pattern (5 steps on): a hang at the usual limit. */
	run_more_steps(&job, 3);
	pause_rank_0(&job, 0, DOING_NOTHING, (uint64_t)(1.5 * 1e9));
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 1);
	pause_job_free(&job);

	new_pause_job(&job);
	pause_rank_0(&job, 3.0, DOING_WRITES, (uint64_t)(3.1 * 1e9));
	run_more_steps(&job, 8);
	pause_rank_0(&job, 3.0, DOING_WRITES, (uint64_t)(3.1 * 1e9));
	run_more_steps(&job, 8);
	/* In the pattern, but far longer than the pauses learned (over 2 times): a hang. */
	pause_rank_0(&job, 0, DOING_NOTHING, (uint64_t)(8.0 * 1e9));
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 1);
	CU_ASSERT_EQUAL(job_diagnosis_pause_count(job.diagnosis), 2);
	pause_job_free(&job);
}

UNIT_TEST(pause_detection, a_busy_pause_far_longer_than_the_learned_one_is_a_hang)
{
	struct pause_job job;

	new_pause_job(&job);
	pause_rank_0(&job, 1.5, DOING_WRITES, (uint64_t)(1.6 * 1e9));
	CU_ASSERT_EQUAL_FATAL(job_diagnosis_pause_count(job.diagnosis), 1);
	/* Busy for more than PAUSE_LEARNED_FACTOR times 1.6 s: stuck in a loop of its own. */
	pause_rank_0(&job, 20.0, DOING_COMPUTE, 0);
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 1);
	pause_job_free(&job);
}

/*
 * Processes that are no rank come and go around the ranks (a data loader's
 * workers): one sampled before the job's first call ends and another
 * starts, then rank 0 writes a checkpoint. The pause is rank 0's, as long as
 * it was, whatever place the processes that came and went took.
 */
UNIT_TEST(pause_detection, workers_that_come_and_go_leave_a_rank_its_own_pause)
{
	struct pause_job job;

	start_pause_job(&job);
	sample_helper(&job, 6990, SECOND_NS / 2);
	sample_helper(&job, pid_of(1), SECOND_NS / 2);
	run_first_steps(&job);
	end_process(&job, 6990, job.now_ns);
	sample_helper(&job, 6991, job.now_ns + 1000);
	pause_rank_0(&job, 3.0, DOING_WRITES, (uint64_t)(3.1 * 1e9));
	CU_ASSERT_EQUAL(job_diagnosis_hang_count(job.diagnosis), 0);
	CU_ASSERT_EQUAL_FATAL(job_diagnosis_pause_count(job.diagnosis), 1);
	CU_ASSERT_EQUAL(event_field(&job, "pause", "pid"), pid_of(0));
	CU_ASSERT(event_says(&job, "pause", "\"doing\":\"file_io\""));
	CU_ASSERT_DOUBLE_EQUAL(event_field(&job, "pause", "duration_ns"), 3.1e9, 0.11e9);
	pause_job_free(&job);
}
