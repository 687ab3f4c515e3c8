// SPDX-License-Identifier: MIT
/* `tcheck-bpf dump`: a trace file out as JSON Lines or Perfetto JSON. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/output_file.h"
#include "cli/commands.h"
#include "export/export_jsonl.h"
#include "export/export_perfetto.h"
#include "trace/trace_losses.h"
#include "trace/trace_reader.h"

static const char dump_help[] =
	"Usage: tcheck-bpf dump FILE [--format jsonl|perfetto] [-o OUT] [--calls-only]\n"
	"\n"
	"Writes a trace as JSON Lines (one object per record; the default) or as\n"
	"Chrome Trace Event JSON that ui.perfetto.dev and chrome://tracing open\n"
	"(one track per rank and thread). A trace cut short by a crash exports up\n"
	"to its last complete chunk, with a warning.\n"
	"\n"
	"Options:\n"
	"  -f, --format FORMAT   jsonl (default) or perfetto\n"
	"  -o, --output FILE     write there instead of standard output (\"-\"); a file\n"
	"                        is written aside and renamed into place when whole\n"
	"      --calls-only      only the call objects (NCCL and Python)\n"
	"  -h, --help            this text\n"
	"\n"
	"Examples:\n"
	"  tcheck-bpf dump job.trace | jq 'select(.name == \"ncclAllReduce\") | .dur_ns'\n"
	"  tcheck-bpf dump job.trace --format perfetto -o job.json\n"
	"\n" EXIT_STATUS_HELP;

int command_dump(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "calls-only", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *format = "jsonl", *output_path = NULL, *input_path;
	struct trace_reader *reader;
	unsigned flags = 0;
	char error[512];
	struct output_file out;
	int option, result, status;

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
	if (optind != argc - 1) {
		log_error("dump needs exactly one trace file (see tcheck-bpf dump --help)");
		return 2;
	}
	if (strcmp(format, "jsonl") != 0 && strcmp(format, "perfetto") != 0) {
		log_error("unknown format '%s': use jsonl or perfetto", format);
		return 2;
	}
	input_path = argv[optind];
	reader = trace_reader_open(input_path, error, sizeof(error));
	if (!reader) {
		log_error("%s", error);
		return EXIT_BAD_INPUT;
	}
	if (output_file_open(&out, output_path, 0, error, sizeof(error))) {
		log_error("%s", error);
		trace_reader_close(reader);
		return EXIT_BAD_INPUT;
	}
	if (strcmp(format, "jsonl") == 0)
		result = export_jsonl(reader, out.stream, flags, error, sizeof(error));
	else
		result = export_perfetto(reader, out.stream, flags, error, sizeof(error));
	status = EXIT_CLEAN;
	if (result) {
		log_error("%s", error);
		/* The output refused a write, or the trace could not be read on. */
		status = ferror(out.stream) ? EXIT_FAILED : EXIT_BAD_INPUT;
	} else {
		trace_incomplete_warn(reader);
	}
	if (trace_reader_note(reader))
		log_warning("%s", trace_reader_note(reader));
	/* Half an export looks whole to the next tool: it never takes the file's place. */
	if (output_file_close(&out, !result, error, sizeof(error))) {
		log_error("%s", error);
		status = EXIT_FAILED;
	}
	trace_reader_close(reader);
	return status;
}
