// SPDX-License-Identifier: MIT
/* The command line of nccl-workload: its options, the fault switches and their checks. */
#include <errno.h>
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

const char *const delay_position_names[DELAY_POSITIONS] = { "forward", "backward", "collective",
							    "send", "init" };

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nccl-workload --log-dir DIR [--ranks N] [--steps S] [--tp T] [--pp P]\n"
		"                     [--compute-us U] [--step-sleep-ms M] [--skip-collective "
		"R:K]\n"
		"                     [--stall R:K] [--crash R:K] [--slow R:F] [--mismatch-count "
		"R:K]\n"
		"                     [--mismatch-datatype R:K] [--skip-replicated R:K]\n"
		"                     [--wrong-comm K] [--extra-call R:K] [--bucket-elements N]\n"
		"                     [--wait-file PATH] [--stop-file PATH] [--spawn]\n"
		"Runs N rank processes of a training-like job over libnccl.so.2 and writes\n"
		"DIR/rank-R.jsonl (every NCCL call made, as JSON lines) and DIR/rank-R.progress\n"
		"(the last finished step). Defaults: N=4 S=10 U=200 M=0; T=2 and P=2 where N "
		"allows.\n"
		"  --skip-collective R:K  rank R skips the data-parallel gradient all-reduces of\n"
		"                         step K (the world grad-norm all-reduce when dp is 1)\n"
		"  --stall R:K            rank R sleeps for ever at the start of step K\n"
		"  --crash R:K            rank R writes through a null pointer (SIGSEGV) at the\n"
		"                         start of step K, after writing rank-R.fault\n"
		"  --slow R:F             rank R computes F times longer\n"
		"  --delay R:K:WHERE:MS   rank R waits MS ms (0: for ever) at step K, WHERE is\n"
		"                         forward, backward, collective, send, or init (before\n"
		"                         ncclCommInitRank; K 0); the rank\n"
		"                         writes what it injected to rank-R.fault first\n"
		"  --checkpoint R:N:MS    rank R writes a checkpoint file for MS ms at the start\n"
		"                         of every N-th step (a healthy pause), logged to\n"
		"                         DIR/rank-R.checkpoints\n"
		"  --mismatch-count R:K   rank R passes count+1 to one gradient all-reduce of step "
		"K\n"
		"  --bucket-elements N    gradient bucket 0 (a float32 data-parallel all-reduce)\n"
		"                         has N elements (333-4096; default 1000)\n"
		"  --mismatch-datatype R:K  rank R reduces the int32 gradient bucket of step K as\n"
		"                         uint32 (same size: silent)\n"
		"  --skip-replicated R:K  rank R skips the all-reduce of one bucket of replicated\n"
		"                         parameters at step K: its next call takes its place\n"
		"  --wrong-comm K         at step K every rank issues its tensor-parallel "
		"all-reduce\n"
		"                         on the data-parallel communicator\n"
		"  --extra-call R:K       rank R makes one call more at step K: it sends its "
		"metrics\n"
		"                         to itself and receives them (ncclSend and ncclRecv in a\n"
		"                         group on the world communicator), which no other rank\n"
		"                         waits for\n"
		"  --wait-file PATH       ranks wait for PATH to exist before their first NCCL "
		"call\n"
		"  --stop-file PATH       once PATH holds a step number K, ranks stop after\n"
		"                         step K (read before every step: all ranks stop after\n"
		"                         the same step when K lies ahead of each; write it\n"
		"                         atomically)\n"
		"  --spawn                ranks get no RANK, LOCAL_RANK nor WORLD_SIZE in their\n"
		"                         environment, as torch.multiprocessing.spawn's workers\n"
		"Example: nccl-workload --ranks 8 --steps 20 --log-dir /tmp/job\n");
}

/* "RANK:STEP" for the fault switches. */
static bool parse_rank_step(const char *text, void *value)
{
	struct rank_step *switch_value = value;
	const char *colon = strchr(text, ':');
	char rank_text[32];
	long rank, step;

	if (!colon || (size_t)(colon - text) >= sizeof(rank_text))
		return false;
	memcpy(rank_text, text, (size_t)(colon - text));
	rank_text[colon - text] = '\0';
	if (!parse_int(rank_text, 0, INT_MAX, &rank) || !parse_int(colon + 1, 0, INT_MAX, &step))
		return false;
	switch_value->rank = (int)rank;
	switch_value->step = (int)step;
	return true;
}

/* "RANK:STEP:POSITION:MS" for --delay. */
static bool parse_delay(const char *text, void *value)
{
	struct delay *delay = value;
	char position[16];
	int consumed = 0;

	if (sscanf(text, "%d:%d:%15[a-z]:%ld%n", &delay->rank, &delay->step, position, &delay->ms,
		   &consumed) != 4 ||
	    text[consumed] || delay->rank < 0 || delay->step < 0 || delay->ms < 0)
		return false;
	for (int i = 0; i < DELAY_POSITIONS; i++)
		if (strcmp(position, delay_position_names[i]) == 0) {
			delay->position = (enum delay_position)i;
			return true;
		}
	return false;
}

/* "RANK:FACTOR" for --slow. */
static bool parse_slow(const char *text, void *value)
{
	struct options *options = value;
	const char *colon = strchr(text, ':');
	char rank_text[32];
	char *end;
	long rank;

	if (!colon || (size_t)(colon - text) >= sizeof(rank_text))
		return false;
	memcpy(rank_text, text, (size_t)(colon - text));
	rank_text[colon - text] = '\0';
	options->slow_factor = strtod(colon + 1, &end);
	if (!parse_int(rank_text, 0, INT_MAX, &rank) || end == colon + 1 || *end != '\0' ||
	    !(options->slow_factor > 0))
		return false;
	options->slow_rank = (int)rank;
	return true;
}

static bool parse_checkpoint(const char *text, void *value)
{
	return parse_checkpoint_pause(text, value);
}

int parse_options(int argc, char **argv, struct options *options)
{
	const struct program_option table[] = {
		{ "ranks", PROGRAM_OPTION_INT, &options->ranks, 1, DOUBLE_MAX_RANKS },
		{ "steps", PROGRAM_OPTION_INT, &options->steps, 0, INT_MAX },
		{ "log-dir", PROGRAM_OPTION_TEXT, &options->log_dir },
		{ "tp", PROGRAM_OPTION_INT, &options->tp, 1, DOUBLE_MAX_RANKS },
		{ "pp", PROGRAM_OPTION_INT, &options->pp, 1, DOUBLE_MAX_RANKS },
		{ "compute-us", PROGRAM_OPTION_LONG, &options->compute_us, 0, 10000000 },
		{ "step-sleep-ms", PROGRAM_OPTION_LONG, &options->step_sleep_ms, 0, 3600000 },
		{ "skip-collective", PROGRAM_OPTION_PARSED, &options->skip,
		  .parse = parse_rank_step },
		{ "stall", PROGRAM_OPTION_PARSED, &options->stall, .parse = parse_rank_step },
		{ "crash", PROGRAM_OPTION_PARSED, &options->crash, .parse = parse_rank_step },
		{ "slow", PROGRAM_OPTION_PARSED, options, .parse = parse_slow },
		{ "delay", PROGRAM_OPTION_PARSED, &options->delay, .parse = parse_delay },
		{ "checkpoint", PROGRAM_OPTION_PARSED, &options->checkpoint,
		  .parse = parse_checkpoint },
		{ "mismatch-count", PROGRAM_OPTION_PARSED, &options->mismatch,
		  .parse = parse_rank_step },
		{ "mismatch-datatype", PROGRAM_OPTION_PARSED, &options->mismatch_datatype,
		  .parse = parse_rank_step },
		{ "skip-replicated", PROGRAM_OPTION_PARSED, &options->skip_replicated,
		  .parse = parse_rank_step },
		{ "wrong-comm", PROGRAM_OPTION_INT, &options->wrong_comm_step, 0, INT_MAX },
		{ "extra-call", PROGRAM_OPTION_PARSED, &options->extra_call,
		  .parse = parse_rank_step },
		/* At least bucket 1's size: its check walks bucket 0's elements. */
		{ "bucket-elements", PROGRAM_OPTION_INT, &options->bucket_elements, BUCKET1_COUNT,
		  BUCKET0_MAX },
		{ "wait-file", PROGRAM_OPTION_TEXT, &options->wait_file },
		{ "stop-file", PROGRAM_OPTION_TEXT, &options->stop_file },
		{ "spawn", PROGRAM_OPTION_FLAG, &options->spawned },
		{ "worker", PROGRAM_OPTION_FLAG, &options->worker },
	};

	*options = (struct options){
		.ranks = 4,
		.steps = 10,
		.compute_us = 200,
		.skip = { -1, -1 },
		.stall = { -1, -1 },
		.crash = { -1, -1 },
		.mismatch = { -1, -1 },
		.mismatch_datatype = { -1, -1 },
		.skip_replicated = { -1, -1 },
		.extra_call = { -1, -1 },
		.wrong_comm_step = -1,
		.bucket_elements = BUCKET0_COUNT,
		.slow_rank = -1,
		.slow_factor = 1.0,
		.delay = { .rank = -1, .step = -1 },
		.checkpoint = { .rank = -1 },
	};
	if (program_options_parse("nccl-workload", argc, argv, table,
				  sizeof(table) / sizeof(table[0]), usage))
		return -1;
	if (!options->log_dir) {
		usage(stderr);
		return -1;
	}
	/* Defaults that make the tensor-, pipeline- and data-parallel groups real where N allows.
	 */
	if (!options->tp)
		options->tp = options->ranks % 2 == 0 ? 2 : 1;
	if (!options->pp)
		options->pp = options->ranks % (options->tp * 2) == 0 ? 2 : 1;
	if (options->ranks % (options->tp * options->pp) != 0) {
		fprintf(stderr, "nccl-workload: --ranks %d is not a multiple of tp %d x pp %d\n",
			options->ranks, options->tp, options->pp);
		return -1;
	}
	return 0;
}
