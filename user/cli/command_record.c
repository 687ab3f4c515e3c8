// SPDX-License-Identifier: MIT
/* `tcheck-bpf record` and `tcheck-bpf attach`: options into a recorder run. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/number_parse.h"
#include "base/output_file.h"
#include "base/output_targets.h"
#include "checks/rule_runner.h"
#include "checks/rules_selection.h"
#include "cli/commands.h"
#include "diagnose/diagnosis_consumer.h"
#include "diagnose/flight_recorder.h"
#include "diagnose/job_diagnosis.h"
#include "probe/probe_session.h"
#include "probe/process_info.h"
#include "record/live_status.h"
#include "record/recorder.h"
#include "trace/trace_file_consumer.h"

/* How many of each repeatable option one command line may give. */
#define MAX_PIDS 256
#define MAX_PYTHON_FILTERS 256
#define MAX_TORCH_OPS 256

static const char record_help[] =
	"Usage: tcheck-bpf record -o FILE (--pid PID... | -- COMMAND [ARGS...])\n"
	"\n"
	"Records every NCCL call of a command and every process it starts, or of\n"
	"processes already running, into a trace file. Needs root.\n"
	"\n"
	"Options:\n"
	"  -o, --output FILE        trace file to write (required); a file that exists\n"
	"                           is refused without --force\n"
	"      --force              replace FILE (when the recording is closed whole)\n"
	"      --max-size SIZE      cut the trace into pieces of about SIZE bytes (K, M,\n"
	"                           G: powers of 1024): FILE holds the newest records,\n"
	"                           FILE.1 the piece before, and so on; each is a whole\n"
	"                           trace\n"
	"      --max-files N        keep N pieces, FILE included, removing the oldest\n"
	"                           (default: every piece; needs --max-size)\n"
	"  -p, --pid PID            trace a running process (repeatable)\n"
	"      --nccl-lib PATH      probe this NCCL library (or the library NCCL is\n"
	"                           linked into) instead of discovering it\n"
	"      --no-follow          do not trace the children the targets start\n"
	"      --python             also trace Python calls entered from C (CPython\n"
	"                           3.10-3.14: module calls, hooks, autograd functions)\n"
	"      --freeze-on-crash    stop (SIGSTOP) a Python process whose uncaught exception\n"
	"                           is about to end it, before it is printed, or that calls\n"
	"                           sys.exit(failure) in a handler (mp.spawn), for py-spy or\n"
	"                           gdb; kill -CONT lets it finish (implies --python)\n"
	"      --python-filter P    keep Python calls whose qualified name starts with P\n"
	"                           (repeatable; default: torch training APIs)\n"
	"      --step-marker NAME   advance the step at the end of the torch scope or\n"
	"                           Python call whose name starts with NAME\n"
	"                           (default: Optimizer.step#, the optimizer's step)\n"
	"      --torch-op OP        also trace calls of this torch operator (implies\n"
	"                           --python; repeatable; add_ for every overload,\n"
	"                           add_.Tensor for one, zero_ ...)\n"
	"      --rules FILE         check the calls live against a rules file (tcheck-bpf infer);\n"
	"                           Python functions and torch operators it names are traced\n"
	"  -d, --duration SECONDS   stop after this long (default: when the targets end)\n"
	"      --ring-buffer-mb N   kernel-to-daemon buffer size (default 16,\n"
	"                           64 with --python)\n"
	"      --events FILE        hangs, slowdowns and rule violations found live, as JSON "
	"Lines\n"
	"                           (\"-\": standard output)\n"
	"      --hang-factor N      expected steps without progress that make a hang\n"
	"                           (default 2)\n"
	"      --hang-min-seconds S and at least this long (default 1)\n"
	"      --hang-startup-seconds S  before the step is learned (communicator\n"
	"                           creation, the first steps): a rank left behind\n"
	"                           this long is a hang (default 10)\n"
	"      --hang-stall-seconds S  processes that stopped stepping, with no\n"
	"                           call in flight, silent this long (and hang-factor\n"
	"                           times their longest step) are a hang (default 30)\n"
	"      --flight-calls N     last calls a crash report gives per process\n"
	"                           (default 16, at most 256)\n"
	"      --slowdown-threshold R  a step R times the expected one is slow (default 1.4)\n"
	"      --no-diagnosis       do not look for hangs, slowdowns and mismatches\n"
	"  -h, --help               this text\n"
	"\n"
	"With a command, tcheck-bpf exits with the command's own exit status; 127\n"
	"when the command is not found, 126 when it cannot be run (no trace is left).\n"
	"2: a wrong command line (a --pid of no running process included) or a refused -o\n"
	"(the command is not started).\n"
	"\n"
	"Examples:\n"
	"  sudo tcheck-bpf record -o job.trace -- torchrun --nproc-per-node 8 train.py\n"
	"  sudo tcheck-bpf record -o job.trace --pid 4242 --pid 4243 --duration 60\n"
	"  sudo tcheck-bpf record -o job.trace --nccl-lib /opt/nccl/lib/libnccl.so.2 -- ./app\n"
	"  sudo tcheck-bpf record -o job.trace --max-size 64M --max-files 8 -- ./train.sh\n"
	"  tcheck-bpf check job.trace job.trace.*    # every piece, in any order\n";

static const char attach_help[] =
	"Usage: tcheck-bpf attach --pid PID... [-o FILE]\n"
	"\n"
	"Attaches to running processes and prints, once a second, the NCCL calls\n"
	"seen (in all and per second), the busiest functions and any losses.\n"
	"Hangs and slowdowns are printed as they are found (tcheck-bpf check has the\n"
	"details). Ctrl-C detaches and leaves the processes running, untouched. Needs root.\n"
	"\n"
	"Options:\n"
	"  -p, --pid PID            process to watch (repeatable; its children too)\n"
	"  -o, --output FILE        also record a trace file (refused if it exists)\n"
	"      --force              replace FILE (when the recording is closed whole)\n"
	"      --max-size SIZE      cut the trace into pieces of about SIZE bytes\n"
	"                           (FILE the newest, FILE.1 the one before, ...)\n"
	"      --max-files N        keep N pieces, removing the oldest (needs --max-size)\n"
	"      --nccl-lib PATH      probe this NCCL library instead of discovering it\n"
	"      --no-follow          do not trace the children the targets start\n"
	"      --python             also trace Python calls entered from C\n"
	"      --freeze-on-crash    stop (SIGSTOP) a Python process whose uncaught exception\n"
	"                           or sys.exit(failure) in a handler is about to end it,\n"
	"                           for inspection; kill -CONT resumes\n"
	"      --python-filter P    keep Python calls whose qualified name starts with P\n"
	"      --step-marker NAME   advance the step at this scope or call's end\n"
	"      --torch-op OP        also trace calls of this torch operator (repeatable)\n"
	"      --rules FILE         check the calls live against a rules file (tcheck-bpf infer);\n"
	"                           Python functions and torch operators it names are traced\n"
	"  -d, --duration SECONDS   detach after this long\n"
	"      --ring-buffer-mb N   kernel-to-daemon buffer size (default 16,\n"
	"                           64 with --python)\n"
	"      --events FILE        hangs, slowdowns and rule violations found live, as JSON "
	"Lines\n"
	"      --hang-factor N      expected steps without progress that make a hang\n"
	"                           (default 2)\n"
	"      --hang-min-seconds S and at least this long (default 1)\n"
	"      --hang-startup-seconds S  before the step is learned (communicator\n"
	"                           creation, the first steps): a rank left behind\n"
	"                           this long is a hang (default 10)\n"
	"      --hang-stall-seconds S  processes that stopped stepping, with no\n"
	"                           call in flight, silent this long (and hang-factor\n"
	"                           times their longest step) are a hang (default 30)\n"
	"      --flight-calls N     last calls a crash report gives per process\n"
	"                           (default 16, at most 256)\n"
	"      --slowdown-threshold R  a step R times the expected one is slow (default 1.4)\n"
	"      --no-diagnosis       do not look for hangs, slowdowns and mismatches\n"
	"  -h, --help               this text\n"
	"\n"
	"Examples:\n"
	"  sudo tcheck-bpf attach --pid $(pgrep -f train.py | head -1)\n"
	"  sudo tcheck-bpf attach --pid 4242 -o live.trace --duration 300\n"
	"  sudo tcheck-bpf attach --pid 4242 -o live.trace --max-size 256M --max-files 4\n";

int parse_number_option(const char *option, const char *text, const struct number_bounds *bounds,
			double *value)
{
	char error[256];

	if (number_parse(option, text, bounds, value, error, sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	return 0;
}

int parse_positive_number(const char *option, const char *text, double maximum, double *value)
{
	const struct number_bounds bounds = { .maximum = maximum, .above_minimum = true };

	return parse_number_option(option, text, &bounds, value);
}

int parse_seconds(const char *option, const char *text, bool zero_allowed, double *seconds)
{
	const struct number_bounds bounds = { .maximum = NUMBER_MAX_SECONDS,
					      .above_minimum = !zero_allowed };

	return parse_number_option(option, text, &bounds, seconds);
}

int parse_whole_number(const char *option, const char *text, double minimum, double maximum,
		       double *value)
{
	const struct number_bounds bounds = { .minimum = minimum,
					      .maximum = maximum,
					      .whole = true };

	return parse_number_option(option, text, &bounds, value);
}

int parse_ring_buffer_mb(const char *text, size_t *bytes)
{
	unsigned long most = PROBE_RING_BUFFER_MAX_BYTES / (1024 * 1024);
	double megabytes;

	if (parse_positive_number("--ring-buffer-mb", text, (double)most, &megabytes))
		return -1;
	/* The kernel takes a power of two: the size asked for, rounded up. */
	*bytes = PROBE_RING_BUFFER_MIN_BYTES;
	while (*bytes < (size_t)(megabytes * 1024 * 1024))
		*bytes *= 2;
	return 0;
}

int parse_pid(const char *text, pid_t *pid)
{
	const struct number_bounds bounds = { .minimum = 1, .maximum = 0x3fffffff, .whole = true };
	double value;

	if (number_parse("--pid", text, &bounds, &value, NULL, 0)) {
		log_error("--pid needs a process id, not '%s'", text);
		return -1;
	}
	*pid = (pid_t)value;
	return 0;
}

/* The live hang and slowdown detectors: on unless --no-diagnosis. */
struct live_diagnosis {
	bool enabled;
	const char *events_path; /* --events FILE: JSON Lines findings */
	struct progress_options options;
	bool options_set;
};

static int parse_diagnosis_option(int option, const char *text, struct live_diagnosis *diagnosis)
{
	if (!diagnosis->options_set) {
		progress_options_default(&diagnosis->options);
		diagnosis->options_set = true;
	}
	switch (option) {
	case 'E':
		diagnosis->events_path = text;
		return 0;
	case 'N':
		diagnosis->enabled = false;
		return 0;
	case 'H':
		return parse_positive_number("--hang-factor", text, NUMBER_MAX_FACTOR,
					     &diagnosis->options.hang_factor);
	case 'M': {
		double seconds = 0;

		/* 0 is allowed: hang_factor steps alone. */
		if (parse_seconds("--hang-min-seconds", text, true, &seconds))
			return -1;
		diagnosis->options.hang_min_ns = seconds * 1e9;
		return 0;
	}
	case 'G': {
		double seconds = 0;

		if (parse_seconds("--hang-stall-seconds", text, false, &seconds))
			return -1;
		diagnosis->options.stall_min_ns = seconds * 1e9;
		return 0;
	}
	case 'K': {
		double calls = 0;

		if (parse_whole_number("--flight-calls", text, 1, FLIGHT_CALLS_MAX, &calls))
			return -1;
		diagnosis->options.flight_calls = (unsigned)calls;
		return 0;
	}
	case 'B': {
		double seconds = 0;

		if (parse_seconds("--hang-startup-seconds", text, false, &seconds))
			return -1;
		diagnosis->options.hang_unlearned_ns = seconds * 1e9;
		return 0;
	}
	default:
		if (parse_positive_number("--slowdown-threshold", text, NUMBER_MAX_FACTOR,
					  &diagnosis->options.slowdown_threshold))
			return -1;
		if (diagnosis->options.slowdown_threshold <= diagnosis->options.alpha) {
			log_error("--slowdown-threshold must be above %.2f, the ratio within which "
				  "steps update the expected step time",
				  diagnosis->options.alpha);
			return -1;
		}
		return 0;
	}
}

/* The consumers of a recording, in the order each record reaches them. */
struct record_consumer_list {
	struct record_consumer items[4];
	size_t count;
};

/*
 * Runs the recorder with what follows it: the rules already in 'consumers',
 * then the detectors fed live (findings to stderr and 'events'), the trace
 * file (-o) and attach's live status line.
 */
static int run_with_diagnosis(struct recorder_options *options,
			      struct live_diagnosis *live_diagnosis, FILE *events,
			      struct record_consumer_list *consumers, bool attach,
			      struct trace_file_consumer *trace_file)
{
	struct job_diagnosis *diagnosis = NULL;
	struct live_status status;
	int result;

	if (live_diagnosis->enabled) {
		if (!live_diagnosis->options_set)
			progress_options_default(&live_diagnosis->options);
		diagnosis = job_diagnosis_new(&live_diagnosis->options, stderr, events);
		if (!diagnosis) {
			log_error("out of memory");
			return 1;
		}
		consumers->items[consumers->count++] = diagnosis_consumer(diagnosis);
	}
	if (options->output_path)
		consumers->items[consumers->count++] = trace_file_consumer(trace_file);
	if (attach)
		consumers->items[consumers->count++] = live_status_consumer(&status);
	options->consumers = consumers->items;
	options->consumer_count = consumers->count;
	result = recorder_run(options);
	job_diagnosis_free(diagnosis);
	return result;
}

/* What the command line gives: the recorder's options and what is run around the recorder. */
struct record_arguments {
	struct recorder_options options;
	struct live_diagnosis diagnosis;
	const char *rules_path; /* --rules FILE */
	size_t python_prefix_count;
	struct trace_file_consumer trace_file; /* -o: its --max-size and --max-files */
};

/* The lists the recorder's options point into; static, to keep them off the stack. */
static pid_t pids[MAX_PIDS];
static const char *python_prefixes[MAX_PYTHON_FILTERS + 1];
static const char *torch_ops[MAX_TORCH_OPS];

static const struct option long_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "force", no_argument, NULL, 'O' },
	{ "max-size", required_argument, NULL, 'X' },
	{ "max-files", required_argument, NULL, 'Q' },
	{ "pid", required_argument, NULL, 'p' },
	{ "nccl-lib", required_argument, NULL, 'L' },
	{ "no-follow", no_argument, NULL, 'F' },
	{ "duration", required_argument, NULL, 'd' },
	{ "ring-buffer-mb", required_argument, NULL, 'R' },
	{ "python", no_argument, NULL, 'Y' },
	{ "freeze-on-crash", no_argument, NULL, 'Z' },
	{ "python-filter", required_argument, NULL, 'P' },
	{ "step-marker", required_argument, NULL, 'S' },
	{ "torch-op", required_argument, NULL, 'T' },
	{ "events", required_argument, NULL, 'E' },
	{ "no-diagnosis", no_argument, NULL, 'N' },
	{ "hang-factor", required_argument, NULL, 'H' },
	{ "hang-min-seconds", required_argument, NULL, 'M' },
	{ "hang-startup-seconds", required_argument, NULL, 'B' },
	{ "hang-stall-seconds", required_argument, NULL, 'G' },
	{ "flight-calls", required_argument, NULL, 'K' },
	{ "slowdown-threshold", required_argument, NULL, 'W' },
	{ "rules", required_argument, NULL, 'U' },
	{ "help", no_argument, NULL, 'h' },
	{ 0 },
};

/* One option of the recorder itself: 0, -1 when its value is refused, 1 when it is none. */
/* One more value of a repeatable option, within its limit. */
static int append_text(const char **values, size_t *count, size_t limit, const char *option,
		       const char *text)
{
	if (*count == limit) {
		log_error("at most %zu %s options", limit, option);
		return -1;
	}
	values[(*count)++] = text;
	return 0;
}

static int apply_recorder_option(int option, const char *text, struct record_arguments *arguments)
{
	struct recorder_options *options = &arguments->options;

	switch (option) {
	case 'o':
		options->output_path = text;
		return 0;
	case 'O':
		options->replace_output = true;
		return 0;
	case 'p':
		if (options->pid_count == MAX_PIDS) {
			log_error("at most %d --pid options", MAX_PIDS);
			return -1;
		}
		if (parse_pid(text, &pids[options->pid_count]))
			return -1;
		options->pid_count++;
		return 0;
	case 'L':
		options->nccl_library = text;
		return 0;
	case 'F':
		options->follow_children = false;
		return 0;
	case 'Y':
		/* Everything a user records as a reference: calls, and what training does to the
		 * model. */
		options->python = true;
		options->training_ops = true;
		return 0;
	case 'P':
		if (append_text(python_prefixes, &arguments->python_prefix_count,
				MAX_PYTHON_FILTERS, "--python-filter", text))
			return -1;
		options->python = true;
		options->python_prefixes = python_prefixes;
		return 0;
	case 'S':
		if (!text[0]) {
			log_error("--step-marker needs a name, e.g. Optimizer.step#");
			return -1;
		}
		options->step_marker = text;
		return 0;
	case 'T':
		if (append_text(torch_ops, &options->torch_op_count, MAX_TORCH_OPS, "--torch-op",
				text))
			return -1;
		options->torch_ops = torch_ops;
		options->python = true;
		return 0;
	case 'Z':
		/* The one case in which the tracer signals a traced process: only when asked. */
		options->freeze_on_crash = true;
		options->python = true;
		return 0;
	case 'd':
		return parse_seconds("--duration", text, false, &options->duration_seconds);
	case 'R':
		return parse_ring_buffer_mb(text, &options->ring_buffer_bytes);
	}
	return 1;
}

/* --max-size SIZE or --max-files N of the trace file; 0, or -1 after saying why. */
static int parse_rotation_option(int option, const char *text, struct trace_file_consumer *file)
{
	static const struct number_bounds file_count = { .minimum = 2,
							 .maximum = 1000000,
							 .whole = true };
	unsigned long long bytes;
	char error[256];
	double count;

	if (option == 'X') {
		if (number_parse_size("--max-size", text, TRACE_FILE_MIN_PIECE_BYTES,
				      TRACE_FILE_MAX_PIECE_BYTES, &bytes, error, sizeof(error))) {
			log_error("%s", error);
			return -1;
		}
		file->max_size = bytes;
		return 0;
	}
	if (parse_number_option("--max-files", text, &file_count, &count))
		return -1;
	file->max_files = (unsigned)count;
	return 0;
}

/* The options; -1 to go on, else the exit status (0 after --help). */
static int parse_options(int argc, char **argv, int attach, struct record_arguments *arguments)
{
	const char *help = attach ? attach_help : record_help;
	int option, applied;

	optind = 1;
	/* '+': stop at the first non-option, so COMMAND's own options stay its own. */
	while ((option = getopt_long(argc, argv, "+o:p:d:h", long_options, NULL)) != -1) {
		switch (option) {
		case 'E':
		case 'N':
		case 'H':
		case 'M':
		case 'B':
		case 'G':
		case 'K':
		case 'W':
			if (parse_diagnosis_option(option, optarg, &arguments->diagnosis))
				return 2;
			break;
		case 'U':
			arguments->rules_path = optarg;
			break;
		case 'X':
		case 'Q':
			if (parse_rotation_option(option, optarg, &arguments->trace_file))
				return 2;
			break;
		case 'h':
			fputs(help, stdout);
			return 0;
		default:
			applied = apply_recorder_option(option, optarg, arguments);
			if (applied > 0)
				fputs(help, stderr);
			if (applied)
				return 2;
			break;
		}
	}
	return -1;
}

/* What is traced: running processes or the command after the options, never both. */
static int targets_check(int argc, char **argv, int attach, struct recorder_options *options)
{
	if (optind < argc) {
		if (attach) {
			log_error("attach watches running processes: use --pid, or "
				  "'tcheck-bpf record -o FILE -- %s'",
				  argv[optind]);
			return 2;
		}
		options->command = argv + optind;
	}
	if (!options->command && options->pid_count == 0) {
		log_error("nothing to trace: give --pid PID or a command after --");
		return 2;
	}
	if (options->command && options->pid_count) {
		log_error("give either --pid or a command, not both");
		return 2;
	}
	if (!attach && !options->output_path) {
		log_error("record needs an output file: -o FILE");
		return 2;
	}
	for (size_t i = 0; i < options->pid_count; i++) {
		if (process_has_ended(options->pids[i])) {
			log_error("--pid %d: no such process (it has ended, or never ran)",
				  (int)options->pids[i]);
			return 2;
		}
	}
	return -1;
}

/* --max-size and --max-files go with -o, and --max-files with --max-size; -1 to go on, else 2. */
static int rotation_check(const struct recorder_options *options,
			  const struct trace_file_consumer *file)
{
	if ((file->max_size || file->max_files) && !options->output_path) {
		log_error("--max-size and --max-files bound the trace file: give -o FILE");
		return 2;
	}
	if (file->max_files && !file->max_size) {
		log_error("--max-files counts the pieces --max-size makes: give --max-size too");
		return 2;
	}
	if (file->max_size && output_file_is_standard(options->output_path)) {
		log_error("--max-size cuts the trace into files: -o %s is standard output",
			  options->output_path);
		return 2;
	}
	return -1;
}

/* --rules: the live checker, and the probes its rules need; -1 to go on, else the exit status. */
static int live_rules_begin(const char *rules_path, FILE *events, struct recorder_options *options,
			    struct record_consumer_list *consumers,
			    struct rules_selection *selection, struct live_rules **live_rules)
{
	*live_rules = live_rules_start(rules_path, &consumers->items[consumers->count], events);
	if (!*live_rules)
		return 2;
	if (rules_selection_configure(live_rules_set(*live_rules), options, selection)) {
		live_rules_finish(*live_rules, 1);
		return 1;
	}
	consumers->count++;
	return -1;
}

static int run(int argc, char **argv, int attach)
{
	struct record_arguments arguments = {
		.options = { .follow_children = true },
		.diagnosis = { .enabled = true },
	};
	struct recorder_options *options = &arguments.options;
	struct record_consumer_list consumers = { 0 };
	struct live_rules *live_rules = NULL;
	struct rules_selection selection = { 0 };
	struct output_file events = { 0 };
	const char *events_path;
	char error[512];
	int status;

	options->pids = pids;
	options->argc = argc;
	options->argv = argv;
	status = parse_options(argc, argv, attach, &arguments);
	if (status < 0)
		status = targets_check(argc, argv, attach, options);
	if (status < 0)
		status = rotation_check(options, &arguments.trace_file);
	/* The trace and the findings on one file, or either on the rules, would replace it. */
	if (status < 0 &&
	    output_targets_refuse_overlap(
		    (const struct output_target[]){
			    { "-o", options->output_path },
			    { "--events", arguments.diagnosis.events_path } },
		    2, &(struct input_files){ "--rules file", &arguments.rules_path, 1 }, 1))
		status = 2;
	arguments.trace_file.path = options->output_path;
	arguments.trace_file.replace_existing = options->replace_output;
	/* A refused -o is a usage error (2), found before anything starts. */
	if (status < 0 && options->output_path && trace_file_consumer_check(&arguments.trace_file))
		status = 2;
	events_path = arguments.diagnosis.events_path;
	/* Grown in place when new: findings can be followed as they come. */
	if (status < 0 && events_path &&
	    output_file_open(&events, events_path, OUTPUT_FILE_GROW_IN_PLACE, error,
			     sizeof(error))) {
		log_error("%s", error);
		status = 2;
	}
	if (status < 0 && arguments.rules_path)
		status = live_rules_begin(arguments.rules_path, events.stream, options, &consumers,
					  &selection, &live_rules);
	if (status < 0) {
		arguments.trace_file.argc = options->argc;
		arguments.trace_file.argv = options->argv;
		status = run_with_diagnosis(options, &arguments.diagnosis, events.stream,
					    &consumers, attach, &arguments.trace_file);
		if (live_rules)
			status = live_rules_finish(live_rules, status);
	}
	rules_selection_free(&selection);
	if (output_file_close(&events, true, error, sizeof(error))) {
		log_error("%s", error);
		status = status ? status : 1;
	}
	return status;
}

int command_record(int argc, char **argv)
{
	return run(argc, argv, 0);
}

int command_attach(int argc, char **argv)
{
	return run(argc, argv, 1);
}
