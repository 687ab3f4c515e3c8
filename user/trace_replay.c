// SPDX-License-Identifier: MIT
/* Replays a trace file record by record (infer and check read traces this way). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "trace_reader.h"
#include "trace_replay.h"

static void show_progress(const char *path, uint64_t bytes, uint64_t size, uint64_t records)
{
	int width = 30, filled = size ? (int)(bytes * (uint64_t)width / size) : width;

	if (filled > width)
		filled = width;
	fprintf(stderr, "\r  [%.*s%*s] %3d%%  %llu events  %s", filled,
		"##############################", width - filled, "",
		size ? (int)(bytes * 100 / size) : 100, (unsigned long long)records, path);
}

int64_t trace_replay(const char *path, trace_replay_fn callback, void *context, int progress)
{
	char error[512];
	struct trace_reader *reader = trace_reader_open(path, error, sizeof(error));
	struct trace_record record;
	struct stat status;
	uint64_t size = 0;
	int64_t records = 0;
	int result;

	if (!reader) {
		log_error("%s", error);
		return -1;
	}
	if (stat(path, &status) == 0)
		size = (uint64_t)status.st_size;
	progress = progress && isatty(STDERR_FILENO);
	while ((result = trace_reader_next(reader, &record)) > 0) {
		int failed = callback(&record, context);

		if (failed) {
			log_error("stopped reading %s: %s", path, strerror(-failed));
			trace_reader_close(reader);
			return -1;
		}
		if (progress && (++records & 0xffff) == 0)
			show_progress(path, trace_reader_stats(reader)->bytes, size,
				      (uint64_t)records);
		else if (!progress)
			records++;
	}
	if (progress) {
		show_progress(path, size, size, (uint64_t)records);
		fputc('\n', stderr);
	}
	if (result < 0) {
		log_error("%s", trace_reader_error(reader));
		trace_reader_close(reader);
		return -1;
	}
	if (trace_reader_truncated(reader))
		log_warning("%s", trace_reader_truncated(reader));
	trace_reader_close(reader);
	return records;
}
