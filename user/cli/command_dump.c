// SPDX-License-Identifier: MIT
/* `tcheck-bpf dump`: a trace file out as JSON Lines or Perfetto JSON. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/commands.h"
#include "export/export_jsonl.h"
#include "export/export_perfetto.h"
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
	"  -o, --output FILE     write there instead of standard output\n"
	"      --calls-only      only the call objects (NCCL and Python)\n"
	"  -h, --help            this text\n"
	"\n"
	"Examples:\n"
	"  tcheck-bpf dump job.trace | jq 'select(.name == \"ncclAllReduce\") | .dur_ns'\n"
	"  tcheck-bpf dump job.trace --format perfetto -o job.json\n";

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
	FILE *out = stdout;
	int option, result, closed;

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
		return 1;
	}
	if (output_path && !(out = fopen(output_path, "w"))) {
		log_error("cannot write %s: %m", output_path);
		trace_reader_close(reader);
		return 1;
	}
	if (strcmp(format, "jsonl") == 0)
		result = export_jsonl(reader, out, flags, error, sizeof(error));
	else
		result = export_perfetto(reader, out, flags, error, sizeof(error));
	if (result)
		log_error("%s", error);
	else if (trace_reader_truncated(reader))
		log_warning("%s", trace_reader_truncated(reader));
	if (trace_reader_note(reader))
		log_warning("%s", trace_reader_note(reader));
	closed = out == stdout ? fflush(out) : fclose(out);
	if (closed) {
		log_error("cannot write %s: %m", output_path ? output_path : "standard output");
		result = -1;
	}
	/* Half an export looks whole to the next tool: do not leave one behind. */
	if (result && output_path)
		unlink(output_path);
	trace_reader_close(reader);
	return result ? 1 : 0;
}
