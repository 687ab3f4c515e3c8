// SPDX-License-Identifier: MIT
/* `tcheck-bpf dump`: a trace file out as JSON Lines or Perfetto JSON. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/output_file.h"
#include "base/output_targets.h"
#include "cli/commands.h"
#include "export/export_jsonl.h"
#include "export/export_perfetto.h"
#include "trace/trace_losses.h"
#include "trace/trace_reader.h"

static const char dump_help[] =
	"Usage: tcheck-bpf dump FILE... [--format jsonl|perfetto] [-o OUT] [--calls-only]\n"
	"\n"
	"Writes a trace as JSON Lines (one object per record; the default) or as\n"
	"Chrome Trace Event JSON that ui.perfetto.dev and chrome://tracing open\n"
	"(one track per rank and thread). A trace cut short by a crash exports up\n"
	"to its last complete chunk, with a warning. Several FILEs (the pieces\n"
	"record --max-size wrote) are written one after the other as JSON Lines,\n"
	"oldest first whatever their order here, each with its header line.\n"
	"\n"
	"Options:\n"
	"  -f, --format FORMAT   jsonl (default) or perfetto (one FILE)\n"
	"  -o, --output FILE     write there instead of standard output (\"-\"); a file\n"
	"                        is written aside and renamed into place when whole\n"
	"      --calls-only      only the call objects (NCCL and Python)\n"
	"  -h, --help            this text\n"
	"\n"
	"Examples:\n"
	"  tcheck-bpf dump job.trace | jq 'select(.name == \"ncclAllReduce\") | .dur_ns'\n"
	"  tcheck-bpf dump job.trace --format perfetto -o job.json\n"
	"  tcheck-bpf dump job.trace job.trace.* --calls-only   # every piece of a recording\n"
	"\n" EXIT_STATUS_HELP;

/* The traces oldest first: by the wall-clock time their recordings began. */
static int compare_begun(const void *left, const void *right)
{
	const struct trace_header *a = trace_reader_header(*(struct trace_reader *const *)left);
	const struct trace_header *b = trace_reader_header(*(struct trace_reader *const *)right);

	return (a->anchor_realtime_ns > b->anchor_realtime_ns) -
	       (a->anchor_realtime_ns < b->anchor_realtime_ns);
}

/* Opens every trace named; 0, or the exit status after saying why (all closed). */
static int open_traces(char **paths, int count, struct trace_reader **readers)
{
	char error[512];

	if (trace_paths_distinct(paths, count, error, sizeof(error))) {
		log_error("%s", error);
		return EXIT_BAD_INPUT;
	}
	for (int i = 0; i < count; i++) {
		readers[i] = trace_reader_open(paths[i], error, sizeof(error));
		if (!readers[i]) {
			log_error("%s", error);
			while (i-- > 0)
				trace_reader_close(readers[i]);
			return EXIT_BAD_INPUT;
		}
	}
	qsort(readers, (size_t)count, sizeof(*readers), compare_begun);
	return 0;
}

int command_dump(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "calls-only", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *format = "jsonl", *output_path = NULL;
	struct trace_reader *readers[MAX_TRACES];
	unsigned flags = 0;
	char error[512];
	struct output_file out;
	int option, result, status, count;

	optind = 1;
	while ((option = getopt_long(argc, argv, "f:o:h", long_options, NULL)) != -1) {
		switch (option) {
		case 'f':
			format = optarg;
			break;
		case 'o':
			output_path = optarg;
			break;
		case 'c':
			flags |= EXPORT_CALLS_ONLY;
			break;
		case 'h':
			fputs(dump_help, stdout);
			return 0;
		default:
			fputs(dump_help, stderr);
			return 2;
		}
	}
	count = argc - optind;
	if (count < 1 || count > MAX_TRACES) {
		log_error(
			"dump needs one trace file, or up to %d pieces of one (see tcheck-bpf dump "
			"--help)",
			MAX_TRACES);
		return 2;
	}
	if (strcmp(format, "jsonl") != 0 && strcmp(format, "perfetto") != 0) {
		log_error("unknown format '%s': use jsonl or perfetto", format);
		return 2;
	}
	if (count > 1 && strcmp(format, "perfetto") == 0) {
		log_error("the Perfetto export reads one trace: export each piece on its own");
		return 2;
	}
	/* -o naming a trace it reads would replace the trace by its own export. */
	if (output_targets_refuse_overlap(
		    &(struct output_target){ "-o", output_path }, 1,
		    &(struct input_files){ "trace", (const char *const *)(argv + optind), count },
		    1))
		return EXIT_BAD_INPUT;
	status = open_traces(argv + optind, count, readers);
	if (status)
		return status;
	if (output_file_open(&out, output_path, 0, error, sizeof(error))) {
		log_error("%s", error);
		for (int i = 0; i < count; i++)
			trace_reader_close(readers[i]);
		return EXIT_BAD_INPUT;
	}
	status = EXIT_CLEAN;
	result = 0;
	for (int i = 0; i < count && !result; i++) {
		struct trace_reader *reader = readers[i];

		if (strcmp(format, "jsonl") == 0)
			result = export_jsonl(reader, out.stream, flags, error, sizeof(error));
		else
			result = export_perfetto(reader, out.stream, flags, error, sizeof(error));
		if (result) {
			log_error("%s", error);
			/* The output refused a write, or the trace could not be read on. */
			status = ferror(out.stream) ? EXIT_FAILED : EXIT_BAD_INPUT;
		} else {
			trace_incomplete_warn(reader);
		}
		if (trace_reader_note(reader))
			log_warning("%s", trace_reader_note(reader));
	}
	/* Half an export looks whole to the next tool: it never takes the file's place. */
	if (output_file_close(&out, !result, error, sizeof(error))) {
		log_error("%s", error);
		status = EXIT_FAILED;
	}
	for (int i = 0; i < count; i++)
		trace_reader_close(readers[i]);
	return status;
}
