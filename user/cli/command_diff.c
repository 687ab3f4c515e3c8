// SPDX-License-Identifier: MIT
/*
 * `tcheck-bpf diff`: compares two recorded runs of one job, a reference and
 * a candidate, rank by rank and communicator by communicator, and reports
 * where they first part; step and collective times side by side.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/number_parse.h"
#include "base/output_file.h"
#include "base/output_targets.h"
#include "cli/commands.h"
#include "diff/diff_perfetto.h"
#include "diff/diff_report.h"
#include "diff/run_diff.h"
#include "diff/run_model.h"
#include "trace/trace_reader.h"
#include "diff/run_timing.h"

static const char diff_help[] =
	"Usage: tcheck-bpf diff REF.trace... [--] CAND.trace... [--json] [--time-tolerance R]\n"
	"                       [--perfetto FILE]\n"
	"\n"
	"Compares two recorded runs of one job, a reference and a candidate. Each job\n"
	"rank's calls are aligned per communicator (the n-th the rank used, of the same\n"
	"size: never by address or hash), per step and call by call, and the first\n"
	"place they part is reported per rank and communicator: a missing or extra\n"
	"call, another count, datatype, op, root or peer, a call made on another\n"
	"communicator, a different Python call or argument or torch operator, another\n"
	"number of steps, ranks or communicators. Pids, addresses and times are not\n"
	"compared. Without a step from Python (record --python --step-marker), a step\n"
	"is one turn of the period of a rank's call pattern (with no period: from one\n"
	"recurrence of its first communication call to the next). A communicator has\n"
	"one name, \"comm N\", on every rank.\n"
	"\n"
	"Several traces per side (one per host) are merged on their clock anchors.\n"
	"With '--' between them the sides may hold different numbers of traces;\n"
	"without it the traces are split in half.\n"
	"\n"
	"After the differences comes the mean step time and time per collective,\n"
	"reference against candidate, flagged when off by more than the tolerance;\n"
	"times never make the runs differ.\n"
	"\n"
	"Options:\n"
	"      --json               JSON Lines: "
	"{\"kind\":\"difference\",\"job_rank\":R,\"step\":S,\n"
	"                           \"communicator\":...,\"what\":\"count\",\"reference\":...,\n"
	"                           \"candidate\":...,\"event\":...} and "
	"{\"kind\":\"timing\",...}\n"
	"      --time-tolerance R   relative time difference flagged (default 0.5)\n"
	"      --perfetto FILE      both runs side by side, the differences marked, as a\n"
	"                           Chrome Trace Event file for ui.perfetto.dev\n"
	"  -h, --help               this text\n"
	"\n" EXIT_STATUS_HELP "\n"
	"Examples:\n"
	"  tcheck-bpf diff good.trace bad.trace\n"
	"  tcheck-bpf diff node0-good.trace node1-good.trace -- node0-bad.trace node1-bad.trace\n"
	"  tcheck-bpf diff good.trace bad.trace --json | jq 'select(.kind == \"difference\")'\n"
	"  tcheck-bpf diff good.trace bad.trace --perfetto both.json\n";

struct diff_options {
	const char **reference, **candidate;
	int reference_count, candidate_count;
	int json;
	const char *perfetto_path; /* NULL: no Perfetto file */
	double time_tolerance;
};

/* Splits the traces into the two sides: at '--', or in half. Returns 0 or 2. */
static int split_sides(const char **paths, int count, int separator, struct diff_options *options)
{
	if (separator < 0) {
		if (count % 2) {
			log_error("diff cannot tell reference from candidate traces among %d: give "
				  "as many of each, or put -- between them",
				  count);
			return 2;
		}
		separator = count / 2;
	}
	options->reference = paths;
	options->reference_count = separator;
	options->candidate = paths + separator;
	options->candidate_count = count - separator;
	if (!options->reference_count || !options->candidate_count) {
		log_error("diff needs reference and candidate traces (see tcheck-bpf diff --help)");
		return 2;
	}
	return 0;
}

static int parse_tolerance(const char *text, struct diff_options *options)
{
	const struct number_bounds bounds = { .maximum = NUMBER_MAX_FACTOR };

	return parse_number_option("--time-tolerance", text, &bounds, &options->time_tolerance) ? 2
												: 0;
}

/* Returns -1 to go on, or the exit status (0 after --help). 'paths' holds argc entries. */
static int parse_options(int argc, char **argv, const char **paths, struct diff_options *options)
{
	int count = 0, separator = -1;

	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			fputs(diff_help, stdout);
			return 0;
		} else if (strcmp(arg, "--json") == 0) {
			options->json = 1;
		} else if (strcmp(arg, "--perfetto") == 0 && i + 1 < argc) {
			options->perfetto_path = argv[++i];
		} else if (strcmp(arg, "--time-tolerance") == 0 && i + 1 < argc) {
			if (parse_tolerance(argv[++i], options))
				return 2;
		} else if (strncmp(arg, "--time-tolerance=", 17) == 0) {
			if (parse_tolerance(arg + 17, options))
				return 2;
		} else if (strcmp(arg, "--") == 0 && separator < 0) {
			separator = count;
		} else if (arg[0] == '-' && arg[1]) {
			log_error("diff: unknown option %s (see tcheck-bpf diff --help)", arg);
			return 2;
		} else {
			paths[count++] = arg;
		}
	}
	return split_sides(paths, count, separator, options) ? 2 : -1;
}

static struct run_model *load_side(const char *side, const char **paths, int count)
{
	char error[512];
	struct run_model *model = run_model_load(paths, count, error, sizeof(error));

	if (!model)
		log_error("cannot read the %s run: %s", side, error);
	return model;
}

static int write_perfetto(const char *path, const struct run_model *reference,
			  const struct run_model *candidate, const struct run_diff *diff)
{
	struct output_file out;
	char error[512];
	int failed;

	if (output_file_open(&out, path, 0, error, sizeof(error))) {
		log_error("%s", error);
		return 1;
	}
	failed = diff_perfetto_write(out.stream, reference, candidate, diff);
	if (failed)
		log_error("cannot write %s: %s", path, strerror(errno));
	if (output_file_close(&out, !failed, error, sizeof(error))) {
		log_error("%s", error);
		failed = 1;
	}
	return failed;
}

static int report(const struct diff_options *options, const struct run_model *reference,
		  const struct run_model *candidate)
{
	struct run_diff diff = { 0 };
	struct run_timing timing = { 0 };
	int status;

	if (run_diff_compare(reference, candidate, &diff) ||
	    run_timing_summarise(reference, candidate, options->time_tolerance, &timing)) {
		log_error("out of memory comparing the runs");
		run_diff_destroy(&diff);
		run_timing_destroy(&timing);
		return 2;
	}
	if (!run_model_event_count(reference) || !run_model_event_count(candidate)) {
		log_error("nothing to judge: the %s holds no call or Python event to compare",
			  run_model_event_count(reference) ? "candidate" : "reference");
		run_diff_destroy(&diff);
		run_timing_destroy(&timing);
		return EXIT_NOTHING_TO_JUDGE;
	}
	status = options->json ? diff_report_json(stdout, &diff, &timing)
			       : diff_report_text(stdout, &diff, &timing);
	if (!options->json)
		printf("tcheck-bpf: %zu difference(s) between the reference (%d trace(s), %d "
		       "rank(s)) and the candidate (%d trace(s), %d rank(s))\n",
		       diff.count, options->reference_count, run_model_rank_count(reference),
		       options->candidate_count, run_model_rank_count(candidate));
	if (status || fflush(stdout) || ferror(stdout)) {
		log_error("cannot write the report to standard output");
		status = -1;
	}
	if (!status && options->perfetto_path &&
	    write_perfetto(options->perfetto_path, reference, candidate, &diff))
		status = -1;
	status = status ? EXIT_FAILED : diff.count ? EXIT_FINDINGS : EXIT_CLEAN;
	run_diff_destroy(&diff);
	run_timing_destroy(&timing);
	return status;
}

int command_diff(int argc, char **argv)
{
	struct diff_options options = { .time_tolerance = 0.5 };
	const char **paths = calloc((size_t)argc, sizeof(*paths));
	struct run_model *reference = NULL, *candidate = NULL;
	char error[512];
	int status;

	if (!paths) {
		log_error("out of memory");
		return 2;
	}
	status = parse_options(argc, argv, paths, &options);
	if (status < 0 && (trace_paths_distinct((char *const *)options.reference,
						options.reference_count, error, sizeof(error)) ||
			   trace_paths_distinct((char *const *)options.candidate,
						options.candidate_count, error, sizeof(error)))) {
		log_error("%s", error);
		status = EXIT_BAD_INPUT;
	}
	/* --perfetto naming a trace it compares would replace that trace. */
	if (status < 0 &&
	    output_targets_refuse_overlap(
		    &(struct output_target){ "--perfetto", options.perfetto_path }, 1,
		    (const struct input_files[]){
			    { "trace", options.reference, (size_t)options.reference_count },
			    { "trace", options.candidate, (size_t)options.candidate_count } },
		    2))
		status = EXIT_BAD_INPUT;
	if (status < 0) {
		reference = load_side("reference", options.reference, options.reference_count);
		candidate = reference ? load_side("candidate", options.candidate,
						  options.candidate_count)
				      : NULL;
		status = reference && candidate ? report(&options, reference, candidate) : 2;
	}
	run_model_free(reference);
	run_model_free(candidate);
	free(paths);
	return status;
}
