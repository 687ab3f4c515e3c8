// SPDX-License-Identifier: MIT
/* One training step of nccl-workload: tensor, pipeline and data parallel traffic, world
 * collectives, then a check of every result; the faults the options inject. */
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

/* ---- one training step: issue everything, synchronize, then check every result ---- */

static void tensor_parallel(struct worker *worker, int step)
{
	struct buffers *data = worker->data;

	for (size_t i = 0; i < TP_REDUCE_COUNT; i++)
		data->tp_send[i] = (float)value_of(worker->rank, step, i);
	for (size_t i = 0; i < TP_GATHER_COUNT; i++)
		data->tp_shard[i] = (int32_t)value_of(worker->rank, step, i);
	/* --wrong-comm: the group chosen is the data-parallel one, on every rank alike. */
	all_reduce(worker, worker->wrong_comm ? worker->dp_comm : worker->tp_comm, data->tp_send,
		   data->tp_reduced, TP_REDUCE_COUNT, ncclFloat32, ncclSum);
	all_gather(worker, worker->tp_comm, data->tp_shard, data->tp_gathered, TP_GATHER_COUNT,
		   ncclInt32);
}

static void check_tensor_parallel(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;

	for (size_t i = 0; i < TP_REDUCE_COUNT; i++) {
		double expected = 0;

		for (int member = 0; member < worker->tp; member++)
			expected += value_of(
				rank_at(worker, member, worker->dp_index, worker->stage), step, i);
		expect(worker, "tensor-parallel all-reduce", i, data->tp_reduced[i], expected);
	}
	for (int member = 0; member < worker->tp; member++) {
		int peer = rank_at(worker, member, worker->dp_index, worker->stage);

		for (size_t i = 0; i < TP_GATHER_COUNT; i++)
			expect(worker, "tensor-parallel all-gather",
			       (size_t)member * TP_GATHER_COUNT + i,
			       data->tp_gathered[(size_t)member * TP_GATHER_COUNT + i],
			       value_of(peer, step, i));
	}
}

/* Activations go down the pipeline, gradients come back: one group per direction. */
static void pipeline(struct worker *worker, int step, bool forward)
{
	struct buffers *data = worker->data;
	int next = worker->stage + (forward ? 1 : -1);
	int previous = worker->stage + (forward ? -1 : 1);
	float *out = forward ? data->activations_out : data->gradients_out;
	float *in = forward ? data->activations_in : data->gradients_in;

	for (size_t i = 0; i < PIPELINE_COUNT; i++)
		out[i] = (float)(value_of(worker->rank, step, i) + (forward ? 1000 : 2000));
	group_start(worker);
	if (next >= 0 && next < worker->pp)
		send_to(worker, worker->pp_comm, out, PIPELINE_COUNT, next);
	if (previous >= 0 && previous < worker->pp)
		receive_from(worker, worker->pp_comm, in, PIPELINE_COUNT, previous);
	group_end(worker);
}

static void check_pipeline(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;

	for (size_t i = 0; i < PIPELINE_COUNT; i++) {
		if (worker->stage > 0)
			expect(worker, "pipeline activations", i, data->activations_in[i],
			       value_of(rank_at(worker, worker->tp_index, worker->dp_index,
						worker->stage - 1),
					step, i) +
				       1000);
		if (worker->stage < worker->pp - 1)
			expect(worker, "pipeline gradients", i, data->gradients_in[i],
			       value_of(rank_at(worker, worker->tp_index, worker->dp_index,
						worker->stage + 1),
					step, i) +
				       2000);
	}
}

static void fill_buckets(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	int rank = worker->rank;

	for (size_t i = 0; i < BUCKET0_MAX + 1; i++)
		data->bucket0[i] = (float)value_of(rank, step, i);
	for (size_t i = 0; i < BUCKET1_COUNT; i++)
		data->bucket1[i] = value_of(rank, step, i);
	for (size_t i = 0; i < BUCKET2_COUNT; i++)
		data->bucket2[i] = (int64_t)rank * 100 + (int64_t)i + step;
	for (size_t i = 0; i < BUCKET3_COUNT; i++)
		data->bucket3[i] = (uint8_t)(((size_t)rank + i + (size_t)step) % 200);
	for (size_t i = 0; i < BUCKET4_COUNT; i++)
		data->bucket4[i] = (int32_t)(1 + ((size_t)rank + i) % 2);
}

/* ZeRO-style shard exchange, then gradient buckets reduced in place, as DDP does. */
static void data_parallel(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	ncclComm_t comm = worker->dp_comm;

	for (size_t i = 0; i < (size_t)worker->dp * SHARD_COUNT; i++)
		data->shards_send[i] = (float)value_of(worker->rank, step, i);
	for (size_t i = 0; i < SHARD_COUNT; i++)
		data->shard_params[i] = (float)(2 * value_of(worker->rank, step, i));
	reduce_scatter(worker, comm, data->shards_send, data->shard_reduced, SHARD_COUNT,
		       ncclFloat32, ncclSum);
	all_gather(worker, comm, data->shard_params, data->params_gathered, SHARD_COUNT,
		   ncclFloat32);
	fill_buckets(worker, step);
	if (worker->skipped)
		return;
	all_reduce(worker, comm, data->bucket0, data->bucket0,
		   (size_t)worker->options->bucket_elements + (worker->mismatched ? 1 : 0),
		   ncclFloat32, ncclSum);
	all_reduce(worker, comm, data->bucket1, data->bucket1, BUCKET1_COUNT, ncclFloat64, ncclAvg);
	if (!worker->skipped_replicated)
		all_reduce(worker, comm, data->bucket2, data->bucket2, BUCKET2_COUNT, ncclInt64,
			   ncclMax);
	all_reduce(worker, comm, data->bucket3, data->bucket3, BUCKET3_COUNT, ncclUint8, ncclMin);
	all_reduce(worker, comm, data->bucket4, data->bucket4, BUCKET4_COUNT,
		   worker->mismatched_datatype ? ncclUint32 : ncclInt32, ncclProd);
}

static void check_data_parallel(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;

	for (size_t i = 0; i < SHARD_COUNT; i++) {
		double reduced = 0;

		for (int member = 0; member < worker->dp; member++)
			reduced +=
				value_of(rank_at(worker, worker->tp_index, member, worker->stage),
					 step, (size_t)worker->dp_index * SHARD_COUNT + i);
		expect(worker, "data-parallel reduce-scatter", i, data->shard_reduced[i], reduced);
	}
	for (int member = 0; member < worker->dp; member++) {
		int peer = rank_at(worker, worker->tp_index, member, worker->stage);

		for (size_t i = 0; i < SHARD_COUNT; i++)
			expect(worker, "data-parallel all-gather", (size_t)member * SHARD_COUNT + i,
			       data->params_gathered[(size_t)member * SHARD_COUNT + i],
			       2 * value_of(peer, step, i));
	}
	for (size_t i = 0; i < (size_t)worker->options->bucket_elements; i++) {
		double sum = 0;

		for (int member = 0; member < worker->dp; member++)
			sum += value_of(rank_at(worker, worker->tp_index, member, worker->stage),
					step, i);
		expect(worker, "bucket 0 (float32 sum)", i, data->bucket0[i], sum);
		if (i < BUCKET1_COUNT)
			expect(worker, "bucket 1 (float64 avg)", i, data->bucket1[i],
			       sum / worker->dp);
	}
	for (size_t i = 0; i < BUCKET2_COUNT; i++) {
		int highest = rank_at(worker, worker->tp_index, worker->dp - 1, worker->stage);

		expect(worker, "bucket 2 (int64 max)", i, (double)data->bucket2[i],
		       (double)highest * 100 + (double)i + step);
	}
	for (size_t i = 0; i < BUCKET3_COUNT; i++) {
		unsigned lowest = 255;
		double product = 1;

		for (int member = 0; member < worker->dp; member++) {
			size_t peer =
				(size_t)rank_at(worker, worker->tp_index, member, worker->stage);
			unsigned value = (unsigned)((peer + i + (size_t)step) % 200);

			lowest = value < lowest ? value : lowest;
			if (i < BUCKET4_COUNT)
				product *= (double)(1 + (peer + i) % 2);
		}
		expect(worker, "bucket 3 (uint8 min)", i, data->bucket3[i], lowest);
		if (i < BUCKET4_COUNT)
			expect(worker, "bucket 4 (int32 prod)", i, data->bucket4[i], product);
	}
}

/*
 * The gradient-norm and metrics all-reduces over the world, every step, after the data-parallel
 * ones and on the same stream: a rank that skipped those blocks here instead of running ahead.
 */
static void world_reductions(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	bool skip_norm = worker->skipped && worker->dp == 1;
	bool longer_norm = worker->mismatched && worker->dp == 1;

	data->grad_norm[0] = worker->rank + 1 + step;
	data->grad_norm[1] = 0;
	for (size_t i = 0; i < METRICS_COUNT; i++)
		data->metrics[i] = (float)(worker->rank + (int)i);
	if (!skip_norm)
		all_reduce(worker, worker->world, data->grad_norm, data->grad_norm,
			   longer_norm ? 2 : 1, ncclFloat64, ncclSum);
	all_reduce(worker, worker->world, data->metrics, data->metrics, METRICS_COUNT, ncclFloat32,
		   ncclMax);
	if (worker->log_comm) {
		data->loss = (float)(worker->rank + step);
		all_reduce(worker, worker->log_comm, &data->loss, &data->loss, 1, ncclFloat32,
			   ncclSum);
	}
}

static void check_world_reductions(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;
	double world = worker->world_size;
	double loss = 0;

	expect(worker, "grad-norm all-reduce", 0, data->grad_norm[0],
	       world * (world + 1) / 2 + world * step);
	for (size_t i = 0; i < METRICS_COUNT; i++)
		expect(worker, "metrics all-reduce (float32 max)", i, data->metrics[i],
		       world - 1 + (double)i);
	if (!worker->log_comm)
		return;
	for (int stage = 0; stage < worker->pp; stage++)
		for (int member = 0; member < worker->dp; member++)
			loss += rank_at(worker, 0, member, stage) + step;
	expect(worker, "logging-group all-reduce", 0, data->loss, loss);
}

static void world_collectives(struct worker *worker, int step)
{
	struct buffers *data = worker->data;
	int world = worker->world_size;
	int rank = worker->rank;
	int broadcast_root = step % world;
	int bcast_root = (step + 1) % world;
	int reduce_root = (step + 2) % world;

	for (int i = 0; i < BROADCAST_COUNT; i++)
		data->broadcast_send[i] = (int64_t)rank * 1000 + i + step;
	for (int i = 0; i < BCAST_COUNT; i++)
		data->bcast[i] = rank == bcast_root ? rank * 100 + i + step : -1;
	for (size_t i = 0; i < REDUCE_COUNT; i++)
		data->reduce_send[i] = (float)value_of(rank, step, i);
	for (int peer = 0; peer < world; peer++)
		for (int i = 0; i < ALL_TO_ALL_COUNT; i++)
			data->all_to_all_send[peer * ALL_TO_ALL_COUNT + i] =
				rank * 1000 + peer * 10 + i;
	for (int i = 0; i < GATHER_COUNT; i++)
		data->gather_send[i] = (int64_t)rank * 10 + i + step;
	for (int peer = 0; peer < world; peer++)
		for (int i = 0; i < SCATTER_COUNT; i++)
			data->scatter_send[peer * SCATTER_COUNT + i] = peer * 100 + i + step;

	broadcast(worker, worker->world, data->broadcast_send, data->broadcast_recv,
		  BROADCAST_COUNT, ncclInt64, broadcast_root);
	bcast(worker, worker->world, data->bcast, BCAST_COUNT, ncclInt32, bcast_root);
	reduce(worker, worker->world, data->reduce_send, data->reduce_recv, REDUCE_COUNT,
	       ncclFloat32, ncclSum, reduce_root);
	all_to_all(worker, worker->world, data->all_to_all_send, data->all_to_all_recv,
		   ALL_TO_ALL_COUNT, ncclInt32);
	gather(worker, worker->world, data->gather_send, data->gather_recv, GATHER_COUNT, ncclInt64,
	       0);
	scatter(worker, worker->world, data->scatter_send, data->scatter_recv, SCATTER_COUNT,
		ncclInt32, world - 1);
}

static void check_world_collectives(const struct worker *worker, int step)
{
	const struct buffers *data = worker->data;
	int world = worker->world_size;
	int rank = worker->rank;
	int broadcast_root = step % world;
	int bcast_root = (step + 1) % world;
	int reduce_root = (step + 2) % world;

	for (int i = 0; i < BROADCAST_COUNT; i++)
		expect(worker, "broadcast", (size_t)i, (double)data->broadcast_recv[i],
		       (double)broadcast_root * 1000 + i + step);
	for (int i = 0; i < BCAST_COUNT; i++)
		expect(worker, "bcast", (size_t)i, data->bcast[i], bcast_root * 100 + i + step);
	for (size_t i = 0; i < REDUCE_COUNT && rank == reduce_root; i++) {
		double sum = 0;

		for (int peer = 0; peer < world; peer++)
			sum += value_of(peer, step, i);
		expect(worker, "reduce", i, data->reduce_recv[i], sum);
	}
	for (int peer = 0; peer < world; peer++)
		for (int i = 0; i < ALL_TO_ALL_COUNT; i++)
			expect(worker, "all-to-all", (size_t)(peer * ALL_TO_ALL_COUNT + i),
			       data->all_to_all_recv[peer * ALL_TO_ALL_COUNT + i],
			       peer * 1000 + rank * 10 + i);
	for (int peer = 0; peer < world && rank == 0; peer++)
		for (int i = 0; i < GATHER_COUNT; i++)
			expect(worker, "gather", (size_t)(peer * GATHER_COUNT + i),
			       (double)data->gather_recv[peer * GATHER_COUNT + i],
			       peer * 10 + i + step);
	for (int i = 0; i < SCATTER_COUNT; i++)
		expect(worker, "scatter", (size_t)i, data->scatter_recv[i], rank * 100 + i + step);
}

/* The --extra-call fault: a message to itself, which needs no other rank. */
static void echo_to_self(struct worker *worker)
{
	struct buffers *data = worker->data;

	for (size_t i = 0; i < METRICS_COUNT; i++)
		data->echo_out[i] = (float)(worker->rank * 10 + (int)i);
	group_start(worker);
	send_to(worker, worker->world, data->echo_out, METRICS_COUNT, worker->rank);
	receive_from(worker, worker->world, data->echo_in, METRICS_COUNT, worker->rank);
	group_end(worker);
}

static void write_progress(const struct worker *worker, int step)
{
	char path[PATH_MAX];
	char text[32];
	int length;

	snprintf(path, sizeof(path), "%s/rank-%d.progress", worker->options->log_dir, worker->rank);
	length = snprintf(text, sizeof(text), "%d\n", step);
	if (write_file_atomically(path, text, (size_t)length) < 0)
		die(worker, 1, "cannot write a file in the log directory");
}

/*
 * The --delay fault: the ground truth goes to rank-R.fault before the
 * rank waits, so a hang still leaves it.
 */
void inject_delay(const struct worker *worker, int step, enum delay_position position)
{
	const struct delay *delay = &worker->options->delay;
	char path[PATH_MAX], text[256];
	int length;

	if (delay->rank != worker->rank || delay->step != step || delay->position != position)
		return;
	length = snprintf(text, sizeof(text),
			  "{\"rank\":%d,\"step\":%d,\"where\":\"%s\",\"delay_ms\":%ld,"
			  "\"start_ns\":%llu}\n",
			  worker->rank, step, delay_position_names[position], delay->ms,
			  (unsigned long long)now_ns());
	snprintf(path, sizeof(path), "%s/rank-%d.fault", worker->options->log_dir, worker->rank);
	if (write_file_atomically(path, text, (size_t)length) < 0)
		die(worker, 1, "cannot write a file in the log directory");
	if (!delay->ms)
		for (;;)
			pause();
	sleep_ns(delay->ms * 1000000L);
}

/* The --crash fault: the ground truth first, then a write through a null pointer. */
static void crash(const struct worker *worker, int step)
{
	char path[PATH_MAX], text[256];
	int length = snprintf(text, sizeof(text),
			      "{\"rank\":%d,\"step\":%d,\"where\":\"crash\",\"signal\":\"SIGSEGV\","
			      "\"start_ns\":%llu}\n",
			      worker->rank, step, (unsigned long long)now_ns());
	volatile uintptr_t nowhere = 0; /* opaque to the compiler: a real fault, not a raise() */

	snprintf(path, sizeof(path), "%s/rank-%d.fault", worker->options->log_dir, worker->rank);
	if (write_file_atomically(path, text, (size_t)length) < 0)
		die(worker, 1, "cannot write a file in the log directory");
	/* The fault asked for: a real invalid write, as a bug in native code makes. */
	/* cppcheck-suppress nullPointer */
	*(volatile int *)nowhere = step;
}

void run_step(struct worker *worker, int step)
{
	const struct options *options = worker->options;
	ncclResult_t async_error = ncclSuccess;
	ncclResult_t ret;

	worker->log.step = step;
	worker->skipped = options->skip.rank == worker->rank && options->skip.step == step;
	worker->mismatched =
		options->mismatch.rank == worker->rank && options->mismatch.step == step;
	worker->mismatched_datatype = options->mismatch_datatype.rank == worker->rank &&
				      options->mismatch_datatype.step == step;
	worker->skipped_replicated = options->skip_replicated.rank == worker->rank &&
				     options->skip_replicated.step == step;
	worker->extra_call =
		options->extra_call.rank == worker->rank && options->extra_call.step == step;
	worker->wrong_comm = options->wrong_comm_step == step && worker->tp > 1 && worker->dp > 1;
	worker->world_collectives = step % WORLD_COLLECTIVE_PERIOD == 0;
	if (options->crash.rank == worker->rank && options->crash.step == step)
		crash(worker, step);
	if (options->stall.rank == worker->rank && options->stall.step == step) {
		fprintf(stderr, "nccl-workload: rank %d stalls at step %d\n", worker->rank, step);
		for (;;)
			pause();
	}
	if (worker->skipped)
		fprintf(stderr, "nccl-workload: rank %d skips its gradient all-reduce at step %d\n",
			worker->rank, step);

	if (checkpoint_pause_run(&options->checkpoint, options->log_dir, worker->rank, step) < 0)
		die(worker, 1, "cannot write a checkpoint in the log directory");
	inject_delay(worker, step, DELAY_FORWARD);
	compute(worker);
	if (worker->tp > 1)
		tensor_parallel(worker, step);
	if (worker->pp > 1)
		pipeline(worker, step, true);
	inject_delay(worker, step, DELAY_BACKWARD);
	compute(worker);
	inject_delay(worker, step, DELAY_SEND);
	if (worker->pp > 1)
		pipeline(worker, step, false);
	if (worker->dp > 1)
		data_parallel(worker, step);
	inject_delay(worker, step, DELAY_COLLECTIVE);
	world_reductions(worker, step);
	if (worker->world_collectives)
		world_collectives(worker, step);
	if (worker->extra_call)
		echo_to_self(worker);

	ret = ncclCommGetAsyncError(worker->world, &async_error);
	ground_truth_async_error(&worker->log, ret, worker->world, &async_error);
	check_call(worker, "ncclCommGetAsyncError", ret);
	check_call(worker, "an earlier operation (ncclCommGetAsyncError)", async_error);
	ret = doubleStreamSynchronize(worker->stream);
	check_call(worker, "an operation of this step (doubleStreamSynchronize)", ret);

	/* The wrong group reduced other ranks' values: nothing to compare with. */
	if (worker->tp > 1 && !worker->wrong_comm)
		check_tensor_parallel(worker, step);
	if (worker->pp > 1)
		check_pipeline(worker, step);
	if (worker->dp > 1 && !worker->skipped)
		check_data_parallel(worker, step);
	if (!worker->skipped)
		check_world_reductions(worker, step);
	if (worker->world_collectives)
		check_world_collectives(worker, step);
	for (size_t i = 0; worker->extra_call && i < METRICS_COUNT; i++)
		expect(worker, "send to self", i, worker->data->echo_in[i],
		       worker->data->echo_out[i]);
	fflush(worker->log.file);
	if (options->step_sleep_ms)
		sleep_ns(options->step_sleep_ms * 1000000L);
	write_progress(worker, step);
}
