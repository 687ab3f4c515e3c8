// SPDX-License-Identifier: MIT
/* The base helpers: FNV-1a against its published vectors, the remote-memory reader, numbers and
 * sizes. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/fnv_hash.h"
#include "base/identity_text.h"
#include "base/job_rank_text.h"
#include "base/number_parse.h"
#include "base/remote_memory.h"
#include "base/system_clock.h"
#include "unit.h"

UNIT_TEST(fnv_hash, matches_the_published_64_bit_vectors)
{
	/* The FNV-1a 64-bit test vectors of the algorithm's authors. */
	CU_ASSERT_EQUAL(fnv1a_string(""), 0xcbf29ce484222325ULL);
	CU_ASSERT_EQUAL(fnv1a_string("a"), 0xaf63dc4c8601ec8cULL);
	CU_ASSERT_EQUAL(fnv1a_string("foobar"), 0x85944171f73967e8ULL);
	CU_ASSERT_EQUAL(fnv1a_bytes("foobar", 6), fnv1a_string("foobar"));
}

UNIT_TEST(fnv_hash, folds_a_value_as_its_little_endian_bytes)
{
	uint64_t value = 0x0102030405060708ULL;
	unsigned char bytes[8] = { 8, 7, 6, 5, 4, 3, 2, 1 };

	CU_ASSERT_EQUAL(fnv1a_add_u64(FNV1A_OFFSET_BASIS, value), fnv1a_bytes(bytes, 8));
}

UNIT_TEST(remote_memory, reads_a_live_process_and_refuses_bad_pointers)
{
	static const char text[] = "remote memory reader";
	char copy[sizeof(text)] = { 0 }, error[256] = "";
	uint64_t value = 0, wanted = 0x1122334455667788ULL;
	long page = sysconf(_SC_PAGESIZE);
	char *mapping;

	CU_ASSERT_EQUAL(remote_memory_read(getpid(), (uint64_t)(uintptr_t)text, copy, sizeof(copy),
					   error, sizeof(error)),
			0);
	CU_ASSERT_STRING_EQUAL(copy, text);
	CU_ASSERT_EQUAL(remote_memory_read_u64(getpid(), (uint64_t)(uintptr_t)&wanted, &value), 0);
	CU_ASSERT_EQUAL(value, wanted);

	CU_ASSERT_EQUAL(remote_memory_read(getpid(), 0, copy, 8, error, sizeof(error)), -EFAULT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "NULL"));

	/* An object that runs onto an unmapped page is refused whole. */
	mapping = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	CU_ASSERT_FATAL(mapping != MAP_FAILED);
	munmap(mapping + page, (size_t)page);
	CU_ASSERT_EQUAL(remote_memory_read(getpid(), (uint64_t)(uintptr_t)(mapping + page - 4),
					   copy, 8, error, sizeof(error)),
			-EFAULT);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "stale"));
	munmap(mapping, (size_t)page);

	/* Pid numbers are at most 2^22: this one names no process. */
	CU_ASSERT_EQUAL(remote_memory_read(4194305, (uint64_t)(uintptr_t)text, copy, 8, error,
					   sizeof(error)),
			-ESRCH);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "no process"));
}

/* The one number parser: finite, whole text, within bounds, the option named when refused. */
UNIT_TEST(number_parse, sizes_take_powers_of_1024)
{
	static const char *const refused[] = { "",   "K",  "16X",  "-1K",   "0.5",  "1.0000001K",
					       "1K", "2T", "16 K", "0x10K", "nanK", "3G" };
	unsigned long long bytes = 0;
	char error[256];

	CU_ASSERT_EQUAL(
		number_parse_size("--max-size", "16K", 4096, 1 << 30, &bytes, error, sizeof(error)),
		0);
	CU_ASSERT_EQUAL(bytes, 16384);
	CU_ASSERT_EQUAL(number_parse_size("--max-size", "1.5m", 4096, 1 << 30, &bytes, error,
					  sizeof(error)),
			0);
	CU_ASSERT_EQUAL(bytes, 1572864);
	CU_ASSERT_EQUAL(
		number_parse_size("--max-size", "1G", 4096, 1 << 30, &bytes, error, sizeof(error)),
		0);
	CU_ASSERT_EQUAL(bytes, 1ULL << 30);
	CU_ASSERT_EQUAL(number_parse_size("--max-size", "5000", 4096, 1 << 30, &bytes, error,
					  sizeof(error)),
			0);
	CU_ASSERT_EQUAL(bytes, 5000);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		bytes = 7;
		CU_ASSERT_EQUAL(number_parse_size("--max-size", refused[i], 4096, 1 << 30, &bytes,
						  error, sizeof(error)),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(error, "--max-size needs a size in bytes"));
		CU_ASSERT_EQUAL(bytes, 7);
	}
}

UNIT_TEST(number_parse, refuses_what_is_no_number_within_bounds)
{
	const struct number_bounds positive = { .maximum = 100, .above_minimum = true };
	const struct number_bounds count = { .minimum = 1, .maximum = 256, .whole = true };
	static const char *const refused[] = { "nan", "NaN", "inf", "-inf", "1e400", "1e-400",
					       "-1",  "0",   "5x",  " 5",   "5 ",    "0x10",
					       "",    "101", "1e",  ".",    "+",     "e5" };
	char error[256];
	double value = -1;

	CU_ASSERT_EQUAL(number_parse("--seconds", "2.5", &positive, &value, error, sizeof(error)),
			0);
	CU_ASSERT_DOUBLE_EQUAL(value, 2.5, 1e-12);
	CU_ASSERT_EQUAL(number_parse("--seconds", "1e2", &positive, &value, error, sizeof(error)),
			0);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		value = -1;
		CU_ASSERT_EQUAL(number_parse("--seconds", refused[i], &positive, &value, error,
					     sizeof(error)),
				-EINVAL);
		CU_ASSERT_PTR_NOT_NULL(strstr(error, "--seconds"));
		CU_ASSERT_DOUBLE_EQUAL(value, -1, 0);
	}
	CU_ASSERT_EQUAL(number_parse("--calls", "16", &count, &value, error, sizeof(error)), 0);
	CU_ASSERT_NOT_EQUAL(number_parse("--calls", "2.5", &count, &value, error, sizeof(error)),
			    0);
	CU_ASSERT_NOT_EQUAL(number_parse("--calls", "257", &count, &value, error, sizeof(error)),
			    0);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "from 1 to 256"));
}

UNIT_TEST(names, one_form_for_identities_job_ranks_and_wall_clock_times)
{
	char identity[IDENTITY_TEXT_SIZE], job_rank[JOB_RANK_TEXT_SIZE], wall_clock[48];

	CU_ASSERT_STRING_EQUAL(identity_text(0x539731be23838e7eULL, identity),
			       "0x539731be23838e7e");
	CU_ASSERT_STRING_EQUAL(identity_text(0xabc, identity), "0x0000000000000abc");
	CU_ASSERT_STRING_EQUAL(identity_text(UINT64_MAX, identity), "0xffffffffffffffff");
	CU_ASSERT_STRING_EQUAL(job_rank_text(3, job_rank), "job rank 3");
	CU_ASSERT_STRING_EQUAL(job_rank_text(0, job_rank), "job rank 0");
	CU_ASSERT_STRING_EQUAL(job_rank_text(-1, job_rank), "no job rank");
	CU_ASSERT_STRING_EQUAL(job_rank_text(INT32_MAX, job_rank), "job rank 2147483647");
	/* date -u -d @1795868870.892621642 +%FT%T.%3NZ */
	realtime_text(1795868870892621642ULL, wall_clock, sizeof(wall_clock));
	CU_ASSERT_STRING_EQUAL(wall_clock, "2026-11-28T12:27:50.892Z");
	realtime_text(0, wall_clock, sizeof(wall_clock));
	CU_ASSERT_STRING_EQUAL(wall_clock, "1970-01-01T00:00:00.000Z");
}
