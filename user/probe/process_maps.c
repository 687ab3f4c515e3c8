// SPDX-License-Identifier: MIT
/* Reads a process's mapped files, command line, launcher ranks and children from /proc. */
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

/* What the kernel appends to the path of a mapped file no longer on disk. */
#define DELETED_SUFFIX " (deleted)"

/* Larger /proc files than this are not a process's environment or command line. */
#define PROC_FILE_LIMIT (256u << 20)

/* Turns the errno of opening /proc/PID/<entry> into a sentence. */
static int fail_proc(char *error, size_t error_size, int err, pid_t pid, const char *entry)
{
	if (err == ENOENT || err == ESRCH)
		return error_fail(error, error_size, ESRCH, "no process with pid %d", (int)pid);
	if (err == EACCES || err == EPERM)
		return error_fail(
			error, error_size, err,
			"cannot read /proc/%d/%s: permission denied; run tcheck-bpf as root "
			"(or with CAP_SYS_PTRACE and CAP_BPF)",
			(int)pid, entry);
	return error_fail(error, error_size, err, "cannot read /proc/%d/%s: %s", (int)pid, entry,
			  strerror(err));
}

/*
 * Reads a whole file whose size stat cannot tell (every /proc file says 0).
 * The buffer gets a terminating NUL not counted in *length.
 */
static int read_whole_file(const char *path, char **contents, size_t *length)
{
	size_t capacity = 4096, used = 0;
	char *buffer = malloc(capacity);
	int fd, err;

	if (!buffer)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = errno;
		free(buffer);
		return -err;
	}
	for (;;) {
		ssize_t got;

		if (capacity - used < 2) {
			char *grown;

			if (capacity >= PROC_FILE_LIMIT) {
				err = EFBIG;
				goto out_error;
			}
			grown = realloc(buffer, capacity * 2);
			if (!grown) {
				err = ENOMEM;
				goto out_error;
			}
			buffer = grown;
			capacity *= 2;
		}
		got = read(fd, buffer + used, capacity - used - 1);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			err = errno;
			goto out_error;
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	close(fd);
	buffer[used] = '\0';
	*contents = buffer;
	*length = used;
	return 0;

out_error:
	close(fd);
	free(buffer);
	return -err;
}

static int read_proc_file(pid_t pid, const char *entry, char **contents, size_t *length)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, entry);
	return read_whole_file(path, contents, length);
}

int process_check(pid_t pid, char *error, size_t error_size)
{
	char path[64];

	if (pid <= 0)
		return error_fail(error, error_size, ESRCH, "no process with pid %d", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (access(path, R_OK) != 0)
		return fail_proc(error, error_size, errno, pid, "stat");
	return 0;
}

/* The kernel's PF_KTHREAD, in the flags field of /proc/PID/stat. */
#define KERNEL_THREAD_FLAG 0x00200000UL

bool process_stat_number(pid_t pid, int field, unsigned long long *value)
{
	char path[64], text[1024], *cursor, *end;
	ssize_t length;
	int fd;

	if (field < 4)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	length = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (length <= 0)
		return false;
	text[length] = '\0';
	/* The name (field 2) may hold spaces and parentheses: field 3 follows its last ')'. */
	cursor = strrchr(text, ')');
	if (!cursor)
		return false;
	cursor++;
	for (int at = 3; at < field; at++) {
		cursor += strspn(cursor, " ");
		cursor += strcspn(cursor, " ");
	}
	*value = strtoull(cursor, &end, 10);
	return end != cursor;
}

bool process_has_ended(pid_t pid)
{
	char path[64], text[512], *after_name;
	ssize_t length;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH;
	length = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (length <= 0)
		return true;
	text[length] = '\0';
	after_name = strrchr(text, ')');
	/* A zombie (Z) or a dead task (X): its memory is gone, its parent not told yet. */
	return after_name && (after_name[2] == 'Z' || after_name[2] == 'X');
}

bool process_is_kernel_thread(pid_t pid)
{
	unsigned long long flags;

	return process_stat_number(pid, 9, &flags) && (flags & KERNEL_THREAD_FLAG) != 0;
}

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
	list->count = 0;
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
	struct mapped_region *grown;

	grown = realloc(file->regions, (file->region_count + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	file->regions = grown;
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
	struct mapped_file *grown, *file;

	grown = realloc(list->files, (list->count + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	list->files = grown;
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
 * One maps line: "start-end perms offset major:minor inode   path".
 * Returns 1 when it maps a file (deleted ones too, flagged), 0 when it is skipped,
 * negative on a malformed line. The path is the rest of the line: it may
 * hold spaces.
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
	if (consumed < 0) /* a line without a path has no whitespace left for " %n" */
		return 0;
	name = line + consumed;
	length = strlen(name);
	while (length && isspace((unsigned char)name[length - 1]))
		name[--length] = '\0';
	/* Anonymous memory, [heap], [vdso], anon_inode:... */
	if (inode_number == 0 || name[0] != '/')
		return 0;
	/* A file removed or replaced on disk is still mapped: it stays, by its old name. */
	*deleted = ends_with(name, length, DELETED_SUFFIX);
	if (*deleted)
		name[length - strlen(DELETED_SUFFIX)] = '\0';
	region->start = start;
	region->end = end;
	region->offset = offset;
	memcpy(region->permissions, permissions, sizeof(region->permissions));
	*device = makedev(major_number, minor_number);
	*inode = inode_number;
	*path = name;
	return 1;
}

int process_maps_parse(const char *text, pid_t pid, struct mapped_file_list *list, char *error,
		       size_t error_size)
{
	char *copy, *line, *next;
	int line_number = 0, err = 0;

	list->files = NULL;
	list->count = 0;
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
	list->count = 0;
	if (pid <= 0)
		return error_fail(error, error_size, ESRCH, "no process with pid %d", (int)pid);
	err = read_proc_file(pid, "maps", &text, &length);
	if (err)
		return fail_proc(error, error_size, -err, pid, "maps");
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

int environment_integer(const char *block, size_t length, const char *name)
{
	size_t name_length = strlen(name);
	const char *entry = block, *end = block + length;

	while (entry < end) {
		size_t entry_length = strnlen(entry, (size_t)(end - entry));

		if (entry_length > name_length && memcmp(entry, name, name_length) == 0 &&
		    entry[name_length] == '=') {
			const char *digits = entry + name_length + 1;
			const char *entry_end = entry + entry_length;
			long value = 0;

			/* Plain decimal only: "3" counts, "3x", "", "-1" and overflows do not. */
			if (digits == entry_end)
				return -1;
			for (const char *c = digits; c < entry_end; c++) {
				if (*c < '0' || *c > '9')
					return -1;
				value = value * 10 + (*c - '0');
				if (value > INT_MAX)
					return -1;
			}
			return (int)value;
		}
		entry += entry_length + 1;
	}
	return -1;
}

/* The parent pid from the text of /proc/PID/stat, or -1. */
static pid_t stat_parent_pid(const char *stat_text)
{
	/* The command name in parentheses may itself hold ") ": the last one ends it. */
	const char *close = strrchr(stat_text, ')');
	char state;
	int parent;

	if (!close || sscanf(close + 1, " %c %d", &state, &parent) != 2)
		return -1;
	return parent;
}

static pid_t read_parent_pid(pid_t pid)
{
	char *text = NULL;
	size_t length;
	pid_t parent;

	if (read_proc_file(pid, "stat", &text, &length) || !text)
		return -1;
	parent = stat_parent_pid(text);
	free(text);
	return parent;
}

char *process_command_line(pid_t pid)
{
	size_t length;
	char *text, *command;

	if (read_proc_file(pid, "cmdline", &text, &length) == 0) {
		while (length && text[length - 1] == '\0')
			length--;
		for (size_t i = 0; i < length; i++)
			if (text[i] == '\0')
				text[i] = ' ';
		text[length] = '\0';
		if (length)
			return text;
		free(text);
	}
	/* Kernel threads and zombies have no argv: name them like ps does. */
	if (read_proc_file(pid, "comm", &text, &length) != 0)
		return strdup("");
	while (length && text[length - 1] == '\n')
		text[--length] = '\0';
	if (asprintf(&command, "[%s]", text) < 0)
		command = NULL;
	free(text);
	return command;
}

static char *read_executable(pid_t pid)
{
	char path[64], target[PATH_MAX];
	ssize_t length;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	length = readlink(path, target, sizeof(target) - 1);
	if (length < 0)
		return strdup("");
	target[length] = '\0';
	return strdup(target);
}

void process_info_free(struct process_info *info)
{
	if (!info)
		return;
	free(info->command);
	free(info->executable);
	info->command = NULL;
	info->executable = NULL;
}

int process_info_read(pid_t pid, struct process_info *info, char *error, size_t error_size)
{
	size_t length;
	char *environment;
	int err;

	memset(info, 0, sizeof(*info));
	info->pid = pid;
	info->rank = info->local_rank = info->world_size = -1;
	err = process_check(pid, error, error_size);
	if (err)
		return err;
	info->parent_pid = read_parent_pid(pid);
	info->command = process_command_line(pid);
	info->executable = read_executable(pid);
	if (!info->command || !info->executable) {
		process_info_free(info);
		return error_fail(error, error_size, ENOMEM, "out of memory reading process %d",
				  (int)pid);
	}
	err = read_proc_file(pid, "environ", &environment, &length);
	if (err) {
		snprintf(info->note, sizeof(info->note),
			 "cannot read /proc/%d/environ (%s): RANK, LOCAL_RANK and WORLD_SIZE are "
			 "unknown; run as root to read them",
			 (int)pid, strerror(-err));
		return 0;
	}
	info->rank = environment_integer(environment, length, "RANK");
	info->local_rank = environment_integer(environment, length, "LOCAL_RANK");
	info->world_size = environment_integer(environment, length, "WORLD_SIZE");
	free(environment);
	return 0;
}

static int compare_pids(const void *left, const void *right)
{
	pid_t a = *(const pid_t *)left, b = *(const pid_t *)right;

	return (a > b) - (a < b);
}

struct process_parent {
	pid_t pid;
	pid_t parent;
};

/* Every process with its parent, from /proc/[0-9]*\/stat. */
static int list_process_parents(struct process_parent **pairs, size_t *count)
{
	size_t capacity = 256;
	struct process_parent *list = malloc(capacity * sizeof(*list));
	struct dirent *entry;
	DIR *proc;
	int err;

	*count = 0;
	if (!list)
		return -ENOMEM;
	proc = opendir("/proc");
	if (!proc) {
		err = errno;
		free(list);
		return -err;
	}
	while ((entry = readdir(proc)) != NULL) {
		char *end;
		long pid = strtol(entry->d_name, &end, 10);
		pid_t parent;

		if (*end || pid <= 0)
			continue;
		/* A process that exits while we look is simply not a child any more. */
		parent = read_parent_pid((pid_t)pid);
		if (parent < 0)
			continue;
		if (*count == capacity) {
			struct process_parent *grown = realloc(list, capacity * 2 * sizeof(*list));

			if (!grown) {
				closedir(proc);
				free(list);
				return -ENOMEM;
			}
			list = grown;
			capacity *= 2;
		}
		list[*count].pid = (pid_t)pid;
		list[*count].parent = parent;
		(*count)++;
	}
	closedir(proc);
	*pairs = list;
	return 0;
}

int process_children(pid_t pid, bool descendants, pid_t **pids, size_t *count, char *error,
		     size_t error_size)
{
	struct process_parent *pairs = NULL;
	size_t pair_count, found = 0, visited = 0;
	pid_t *result;
	int err;

	*pids = NULL;
	*count = 0;
	err = process_check(pid, error, error_size);
	if (err)
		return err;
	err = list_process_parents(&pairs, &pair_count);
	if (err)
		return error_fail(error, error_size, -err, "cannot list the processes in /proc: %s",
				  strerror(-err));
	/* A tree has fewer nodes than there are processes, so this never grows. */
	result = malloc((pair_count + 1) * sizeof(*result));
	if (!result) {
		free(pairs);
		return error_fail(error, error_size, ENOMEM,
				  "out of memory listing the children of %d", (int)pid);
	}
	/* Breadth first: result[visited..found) are parents still to expand. */
	for (pid_t parent = pid;;) {
		for (size_t i = 0; i < pair_count; i++)
			if (pairs[i].parent == parent && pairs[i].pid != pid)
				result[found++] = pairs[i].pid;
		if (!descendants || visited == found)
			break;
		parent = result[visited++];
	}
	free(pairs);
	qsort(result, found, sizeof(*result), compare_pids);
	*pids = result;
	*count = found;
	return 0;
}
