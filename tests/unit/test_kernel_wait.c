// SPDX-License-Identifier: MIT
/* Where a thread of this process waits in the kernel: a kernel stack's text, and a live thread. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/kernel_wait.h"
#include "unit.h"

UNIT_TEST(kernel_wait, names_the_innermost_functions_of_a_kernel_stack)
{
	/* As /proc/PID/stack writes it: "[<0>] function+offset/size", innermost first. */
	const char stack[] = "[<0>] handle_userfault+0x2d1/0x6e0\n"
			     "[<0>] __handle_mm_fault+0x7a4/0xd90\n"
			     "[<0>] handle_mm_fault+0xe4/0x2c0\n"
			     "[<0>] __get_user_pages+0x1a2/0x5f0\n";
	char text[200];

	kernel_stack_summary(stack, 2, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "handle_userfault < __handle_mm_fault");
	kernel_stack_summary(stack, 9, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "handle_userfault < __handle_mm_fault < handle_mm_fault < "
				     "__get_user_pages");
	/* What does not fit is left out whole, never cut in the middle of a name. */
	kernel_stack_summary(stack, 9, text, 30);
	CU_ASSERT_STRING_EQUAL(text, "handle_userfault");
	kernel_stack_summary("", 5, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(text, "");
}

struct blocked_reader {
	int pipe_ends[2];
	pid_t tid;
};

static void *read_until_written(void *argument)
{
	struct blocked_reader *reader = argument;
	char byte;

	__atomic_store_n(&reader->tid, gettid(), __ATOMIC_RELEASE);
	return read(reader->pipe_ends[0], &byte, 1) == 1 ? argument : NULL;
}

/* Whether a thread of this process sleeps ('S' in its stat). */
static bool own_thread_sleeps(pid_t tid)
{
	char path[64], stat[256] = "";
	FILE *file;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	file = fopen(path, "r");
	if (!file)
		return false;
	if (!fgets(stat, sizeof(stat), file))
		stat[0] = '\0';
	fclose(file);
	return strstr(stat, ") S ") != NULL;
}

UNIT_TEST(kernel_wait, says_where_a_thread_of_this_process_sleeps)
{
	struct blocked_reader reader = { .tid = 0 };
	pthread_t thread;
	char text[200] = "unset";
	void *result = NULL;

	CU_ASSERT_FATAL(pipe(reader.pipe_ends) == 0);
	CU_ASSERT_FATAL(pthread_create(&thread, NULL, read_until_written, &reader) == 0);
	for (int i = 0; i < 2000 && !(__atomic_load_n(&reader.tid, __ATOMIC_ACQUIRE) &&
				      own_thread_sleeps(reader.tid));
	     i++)
		usleep(1000);
	kernel_wait_of_own_thread(reader.tid, text, sizeof(text));
	CU_ASSERT_STRING_EQUAL(kernel_state_of_own_thread(reader.tid), "asleep");
	/* A read of a pipe is no read of another process's memory. */
	CU_ASSERT_FALSE(kernel_remote_read_of_own_thread(reader.tid,
							 &(struct remote_read_in_progress){ 0 }));
	CU_ASSERT(write(reader.pipe_ends[1], "x", 1) == 1);
	pthread_join(thread, &result);
	CU_ASSERT_PTR_EQUAL(result, &reader);
	close(reader.pipe_ends[0]);
	close(reader.pipe_ends[1]);
	/* Root reads the kernel stack: the pipe's read names itself. Others may be told nothing. */
	if (geteuid() == 0) {
		CU_ASSERT_PTR_NOT_NULL(strstr(text, "pipe_read"));
	} else {
		CU_ASSERT(text[0] == '\0' || strstr(text, "pipe_read"));
	}
}

UNIT_TEST(kernel_wait, a_thread_that_reads_its_state_is_running)
{
	CU_ASSERT_STRING_EQUAL(kernel_state_of_own_thread(gettid()), "running");
	CU_ASSERT_STRING_EQUAL(kernel_state_of_own_thread(-1), "");
}

UNIT_TEST(kernel_wait, finds_the_read_of_another_process_in_a_system_call_line)
{
	char line[256];
	uint64_t pieces_at = 0, pieces = 0;
	pid_t pid = 0;

	/* As /proc/PID/syscall writes it: number, six arguments, stack and program counters. */
	snprintf(line, sizeof(line),
		 "%d 0x2327 0x7ffc1f2e3a40 0x1 0x7ffc1f2e3a50 0x2 0x0 0x7ffc1f2e3a00 "
		 "0x7f3b9c11f88d\n",
		 (int)SYS_process_vm_readv);
	CU_ASSERT_TRUE(kernel_syscall_remote_read(line, &pid, &pieces_at, &pieces));
	CU_ASSERT_EQUAL(pid, 0x2327);
	CU_ASSERT_EQUAL(pieces_at, 0x7ffc1f2e3a50ull);
	CU_ASSERT_EQUAL(pieces, 2);
	/* Another call, a thread in user space, a thread in no call, nothing. */
	snprintf(line, sizeof(line), "%d 0x3 0x7ffc1f2e3a40 0x1000 0x0 0x0 0x0 0x7ffc 0x7f3b\n",
		 (int)SYS_read);
	CU_ASSERT_FALSE(kernel_syscall_remote_read(line, &pid, &pieces_at, &pieces));
	CU_ASSERT_FALSE(kernel_syscall_remote_read("running\n", &pid, &pieces_at, &pieces));
	CU_ASSERT_FALSE(kernel_syscall_remote_read("-1 0x7ffc1f2e3a00 0x7f3b9c11f88d\n", &pid,
						   &pieces_at, &pieces));
	CU_ASSERT_FALSE(kernel_syscall_remote_read(NULL, &pid, &pieces_at, &pieces));
}
