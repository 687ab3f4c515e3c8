// SPDX-License-Identifier: MIT
/*
 * The table of record kinds: a row for every kind the format defines, at its
 * own number, with its handlers; a row's encoder and decoder agree with each
 * other without the writer or the reader between them.
 */
#include <errno.h>
#include <string.h>

#include "trace/trace_format.h"
#include "trace/trace_record_kinds.h"
#include "unit.h"

UNIT_TEST(trace_record_kinds, every_kind_has_one_row_of_its_own)
{
	for (unsigned kind = 1; kind <= TRACE_FORMAT_LAST_KNOWN_KIND; kind++) {
		const struct trace_record_kind_format *format = trace_record_kind_format(kind);

		CU_ASSERT_PTR_NOT_NULL_FATAL(format);
		CU_ASSERT_EQUAL(format->kind, kind);
		CU_ASSERT(format->name[0] != '\0');
		CU_ASSERT(format->minimum_body > 0);
		CU_ASSERT(format->body_size > 0 || format->encoded_size != NULL);
		CU_ASSERT(format->body_size == 0 || format->body_size >= format->minimum_body);
		CU_ASSERT_PTR_NOT_NULL(format->encode);
		CU_ASSERT_PTR_NOT_NULL(format->decode);
		for (unsigned other = 1; other < kind; other++)
			CU_ASSERT(strcmp(trace_record_kind_name(other), format->name) != 0);
	}
	CU_ASSERT_PTR_NULL(trace_record_kind_format(0));
	CU_ASSERT_PTR_NULL(trace_record_kind_format(TRACE_FORMAT_LAST_KNOWN_KIND + 1));
	CU_ASSERT_PTR_NULL(trace_record_kind_format(TRACE_FORMAT_KIND_STRING));
	CU_ASSERT_STRING_EQUAL(trace_record_kind_name(TRACE_FORMAT_KIND_STRING), "string");
	CU_ASSERT_STRING_EQUAL(trace_record_kind_name(TRACE_RECORD_NCCL_CALL), "nccl_call");
	CU_ASSERT_STRING_EQUAL(trace_record_kind_name(1000), "unknown");
}

UNIT_TEST(trace_record_kinds, a_rows_encoder_and_decoder_agree)
{
	const struct trace_record_kind_format *format =
		trace_record_kind_format(TRACE_RECORD_PROCESS);
	struct trace_record process = { .kind = TRACE_RECORD_PROCESS }, decoded;
	char *strings[] = { "python3 train.py --steps 3" };
	const char *texts[TRACE_RECORD_MAX_STRINGS];
	uint32_t ids[TRACE_RECORD_MAX_STRINGS];
	unsigned char body[256] = { 0 };
	struct trace_record_decoding decoding = { .strings = strings, .lost_text = "(lost)" };

	process.process = (struct trace_process){ .pid = 4242,
						  .parent_pid = 1,
						  .rank = 3,
						  .local_rank = 1,
						  .world_size = 8,
						  .exit_code = -1,
						  .start_ns = 123456789,
						  .command = strings[0] };
	CU_ASSERT_FATAL(format->body_size <= sizeof(body));
	CU_ASSERT_EQUAL_FATAL(format->strings(&process, texts), 1);
	CU_ASSERT_STRING_EQUAL(texts[0], strings[0]);
	ids[0] = 1;
	format->encode(body, &process, ids);

	/* String id 1 not yet defined: the record is damaged, and says so. */
	CU_ASSERT_EQUAL(format->decode(&decoding, body, format->body_size, &decoded), -EBADMSG);
	CU_ASSERT_PTR_NOT_NULL(strstr(decoding.problem, "string id 1"));

	decoding = (struct trace_record_decoding){ .strings = strings, .defined_strings = 1 };
	memset(&decoded, 0, sizeof(decoded));
	CU_ASSERT_EQUAL(format->decode(&decoding, body, format->body_size, &decoded), 0);
	CU_ASSERT_EQUAL(decoded.process.pid, 4242);
	CU_ASSERT_EQUAL(decoded.process.rank, 3);
	CU_ASSERT_EQUAL(decoded.process.world_size, 8);
	CU_ASSERT_EQUAL(decoded.process.exit_code, -1);
	CU_ASSERT_EQUAL(decoded.process.start_ns, 123456789);
	CU_ASSERT_STRING_EQUAL(decoded.process.command, strings[0]);
}
