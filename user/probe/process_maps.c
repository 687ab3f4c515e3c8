// SPDX-License-Identifier: MIT
/* Reads a process's mapped files from /proc. */
#include "probe/process_maps.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/growable_array.h"
#include "probe/proc_files.h"

/* What the kernel appends to the path of a mapped file no longer on disk. */
#define DELETED_SUFFIX " (deleted)"

void mapped_file_list_free(struct mapped_file_list *list)
{
	if (!list)
		return;
	for (size_t i = 0; i < list->count; i++) {
		free(list->files[i].path);
		free(list->files[i].host_path);
		free(list->files[i].regions);
	}
	free(list->files);
	list->files = NULL;
	list->count = list->capacity = 0;
}

static struct mapped_file *file_by_identity(struct mapped_file_list *list, dev_t device,
					    uint64_t inode)
{
	for (size_t i = 0; i < list->count; i++)
		if (list->files[i].device == device && list->files[i].inode == inode)
			return &list->files[i];
	return NULL;
}

static int add_region(struct mapped_file *file, const struct mapped_region *region)
{
	if (growable_array_room_for_one((void **)&file->regions, file->region_count,
					&file->region_capacity, sizeof(*file->regions)))
		return -ENOMEM;
	file->regions[file->region_count++] = *region;
	if (region->start < file->start) {
		file->start = region->start;
		file->offset = region->offset;
	}
	if (region->end > file->end)
		file->end = region->end;
	/* 'r', 'w', 'x' are each kept when any region has them; sharing is the first region's. */
	for (int i = 0; i < 3; i++)
		if (region->permissions[i] != '-')
			file->permissions[i] = region->permissions[i];
	return 0;
}

/* The kernel's own handle on a mapping: it opens the mapped file wherever it lives. */
static char *mapping_handle(pid_t pid, const struct mapped_region *region)
{
	char *handle;

	if (asprintf(&handle, "/proc/%d/map_files/%llx-%llx", (int)pid,
		     (unsigned long long)region->start, (unsigned long long)region->end) < 0)
		return NULL;
	return handle;
}

/* Where the file would be from here when the process's root holds it (no check). */
static char *default_host_path(pid_t pid, const char *path, bool deleted,
			       const struct mapped_region *region)
{
	char *host_path;

	if (pid <= 0)
		return strdup(path);
	if (deleted)
		return mapping_handle(pid, region);
	if (asprintf(&host_path, "/proc/%d/root%s", (int)pid, path) < 0)
		return NULL;
	return host_path;
}

static int add_file(struct mapped_file_list *list, const char *path, pid_t pid, dev_t device,
		    uint64_t inode, bool deleted, const struct mapped_region *region)
{
	struct mapped_file *file;

	if (growable_array_room_for_one((void **)&list->files, list->count, &list->capacity,
					sizeof(*list->files)))
		return -ENOMEM;
	file = &list->files[list->count];
	memset(file, 0, sizeof(*file));
	file->path = strdup(path);
	file->host_path = default_host_path(pid, path, deleted, region);
	file->deleted = deleted;
	if (!file->path || !file->host_path) {
		free(file->path);
		free(file->host_path);
		return -ENOMEM;
	}
	file->device = device;
	file->inode = inode;
	file->start = region->start;
	file->end = region->end;
	file->offset = region->offset;
	memcpy(file->permissions, region->permissions, sizeof(file->permissions));
	list->count++;
	return add_region(file, region) == 0 ? 0 : -ENOMEM;
}

static bool ends_with(const char *text, size_t length, const char *suffix)
{
	size_t suffix_length = strlen(suffix);

	return length >= suffix_length &&
	       memcmp(text + length - suffix_length, suffix, suffix_length) == 0;
}

/*
 * One maps line: "start-end perms offset major:minor inode   path", every
 * field filled for any line ("" as the path of anonymous memory). Returns 1
 * when it maps a file (deleted ones too, flagged), 0 for other memory
 * ([heap], anonymous, anon_inode:...), negative on a malformed line. The
 * path is the rest of the line: it may hold spaces.
 */
static int parse_maps_line(char *line, struct mapped_region *region, dev_t *device, uint64_t *inode,
			   char **path, bool *deleted)
{
	unsigned long long start, end, offset, inode_number;
	unsigned int major_number, minor_number;
	char permissions[5];
	int consumed = -1;
	size_t length;
	char *name;

	if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &start, &end, permissions, &offset,
		   &major_number, &minor_number, &inode_number, &consumed) < 7)
		return -EINVAL;
	region->start = start;
	region->end = end;
	region->offset = offset;
	memcpy(region->permissions, permissions, sizeof(region->permissions));
	*device = makedev(major_number, minor_number);
	*inode = inode_number;
	/* A line without a path has no whitespace left for " %n". */
	name = consumed < 0 ? line + strlen(line) : line + consumed;
	length = strlen(name);
	while (length && isspace((unsigned char)name[length - 1]))
		name[--length] = '\0';
	/* A file removed or replaced on disk is still mapped: it stays, by its old name. */
	*deleted = ends_with(name, length, DELETED_SUFFIX);
	if (*deleted)
		name[length - strlen(DELETED_SUFFIX)] = '\0';
	*path = name;
	/* Anonymous memory, [heap], [vdso], anon_inode:... */
	return inode_number != 0 && name[0] == '/';
}

int process_maps_parse(const char *text, pid_t pid, struct mapped_file_list *list, char *error,
		       size_t error_size)
{
	char *copy, *line, *next;
	int line_number = 0, err = 0;

	list->files = NULL;
	list->count = list->capacity = 0;
	copy = strdup(text);
	if (!copy)
		return error_fail(error, error_size, ENOMEM, "out of memory reading a memory map");
	for (line = copy; line && *line; line = next) {
		struct mapped_region region;
		struct mapped_file *file;
		bool deleted = false;
		uint64_t inode;
		dev_t device;
		char *path;
		int parsed;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		line_number++;
		if (!*line)
			continue;
		parsed = parse_maps_line(line, &region, &device, &inode, &path, &deleted);
		if (parsed < 0) {
			err = error_fail(
				error, error_size, EINVAL,
				"line %d of the memory map of pid %d is not in the maps format: "
				"\"%.80s\"",
				line_number, (int)pid, line);
			break;
		}
		if (parsed == 0)
			continue;
		file = file_by_identity(list, device, inode);
		err = file ? add_region(file, &region)
			   : add_file(list, path, pid, device, inode, deleted, &region);
		if (err) {
			err = error_fail(error, error_size, ENOMEM,
					 "out of memory reading a memory map");
			break;
		}
	}
	free(copy);
	if (err)
		mapped_file_list_free(list);
	return err;
}

/* Whether a path from here names the very file the maps line names (device and inode). */
static bool names_mapped_file(const char *candidate, const struct mapped_file *file)
{
	struct stat st;

	return stat(candidate, &st) == 0 && st.st_dev == file->device && st.st_ino == file->inode;
}

static int replace_host_path(struct mapped_file *file, char *host_path)
{
	if (!host_path)
		return -ENOMEM;
	free(file->host_path);
	file->host_path = host_path;
	return 0;
}

/*
 * Finds a path from here to the file a process maps, checked by device and
 * inode, whatever put it where it is: the process's own root (a mount
 * namespace: a container), the maps path itself (a chroot shares the host's
 * mount namespace, so maps names its files by their host paths), or else the
 * kernel's handle on the mapping (a deleted or replaced file, a chroot inside
 * a container). The handle lasts only while the process maps the file, so a
 * checked path is preferred.
 */
static int resolve_host_path(pid_t pid, struct mapped_file *file)
{
	char *candidate;

	if (file->deleted || file->region_count == 0 || names_mapped_file(file->host_path, file))
		return 0;
	if (names_mapped_file(file->path, file))
		return replace_host_path(file, strdup(file->path));
	candidate = mapping_handle(pid, &file->regions[0]);
	if (!candidate)
		return -ENOMEM;
	if (access(candidate, R_OK) == 0)
		return replace_host_path(file, candidate);
	/* The handle needs CAP_SYS_ADMIN: keep the unchecked path, the old behaviour. */
	free(candidate);
	return 0;
}

int process_maps_read_unchecked(pid_t pid, struct mapped_file_list *list, char *error,
				size_t error_size)
{
	size_t length;
	char *text;
	int err;

	list->files = NULL;
	list->count = list->capacity = 0;
	if (pid <= 0)
		return error_fail(error, error_size, ESRCH, "no process with pid %d", (int)pid);
	err = proc_file_read(pid, "maps", &text, &length);
	if (err)
		return proc_file_fail(error, error_size, -err, pid, "maps");
	err = process_maps_parse(text, pid, list, error, error_size);
	free(text);
	return err;
}

int process_maps_read(pid_t pid, struct mapped_file_list *list, char *error, size_t error_size)
{
	int err = process_maps_read_unchecked(pid, list, error, error_size);

	if (err)
		return err;
	for (size_t i = 0; !err && i < list->count; i++)
		err = resolve_host_path(pid, &list->files[i]);
	if (err) {
		mapped_file_list_free(list);
		return error_fail(error, error_size, ENOMEM, "out of memory reading a memory map");
	}
	return 0;
}

const struct mapped_file *mapped_file_list_find_suffix(const struct mapped_file_list *list,
						       const char *suffix)
{
	for (size_t i = 0; i < list->count; i++)
		if (ends_with(list->files[i].path, strlen(list->files[i].path), suffix))
			return &list->files[i];
	return NULL;
}

const struct mapped_file *mapped_file_list_find_address(const struct mapped_file_list *list,
							uint64_t address, uint64_t *file_offset)
{
	for (size_t i = 0; i < list->count; i++) {
		const struct mapped_file *file = &list->files[i];

		if (address < file->start || address >= file->end)
			continue;
		for (size_t j = 0; j < file->region_count; j++) {
			const struct mapped_region *region = &file->regions[j];

			if (address >= region->start && address < region->end) {
				if (file_offset)
					*file_offset = address - region->start + region->offset;
				return file;
			}
		}
	}
	return NULL;
}

void process_maps_text_describe_address(const char *maps_text, uint64_t address, char *text,
					size_t size)
{
	snprintf(text, size, "no mapping");
	for (const char *line = maps_text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t length = end ? (size_t)(end - line) : strlen(line);
		char one[PATH_MAX + 128], *name;
		struct mapped_region region;
		bool deleted = false;
		uint64_t inode;
		dev_t device;

		snprintf(one, sizeof(one), "%.*s", (int)length, line);
		line = end ? end + 1 : NULL;
		if (parse_maps_line(one, &region, &device, &inode, &name, &deleted) < 0 ||
		    address < region.start || address >= region.end)
			continue;
		/* A line without a name is anonymous memory. */
		if (name[0])
			snprintf(text, size, "%s%s (%s)", name, deleted ? DELETED_SUFFIX : "",
				 region.permissions);
		else
			snprintf(text, size, "anonymous memory (%s)", region.permissions);
		return;
	}
}
