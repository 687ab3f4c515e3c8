// SPDX-License-Identifier: MIT
/* Which torch release a libtorch_cpu.so belongs to: its package's version.py or its file name. */
#include "python/torch_probes.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error_message.h"
#include "python/torch_probe_sites.h"

/* A symbolic link chain longer than this is not followed. */
#define LINK_DEPTH_LIMIT 8
#define VERSION_FILE_LIMIT (256 * 1024)

int torch_version_parse(const char *text, struct torch_version *version)
{
	char *end;
	long major, minor, patch = -1;

	if (!isdigit((unsigned char)text[0]))
		return -EINVAL;
	major = strtol(text, &end, 10);
	if (*end != '.' || !isdigit((unsigned char)end[1]))
		return -EINVAL;
	minor = strtol(end + 1, &end, 10);
	if (*end == '.' && isdigit((unsigned char)end[1]))
		patch = strtol(end + 1, &end, 10);
	if (major > 1000 || minor > 1000 || patch > 1000)
		return -EINVAL;
	version->major = (int)major;
	version->minor = (int)minor;
	version->patch = (int)patch;
	snprintf(version->text, sizeof(version->text), "%s", text);
	version->source[0] = '\0';
	return 0;
}

/* Where a version was read, for messages: a path cut short there still says enough. */
__attribute__((format(printf, 3, 4))) static void describe_source(char *source, size_t size,
								  const char *format, ...)
{
	va_list arguments;

	va_start(arguments, format);
	vsnprintf(source, size, format, arguments);
	va_end(arguments);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* The directory part of path, without the trailing slash; "" for a bare name. */
static void directory_of(const char *path, char *directory, size_t size)
{
	const char *slash = strrchr(path, '/');
	size_t length = slash ? (size_t)(slash - path) : 0;

	if (slash == path)
		length = 1;
	snprintf(directory, size, "%.*s", (int)length, path);
}

/* Reads __version__ = '...' from a torch/version.py; 0 when found. */
static int version_from_package_file(const char *file_path, struct torch_version *version)
{
	char *text, *cursor, *line, *quote, *closing;
	struct torch_version found;
	FILE *file;
	size_t length;
	int err = -ENOENT;

	file = fopen(file_path, "re");
	if (!file)
		return -errno;
	text = calloc(1, VERSION_FILE_LIMIT + 1);
	if (!text) {
		fclose(file);
		return -ENOMEM;
	}
	length = fread(text, 1, VERSION_FILE_LIMIT, file);
	fclose(file);
	text[length] = '\0';
	cursor = text;
	while ((line = strsep(&cursor, "\n"))) {
		if (strncmp(line, "__version__", strlen("__version__")) != 0)
			continue;
		quote = strpbrk(line, "'\"");
		if (!quote)
			break;
		closing = strchr(quote + 1, *quote);
		if (!closing)
			break;
		*closing = '\0';
		if (torch_version_parse(quote + 1, &found) == 0) {
			describe_source(found.source, sizeof(found.source), "%s", file_path);
			*version = found;
			err = 0;
		} else {
			err = -EINVAL;
		}
		break;
	}
	free(text);
	return err;
}

/* torch/lib/libtorch_cpu.so has torch/version.py two levels up (pip and conda packages). */
static int version_from_package(const char *library_path, struct torch_version *version)
{
	char lib_directory[PATH_MAX], torch_directory[PATH_MAX], version_path[PATH_MAX + 16];

	directory_of(library_path, lib_directory, sizeof(lib_directory));
	if (strcmp(base_name(lib_directory), "lib") != 0)
		return -ENOENT;
	directory_of(lib_directory, torch_directory, sizeof(torch_directory));
	if (strcmp(base_name(torch_directory), "torch") != 0)
		return -ENOENT;
	snprintf(version_path, sizeof(version_path), "%s/version.py", torch_directory);
	return version_from_package_file(version_path, version);
}

/* libtorch_cpu.so.1.13.0: the version distributions put in the file name. */
static int version_from_file_name(const char *library_path, struct torch_version *version)
{
	const char *name = base_name(library_path);
	struct torch_version found;

	if (strncmp(name, TORCH_LIBRARY_NAME ".", strlen(TORCH_LIBRARY_NAME ".")) != 0)
		return -ENOENT;
	if (torch_version_parse(name + strlen(TORCH_LIBRARY_NAME "."), &found) != 0)
		return -ENOENT;
	describe_source(found.source, sizeof(found.source), "the file name %s", library_path);
	*version = found;
	return 0;
}

/* "/proc/PID/root" when path goes through it, so absolute link targets stay inside. */
static size_t proc_root_length(const char *path)
{
	const char *cursor;

	if (strncmp(path, "/proc/", 6) != 0)
		return 0;
	for (cursor = path + 6; isdigit((unsigned char)*cursor); cursor++)
		;
	if (cursor == path + 6 || strncmp(cursor, "/root/", 6) != 0)
		return 0;
	return (size_t)(cursor + 5 - path);
}

int torch_version_detect(const char *library_path, struct torch_version *version, char *error,
			 size_t error_size)
{
	char current[PATH_MAX], target[PATH_MAX], next[PATH_MAX * 2 + 2];
	size_t root_length = proc_root_length(library_path);

	snprintf(current, sizeof(current), "%s", library_path);
	for (int depth = 0; depth <= LINK_DEPTH_LIMIT; depth++) {
		struct stat st;
		ssize_t length;

		if (version_from_package(current, version) == 0 ||
		    version_from_file_name(current, version) == 0)
			return 0;
		if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode))
			break;
		length = readlink(current, target, sizeof(target) - 1);
		if (length <= 0)
			break;
		target[length] = '\0';
		if (target[0] == '/') {
			snprintf(next, sizeof(next), "%.*s%s", (int)root_length, library_path,
				 target);
		} else {
			char directory[PATH_MAX];

			directory_of(current, directory, sizeof(directory));
			snprintf(next, sizeof(next), "%s/%s", directory, target);
		}
		if (strlen(next) >= sizeof(current))
			break;
		memcpy(current, next, strlen(next) + 1);
	}
	return error_fail(error, error_size, ENOENT,
			  "cannot tell which torch version %s belongs to: it is neither in a torch "
			  "package's lib/ directory with torch/version.py beside it, nor named "
			  "with its version (libtorch_cpu.so.MAJOR.MINOR)",
			  library_path);
}
