// SPDX-License-Identifier: MIT
/* Reading a library's bytes into a new buffer: what is there, and a clear failure past its end. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probe/library_file.h"
#include "unit.h"

UNIT_TEST(library_file, bytes_are_read_whole_and_a_short_file_is_said)
{
	char path[] = "/tmp/tcheck-unit-library-XXXXXX";
	uint8_t written[300000], *read_back = NULL;
	char error[256];
	int fd = mkstemp(path);

	CU_ASSERT_FATAL(fd >= 0);
	for (size_t i = 0; i < sizeof(written); i++)
		written[i] = (uint8_t)(i * 7 + i / 251);
	CU_ASSERT_EQUAL_FATAL(write(fd, written, sizeof(written)), (ssize_t)sizeof(written));
	CU_ASSERT_EQUAL(
		library_file_read_new(fd, path, 1000, 200000, &read_back, error, sizeof(error)), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(read_back);
	CU_ASSERT_EQUAL(memcmp(read_back, written + 1000, 200000), 0);
	free(read_back);
	/* More than the file holds: an error naming the file, no buffer left. */
	CU_ASSERT_EQUAL(
		library_file_read_new(fd, path, 200000, 200000, &read_back, error, sizeof(error)),
		-EIO);
	CU_ASSERT_PTR_NULL(read_back);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, path));
	close(fd);
	unlink(path);
}
