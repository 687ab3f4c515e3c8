// SPDX-License-Identifier: MIT
/*
 * The agent's config file reader, through `agent --config FILE --help`: the
 * file is read and checked, then the help is printed and nothing attaches.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "scratch_files.h"
#include "unit.h"

/* Writes 'size' bytes to the scratch file 'name' and returns its path. */
static const char *config_file(const char *name, const char *text, size_t size)
{
	const char *path = scratch_path(name);
	FILE *file = fopen(path, "w");

	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	CU_ASSERT_EQUAL(fwrite(text, 1, size, file), size);
	fclose(file);
	return path;
}

/* The exit status of `agent OPTION PATH --help`, its help text discarded. */
static int agent_status_spelled(const char *option, const char *path)
{
	char verb[] = "agent", config[32], help[] = "--help", copy[256];
	char *argv[] = { verb, config, copy, help, NULL };
	int saved, null, status;

	snprintf(config, sizeof(config), "%s", option);
	snprintf(copy, sizeof(copy), "%s", path);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	null = open("/dev/null", O_WRONLY);
	CU_ASSERT_FATAL(saved >= 0 && null >= 0);
	dup2(null, STDOUT_FILENO);
	close(null);
	status = command_agent(4, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	return status;
}

static int agent_status(const char *path)
{
	return agent_status_spelled("--config", path);
}

#define TEXT(name, text) config_file(name, text, sizeof(text) - 1)

/* Found by fuzzing the command line: `--conf FILE`, which getopt takes, was not read. */
UNIT_TEST(agent_config, every_spelling_of_the_option_reads_the_file)
{
	const char *bad = TEXT("config-bad-retention", "retention = soon\n");
	const char *good = TEXT("config-good-retention", "retention = 60\n");

	CU_ASSERT_EQUAL(agent_status_spelled("--config", bad), 2);
	CU_ASSERT_EQUAL(agent_status_spelled("--conf", bad), 2);
	CU_ASSERT_EQUAL(agent_status_spelled("--conf", good), 0);
}

UNIT_TEST(agent_config, a_directory_is_refused)
{
	const char *path = scratch_path("config-directory");

	CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
	CU_ASSERT_EQUAL(agent_status(path), 2);
}

UNIT_TEST(agent_config, a_line_longer_than_any_buffer_is_one_line)
{
	static char text[9000];

	memcpy(text, "select = ", 9);
	memset(text + 9, 'a', sizeof(text) - 11);
	text[sizeof(text) - 2] = '\n';
	CU_ASSERT_EQUAL(agent_status(config_file("long-line", text, sizeof(text) - 1)), 0);
}

UNIT_TEST(agent_config, a_control_byte_is_refused)
{
	CU_ASSERT_EQUAL(agent_status(TEXT("nul", "select = a\0b\n")), 2);
	CU_ASSERT_EQUAL(agent_status(TEXT("escape", "select = a\033b\n")), 2);
	CU_ASSERT_EQUAL(agent_status(TEXT("tab", "select\t= a b\r\n")), 0);
}

UNIT_TEST(agent_config, flags_are_yes_or_no)
{
	CU_ASSERT_EQUAL(agent_status(TEXT("flag-no", "torch = no\npython = false\n")), 0);
	CU_ASSERT_EQUAL(agent_status(TEXT("flag-bare", "torch\n")), 0);
	CU_ASSERT_EQUAL(agent_status(TEXT("flag-maybe", "torch = maybe\n")), 2);
}

UNIT_TEST(agent_config, the_ring_buffer_is_at_most_2_gib)
{
	CU_ASSERT_EQUAL(agent_status(TEXT("ring-3", "ring-buffer-mb = 3\n")), 0);
	CU_ASSERT_EQUAL(agent_status(TEXT("ring-2048", "ring-buffer-mb = 2048\n")), 0);
	CU_ASSERT_EQUAL(agent_status(TEXT("ring-3000", "ring-buffer-mb = 3000\n")), 2);
	CU_ASSERT_EQUAL(agent_status(TEXT("ring-huge", "ring-buffer-mb = 99999999999999999999\n")),
			2);
}

UNIT_TEST(agent_config, only_a_small_regular_file_is_read)
{
	const char *fifo = scratch_path("config-fifo"), *big = scratch_path("config-big");
	int fd;

	/* A device would be read for ever (getline grew to 1.7 GB on /dev/zero). */
	CU_ASSERT_EQUAL(agent_status("/dev/zero"), 2);
	/* A FIFO with no writer: refused at once, not waited on. */
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	CU_ASSERT_EQUAL(agent_status(fifo), 2);
	/* A sparse file of 2 GB: refused by its size, before a byte is read. */
	fd = open(big, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(ftruncate(fd, 2LL << 30), 0);
	close(fd);
	CU_ASSERT_EQUAL(agent_status(big), 2);
	/* The last line needs no newline; 64 KiB is the bound, inclusive. */
	CU_ASSERT_EQUAL(agent_status(TEXT("no-newline", "torch = yes")), 0);
	{
		static char text[64 * 1024 + 1];

		memset(text, '#', sizeof(text));
		CU_ASSERT_EQUAL(agent_status(config_file("at-bound", text, 64 * 1024)), 0);
		CU_ASSERT_EQUAL(agent_status(config_file("past-bound", text, sizeof(text))), 2);
	}
}
