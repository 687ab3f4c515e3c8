/* SPDX-License-Identifier: MIT */
/*
 * The files a process has mapped, from /proc/PID/maps (reachable through
 * /proc/PID/root, so libraries inside containers open correctly); its
 * command line, ranks and children are in probe/process_info.h. Functions
 * return 0 or a negative errno and fill error with a sentence.
 */
#ifndef TCHECK_PROCESS_MAPS_H
#define TCHECK_PROCESS_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One line of /proc/PID/maps that maps part of a file. */
struct mapped_region {
	uint64_t start;
	uint64_t end;	     /* exclusive */
	uint64_t offset;     /* file offset mapped at start */
	char permissions[5]; /* "r-xp" */
};

/* A file mapped by a process, with every region it is mapped at. */
struct mapped_file {
	char *path;	 /* as the process sees it, "/usr/lib/libnccl.so.2" */
	char *host_path; /* openable from here, checked by device and inode where possible:
			  * "/proc/PID/root/usr/lib/libnccl.so.2", the maps path (chroot),
			  * or "/proc/PID/map_files/START-END" (deleted, replaced) */
	bool deleted;	 /* removed or replaced on disk since it was mapped */
	dev_t device;	 /* of the file system holding it, as maps reports it */
	uint64_t inode;
	uint64_t start;	     /* lowest start of its regions */
	uint64_t end;	     /* highest end of its regions */
	uint64_t offset;     /* file offset of the lowest region: start - offset is the load base */
	char permissions[5]; /* union of its regions' permissions */
	struct mapped_region *regions; /* in address order */
	size_t region_count, region_capacity;
};

struct mapped_file_list {
	struct mapped_file *files; /* in the order of their first region */
	size_t count, capacity;
};

/*
 * Reads /proc/PID/maps into one entry per file, identified by (device,
 * inode), each with a host path checked to name that very file (see
 * host_path). Anonymous memory and [special] regions are left out.
 */
int process_maps_read(pid_t pid, struct mapped_file_list *list, char *error, size_t error_size);

/*
 * The same without checking host paths (no stat of each mapped file): for a
 * look at the names a process maps only, as the agent's discovery takes of
 * every process on the node.
 */
int process_maps_read_unchecked(pid_t pid, struct mapped_file_list *list, char *error,
				size_t error_size);

/*
 * The same from the text of a maps file, without checking: host paths go
 * through /proc/PID/root (a deleted file's through /proc/PID/map_files) when
 * pid > 0 and equal the paths otherwise.
 */
int process_maps_parse(const char *text, pid_t pid, struct mapped_file_list *list, char *error,
		       size_t error_size);

void mapped_file_list_free(struct mapped_file_list *list);

/* The file whose path as the process sees it ends with suffix ("/libc.so.6"), or NULL. */
const struct mapped_file *mapped_file_list_find_suffix(const struct mapped_file_list *list,
						       const char *suffix);

/*
 * The file and file offset an address of the process falls in, or NULL
 * when no file is mapped there.
 */
const struct mapped_file *mapped_file_list_find_address(const struct mapped_file_list *list,
							uint64_t address, uint64_t *file_offset);

/*
 * What an address falls in, in words, from the text of a maps file (anonymous
 * memory too): "/usr/lib/libpython3.14.so.1.0 (r--p)", "[stack] (rw-p)",
 * "anonymous memory (rw-p)"; "no mapping" when no line holds it.
 */
void process_maps_text_describe_address(const char *maps_text, uint64_t address, char *text,
					size_t size);

#endif /* TCHECK_PROCESS_MAPS_H */
