// SPDX-License-Identifier: MIT
/* Writes a recording's records into its trace file, as one of its consumers. */
#include "trace/trace_file_consumer.h"

#include "base/log.h"
#include "base/output_file.h"
#include "trace/trace_header_local.h"
#include "trace/trace_writer.h"

static int start(void *context)
{
	struct trace_file_consumer *file = context;
	struct trace_header header;
	char error[512];

	if (trace_header_init_local(&header, file->argc, file->argv, error, sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	file->writer = trace_writer_open(file->path, &header,
					 file->replace_existing ? 0 : OUTPUT_FILE_REFUSE_EXISTING,
					 error, sizeof(error));
	if (!file->writer) {
		log_error("%s", error);
		return -1;
	}
	return 0;
}

static int write_record(void *context, const struct trace_record *record)
{
	struct trace_file_consumer *file = context;

	if (!file->writer || file->failed)
		return 0;
	if (trace_writer_add(file->writer, record)) {
		/* Keep the target running; stop recording and say why. */
		log_error("cannot write the trace %s: %s", file->path,
			  trace_writer_error(file->writer));
		file->failed = true;
		return -1;
	}
	return 0;
}

static void flush(void *context)
{
	struct trace_file_consumer *file = context;

	if (file->writer)
		trace_writer_flush(file->writer);
}

static int close_file(void *context, bool recorded)
{
	struct trace_file_consumer *file = context;
	struct trace_writer *writer = file->writer;
	char error[512];

	file->writer = NULL;
	if (!recorded) {
		/* Nothing was recorded: no trace file is left to look like one. */
		trace_writer_discard(writer);
		return 0;
	}
	if (writer && trace_writer_close(writer, error, sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	return 0;
}

struct record_consumer trace_file_consumer(struct trace_file_consumer *file)
{
	return (struct record_consumer){
		.context = file,
		.start = start,
		.record = write_record,
		.flush = flush,
		.close = close_file,
	};
}
