// SPDX-License-Identifier: MIT
/*
 * Fuzzes the trace reader the way `dump` drives it: opens the input as a
 * trace, exports every record as JSON Lines, then rewinds and reads every
 * record again. A damaged trace must end in an error sentence, never a crash.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "export/export_jsonl.h"
#include "trace/trace_reader.h"
#include "fuzz_input.h"

static FILE *null_output;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	null_output = fopen("/dev/null", "we");
	if (!null_output)
		abort();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_input_path(data, size);
	struct trace_record record;
	struct trace_reader *reader;
	char error[512];
	int result;

	reader = trace_reader_open(path, error, sizeof(error));
	if (!reader)
		return 0;
	export_jsonl(reader, null_output, 0, error, sizeof(error));
	(void)trace_reader_truncated(reader);
	(void)trace_reader_note(reader);
	if (trace_reader_rewind(reader) == 0) {
		do
			result = trace_reader_next(reader, &record);
		while (result > 0);
	}
	trace_reader_close(reader);
	return 0;
}
