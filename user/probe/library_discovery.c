// SPDX-License-Identifier: MIT
/* Finds NCCL and the dynamic loader in processes and files, and probes them. */
#include "probe/library_discovery.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/log.h"
#include "base/system_clock.h"
#include "base/u64_map.h"
#include "probe/elf_symbol_lookup.h"
#include "probe/elf_symbols.h"
#include "probe/library_file.h"
#include "probe/nccl_comm_layout.h"
#include "probe/process_maps.h"
#include "probe/uprobe_entry_site.h"

/* Whether a file was looked at, and what it held. */
struct checked_file {
	int has_nccl;
	char *host_path;
};

struct library_discovery {
	struct probe_session *session;
	library_attached_fn on_attached;
	void *context;
	struct u64_map checked_files;  /* file identity -> checked_file */
	struct u64_map nccl_paths;     /* pid -> host path of its NCCL library */
	struct u64_map loader_notices; /* pid -> its loader's path, once probed */
	size_t library_count;
	uint32_t comm_layouts_used; /* slots of the probes' comm_layouts map */
	library_file_hook_fn file_hook;
	void *file_hook_context;
};

struct library_discovery *library_discovery_new(struct probe_session *session,
						library_attached_fn on_attached, void *context)
{
	struct library_discovery *discovery = calloc(1, sizeof(*discovery));

	if (!discovery)
		return NULL;
	discovery->session = session;
	discovery->on_attached = on_attached;
	discovery->context = context;
	u64_map_init(&discovery->checked_files);
	u64_map_init(&discovery->nccl_paths);
	u64_map_init(&discovery->loader_notices);
	return discovery;
}

void library_discovery_free(struct library_discovery *discovery)
{
	uint64_t key;
	void *value;

	if (!discovery)
		return;
	for (size_t i = 0; u64_map_next(&discovery->checked_files, &i, &key, &value);) {
		struct checked_file *file = value;

		free(file->host_path);
		free(file);
	}
	u64_map_free(&discovery->checked_files);
	u64_map_free_with_values(&discovery->nccl_paths);
	u64_map_free_with_values(&discovery->loader_notices);
	free(discovery);
}

/*
 * Gives the probes the library's struct ncclComm layout (from its DWARF),
 * so they read each new communicator's identity at once, and the operation
 * counter of the communicator each call works on as it is entered. Returns the
 * cookie bits naming the slot, or 0 when the library has no such layout.
 */
static uint64_t share_comm_layout(struct library_discovery *discovery, const char *path)
{
	struct tcheck_comm_layout shared = { .op_count_offset = -1 };
	struct nccl_comm_layout layout;
	char error[256];
	uint32_t slot;

	if (discovery->comm_layouts_used >= TCHECK_MAX_COMM_LAYOUTS ||
	    nccl_comm_layout_find(path, &layout, error, sizeof(error)) < 0) {
		log_debug("communicators of %s are read later: no layout", path);
		return 0;
	}
	shared.comm_hash_offset = (int32_t)layout.comm_hash.offset;
	shared.rank_offset = (int32_t)layout.rank.offset;
	shared.nranks_offset = (int32_t)layout.nranks.offset;
	/* The probe reads it as 64 bits; a counter of another width is left unread. */
	if (layout.op_count.size == 8)
		shared.op_count_offset = (int32_t)layout.op_count.offset;
	slot = discovery->comm_layouts_used;
	if (probe_session_set_comm_layout(discovery->session, slot, &shared))
		return 0;
	discovery->comm_layouts_used++;
	return (uint64_t)(slot + 1) << TCHECK_COOKIE_LAYOUT_SHIFT;
}

static int attach_nccl(struct library_discovery *discovery, const char *path, uint32_t pid,
		       char *error, size_t error_size)
{
	uint64_t layout_bits;
	struct trace_library record = { 0 };
	uint64_t *offsets = NULL, *cookies = NULL;
	struct nccl_library *library;
	int result;

	result = nccl_library_scan(path, &library, error, error_size);
	if (result)
		return result;
	offsets = calloc(library->symbol_count, sizeof(*offsets));
	cookies = calloc(library->symbol_count, sizeof(*cookies));
	if (!offsets || !cookies) {
		snprintf(error, error_size, "out of memory");
		result = -ENOMEM;
		goto out;
	}
	layout_bits = share_comm_layout(discovery, path);
	for (size_t i = 0; i < library->symbol_count; i++) {
		offsets[i] = uprobe_cheap_entry_file_offset(path, library->symbols[i].file_offset);
		cookies[i] = nccl_function_cookie((size_t)library->symbols[i].function_index) |
			     layout_bits;
	}
	result = probe_session_attach_calls(discovery->session, path, offsets, cookies,
					    library->symbol_count, error, error_size);
	if (result)
		goto out;
	record.functions_attached = (uint32_t)library->symbol_count;
	discovery->library_count++;
	log_info("probed %u NCCL functions in %s", record.functions_attached, path);
	record.pid = pid;
	record.attached_ns = monotonic_ns();
	record.path = path;
	record.build_id = library->build_id;
	result = discovery->on_attached ? discovery->on_attached(discovery->context, &record) : 0;
out:
	free(offsets);
	free(cookies);
	nccl_library_free(library);
	return result;
}

static int is_dynamic_loader(const char *path)
{
	const char *name = strrchr(path, '/');

	name = name ? name + 1 : path;
	return strncmp(name, "ld-linux", 8) == 0 || strncmp(name, "ld-musl", 7) == 0 ||
	       strncmp(name, "ld.so", 5) == 0;
}

/*
 * The loader calls _dl_debug_state after every change to the library
 * list. Probed per process (and again after an exec maps a new loader).
 */
static void attach_loader(struct library_discovery *discovery, const char *path, pid_t pid)
{
	const char *probed = u64_map_get(&discovery->loader_notices, (uint64_t)pid);
	char error[512], *kept;
	uint64_t offset;
	int result;

	if (probed && strcmp(probed, path) == 0)
		return;
	if (elf_symbol_file_offset(path, "_dl_debug_state", &offset, error, sizeof(error))) {
		log_debug("no dlopen notices from %s: %s", path, error);
		return;
	}
	result = probe_session_attach_notice(discovery->session, path, offset,
					     TCHECK_COOKIE_LIBRARY_CHANGE, pid, error,
					     sizeof(error));
	/* ESRCH: the process ended meanwhile; it loads nothing more. */
	if (result == -ESRCH) {
		log_debug("process %d ended before its loader was probed", pid);
		return;
	}
	if (result) {
		log_warning("libraries process %d loads later may be found late: %s", pid, error);
		return;
	}
	kept = strdup(path);
	if (kept && u64_map_put(&discovery->loader_notices, (uint64_t)pid, kept) == 0)
		free((void *)probed);
	else
		free(kept);
}

/* Looks at one file once; returns 1 when NCCL was attached now. */
static int check_file(struct library_discovery *discovery, const char *host_path, uint32_t pid,
		      struct checked_file **checked, char *error, size_t error_size)
{
	struct checked_file *file;
	uint64_t identity;
	int result;

	if (file_identity(host_path, &identity))
		return 0;
	*checked = u64_map_get(&discovery->checked_files, identity);
	if (*checked)
		return 0;
	file = calloc(1, sizeof(*file));
	if (!file || !(file->host_path = strdup(host_path)) ||
	    u64_map_put(&discovery->checked_files, identity, file)) {
		if (file)
			free(file->host_path);
		free(file);
		snprintf(error, error_size, "out of memory");
		return -ENOMEM;
	}
	*checked = file;
	if (is_dynamic_loader(host_path))
		return 0;
	if (discovery->file_hook)
		discovery->file_hook(discovery->file_hook_context, host_path, pid);
	result = elf_file_has_nccl(host_path, error, error_size);
	if (result <= 0)
		return 0;
	result = attach_nccl(discovery, host_path, pid, error, error_size);
	if (result)
		return result;
	file->has_nccl = 1;
	return 1;
}

void library_discovery_set_file_hook(struct library_discovery *discovery, library_file_hook_fn hook,
				     void *context)
{
	discovery->file_hook = hook;
	discovery->file_hook_context = context;
}

int library_discovery_add_path(struct library_discovery *discovery, const char *path, uint32_t pid,
			       char *error, size_t error_size)
{
	struct checked_file *checked = NULL;
	int result;

	if (access(path, R_OK)) {
		snprintf(error, error_size, "cannot read the NCCL library %s: %s", path,
			 strerror(errno));
		return -errno;
	}
	result = elf_file_has_nccl(path, error, error_size);
	if (result < 0)
		return result;
	if (result == 0) {
		snprintf(error, error_size,
			 "%s defines no NCCL function (ncclAllReduce, ncclSend, ...): give "
			 "--nccl-lib the libnccl.so or the library NCCL is linked into",
			 path);
		return -ENOENT;
	}
	result = check_file(discovery, path, pid, &checked, error, error_size);
	return result < 0 ? result : 0;
}

int library_discovery_scan_process(struct library_discovery *discovery, pid_t pid, char *error,
				   size_t error_size)
{
	struct mapped_file_list files = { 0 };
	int added = 0, result;

	result = process_maps_read(pid, &files, error, error_size);
	if (result)
		return result;
	for (size_t i = 0; i < files.count; i++) {
		const struct mapped_file *file = &files.files[i];
		struct checked_file *checked = NULL;

		/* Only executable mappings can hold code worth probing. */
		if (!strchr(file->permissions, 'x'))
			continue;
		if (is_dynamic_loader(file->path)) {
			attach_loader(discovery, file->host_path, pid);
			continue;
		}
		result = check_file(discovery, file->host_path, (uint32_t)pid, &checked, error,
				    error_size);
		if (result < 0) {
			log_warning("process %d: %s", pid, error);
			continue;
		}
		added += result;
		/* This process's own view of the file: others may have exited since. */
		if (checked && checked->has_nccl &&
		    !u64_map_get(&discovery->nccl_paths, (uint64_t)pid)) {
			char *own_path = strdup(file->host_path);

			if (own_path &&
			    u64_map_put(&discovery->nccl_paths, (uint64_t)pid, own_path))
				free(own_path);
		}
	}
	mapped_file_list_free(&files);
	return added;
}

const char *library_discovery_nccl_path(struct library_discovery *discovery, pid_t pid)
{
	char error[256];

	if (!u64_map_get(&discovery->nccl_paths, (uint64_t)pid))
		library_discovery_scan_process(discovery, pid, error, sizeof(error));
	return u64_map_get(&discovery->nccl_paths, (uint64_t)pid);
}

void library_discovery_forget_process(struct library_discovery *discovery, pid_t pid)
{
	free(u64_map_remove(&discovery->loader_notices, (uint64_t)pid));
	probe_session_detach_process(discovery->session, pid);
}

size_t library_discovery_library_count(const struct library_discovery *discovery)
{
	return discovery->library_count;
}

/* Resolves a command name as execvp() would. */
static int find_executable(const char *command, char *path, size_t size)
{
	const char *search = getenv("PATH");

	if (strchr(command, '/')) {
		snprintf(path, size, "%s", command);
		return access(path, X_OK);
	}
	for (search = search ? search : "/usr/bin:/bin"; *search;) {
		size_t length = strcspn(search, ":");

		snprintf(path, size, "%.*s/%s", (int)length, search, command);
		if (access(path, X_OK) == 0)
			return 0;
		search += length + (search[length] == ':');
	}
	return -1;
}

static int is_elf(const char *path)
{
	unsigned char magic[4] = { 0 };
	char error[256];

	return library_file_read_at(path, 0, magic, sizeof(magic), error, sizeof(error)) == 0 &&
	       memcmp(magic, "\177ELF", 4) == 0;
}

/* Runs the loader in list mode (what ldd does): it maps nothing and runs nothing. */
static FILE *list_dependencies(const char *executable, pid_t *child)
{
	int pipe_fds[2];

	if (pipe(pipe_fds))
		return NULL;
	*child = fork();
	if (*child < 0) {
		close(pipe_fds[0]);
		close(pipe_fds[1]);
		return NULL;
	}
	if (*child == 0) {
		char *const argv[] = { (char *)executable, NULL };
		int null_fd = open("/dev/null", O_RDWR);

		dup2(pipe_fds[1], STDOUT_FILENO);
		if (null_fd >= 0)
			dup2(null_fd, STDERR_FILENO);
		close(pipe_fds[0]);
		setenv("LD_TRACE_LOADED_OBJECTS", "1", 1);
		execv(executable, argv);
		_exit(127);
	}
	close(pipe_fds[1]);
	return fdopen(pipe_fds[0], "r");
}

/*
 * NCCL installed system-wide (ldconfig knows it) is probed up front too: a
 * probe on a file costs nothing until some process maps it, and a command
 * that dlopen()s it then has no window in which calls go unseen.
 */
static int scan_system_libraries(struct library_discovery *discovery, char *error,
				 size_t error_size)
{
	FILE *cache = popen("ldconfig -p 2>/dev/null", "r");
	char line[PATH_MAX + 128];
	int added = 0;

	if (!cache)
		return 0;
	while (fgets(line, sizeof(line), cache)) {
		char *path = strstr(line, "=> /");
		struct checked_file *checked = NULL;

		if (!strstr(line, "libnccl") || !path)
			continue;
		path += 3;
		path[strcspn(path, "\n")] = '\0';
		if (check_file(discovery, path, 0, &checked, error, error_size) > 0)
			added++;
	}
	pclose(cache);
	return added;
}

int library_discovery_scan_command(struct library_discovery *discovery, const char *command,
				   char *error, size_t error_size)
{
	char executable[PATH_MAX], line[PATH_MAX + 64];
	int added = 0, status;
	FILE *listing;
	pid_t child;

	added = scan_system_libraries(discovery, error, error_size);
	if (find_executable(command, executable, sizeof(executable)) || !is_elf(executable))
		return added;
	listing = list_dependencies(executable, &child);
	if (!listing)
		return added;
	while (fgets(line, sizeof(line), listing)) {
		char *arrow = strstr(line, "=> /"), *end;
		struct checked_file *checked = NULL;
		const char *path = arrow ? arrow + 3 : NULL;

		/* The loader itself appears without an arrow. */
		if (!path) {
			path = strchr(line, '/');
			if (!path)
				continue;
		}
		end = strstr(path, " (0x");
		if (!end)
			continue;
		*end = '\0';
		if (check_file(discovery, path, 0, &checked, error, error_size) > 0)
			added++;
	}
	fclose(listing);
	waitpid(child, &status, 0);
	return added;
}
