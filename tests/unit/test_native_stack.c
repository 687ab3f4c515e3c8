// SPDX-License-Identifier: MIT
/* Tests of finding where a thread is blocked: registers from /proc, readable names, the scan. */
#include <errno.h>
#include <string.h>

#include "probe/native_stack.h"
#include "unit.h"

UNIT_TEST(native_stack, parses_the_registers_proc_gives)
{
	struct native_thread_registers registers;

	CU_ASSERT_EQUAL(native_thread_registers_parse("running\n", &registers), 0);
	CU_ASSERT_TRUE(registers.running);
	CU_ASSERT_EQUAL(native_thread_registers_parse("-1 0x7ffd1000 0x55aa00\n", &registers), 0);
	CU_ASSERT_FALSE(registers.running);
	CU_ASSERT_EQUAL(registers.system_call, -1);
	CU_ASSERT_EQUAL(registers.stack_pointer, 0x7ffd1000);
	CU_ASSERT_EQUAL(registers.program_counter, 0x55aa00);
	CU_ASSERT_EQUAL(
		native_thread_registers_parse(
			"230 0x1 0x0 0x7ffd2000 0x0 0x0 0x0 0x7ffd1f00 0x7f00aa10\n", &registers),
		0);
	CU_ASSERT_EQUAL(registers.system_call, 230);
	CU_ASSERT_EQUAL(registers.stack_pointer, 0x7ffd1f00);
	CU_ASSERT_EQUAL(registers.program_counter, 0x7f00aa10);
	CU_ASSERT_EQUAL(native_thread_registers_parse("", &registers), -EINVAL);
	CU_ASSERT_EQUAL(native_thread_registers_parse("230 0x1 0x2\n", &registers), -EINVAL);
}

UNIT_TEST(native_stack, names_mangled_functions_as_people_read_them)
{
	static const char *const cases[][2] = {
		{ "_ZN4c10d16ProcessGroupGloo9AsyncWork4waitEv",
		  "c10d::ProcessGroupGloo::AsyncWork::wait" },
		{ "_ZNK4c10d16ProcessGroupGloo4sizeEv", "c10d::ProcessGroupGloo::size" },
		{ "_ZN4gloo9transport3tcp13UnboundBuffer8waitRecvEPiNSt6chrono8durationIlSt5ratioIL"
		  "l1E"
		  "Ll1000EEEE",
		  "gloo::transport::tcp::UnboundBuffer::waitRecv" },
		{ "_ZN4c10d16ProcessGroupGlooC2ERKN3c1013intrusive_ptrINS_5StoreEEEii",
		  "c10d::ProcessGroupGloo" },
		{ "_ZN4gloo9allreduceERNS_16AllreduceOptionsE", "gloo::allreduce" },
		{ "_ZN4c10d6detail12_GLOBAL__N_14pickIfEEvv", "c10d::detail::_GLOBAL__N_1::pick" },
		{ "ncclAllReduce", "ncclAllReduce" },
		{ "_Z3foov", "foo" },
		{ "_ZN", "_ZN" },
	};
	char text[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		native_readable_name(cases[i][0], text, sizeof(text));
		CU_ASSERT_STRING_EQUAL(text, cases[i][1]);
	}
}

/* libnccl mapped at 0x7f1000000000 (file offset 0) and 0x7f1000001000 (file offset 0x1000). */
static const char maps_fixture[] =
	"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	"7f1000000000-7f1000001000 r--p 00000000 08:01 2222 /usr/lib/libnccl.so.2\n"
	"7f1000001000-7f1000100000 r-xp 00001000 08:01 2222 /usr/lib/libnccl.so.2\n"
	"7f2000000000-7f2000010000 r-xp 00000000 08:01 3333 /usr/lib/libc.so.6\n";

UNIT_TEST(native_stack, scans_words_for_return_addresses_inside_known_functions)
{
	struct native_function_table table = { 0 };
	const struct native_function_table *tables[8] = { 0 };
	struct native_stack_hit hits[4];
	struct mapped_file_list maps;
	char error[256];
	const uint64_t words[] = {
		0x1234,		/* a small number */
		0x7f1000003040, /* inside ncclBroadcast: the innermost call */
		0x7f0000000010, /* anonymous memory */
		0x7f1000002000, /* ncclAllReduce's first byte: no call returns there */
		0x7f2000000100, /* libc, which has no table */
		0x7f1000002010, /* inside ncclAllReduce */
		0x7f1000002100, /* one past its end */
	};

	CU_ASSERT_EQUAL_FATAL(process_maps_parse(maps_fixture, 0, &maps, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL_FATAL(maps.count, 2);
	CU_ASSERT_EQUAL(native_function_table_add(&table, 0x3000, 0x80, "ncclBroadcast",
						  NATIVE_FUNCTION_NCCL),
			0);
	CU_ASSERT_EQUAL(native_function_table_add(&table, 0x2000, 0x100, "ncclAllReduce",
						  NATIVE_FUNCTION_NCCL),
			0);
	native_function_table_finish(&table);
	tables[0] = &table; /* libnccl is the first file of the list */
	CU_ASSERT_STRING_EQUAL(maps.files[0].path, "/usr/lib/libnccl.so.2");

	CU_ASSERT_EQUAL(
		native_stack_scan(words, sizeof(words) / sizeof(words[0]), &maps, tables, hits, 4),
		2);
	CU_ASSERT_EQUAL(hits[0].word_index, 1);
	CU_ASSERT_STRING_EQUAL(hits[0].function->name, "ncclBroadcast");
	CU_ASSERT_EQUAL(hits[1].word_index, 5);
	CU_ASSERT_STRING_EQUAL(hits[1].function->name, "ncclAllReduce");
	/* Fewer places than hits: the innermost kept, every hit counted. */
	CU_ASSERT_EQUAL(
		native_stack_scan(words, sizeof(words) / sizeof(words[0]), &maps, tables, hits, 1),
		2);
	CU_ASSERT_STRING_EQUAL(hits[0].function->name, "ncclBroadcast");
	CU_ASSERT_PTR_NULL(native_function_table_find(&table, 0x1fff));
	CU_ASSERT_PTR_NULL(native_function_table_find(&table, 0x3080));
	CU_ASSERT_PTR_NOT_NULL(native_function_table_find(&table, 0x307f));
	native_function_table_free(&table);
	mapped_file_list_free(&maps);
}
