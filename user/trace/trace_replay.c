// SPDX-License-Identifier: MIT
/*
 * Replays a trace file record by record (infer and check read traces this
 * way): our binary traces, TrainCheck's JSON Lines traces, or a folder of
 * TrainCheck traces.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "trace/trace_format.h"
#include "trace/trace_losses.h"
#include "trace/trace_reader.h"
#include "trace/trace_replay.h"
#include "trace/traincheck_trace.h"

static void show_progress(const char *path, uint64_t bytes, uint64_t size, uint64_t records)
{
	int width = 30, filled = size ? (int)(bytes * (uint64_t)width / size) : width;

	if (filled > width)
		filled = width;
	fprintf(stderr, "\r  [%.*s%*s] %3d%%  %llu events  %s", filled,
		"##############################", width - filled, "",
		size ? (int)(bytes * 100 / size) : 100, (unsigned long long)records, path);
}

static int64_t replay_traincheck(const char *path, trace_replay_fn callback, void *context)
{
	struct traincheck_stats stats;
	char error[512];
	FILE *in = fopen(path, "r");
	int64_t records;

	if (!in) {
		log_error("cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	records = traincheck_trace_read(in, path, callback, context, &stats, error, sizeof(error));
	fclose(in);
	if (records < 0) {
		log_error("%s", error);
		return -1;
	}
	log_info("%s: TrainCheck trace, %llu calls (%llu never finished), %llu variable states",
		 path, (unsigned long long)stats.calls, (unsigned long long)stats.unfinished,
		 (unsigned long long)stats.states);
	if (stats.ignored)
		log_warning("%s: %llu records of a type other than function_call and state_change "
			    "were ignored",
			    path, (unsigned long long)stats.ignored);
	return records;
}

/* Every TrainCheck trace of a folder (trace_API_*, trace_VAR_*), in name order. */
static int64_t replay_folder(const char *path, trace_replay_fn callback, void *context)
{
	struct dirent **entries;
	int count = scandir(path, &entries, NULL, alphasort), files = 0;
	int64_t records = 0;

	if (count < 0) {
		log_error("cannot list the folder %s: %s", path, strerror(errno));
		return -1;
	}
	for (int i = 0; i < count; i++) {
		char file[4096];
		struct stat status;
		int64_t read;

		snprintf(file, sizeof(file), "%s/%s", path, entries[i]->d_name);
		if (records >= 0 && stat(file, &status) == 0 && S_ISREG(status.st_mode) &&
		    traincheck_trace_detect(file) == 1) {
			read = replay_traincheck(file, callback, context);
			records = read < 0 ? -1 : records + read;
			files++;
		}
		free(entries[i]);
	}
	free(entries);
	if (records >= 0 && files == 0) {
		log_error("%s holds no TrainCheck trace (files whose first line is a JSON object); "
			  "give trace files or a folder of TrainCheck's trace_API_*.log and "
			  "trace_VAR_*.log",
			  path);
		return -1;
	}
	if (records >= 0)
		log_notice("%s: %d TrainCheck trace files, %lld records", path, files,
			   (long long)records);
	return records;
}

/*
 * A regular file that starts neither with the trace signature nor with a
 * JSON object: said as neither of the two formats read here. Other files
 * (a FIFO a recorder writes into, an empty or missing one) are the trace
 * reader's to judge.
 */
static bool neither_format(const char *path, const struct stat *status)
{
	char start[TRACE_FORMAT_FILE_MAGIC_SIZE];
	size_t got;
	FILE *in;

	if (!S_ISREG(status->st_mode) || status->st_size == 0 || !(in = fopen(path, "rb")))
		return false;
	got = fread(start, 1, sizeof(start), in);
	fclose(in);
	if (got == 0 || memcmp(start, TRACE_FORMAT_FILE_MAGIC, got) == 0)
		return false;
	log_error("%s is neither a tcheck-bpf trace (it does not start with the trace signature) "
		  "nor a TrainCheck JSON Lines trace (its first line is not a JSON object); give "
		  "a file 'tcheck-bpf record' wrote or TrainCheck's trace_API_*.log",
		  path);
	return true;
}

int64_t trace_replay(const char *path, trace_replay_fn callback, void *context, int progress)
{
	char error[512];
	struct trace_reader *reader;
	struct trace_record record;
	struct stat status;
	uint64_t size = 0;
	int64_t records = 0;
	int result;

	if (stat(path, &status) == 0 && S_ISDIR(status.st_mode))
		return replay_folder(path, callback, context);
	if (traincheck_trace_detect(path) == 1)
		return replay_traincheck(path, callback, context);
	if (stat(path, &status) == 0 && neither_format(path, &status))
		return -1;
	reader = trace_reader_open(path, error, sizeof(error));
	if (!reader) {
		log_error("%s", error);
		return -1;
	}
	if (stat(path, &status) == 0)
		size = (uint64_t)status.st_size;
	progress = progress && isatty(STDERR_FILENO);
	while ((result = trace_reader_next(reader, &record)) > 0) {
		int failed = callback(context, &record);

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
	trace_incomplete_warn(reader);
	trace_losses_warn(path, reader);
	trace_reader_close(reader);
	return records;
}
