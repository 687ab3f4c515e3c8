// SPDX-License-Identifier: MIT
/* An LD_PRELOAD wrapper of ncclAllReduce logging what tcheck-bpf records, to compare costs. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"

#define CALLS_PER_BUFFER 4096
#define EXPORTED __attribute__((visibility("default")))

/*
 * One call, as the log file holds it (88 bytes, native byte order): the
 * fields of a tcheck-bpf call record, without its decoding.
 */
struct interposed_call {
	uint64_t entry_ns; /* CLOCK_MONOTONIC */
	uint64_t return_ns;
	uint32_t pid;
	uint32_t tid;
	uint64_t args[7];
	int32_t return_code;
	uint32_t reserved;
};

/* A thread's calls not yet written; written out when full and at exit. */
struct thread_log {
	struct thread_log *next;
	size_t used;
	uint32_t tid;
	struct interposed_call calls[CALLS_PER_BUFFER];
};

typedef __typeof__(ncclAllReduce) all_reduce_fn;

static all_reduce_fn *real_all_reduce;
static pthread_once_t set_up_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_exit_key;
static pthread_mutex_t logs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct thread_log *logs; /* every thread's, for the flush at exit */
static int log_fd = -1;
static char log_path[4096];
static uint32_t process_id;
static uint64_t calls_written;
static __thread struct thread_log *thread_log;

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

static void flush_log(struct thread_log *log)
{
	const char *bytes = (const char *)log->calls;
	size_t left = log->used * sizeof(log->calls[0]);

	while (left > 0 && log_fd >= 0) {
		ssize_t written = write(log_fd, bytes, left);

		if (written < 0 && errno == EINTR)
			continue;
		if (written <= 0)
			break;
		bytes += written;
		left -= (size_t)written;
	}
	__atomic_add_fetch(&calls_written, log->used, __ATOMIC_RELAXED);
	log->used = 0;
}

/* A thread ends: write its calls and forget its buffer. */
static void end_thread(void *value)
{
	struct thread_log *log = value, **link;

	flush_log(log);
	pthread_mutex_lock(&logs_lock);
	for (link = &logs; *link; link = &(*link)->next)
		if (*link == log) {
			*link = log->next;
			break;
		}
	pthread_mutex_unlock(&logs_lock);
	free(log);
}

/* A forked child starts with no calls of its own and a new pid. */
static void start_child(void)
{
	process_id = (uint32_t)getpid();
	logs = NULL;
	if (thread_log) {
		thread_log->used = 0;
		thread_log->tid = (uint32_t)gettid();
		thread_log->next = NULL;
		logs = thread_log;
	}
}

static void set_up(void)
{
	const char *path = getenv("NCCL_INTERPOSER_LOG");

	process_id = (uint32_t)getpid();
	if (path)
		snprintf(log_path, sizeof(log_path), "%s", path);
	else
		snprintf(log_path, sizeof(log_path), "/tmp/nccl-interposer.%u.log", process_id);
	log_fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (log_fd < 0)
		fprintf(stderr, "nccl-interposer: cannot open %s: %s\n", log_path, strerror(errno));
	pthread_key_create(&thread_exit_key, end_thread);
	pthread_atfork(NULL, NULL, start_child);
	/* Resolved here, not at load: the program may dlopen NCCL after start. */
	real_all_reduce = (all_reduce_fn *)dlsym(RTLD_NEXT, "ncclAllReduce");
}

static struct thread_log *start_thread(void)
{
	struct thread_log *log = calloc(1, sizeof(*log));

	if (!log)
		return NULL;
	log->tid = (uint32_t)gettid();
	pthread_mutex_lock(&logs_lock);
	log->next = logs;
	logs = log;
	pthread_mutex_unlock(&logs_lock);
	pthread_setspecific(thread_exit_key, log);
	return log;
}

EXPORTED ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
				    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				    cudaStream_t stream)
{
	struct thread_log *log = thread_log;
	struct interposed_call *call;
	ncclResult_t result;

	pthread_once(&set_up_once, set_up);
	if (!real_all_reduce)
		return ncclSystemError;
	if (!log) {
		log = thread_log = start_thread();
		if (!log)
			return real_all_reduce(sendbuff, recvbuff, count, datatype, op, comm,
					       stream);
	}
	call = &log->calls[log->used];
	call->entry_ns = monotonic_ns();
	result = real_all_reduce(sendbuff, recvbuff, count, datatype, op, comm, stream);
	call->return_ns = monotonic_ns();
	call->pid = process_id;
	call->tid = log->tid;
	call->args[0] = (uint64_t)(uintptr_t)sendbuff;
	call->args[1] = (uint64_t)(uintptr_t)recvbuff;
	call->args[2] = count;
	call->args[3] = (uint64_t)datatype;
	call->args[4] = (uint64_t)op;
	call->args[5] = (uint64_t)(uintptr_t)comm;
	call->args[6] = (uint64_t)(uintptr_t)stream;
	call->return_code = (int32_t)result;
	call->reserved = 0;
	if (++log->used == CALLS_PER_BUFFER)
		flush_log(log);
	return result;
}

/* Writes the calls still buffered and says how many calls were logged. */
__attribute__((destructor)) static void write_remaining_calls(void)
{
	struct thread_log *log;

	if (log_fd < 0)
		return;
	pthread_mutex_lock(&logs_lock);
	for (log = logs; log; log = log->next)
		flush_log(log);
	pthread_mutex_unlock(&logs_lock);
	close(log_fd);
	log_fd = -1;
	if (!getenv("NCCL_INTERPOSER_QUIET"))
		fprintf(stderr, "nccl-interposer: %llu calls logged to %s\n",
			(unsigned long long)__atomic_load_n(&calls_written, __ATOMIC_RELAXED),
			log_path);
}
