// SPDX-License-Identifier: MIT
/*
 * The step-progress hang detector on hand-built streams of Python and NCCL
 * calls: a process that steps every 10 ms and then stops is hung once
 * silent for the stall limit; busy in Python, blocked inside a call on a
 * communicator, ended, or pausing no longer than it did before, it is not.
 */
#include <string.h>

#include "diagnose/flight_recorder.h"
#include "diagnose/progress_model.h"
#include "diagnose/step_stall_detector.h"
#include "unit.h"

#define STEP_NS 10000000ull /* 10 ms */
#define SECOND_NS 1000000000ull
#define PID 4242

struct stall_job {
	struct progress_model *model;
	struct step_stall_detector detector;
	struct flight_recorder flights; /* where the last Python call's name is kept */
	struct diagnosis_report report;
	uint64_t now_ns;
};

static void python_call(struct stall_job *job, const char *name, int32_t step, uint64_t entry_ns)
{
	struct trace_python_call call;

	memset(&call, 0, sizeof(call));
	call.entry_ns = entry_ns;
	call.duration_ns = 1000;
	call.pid = PID;
	call.tid = PID;
	call.step = step;
	call.qualified_name = name;
	step_stall_python(&job->detector, step_stall_process(&job->detector, PID), &call, 0);
	flight_recorder_python(&job->flights, &call);
	progress_model_advance(job->model, entry_ns + 1000);
	job->now_ns = entry_ns + 1000;
}

/* Steps 0 to steps - 1, a forward and an optimizer step each, 10 ms apart. */
static void run_steps(struct stall_job *job, int32_t steps)
{
	for (int32_t step = 0; step < steps; step++) {
		uint64_t start = SECOND_NS + (uint64_t)step * STEP_NS;

		python_call(job, "torch.nn.modules.module.Module._call_impl", step, start);
		python_call(job, "torch.optim.sgd.SGD.step", step, start + STEP_NS / 2);
	}
}

static bool stalled_at(struct stall_job *job, uint64_t now_ns)
{
	progress_model_advance(job->model, now_ns);
	return step_stall_check(&job->detector, job->model, &job->flights, &job->report);
}

static struct stall_job *new_stall_job(void)
{
	static struct stall_job job;

	memset(&job, 0, sizeof(job));
	flight_recorder_init(&job.flights, 0);
	job.model = progress_model_new(NULL); /* the defaults: 30 s at least */
	CU_ASSERT_PTR_NOT_NULL_FATAL(job.model);
	return &job;
}

static void stall_job_free(struct stall_job *job)
{
	progress_model_free(job->model);
	flight_recorder_free(&job->flights);
}

UNIT_TEST(step_stall, silent_process_is_a_hang_after_the_limit)
{
	struct stall_job *job = new_stall_job();
	uint64_t last;

	run_steps(job, 20);
	last = job->now_ns;
	CU_ASSERT_FALSE(stalled_at(job, last + 29 * SECOND_NS));
	CU_ASSERT_TRUE_FATAL(stalled_at(job, last + 31 * SECOND_NS));
	CU_ASSERT_TRUE(job->report.step_progress);
	CU_ASSERT_EQUAL(job->report.kind, DIAGNOSIS_HANG);
	CU_ASSERT_EQUAL(job->report.detected_ns, last + 30 * SECOND_NS);
	CU_ASSERT_EQUAL_FATAL(job->report.rank_count, 1);
	CU_ASSERT_EQUAL(job->report.ranks[0].pid, PID);
	CU_ASSERT_EQUAL(job->report.ranks[0].last.step, 19);
	CU_ASSERT_STRING_EQUAL(job->report.ranks[0].last.function, "torch.optim.sgd.SGD.step");
	/* Once per stall. */
	CU_ASSERT_FALSE(stalled_at(job, last + 40 * SECOND_NS));
	stall_job_free(job);
}

/* A minute of evaluation (forwards returning, no step) is work, not a hang. */
UNIT_TEST(step_stall, busy_in_python_without_steps_is_no_hang)
{
	struct stall_job *job = new_stall_job();
	uint64_t start;

	run_steps(job, 20);
	start = job->now_ns;
	for (uint64_t t = 0; t < 60 * SECOND_NS; t += SECOND_NS / 2) {
		python_call(job, "torch.nn.modules.module.Module._call_impl", 19, start + t);
		CU_ASSERT_FALSE(
			step_stall_check(&job->detector, job->model, &job->flights, &job->report));
	}
	stall_job_free(job);
}

/* A process blocked inside a collective is the hang detector's, not this one's. */
UNIT_TEST(step_stall, blocked_inside_a_collective_is_left_to_the_hang_detector)
{
	struct stall_job *job = new_stall_job();
	struct trace_nccl_call call;
	int64_t completed;

	run_steps(job, 20);
	memset(&call, 0, sizeof(call));
	call.function = "ncclAllReduce";
	call.api = nccl_function_by_name("ncclAllReduce");
	call.entry_ns = job->now_ns + STEP_NS;
	call.pid = PID;
	call.tid = PID;
	call.comm = 0x5000;
	call.comm_id = 0x77;
	call.nranks = 2;
	call.flags = TRACE_CALL_OPEN;
	progress_model_add_call(job->model, &call, &completed);
	step_stall_nccl(&job->detector, step_stall_process(&job->detector, PID), &call);
	CU_ASSERT_FALSE(stalled_at(job, call.entry_ns + 60 * SECOND_NS));
	stall_job_free(job);
}

UNIT_TEST(step_stall, ended_process_is_no_hang)
{
	struct stall_job *job = new_stall_job();

	run_steps(job, 20);
	step_stall_process_ended(step_stall_process(&job->detector, PID));
	CU_ASSERT_FALSE(stalled_at(job, job->now_ns + 60 * SECOND_NS));
	stall_job_free(job);
}

/*
 * A step that once took 40 s (a checkpoint written outside traced calls)
 * sets the limit to hang_factor times that: a later 50 s pause is none,
 * 81 s is one.
 */
UNIT_TEST(step_stall, a_pause_the_job_made_before_sets_the_limit)
{
	struct stall_job *job = new_stall_job();
	uint64_t start, last;

	run_steps(job, 10);
	start = job->now_ns + 40 * SECOND_NS;
	CU_ASSERT_TRUE(stalled_at(job, start - SECOND_NS)); /* the first one is reported */
	python_call(job, "torch.optim.sgd.SGD.step", 10, start);
	python_call(job, "torch.optim.sgd.SGD.step", 11, start + STEP_NS);
	last = job->now_ns;
	CU_ASSERT_FALSE(stalled_at(job, last + 50 * SECOND_NS));
	CU_ASSERT_TRUE(stalled_at(job, last + 81 * SECOND_NS));
	stall_job_free(job);
}

/* Before a process has learned a step (warm-up), silence proves nothing. */
UNIT_TEST(step_stall, no_hang_before_a_step_is_learned)
{
	struct stall_job *job = new_stall_job();

	run_steps(job, 2);
	CU_ASSERT_FALSE(stalled_at(job, job->now_ns + 60 * SECOND_NS));
	stall_job_free(job);
}
