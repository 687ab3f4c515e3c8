// SPDX-License-Identifier: MIT
/* A training-like NCCL job on the test double: N rank processes, checked results, ground truth. */
/*
 * Ranks are laid out as rank = stage * (dp * tp) + dp_index * tp + tp_index. Setup (step -1):
 * rank 0 calls ncclGetUniqueId and passes the id on in DIR/nccl-unique-id; every rank calls
 * ncclCommInitRank (world), ncclCommSplit for the tensor-parallel group (when tp > 1, with a
 * config), the data-parallel group (dp > 1), the pipeline group (pp > 1) and a logging group of
 * tp_index 0 ranks (the others pass NCCL_SPLIT_NOCOLOR and get NULL), then ncclCommRegister.
 *
 * Each step, on one stream: compute; TP ncclAllReduce + ncclAllGather; a group of ncclSend to
 * the next stage and ncclRecv from the previous; compute; a group sending gradients back; DP
 * ncclReduceScatter + ncclAllGather and five in-place gradient-bucket ncclAllReduce calls
 * (float32 sum, float64 avg, int64 max, uint8 min, int32 prod); world ncclAllReduce of the
 * grad norm (float64) and of metrics (float32 max); the logging-group ncclAllReduce; every
 * third step from step 0 world ncclBroadcast, ncclBcast, ncclReduce, ncclAlltoAll, ncclGather
 * and ncclScatter; ncclCommGetAsyncError; then doubleStreamSynchronize and checks of every
 * result. Teardown (step -1): ncclCommDeregister, ncclCommDestroy of the sub-communicators,
 * ncclCommFinalize and ncclCommDestroy of the world.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "checkpoint_pause.h"
#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"
#include "rank_launcher.h"
#include "nccl_workload/workload.h"

/* ---- setup ---- */

static void wait_for_file(const char *path)
{
	while (access(path, F_OK) != 0)
		sleep_ns(POLL_INTERVAL_NS);
}

/* Rank 0 makes the id and publishes it through a file; the others poll for it. */
static void exchange_unique_id(struct worker *worker, ncclUniqueId *id)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", worker->options->log_dir, UNIQUE_ID_FILE);
	if (worker->rank == 0) {
		ncclResult_t ret = ncclGetUniqueId(id);

		ground_truth_unique_id(&worker->log, ret, id);
		check_call(worker, "ncclGetUniqueId", ret);
		if (write_file_atomically(path, id, sizeof(*id)) < 0)
			die(worker, 1, "cannot write a file in the log directory");
		return;
	}
	read_published_file(path, id, sizeof(*id));
}

static void *allocate(const struct worker *worker, size_t count, size_t size)
{
	void *memory = calloc(count, size);

	if (!memory)
		die(worker, 1, "out of memory");
	return memory;
}

static void setup(struct worker *worker)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	struct buffers *data;
	ncclUniqueId id;
	ncclResult_t ret;
	size_t world = (size_t)worker->world_size;

	data = allocate(worker, 1, sizeof(*data));
	data->tp_gathered = allocate(worker, (size_t)worker->tp * TP_GATHER_COUNT, sizeof(int32_t));
	data->shards_send = allocate(worker, (size_t)worker->dp * SHARD_COUNT, sizeof(float));
	data->params_gathered = allocate(worker, (size_t)worker->dp * SHARD_COUNT, sizeof(float));
	data->all_to_all_send = allocate(worker, world * ALL_TO_ALL_COUNT, sizeof(int32_t));
	data->all_to_all_recv = allocate(worker, world * ALL_TO_ALL_COUNT, sizeof(int32_t));
	data->gather_recv = allocate(worker, world * GATHER_COUNT, sizeof(int64_t));
	data->scatter_send = allocate(worker, world * SCATTER_COUNT, sizeof(int32_t));
	worker->data = data;
	if (doubleStreamCreate(&worker->stream) != ncclSuccess)
		die(worker, 1, "doubleStreamCreate failed");

	exchange_unique_id(worker, &id);
	inject_delay(worker, 0, DELAY_INIT);
	ret = ncclCommInitRank(&worker->world, worker->world_size, id, worker->rank);
	ground_truth_init_rank(&worker->log, ret, &worker->world, worker->world_size, &id,
			       worker->rank, false, NULL, hash_of(worker->world));
	check_call(worker, "ncclCommInitRank", ret);

	/* Every rank makes every split, in the same order: a split is collective over the world. */
	if (worker->tp > 1)
		worker->tp_comm = split(worker, worker->stage * worker->dp + worker->dp_index,
					worker->tp_index, &config);
	if (worker->dp > 1)
		worker->dp_comm = split(worker, worker->stage * worker->tp + worker->tp_index,
					worker->dp_index, NULL);
	if (worker->pp > 1)
		worker->pp_comm = split(worker, worker->dp_index * worker->tp + worker->tp_index,
					worker->stage, NULL);
	/* A logging group of the first rank of each tensor-parallel group: the rest stay out. */
	worker->log_comm =
		split(worker, worker->tp_index == 0 ? 0 : NCCL_SPLIT_NOCOLOR, worker->rank, NULL);

	ret = ncclCommRegister(worker->world, data->bucket0, sizeof(data->bucket0),
			       &worker->registration);
	ground_truth_register(&worker->log, ret, worker->world, data->bucket0,
			      sizeof(data->bucket0), &worker->registration);
	check_call(worker, "ncclCommRegister", ret);
}

static void teardown(struct worker *worker)
{
	ncclResult_t ret;

	worker->log.step = -1;
	ret = ncclCommDeregister(worker->world, worker->registration);
	ground_truth_deregister(&worker->log, ret, worker->world, worker->registration);
	check_call(worker, "ncclCommDeregister", ret);
	destroy(worker, worker->log_comm);
	destroy(worker, worker->pp_comm);
	destroy(worker, worker->dp_comm);
	destroy(worker, worker->tp_comm);
	ret = ncclCommFinalize(worker->world);
	ground_truth_comm_only(&worker->log, "ncclCommFinalize", ret, worker->world);
	check_call(worker, "ncclCommFinalize", ret);
	destroy(worker, worker->world);
	doubleStreamDestroy(worker->stream);
}

/* True when --stop-file names a step before 'step': the job ends after that one. */
static bool stop_before(const struct options *options, int step)
{
	FILE *file;
	long last;
	bool stop;

	if (!options->stop_file || !(file = fopen(options->stop_file, "re")))
		return false;
	stop = fscanf(file, "%ld", &last) == 1 && step > last;
	fclose(file);
	return stop;
}

static int run_worker(const struct options *options)
{
	struct worker worker = { .options = options };
	char path[PATH_MAX];

	worker.rank = env_int(options->spawned ? "SPAWNED_RANK" : "RANK");
	worker.world_size = env_int(options->spawned ? "SPAWNED_WORLD_SIZE" : "WORLD_SIZE");
	worker.log.step = -1;
	if (worker.rank < 0 || worker.world_size != options->ranks || worker.rank >= options->ranks)
		die(&worker, 2, "RANK and WORLD_SIZE must be set by the launcher");
	worker.tp = options->tp;
	worker.pp = options->pp;
	worker.dp = options->ranks / (options->tp * options->pp);
	worker.tp_index = worker.rank % worker.tp;
	worker.dp_index = (worker.rank / worker.tp) % worker.dp;
	worker.stage = worker.rank / (worker.tp * worker.dp);

	snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, worker.rank);
	if (ground_truth_open(&worker.log, path) < 0)
		die(&worker, 2, "cannot create the ground-truth log");
	if (options->wait_file)
		wait_for_file(options->wait_file);

	setup(&worker);
	for (int step = 0; step < options->steps && !stop_before(options, step); step++)
		run_step(&worker, step);
	teardown(&worker);
	ground_truth_close(&worker.log);
	return 0;
}

/* ---- the launcher: one process per rank, environment as torchrun sets it ---- */

static void remove_stale_outputs(const struct options *options)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", options->log_dir, UNIQUE_ID_FILE);
	unlink(path);
	for (int rank = 0; rank < options->ranks; rank++) {
		snprintf(path, sizeof(path), "%s/rank-%d.progress", options->log_dir, rank);
		unlink(path);
		snprintf(path, sizeof(path), "%s/rank-%d.jsonl", options->log_dir, rank);
		unlink(path);
	}
}

static int launch(const struct options *options, int argc, char **argv)
{
	const struct rank_launcher launcher = {
		.program = "nccl-workload",
		.ranks = options->ranks,
		.grace_seconds = FAILURE_GRACE_SECONDS,
		.master_env = true,
		.escalate = true,
		.spawned = options->spawned,
	};
	int status;

	if (make_log_directory(launcher.program, options->log_dir) < 0)
		return 2;
	remove_stale_outputs(options);
	status = launch_ranks(&launcher, argc, argv);
	if (status != 0)
		return status;
	printf("nccl-workload: %d ranks finished %d steps\n", options->ranks, options->steps);
	return 0;
}

int main(int argc, char **argv)
{
	struct options options;

	if (parse_options(argc, argv, &options) < 0)
		return 2;
	if (options.worker)
		return run_worker(&options);
	return launch(&options, argc, argv);
}
