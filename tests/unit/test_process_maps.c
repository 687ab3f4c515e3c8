// SPDX-License-Identifier: MIT
/* Tests of reading mapped files, command lines, launcher ranks and children from /proc. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "probe/process_info.h"
#include "probe/process_maps.h"
#include "unit.h"

static const char maps_fixture[] =
	"55d4c0a00000-55d4c0a28000 r--p 00000000 08:01 1311                       "
	"/usr/bin/python3.11\n"
	"55d4c0a28000-55d4c0c00000 r-xp 00028000 08:01 1311                       "
	"/usr/bin/python3.11\n"
	"55d4c0c00000-55d4c0c10000 rw-p 00200000 08:01 1311                       "
	"/usr/bin/python3.11\n"
	"7f0000000000-7f0000021000 rw-p 00000000 00:00 0 \n"
	"7f1000000000-7f1000001000 r--p 00000000 08:01 2222                       "
	"/opt/my libs/libnccl.so.2\n"
	"7f1000001000-7f1000100000 r-xp 00001000 08:01 2222                       "
	"/opt/my libs/libnccl.so.2\n"
	"7f2000000000-7f2000001000 r-xp 00000000 08:01 3333                       "
	"/tmp/gone.so (deleted)\n"
	"7f3000000000-7f3000001000 rw-s 00000000 00:01 4444                       "
	"/dev/shm/nccl-abc\n"
	"7f4000000000-7f4000001000 r--p 00000000 08:02 1311                       "
	"/other/device/same-inode.so\n"
	"7f5000000000-7f5000001000 rw-p 00000000 00:0e 5555                       "
	"anon_inode:[perf_event]\n"
	"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n"
	"7ffd10000000-7ffd10002000 r-xp 00000000 00:00 0                          [vdso]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n";

UNIT_TEST(process_maps, parses_files_and_skips_the_rest)
{
	struct mapped_file_list list;
	const struct mapped_file *python, *nccl, *gone;
	char error[256] = "";

	CU_ASSERT_EQUAL_FATAL(process_maps_parse(maps_fixture, 42, &list, error, sizeof(error)), 0);
	/* python, libnccl, a deleted file, the shm file, and a file of another device with
	 * python's inode. */
	CU_ASSERT_EQUAL(list.count, 5);
	python = mapped_file_list_find_suffix(&list, "/python3.11");
	CU_ASSERT_PTR_NOT_NULL_FATAL(python);
	CU_ASSERT_EQUAL(python->region_count, 3);
	CU_ASSERT_EQUAL(python->start, 0x55d4c0a00000ULL);
	CU_ASSERT_EQUAL(python->end, 0x55d4c0c10000ULL);
	CU_ASSERT_EQUAL(python->offset, 0);
	CU_ASSERT_STRING_EQUAL(python->permissions, "rwxp");
	CU_ASSERT_EQUAL(python->inode, 1311);
	CU_ASSERT_STRING_EQUAL(python->host_path, "/proc/42/root/usr/bin/python3.11");

	nccl = mapped_file_list_find_suffix(&list, "/libnccl.so.2");
	CU_ASSERT_PTR_NOT_NULL_FATAL(nccl);
	CU_ASSERT_STRING_EQUAL(nccl->path, "/opt/my libs/libnccl.so.2");
	CU_ASSERT_STRING_EQUAL(nccl->host_path, "/proc/42/root/opt/my libs/libnccl.so.2");
	CU_ASSERT_EQUAL(nccl->region_count, 2);

	/* A file deleted since it was mapped keeps its name and is reached through the kernel. */
	gone = mapped_file_list_find_suffix(&list, "/gone.so");
	CU_ASSERT_PTR_NOT_NULL_FATAL(gone);
	CU_ASSERT(gone->deleted);
	CU_ASSERT_STRING_EQUAL(gone->path, "/tmp/gone.so");
	CU_ASSERT_STRING_EQUAL(gone->host_path, "/proc/42/map_files/7f2000000000-7f2000001000");
	CU_ASSERT(!python->deleted);
	CU_ASSERT_PTR_NULL(mapped_file_list_find_suffix(&list, "[stack]"));
	CU_ASSERT_PTR_NULL(mapped_file_list_find_suffix(&list, "]"));
	CU_ASSERT_PTR_NOT_NULL(mapped_file_list_find_suffix(&list, "/dev/shm/nccl-abc"));
	CU_ASSERT_PTR_NOT_NULL(mapped_file_list_find_suffix(&list, "/same-inode.so"));
	mapped_file_list_free(&list);
	CU_ASSERT_EQUAL(list.count, 0);
}

UNIT_TEST(process_maps, finds_the_file_of_an_address)
{
	struct mapped_file_list list;
	const struct mapped_file *file;
	uint64_t file_offset = 0;
	char error[256];

	CU_ASSERT_EQUAL_FATAL(process_maps_parse(maps_fixture, 0, &list, error, sizeof(error)), 0);
	file = mapped_file_list_find_address(&list, 0x7f1000001010ULL, &file_offset);
	CU_ASSERT_PTR_NOT_NULL_FATAL(file);
	CU_ASSERT_STRING_EQUAL(file->path, "/opt/my libs/libnccl.so.2");
	CU_ASSERT_STRING_EQUAL(file->host_path, "/opt/my libs/libnccl.so.2");
	CU_ASSERT_EQUAL(file_offset, 0x1010);
	file = mapped_file_list_find_address(&list, 0x55d4c0a28004ULL, &file_offset);
	CU_ASSERT_PTR_NOT_NULL(file);
	CU_ASSERT_EQUAL(file_offset, 0x28004);
	/* Anonymous memory belongs to no file; a deleted file is still the one mapped there. */
	CU_ASSERT_PTR_NULL(mapped_file_list_find_address(&list, 0x7f0000000010ULL, NULL));
	CU_ASSERT_PTR_NOT_NULL(mapped_file_list_find_address(&list, 0x7f2000000010ULL, NULL));
	mapped_file_list_free(&list);
}

UNIT_TEST(process_maps, rejects_malformed_text)
{
	struct mapped_file_list list;
	char error[256] = "";

	CU_ASSERT_EQUAL(process_maps_parse("7f00-7f01 r-xp 0 08:01 12 /lib/x.so\nnot a map line\n",
					   7, &list, error, sizeof(error)),
			-EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(error, "line 2"));
	CU_ASSERT_EQUAL(list.count, 0);
	CU_ASSERT_EQUAL(process_maps_parse("", 7, &list, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(list.count, 0);
}

UNIT_TEST(process_maps, reads_its_own_process)
{
	struct mapped_file_list list;
	const struct mapped_file *libc;
	char error[256] = "";

	CU_ASSERT_EQUAL_FATAL(process_maps_read(getpid(), &list, error, sizeof(error)), 0);
	libc = mapped_file_list_find_suffix(&list, "/libc.so.6");
	CU_ASSERT_PTR_NOT_NULL_FATAL(libc);
	CU_ASSERT_EQUAL(access(libc->host_path, R_OK), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(libc->permissions, "x"));
	/* This function's own code lies in the test binary. */
	CU_ASSERT_PTR_NOT_NULL(mapped_file_list_find_address(
		&list, (uint64_t)(uintptr_t)&process_maps_read, NULL));
	for (size_t i = 0; i < list.count; i++)
		for (size_t j = i + 1; j < list.count; j++)
			CU_ASSERT(list.files[i].device != list.files[j].device ||
				  list.files[i].inode != list.files[j].inode);
	mapped_file_list_free(&list);
}

UNIT_TEST(process_maps, environment_integers)
{
	static const char block[] = "PATH=/bin\0RANKS=9\0RANK=3\0WORLD_SIZE=8x\0LOCAL_RANK=\0"
				    "BIG=99999999999\0NEGATIVE=-2\0RANK=4";

	CU_ASSERT_EQUAL(environment_integer(block, sizeof(block) - 1, "RANK"), 3);
	CU_ASSERT_EQUAL(environment_integer(block, sizeof(block) - 1, "RANKS"), 9);
	CU_ASSERT_EQUAL(environment_integer(block, sizeof(block) - 1, "WORLD_SIZE"), -1);
	CU_ASSERT_EQUAL(environment_integer(block, sizeof(block) - 1, "LOCAL_RANK"), -1);
	CU_ASSERT_EQUAL(environment_integer(block, sizeof(block) - 1, "BIG"), -1);
	CU_ASSERT_EQUAL(environment_integer(block, sizeof(block) - 1, "NEGATIVE"), -1);
	CU_ASSERT_EQUAL(environment_integer(block, sizeof(block) - 1, "ABSENT"), -1);
	/* An entry cut off by the length is not read past it. */
	CU_ASSERT_EQUAL(environment_integer("RANK=12", 6, "RANK"), 1);
	CU_ASSERT_EQUAL(environment_integer("", 0, "RANK"), -1);
}

/*
 * Starts argv[0] with an environment of its own and returns once execve
 * has replaced the child: until then /proc shows the parent's environment.
 */
static pid_t spawn(char *const argv[], char *const environment[])
{
	int ready[2];
	char byte;
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) != 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		close(ready[0]);
		execve(argv[0], argv, environment);
		_exit(127);
	}
	close(ready[1]);
	/* The write end closes on exec, so read returns 0 then. */
	while (pid > 0 && read(ready[0], &byte, 1) < 0 && errno == EINTR)
		;
	close(ready[0]);
	return pid;
}

static void stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static bool contains_pid(const pid_t *pids, size_t count, pid_t pid)
{
	for (size_t i = 0; i < count; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

UNIT_TEST(process_maps, reads_launcher_ranks_of_a_child)
{
	char *const argv[] = { "/bin/sleep", "30", NULL };
	char *const environment[] = { "PATH=/bin", "RANK=3", "WORLD_SIZE=8", "LOCAL_RANK=1", NULL };
	struct process_info info;
	char error[256] = "";
	pid_t child = spawn(argv, environment), *children;
	size_t count;

	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL(process_info_read(child, &info, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(info.pid, child);
	CU_ASSERT_EQUAL(info.parent_pid, getpid());
	CU_ASSERT_EQUAL(info.rank, 3);
	CU_ASSERT_EQUAL(info.world_size, 8);
	CU_ASSERT_EQUAL(info.local_rank, 1);
	CU_ASSERT_STRING_EQUAL(info.note, "");
	CU_ASSERT_STRING_EQUAL(info.command, "/bin/sleep 30");
	CU_ASSERT_PTR_NOT_NULL(strstr(info.executable, "sleep"));
	process_info_free(&info);

	CU_ASSERT_EQUAL(process_children(getpid(), false, &children, &count, error, sizeof(error)),
			0);
	CU_ASSERT(contains_pid(children, count, child));
	CU_ASSERT(!contains_pid(children, count, getpid()));
	free(children);
	stop(child);
}

UNIT_TEST(process_maps, missing_ranks_are_minus_one)
{
	char *const argv[] = { "/bin/sleep", "30", NULL };
	char *const environment[] = { "RANK=three", NULL };
	struct process_info info;
	char error[256] = "";
	pid_t child = spawn(argv, environment);

	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL(process_info_read(child, &info, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(info.rank, -1);
	CU_ASSERT_EQUAL(info.world_size, -1);
	CU_ASSERT_EQUAL(info.local_rank, -1);
	process_info_free(&info);
	stop(child);
}

UNIT_TEST(process_maps, finds_grandchildren_through_a_shell)
{
	/* The shell forks sleep rather than exec it, because a command follows. */
	char *const argv[] = { "/bin/sh", "-c", "/bin/sleep 30; exit 0", NULL };
	char *const environment[] = { "PATH=/bin", NULL };
	pid_t shell = spawn(argv, environment), *direct = NULL, *all = NULL;
	size_t direct_count = 0, all_count = 0;
	char error[256] = "";

	CU_ASSERT_FATAL(shell > 0);
	/* Wait up to 5 s for the shell to start its child. */
	for (int attempt = 0; attempt < 500; attempt++) {
		free(all);
		CU_ASSERT_EQUAL_FATAL(
			process_children(getpid(), true, &all, &all_count, error, sizeof(error)),
			0);
		if (all_count >= 2 && contains_pid(all, all_count, shell))
			break;
		usleep(10000);
	}
	CU_ASSERT_EQUAL(
		process_children(getpid(), false, &direct, &direct_count, error, sizeof(error)), 0);
	CU_ASSERT(contains_pid(direct, direct_count, shell));
	CU_ASSERT(contains_pid(all, all_count, shell));
	/* The grandchild is a descendant but not a child. */
	CU_ASSERT(all_count == direct_count + 1);
	for (size_t i = 1; i < all_count; i++)
		CU_ASSERT(all[i - 1] < all[i]);
	free(direct);
	free(all);
	/* The sleep started by the shell, then the shell. */
	if (process_children(shell, false, &direct, &direct_count, error, sizeof(error)) == 0) {
		for (size_t i = 0; i < direct_count; i++)
			kill(direct[i], SIGKILL);
		free(direct);
	}
	stop(shell);
}

UNIT_TEST(process_maps, parent_of_a_process_with_a_parenthesis_in_its_name)
{
	int ready[2];
	char byte;
	struct process_info info;
	char error[256] = "";
	pid_t child;

	CU_ASSERT_FATAL(pipe(ready) == 0);
	child = fork();
	if (child == 0) {
		prctl(PR_SET_NAME, "odd) (name 1");
		if (write(ready[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT(read(ready[0], &byte, 1) == 1);
	close(ready[0]);
	close(ready[1]);
	CU_ASSERT_EQUAL(process_info_read(child, &info, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(info.parent_pid, getpid());
	process_info_free(&info);
	stop(child);
}

/*
 * Run in a child without privileges: what a user without root sees when
 * looking at a process of another user. Exit status 0: as expected, 1: not,
 * 2: nothing to test (no other user's process to look at).
 */
static int check_unprivileged_view(pid_t other)
{
	struct mapped_file_list list;
	struct process_info info;
	char error[256] = "", proc_path[32];
	struct stat st;

	snprintf(proc_path, sizeof(proc_path), "/proc/%d", (int)other);
	if (geteuid() == 0 && setresuid(65534, 65534, 65534) != 0)
		return 2;
	if (stat(proc_path, &st) != 0 || st.st_uid == geteuid())
		return 2;
	if (process_maps_read(other, &list, error, sizeof(error)) != -EACCES ||
	    !strstr(error, "run tcheck-bpf as root") || !strstr(error, "CAP_SYS_PTRACE"))
		return 1;
	/* The command line is public, the environment is not: -1s and a note, not a failure. */
	if (process_info_read(other, &info, error, sizeof(error)) != 0 || info.rank != -1 ||
	    !strstr(info.note, "environ") || !info.command[0])
		return 1;
	process_info_free(&info);
	return 0;
}

UNIT_TEST(process_maps, permission_problems_are_explained)
{
	int status = 0;
	pid_t child = fork();

	if (child == 0)
		_exit(check_unprivileged_view(1));
	CU_ASSERT_FATAL(child > 0);
	CU_ASSERT_EQUAL(waitpid(child, &status, 0), child);
	CU_ASSERT(WIFEXITED(status));
	if (WEXITSTATUS(status) == 2) {
		CU_PASS("no process of another user to look at: skipped");
	} else {
		CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	}
}

/* A pid no process can have: pids stay below pid_max. */
static pid_t unused_pid(void)
{
	FILE *file = fopen("/proc/sys/kernel/pid_max", "r");
	int pid_max = 4194304;

	if (file) {
		if (fscanf(file, "%d", &pid_max) != 1)
			pid_max = 4194304;
		fclose(file);
	}
	return (pid_t)pid_max;
}

UNIT_TEST(process_maps, nonexistent_process)
{
	struct mapped_file_list list;
	struct process_info info;
	char error[256] = "", expected[64];
	pid_t pid = unused_pid(), *children;
	size_t count;

	snprintf(expected, sizeof(expected), "no process with pid %d", (int)pid);
	CU_ASSERT_EQUAL(process_maps_read(pid, &list, error, sizeof(error)), -ESRCH);
	CU_ASSERT_STRING_EQUAL(error, expected);
	error[0] = '\0';
	CU_ASSERT_EQUAL(process_info_read(pid, &info, error, sizeof(error)), -ESRCH);
	CU_ASSERT_STRING_EQUAL(error, expected);
	CU_ASSERT_EQUAL(info.rank, -1);
	process_info_free(&info);
	error[0] = '\0';
	CU_ASSERT_EQUAL(process_children(pid, true, &children, &count, error, sizeof(error)),
			-ESRCH);
	CU_ASSERT_STRING_EQUAL(error, expected);
	CU_ASSERT_EQUAL(process_check(-5, error, sizeof(error)), -ESRCH);
}

/*
 * A child maps a library, then the library is deleted and the child chroots
 * itself: its maps line names the file by the host path with " (deleted)",
 * and its root no longer holds it. The host path found must open the very
 * file (device and inode), as the kernel's handle on the mapping.
 */
UNIT_TEST(process_maps, finds_a_deleted_file_through_the_kernel_handle)
{
	char library[] = "/tmp/tcheck-maps-XXXXXX", error[256] = "";
	int ready[2], fd = mkstemp(library);
	const struct mapped_file *file;
	struct mapped_file_list list;
	struct stat original, opened;
	char byte = 0;
	pid_t child;

	CU_ASSERT_FATAL(fd >= 0 && write(fd, "tcheck maps test\n", 17) == 17);
	CU_ASSERT_FATAL(fstat(fd, &original) == 0 && pipe(ready) == 0);
	child = fork();
	if (child == 0) {
		void *mapping = mmap(NULL, 17, PROT_READ, MAP_PRIVATE, fd, 0);

		unlink(library);
		if (mapping == MAP_FAILED || chroot("/proc") != 0)
			_exit(1);
		(void)!write(ready[1], "r", 1);
		pause();
		_exit(0);
	}
	CU_ASSERT_FATAL(read(ready[0], &byte, 1) == 1);
	CU_ASSERT_EQUAL_FATAL(process_maps_read(child, &list, error, sizeof(error)), 0);
	file = mapped_file_list_find_suffix(&list, library + 4);
	CU_ASSERT_PTR_NOT_NULL(file);
	if (file) {
		CU_ASSERT(file->deleted);
		CU_ASSERT_PTR_NOT_NULL(strstr(file->host_path, "/map_files/"));
		CU_ASSERT_EQUAL(stat(file->host_path, &opened), 0);
		CU_ASSERT_EQUAL(opened.st_ino, original.st_ino);
	}
	mapped_file_list_free(&list);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	close(fd);
	close(ready[0]);
	close(ready[1]);
}

/* The fields after a name with spaces and parentheses, numbered as proc(5) numbers them. */
UNIT_TEST(process_maps, stat_fields_are_read_by_number)
{
	unsigned long long parent = 0, start_code = 0, end_code = 0;

	CU_ASSERT_TRUE(process_stat_number(getpid(), 4, &parent));
	CU_ASSERT_EQUAL(parent, (unsigned long long)getppid());
	CU_ASSERT_TRUE(process_stat_number(getpid(), 26, &start_code));
	CU_ASSERT_TRUE(process_stat_number(getpid(), 27, &end_code));
	/* This test's own code lies between the two. */
	if (start_code && end_code) {
		CU_ASSERT_TRUE(start_code <=
			       (uintptr_t)&process_maps_stat_fields_are_read_by_number);
		CU_ASSERT_TRUE((uintptr_t)&process_maps_stat_fields_are_read_by_number < end_code);
	}
	CU_ASSERT_FALSE(process_stat_number(getpid(), 3, &parent));
	CU_ASSERT_FALSE(process_stat_number(-5, 4, &parent));
}

UNIT_TEST(process_maps, a_kernel_thread_is_told_apart)
{
	char comm[32] = "";
	FILE *file = fopen("/proc/2/comm", "r");

	CU_ASSERT_FALSE(process_is_kernel_thread(getpid()));
	CU_ASSERT_FALSE(process_is_kernel_thread(-5));
	/* Pid 2 is kthreadd outside a pid namespace. */
	if (file && fgets(comm, sizeof(comm), file) && strncmp(comm, "kthreadd", 8) == 0)
		CU_ASSERT_TRUE(process_is_kernel_thread(2));
	if (file)
		fclose(file);
}

UNIT_TEST(process_maps, says_what_an_address_falls_in)
{
	const char maps[] =
		"55d1c0000000-55d1c0021000 rw-p 00000000 00:00 0                          [heap]\n"
		"7f3b9c000000-7f3b9c200000 r--p 00000000 fd:01 1311 "
		"/usr/lib/x86_64-linux-gnu/libpython3.14.so.1.0\n"
		"7f3b9c200000-7f3b9c300000 rw-p 00000000 00:00 0\n"
		"7f3b9c300000-7f3b9c301000 rw-s 00000000 fd:01 1312 /dev/shm/ring (deleted)\n"
		"7ffc1f2c4000-7ffc1f2e5000 rw-p 00000000 00:00 0                          [stack]";
	char text[160];

	process_maps_text_describe_address(maps, 0x7f3b9c000010ull, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "/usr/lib/x86_64-linux-gnu/libpython3.14.so.1.0 (r--p)");
	process_maps_text_describe_address(maps, 0x7f3b9c200000ull, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "anonymous memory (rw-p)");
	process_maps_text_describe_address(maps, 0x7f3b9c300008ull, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "/dev/shm/ring (deleted) (rw-s)");
	process_maps_text_describe_address(maps, 0x55d1c0020fffull, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "[heap] (rw-p)");
	process_maps_text_describe_address(maps, 0x7ffc1f2e4000ull, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "[stack] (rw-p)");
	/* An end is exclusive; an address in no line, or no map at all, is said so. */
	process_maps_text_describe_address(maps, 0x55d1c0021000ull, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "no mapping");
	process_maps_text_describe_address(NULL, 0x1000, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "no mapping");
}
