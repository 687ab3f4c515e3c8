// SPDX-License-Identifier: MIT
/*
 * A process one of whose threads has a stack page that nobody outside can
 * read: the page is registered with userfaultfd and its faults are never
 * served, so a process_vm_readv of it (a snapshot scanning the thread's
 * stack) waits in the kernel until this process ends. That is how a read
 * of a live process can block for as long as the process lives (memory on
 * a hung FUSE or NFS mount does the same). Prints "ready: thread TID's
 * stack cannot be read at page 0xADDRESS" when the page is armed, then
 * sleeps --seconds.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "program_options.h"

#define PAD_BYTES (64 * 1024)

struct options {
	long seconds;
	const char *library; /* loaded first (a libnccl, for a tool that follows those) */
};

static long page_size;
static pthread_mutex_t armed_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t armed_changed = PTHREAD_COND_INITIALIZER;
static int armed; /* 1 armed, -1 failed */
static pid_t stuck_tid;
static uintptr_t stuck_page; /* the page no reader gets */

static void usage(FILE *out)
{
	fprintf(out, "usage: stuck-stack [--seconds N] [--library PATH]\n"
		     "  a thread whose stack holds a page no outside read can finish;\n"
		     "  --library: a shared library to load first (dlopen)\n");
}

static int userfaultfd_open(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	struct uffdio_api api = { .api = UFFD_API };

	if (fd < 0) {
		/* Kernels that refuse the syscall to non-root may still offer the device. */
		int device = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);

		if (device < 0)
			return -1;
		fd = ioctl(device, USERFAULTFD_IOC_NEW, O_CLOEXEC);
		close(device);
		if (fd < 0)
			return -1;
	}
	if (ioctl(fd, UFFDIO_API, &api) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static void set_armed(int value)
{
	pthread_mutex_lock(&armed_lock);
	armed = value;
	pthread_cond_broadcast(&armed_changed);
	pthread_mutex_unlock(&armed_lock);
}

/* The mapping that holds an address, from /proc/self/maps; false when none does. */
static bool mapping_of(uintptr_t address, uintptr_t *start, uintptr_t *end)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[512];
	bool found = false;

	while (maps && !found && fgets(line, sizeof(line), maps))
		found = sscanf(line, "%lx-%lx", start, end) == 2 && *start <= address &&
			address < *end;
	if (maps)
		fclose(maps);
	return found;
}

/* Puts pages under the stack pointer, so that the calls below it fault no more. */
static void __attribute__((noinline)) touch_below(void)
{
	volatile char below[PAD_BYTES];

	for (size_t i = 0; i < sizeof(below); i += 256)
		below[i] = 0;
}

/*
 * Drops a page of its own frame and registers its whole stack mapping
 * (registering part of it would split the mapping, and a reader stops at a
 * mapping's end), then sleeps below the page.
 */
static void *stuck_thread(void *unused)
{
	volatile char pad[PAD_BYTES];
	uintptr_t page = ((uintptr_t)pad + (uintptr_t)page_size - 1) & ~((uintptr_t)page_size - 1);
	uintptr_t start, end;
	struct uffdio_register range = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	int fd = userfaultfd_open();

	(void)unused;
	for (size_t i = 0; i < sizeof(pad); i += 256)
		pad[i] = 0;
	touch_below();
	range.range.start = mapping_of(page, &start, &end) ? start : 0;
	range.range.len = end - start;
	if (fd < 0 || !range.range.start ||
	    madvise((void *)page, (size_t)page_size, MADV_DONTNEED) != 0 ||
	    ioctl(fd, UFFDIO_REGISTER, &range) != 0) {
		fprintf(stderr, "stuck-stack: cannot arm a page: %s\n", strerror(errno));
		set_armed(-1);
		return NULL;
	}
	stuck_tid = (pid_t)syscall(SYS_gettid);
	stuck_page = page;
	set_armed(1);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	struct options options = { .seconds = 60 };
	const struct program_option table[] = {
		{ "seconds", PROGRAM_OPTION_LONG, &options.seconds, 1, 86400, NULL },
		{ "library", PROGRAM_OPTION_TEXT, &options.library, 0, 0, NULL },
	};
	pthread_t thread;

	if (program_options_parse("stuck-stack", argc, argv, table,
				  sizeof(table) / sizeof(table[0]), usage))
		return 2;
	if (options.library && !dlopen(options.library, RTLD_NOW)) {
		fprintf(stderr, "stuck-stack: %s\n", dlerror());
		return 1;
	}
	page_size = sysconf(_SC_PAGESIZE);
	if (pthread_create(&thread, NULL, stuck_thread, NULL) != 0)
		return 1;
	pthread_mutex_lock(&armed_lock);
	while (!armed)
		pthread_cond_wait(&armed_changed, &armed_lock);
	pthread_mutex_unlock(&armed_lock);
	if (armed < 0)
		return 1;
	printf("ready: thread %d's stack cannot be read at page 0x%llx\n", (int)stuck_tid,
	       (unsigned long long)stuck_page);
	fflush(stdout);
	sleep((unsigned int)options.seconds);
	return 0;
}
