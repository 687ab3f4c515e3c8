// SPDX-License-Identifier: MIT
/*
 * `tcheck-bpf check`: finds hangs, slowdowns and mismatches in traces after the fact.
 * Traces of several hosts are merged in time order on their clock anchors
 * (each host's CLOCK_MONOTONIC mapped to CLOCK_REALTIME), so a job spread
 * over nodes is judged as one. Further checks join as more passes over
 * the same merged stream.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "base/log.h"
#include "base/number_parse.h"
#include "cli/commands.h"
#include "diagnose/flight_recorder.h"
#include "diagnose/job_diagnosis.h"
#include "trace/trace_losses.h"
#include "trace/trace_reader.h"

static const char check_help[] =
	"Usage: tcheck-bpf check TRACE... [--json] [--hang-factor N] [--hang-min-seconds S]\n"
	"                        [--hang-startup-seconds S] [--hang-stall-seconds S]\n"
	"                        [--slowdown-threshold R]\n"
	"                        [--warmup-steps N] [--alpha R] [--beta R]\n"
	"       tcheck-bpf check --rules RULES TRACE... [--jsonl FILE]\n"
	"\n"
	"With --rules, checks the traces against invariants learned by tcheck-bpf\n"
	"infer instead ('tcheck-bpf check --rules x --help' has the details).\n"
	"\n"
	"Finds hangs, slowdowns and mismatches in traces. Traces of several hosts,\n"
	"and the pieces of one recording (record --max-size), are merged on their\n"
	"clock anchors. Calls are NCCL's and, in traces recorded\n"
	"with --python, PyTorch's c10d collectives (c10d::allreduce, ...).\n"
	"The step is the period of each communicator's\n"
	"collective pattern; its expected time is learned after the warm-up steps.\n"
	"A communicator without a new call for N expected steps is a hang: the report\n"
	"names the collective and sequence number it is stuck at, the ranks that never\n"
	"issued it and what they last did. A step that runs more than R - 1 expected\n"
	"steps late at a collective because one rank came late is a slowdown: the\n"
	"report names the straggler rank and where the time went.\n"
	"Before the step is learned, a rank left behind for 10 s is a hang. With\n"
	"--python traces, processes that stopped stepping (and make no call at all)\n"
	"are a hang too, with no collective to wait on. Ranks\n"
	"whose calls at one collective differ in function or element count are a\n"
	"mismatch: the report names the odd rank when all the others agree. A\n"
	"process that died of a signal or exited with a non-zero status is a crash:\n"
	"the report gives how, its step, its last calls and where every other rank\n"
	"of its communicators stood.\n"
	"\n"
	"Options:\n"
	"      --json                   JSON Lines findings on standard output\n"
	"      --hang-factor N          expected steps without progress (default 2)\n"
	"      --hang-min-seconds S     and at least this long (default 1)\n"
	"      --hang-startup-seconds S before the step is learned (communicator\n"
	"                               creation, the first steps): a rank left\n"
	"                               behind this long is a hang (default 10)\n"
	"      --hang-stall-seconds S   processes that stopped stepping, with no call\n"
	"                               in flight, silent this long (and N times\n"
	"                               their longest step) are a hang (default 30)\n"
	"      --flight-calls N         last calls a crash report gives per process\n"
	"                               (default 16, at most 256)\n"
	"      --slowdown-threshold R   slow step ratio, the same as --beta (default 1.4)\n"
	"      --beta R                 the same as --slowdown-threshold\n"
	"      --alpha R                steps within this ratio update the expected\n"
	"                               time (default 1.15)\n"
	"      --warmup-steps N         steps not learned from (default 2)\n"
	"  -h, --help                   this text\n"
	"\n" EXIT_STATUS_HELP "\n"
	"Examples:\n"
	"  tcheck-bpf check job.trace\n"
	"  tcheck-bpf check node0.trace node1.trace --json | jq 'select(.kind == \"hang\")'\n";

/* One trace being merged: its reader, its next record, and its clock shift. */
struct merged_trace {
	const char *path;
	struct trace_reader *reader;
	struct trace_record next;
	uint64_t next_ns;
	int64_t shift_ns;
	int ended;
};

/*
 * The merge clock: records written in time order (NCCL calls, stats) move
 * it; those written at their end (a Python call, after its callees) leave it.
 */
static uint64_t merge_clock(const struct trace_record *record, uint64_t previous_ns)
{
	if (record->kind == TRACE_RECORD_NCCL_CALL || record->kind == TRACE_RECORD_STATS)
		return trace_record_time(record);
	return previous_ns;
}

/* Reads the trace's next record. Returns 0, or -1 after saying why the trace is unreadable. */
static int advance(struct merged_trace *trace)
{
	int result = trace_reader_next(trace->reader, &trace->next);

	if (result < 0) {
		log_error("%s", trace_reader_error(trace->reader));
		return -1;
	}
	if (result == 0) {
		trace->ended = 1;
		trace_incomplete_warn(trace->reader);
		return 0;
	}
	trace->next_ns = merge_clock(&trace->next, trace->next_ns);
	return 0;
}

/*
 * The calls the traces hold open (never returned: written when recording
 * stopped, or when their thread ended), handed to the detectors at their
 * entry as the live detectors see calls in flight, not at the end of the
 * file where they are written. So are the calls that lasted longer than
 * the live detectors' longest tick (a rank waiting in a blocking
 * collective, a gloo all-reduce whose work waits for a late rank): live,
 * they were seen in flight from their entry; their own record, when it
 * comes, ends them, as it does live.
 */
struct open_calls {
	struct trace_reader **readers; /* kept open: the records point into them */
	struct trace_record *records;
	int64_t *shifts;
	size_t count, capacity, next;
	size_t shift_capacity;
};

static int add_open_call(struct open_calls *open, const struct trace_record *record,
			 int64_t shift_ns)
{
	if (growable_array_room_for_one((void **)&open->records, open->count, &open->capacity,
					sizeof(*open->records)) ||
	    growable_array_room_for_one((void **)&open->shifts, open->count, &open->shift_capacity,
					sizeof(*open->shifts)))
		return -1;
	open->records[open->count] = *record;
	open->shifts[open->count++] = shift_ns;
	return 0;
}

/* Live, the detectors tick every 100 ms at most: a call longer than that was seen in flight. */
#define SEEN_IN_FLIGHT_NS 100000000ULL

/* Whether a call is handed to the detectors at its entry, as in flight. */
static bool seen_in_flight(const struct trace_record *record)
{
	return record->kind == TRACE_RECORD_NCCL_CALL &&
	       ((record->call.flags & TRACE_CALL_OPEN) ||
		record->call.duration_ns >= SEEN_IN_FLIGHT_NS);
}

/* A first pass over each trace for its calls in flight. 0, or -1 after saying why. */
static int find_open_calls(struct merged_trace *traces, int count, struct open_calls *open)
{
	char error[512];

	open->readers = calloc((size_t)count, sizeof(*open->readers));
	if (!open->readers)
		return -1;
	for (int i = 0; i < count; i++) {
		struct trace_record record;

		open->readers[i] = trace_reader_open(traces[i].path, error, sizeof(error));
		if (!open->readers[i]) {
			log_error("%s", error);
			return -1;
		}
		/* A trace that cannot be read to its end is reported by the main pass. */
		while (trace_reader_next(open->readers[i], &record) > 0) {
			if (!seen_in_flight(&record))
				continue;
			if (!(record.call.flags & TRACE_CALL_OPEN)) {
				record.call.flags |= TRACE_CALL_OPEN;
				record.call.duration_ns = 0;
			}
			if (add_open_call(open, &record, traces[i].shift_ns)) {
				log_error("out of memory");
				return -1;
			}
		}
	}
	/* Few, and in the order their threads were seen: sorted by entry, simply. */
	for (size_t a = 1; a < open->count; a++)
		for (size_t b = a;
		     b > 0 &&
		     (int64_t)open->records[b].call.entry_ns + open->shifts[b] <
			     (int64_t)open->records[b - 1].call.entry_ns + open->shifts[b - 1];
		     b--) {
			struct trace_record record = open->records[b];
			int64_t shift = open->shifts[b];

			open->records[b] = open->records[b - 1];
			open->shifts[b] = open->shifts[b - 1];
			open->records[b - 1] = record;
			open->shifts[b - 1] = shift;
		}
	return 0;
}

/* Hands the detectors the open calls entered by 'until_ns' (all with UINT64_MAX). */
static void enter_open_calls(struct open_calls *open, uint64_t until_ns,
			     struct job_diagnosis *diagnosis)
{
	while (open->next < open->count &&
	       (int64_t)open->records[open->next].call.entry_ns + open->shifts[open->next] <=
		       (int64_t)until_ns) {
		job_diagnosis_record(diagnosis, &open->records[open->next],
				     open->shifts[open->next]);
		open->next++;
	}
}

static void free_open_calls(struct open_calls *open, int count)
{
	for (int i = 0; open->readers && i < count; i++)
		if (open->readers[i])
			trace_reader_close(open->readers[i]);
	free(open->readers);
	free(open->records);
	free(open->shifts);
}

static int run_merged(struct merged_trace *traces, int count, struct job_diagnosis *diagnosis,
		      struct open_calls *open)
{
	for (int i = 0; i < count; i++)
		if (advance(&traces[i]))
			return -1;
	for (;;) {
		struct merged_trace *earliest = NULL;

		for (int i = 0; i < count; i++) {
			struct merged_trace *trace = &traces[i];

			if (trace->ended)
				continue;
			if (!earliest || (int64_t)trace->next_ns + trace->shift_ns <
						 (int64_t)earliest->next_ns + earliest->shift_ns)
				earliest = trace;
		}
		if (!earliest) {
			enter_open_calls(open, UINT64_MAX, diagnosis);
			return 0;
		}
		enter_open_calls(open, (uint64_t)((int64_t)earliest->next_ns + earliest->shift_ns),
				 diagnosis);
		job_diagnosis_record(diagnosis, &earliest->next, earliest->shift_ns);
		if (advance(earliest))
			return -1;
	}
}

static int parse_options(int argc, char **argv, struct progress_options *options, int *json)
{
	static const struct option long_options[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "hang-factor", required_argument, NULL, 'n' },
		{ "hang-min-seconds", required_argument, NULL, 'm' },
		{ "hang-startup-seconds", required_argument, NULL, 's' },
		{ "hang-stall-seconds", required_argument, NULL, 'g' },
		{ "flight-calls", required_argument, NULL, 'f' },
		{ "slowdown-threshold", required_argument, NULL, 'b' },
		{ "beta", required_argument, NULL, 'b' },
		{ "alpha", required_argument, NULL, 'a' },
		{ "warmup-steps", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	double number;
	int option;

	optind = 1;
	while ((option = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		switch (option) {
		case 'j':
			*json = 1;
			break;
		case 'n':
			if (parse_positive_number("--hang-factor", optarg, NUMBER_MAX_FACTOR,
						  &options->hang_factor))
				return 2;
			break;
		case 'm':
			/* 0 is allowed: hang_factor steps alone. */
			if (parse_seconds("--hang-min-seconds", optarg, true, &number))
				return 2;
			options->hang_min_ns = number * 1e9;
			break;
		case 'f':
			if (parse_whole_number("--flight-calls", optarg, 1, FLIGHT_CALLS_MAX,
					       &number))
				return 2;
			options->flight_calls = (unsigned)number;
			break;
		case 's':
			if (parse_seconds("--hang-startup-seconds", optarg, false, &number))
				return 2;
			options->hang_unlearned_ns = number * 1e9;
			break;
		case 'g':
			if (parse_seconds("--hang-stall-seconds", optarg, false, &number))
				return 2;
			options->stall_min_ns = number * 1e9;
			break;
		case 'b':
			if (parse_positive_number("--slowdown-threshold", optarg, NUMBER_MAX_FACTOR,
						  &options->slowdown_threshold))
				return 2;
			break;
		case 'a':
			if (parse_positive_number("--alpha", optarg, NUMBER_MAX_FACTOR,
						  &options->alpha))
				return 2;
			break;
		case 'w':
			/* 0 is allowed: learn from the first step. */
			if (parse_whole_number("--warmup-steps", optarg, 0, 1e9, &number))
				return 2;
			options->warmup_steps = (unsigned)number;
			break;
		case 'h':
			fputs(check_help, stdout);
			return 0;
		default:
			fputs(check_help, stderr);
			return 2;
		}
	}
	if (options->alpha >= options->slowdown_threshold) {
		log_error("--alpha (%.2f) must be below --slowdown-threshold (%.2f): a slow step "
			  "must not update the expected step time",
			  options->alpha, options->slowdown_threshold);
		return 2;
	}
	if (optind >= argc) {
		log_error("check needs at least one trace file (see tcheck-bpf check --help)");
		return 2;
	}
	if (argc - optind > MAX_TRACES) {
		log_error("check takes at most %d traces at once", MAX_TRACES);
		return 2;
	}
	return -1;
}

/*
 * Traces of one boot of one host (one trace, or the pieces of a recording
 * cut by --max-size) share CLOCK_MONOTONIC: read as it is, with the first
 * trace's anchor for wall-clock times. Traces of several hosts are read on
 * CLOCK_REALTIME through each one's anchor.
 */
static void share_one_clock(struct merged_trace *traces, int count, struct job_diagnosis *diagnosis)
{
	const char *boot_id = trace_reader_header(traces[0].reader)->boot_id;
	int64_t wall_offset_ns = traces[0].shift_ns;

	for (int i = 1; i < count; i++)
		if (!boot_id[0] ||
		    strcmp(trace_reader_header(traces[i].reader)->boot_id, boot_id) != 0) {
			job_diagnosis_set_wall_clock(diagnosis, 0);
			return;
		}
	for (int i = 0; i < count; i++)
		traces[i].shift_ns = 0;
	job_diagnosis_set_wall_clock(diagnosis, wall_offset_ns);
}

int command_check(int argc, char **argv)
{
	struct progress_options options;
	struct merged_trace *traces;
	struct open_calls open = { 0 };
	struct job_diagnosis *diagnosis;
	int json = 0, status, count;
	unsigned found;
	char error[512];

	/* With a rules file, check is the invariant checker (tcheck-bpf infer's rules). */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--rules") == 0 || strncmp(argv[i], "--rules=", 8) == 0)
			return command_check_rules(argc, argv);
	progress_options_default(&options);
	status = parse_options(argc, argv, &options, &json);
	if (status >= 0)
		return status;
	count = argc - optind;
	if (trace_paths_distinct(argv + optind, count, error, sizeof(error))) {
		log_error("%s", error);
		return EXIT_BAD_INPUT;
	}
	traces = calloc((size_t)count, sizeof(*traces));
	diagnosis = job_diagnosis_new(&options, json ? NULL : stdout, json ? stdout : NULL);
	if (!traces || !diagnosis) {
		log_error("out of memory");
		free(traces);
		job_diagnosis_free(diagnosis);
		return EXIT_FAILED;
	}
	status = 0;
	for (int i = 0; i < count && !status; i++) {
		const struct trace_header *header;

		traces[i].path = argv[optind + i];
		traces[i].reader = trace_reader_open(traces[i].path, error, sizeof(error));
		if (!traces[i].reader) {
			log_error("%s", error);
			status = EXIT_BAD_INPUT;
			break;
		}
		/* Several hosts: one clock, CLOCK_REALTIME through each trace's anchor. */
		header = trace_reader_header(traces[i].reader);
		traces[i].shift_ns =
			(int64_t)(header->anchor_realtime_ns - header->anchor_monotonic_ns);
	}
	if (!status)
		share_one_clock(traces, count, diagnosis);
	if (!status &&
	    (find_open_calls(traces, count, &open) || run_merged(traces, count, diagnosis, &open)))
		status = EXIT_BAD_INPUT;
	job_diagnosis_finish(diagnosis);
	for (int i = 0; i < count && !status; i++)
		trace_losses_warn(traces[i].path, traces[i].reader);
	found = job_diagnosis_hang_count(diagnosis) + job_diagnosis_slowdown_count(diagnosis) +
		job_diagnosis_mismatch_count(diagnosis) + job_diagnosis_crash_count(diagnosis);
	if (!status && !found && job_diagnosis_judged_count(diagnosis) == 0) {
		/* "0 hangs" is said only when something was judged. */
		log_error("nothing to judge: the %d trace(s) hold no call, process or Python event "
			  "(the recorder stopped before the job did anything it traces)",
			  count);
		status = EXIT_NOTHING_TO_JUDGE;
	}
	if (!status && !json)
		printf("tcheck-bpf: %u hang(s), %u slowdown(s), %u mismatch(es), %u crash(es) "
		       "found "
		       "in %d trace(s)\n",
		       job_diagnosis_hang_count(diagnosis), job_diagnosis_slowdown_count(diagnosis),
		       job_diagnosis_mismatch_count(diagnosis),
		       job_diagnosis_crash_count(diagnosis), count);
	if (!status && found)
		status = EXIT_FINDINGS;
	/* Findings that did not reach their reader are no result. */
	if (fflush(stdout) || ferror(stdout)) {
		log_error("cannot write the findings to standard output: %m");
		status = EXIT_FAILED;
	}
	for (int i = 0; i < count; i++)
		if (traces[i].reader)
			trace_reader_close(traces[i].reader);
	free_open_calls(&open, count);
	free(traces);
	job_diagnosis_free(diagnosis);
	return status;
}
