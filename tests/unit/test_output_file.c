// SPDX-License-Identifier: MIT
/*
 * Outputs written aside and renamed into place (base/output_file.h): a
 * failed output leaves the file that was there, a link stays a link, a file
 * that exists is refused when asked, and a file grown in place that fails
 * is removed only because the output created it.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/output_file.h"
#include "scratch_files.h"
#include "unit.h"

static void write_text(const char *path, const char *text)
{
	FILE *file = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	fputs(text, file);
	fclose(file);
}

static int text_is(const char *path, const char *text)
{
	char buffer[128] = "";
	FILE *file = fopen(path, "r");
	size_t length;

	if (!file)
		return 0;
	length = fread(buffer, 1, sizeof(buffer) - 1, file);
	buffer[length] = '\0';
	fclose(file);
	return strcmp(buffer, text) == 0;
}

/* Files in the scratch directory whose name starts with '.': temporary ones left behind. */
static int hidden_files(void)
{
	char directory[512];
	struct dirent *entry;
	DIR *listing;
	int count = 0;

	snprintf(directory, sizeof(directory), "%s", scratch_path("output-file-a"));
	*strrchr(directory, '/') = '\0';
	listing = opendir(directory);
	if (!listing)
		return -1;
	while ((entry = readdir(listing)))
		if (entry->d_name[0] == '.' && strcmp(entry->d_name, ".") != 0 &&
		    strcmp(entry->d_name, "..") != 0)
			count++;
	closedir(listing);
	return count;
}

UNIT_TEST(output_file, replaces_a_file_only_when_whole)
{
	const char *path = scratch_path("output-file-a");
	struct output_file out;
	char error[256];

	write_text(path, "old");
	CU_ASSERT_EQUAL_FATAL(output_file_open(&out, path, 0, error, sizeof(error)), 0);
	fputs("half", out.stream);
	CU_ASSERT_TRUE(text_is(path, "old"));
	CU_ASSERT_EQUAL(output_file_close(&out, false, error, sizeof(error)), 0);
	CU_ASSERT_TRUE(text_is(path, "old"));
	CU_ASSERT_EQUAL(hidden_files(), 0);

	CU_ASSERT_EQUAL_FATAL(output_file_open(&out, path, 0, error, sizeof(error)), 0);
	fputs("new", out.stream);
	CU_ASSERT_EQUAL(output_file_close(&out, true, error, sizeof(error)), 0);
	CU_ASSERT_TRUE(text_is(path, "new"));
	CU_ASSERT_EQUAL(hidden_files(), 0);
}

UNIT_TEST(output_file, keeps_links_and_refuses_existing_files_when_asked)
{
	const char *target = scratch_path("output-file-target");
	const char *link = scratch_path("output-file-link");
	struct output_file out;
	struct stat status;
	char error[256];

	write_text(target, "old");
	unlink(link);
	CU_ASSERT_EQUAL_FATAL(symlink(target, link), 0);
	CU_ASSERT_EQUAL_FATAL(output_file_open(&out, link, 0, error, sizeof(error)), 0);
	fputs("new", out.stream);
	CU_ASSERT_EQUAL(output_file_close(&out, true, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(lstat(link, &status), 0);
	CU_ASSERT_TRUE(S_ISLNK(status.st_mode));
	CU_ASSERT_TRUE(text_is(target, "new"));

	CU_ASSERT_NOT_EQUAL(
		output_file_open(&out, target, OUTPUT_FILE_REFUSE_EXISTING, error, sizeof(error)),
		0);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "--force"));
	CU_ASSERT_TRUE(text_is(target, "new"));
}

UNIT_TEST(output_file, grows_a_new_file_in_place_and_removes_only_its_own)
{
	const char *path = scratch_path("output-file-grown");
	struct output_file out;
	char error[256];

	unlink(path);
	CU_ASSERT_EQUAL_FATAL(
		output_file_open(&out, path, OUTPUT_FILE_GROW_IN_PLACE, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(access(path, F_OK), 0);
	CU_ASSERT_EQUAL(output_file_close(&out, false, error, sizeof(error)), 0);
	CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);

	CU_ASSERT_TRUE(output_file_is_standard("-"));
	CU_ASSERT_TRUE(output_file_is_standard("/dev/stdout"));
	CU_ASSERT_FALSE(output_file_is_standard("/dev/null"));
}

UNIT_TEST(output_file, writes_devices_in_place_and_reports_a_failed_write)
{
	struct output_file out;
	char error[256] = "";
	struct stat status;

	CU_ASSERT_EQUAL_FATAL(output_file_open(&out, "/dev/full", 0, error, sizeof(error)), 0);
	CU_ASSERT_PTR_NULL(out.temporary);
	fputs("more than fits", out.stream);
	CU_ASSERT_NOT_EQUAL(output_file_close(&out, true, error, sizeof(error)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "/dev/full"));
	CU_ASSERT_EQUAL(stat("/dev/full", &status), 0);
	CU_ASSERT_TRUE(S_ISCHR(status.st_mode));
}
