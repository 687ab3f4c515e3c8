// SPDX-License-Identifier: MIT
/* The shared-memory segment behind a communicator: layout, attaching, and waiting on peers. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "double_internal.h"

#define PAGE_BYTES 4096
#define LIVENESS_PERIOD_MS 100
#define WAIT_SLICE_MS 100

static size_t round_up(size_t value, size_t alignment)
{
	return (value + alignment - 1) / alignment * alignment;
}

struct double_segment_layout double_segment_layout_for(int nranks)
{
	struct double_segment_layout layout;
	size_t ranks = (size_t)nranks;

	layout.rank_states = PAGE_BYTES;
	layout.rings =
		round_up(layout.rank_states + ranks * sizeof(struct double_rank_state), PAGE_BYTES);
	layout.ring_stride = round_up(sizeof(struct double_ring), DOUBLE_CACHE_LINE) +
			     (size_t)DOUBLE_RING_SLOTS * DOUBLE_RING_CHUNK_BYTES;
	layout.collective_data =
		round_up(layout.rings + ranks * ranks * layout.ring_stride, PAGE_BYTES);
	layout.total = layout.collective_data + 2 * ranks * (size_t)DOUBLE_MAX_MESSAGE_BYTES;
	return layout;
}

unsigned char *double_collective_slot(const struct ncclComm *comm, uint64_t sequence, int rank)
{
	size_t index = (size_t)(sequence & 1) * (size_t)comm->nRanks + (size_t)rank;

	return comm->collective_data + index * DOUBLE_MAX_MESSAGE_BYTES;
}

struct double_ring *double_ring_between(const struct ncclComm *comm, int from, int to)
{
	size_t index = (size_t)from * (size_t)comm->nRanks + (size_t)to;

	return (struct double_ring *)(comm->rings + index * comm->ring_stride);
}

unsigned char *double_ring_chunk_data(struct double_ring *ring, uint64_t slot)
{
	unsigned char *data =
		(unsigned char *)ring + round_up(sizeof(struct double_ring), DOUBLE_CACHE_LINE);

	return data + (slot % DOUBLE_RING_SLOTS) * DOUBLE_RING_CHUNK_BYTES;
}

static ncclResult_t attach_failed(struct ncclComm *comm, ncclResult_t result, const char *what)
{
	fprintf(stderr, "NCCL WARN double: rank %d cannot join communicator segment %s: %s\n",
		comm->rank, comm->shm_name, what);
	double_segment_detach(comm);
	return result;
}

ncclResult_t double_segment_attach(struct ncclComm *comm, const char *name)
{
	struct double_segment_layout layout = double_segment_layout_for(comm->nRanks);
	int32_t expected_nranks = 0;
	int32_t free_pid = 0;
	struct stat status;
	void *base;
	int fd;

	snprintf(comm->shm_name, sizeof(comm->shm_name), "%s", name);
	fd = shm_open(name, O_CREAT | O_RDWR, 0600);
	if (fd < 0)
		return attach_failed(comm, ncclSystemError, strerror(errno));
	if (fstat(fd, &status) < 0 ||
	    (status.st_size != 0 && (size_t)status.st_size != layout.total)) {
		close(fd);
		return attach_failed(comm, ncclInvalidUsage, "ranks disagree on nranks");
	}
	if (ftruncate(fd, (off_t)layout.total) < 0) {
		close(fd);
		return attach_failed(comm, ncclSystemError, strerror(errno));
	}
	base = mmap(NULL, layout.total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return attach_failed(comm, ncclSystemError, strerror(errno));

	comm->segment_base = base;
	comm->segment_size = layout.total;
	comm->header = base;
	comm->rank_states =
		(struct double_rank_state *)((unsigned char *)base + layout.rank_states);
	comm->rings = (unsigned char *)base + layout.rings;
	comm->ring_stride = layout.ring_stride;
	comm->collective_data = (unsigned char *)base + layout.collective_data;

	if (!atomic_compare_exchange_strong(&comm->header->nranks, &expected_nranks,
					    comm->nRanks) &&
	    expected_nranks != comm->nRanks)
		return attach_failed(comm, ncclInvalidUsage, "ranks disagree on nranks");
	if (!atomic_compare_exchange_strong(&comm->rank_states[comm->rank].pid, &free_pid,
					    (int32_t)getpid()))
		return attach_failed(comm, ncclInvalidUsage,
				     "another process already has this rank");
	/* The last rank to arrive removes the name: the segment lives on while mapped. */
	if (atomic_fetch_add(&comm->header->arrived, 1) + 1 == comm->nRanks)
		shm_unlink(comm->shm_name);
	double_wake(comm);
	return ncclSuccess;
}

static bool all_arrived(struct ncclComm *comm, void *context)
{
	return atomic_load(&comm->header->arrived) >= comm->nRanks;
}

ncclResult_t double_segment_wait_arrival(struct ncclComm *comm)
{
	return double_wait_for(comm, all_arrived, NULL, NULL);
}

void double_segment_detach(struct ncclComm *comm)
{
	if (!comm->segment_base)
		return;
	/* Harmless when every rank arrived (the name is gone); otherwise nobody else would. */
	shm_unlink(comm->shm_name);
	munmap(comm->segment_base, comm->segment_size);
	comm->segment_base = NULL;
	comm->header = NULL;
}

void double_wake(struct ncclComm *comm)
{
	atomic_fetch_add(&comm->header->wake_word, 1);
	if (atomic_load(&comm->header->waiters) > 0)
		syscall(SYS_futex, &comm->header->wake_word, FUTEX_WAKE, INT32_MAX, NULL, NULL, 0);
}

uint32_t double_wake_word(const struct ncclComm *comm)
{
	return atomic_load(&comm->header->wake_word);
}

void double_wait(struct ncclComm *comm, uint32_t seen, int slice_ms)
{
	struct timespec slice = { .tv_sec = slice_ms / 1000,
				  .tv_nsec = (long)(slice_ms % 1000) * 1000000L };

	atomic_fetch_add(&comm->header->waiters, 1);
	/* Returns at once when the word moved since 'seen' was read: no wake-up is lost. */
	syscall(SYS_futex, &comm->header->wake_word, FUTEX_WAIT, seen, &slice, NULL, 0);
	atomic_fetch_sub(&comm->header->waiters, 1);
}

uint64_t double_now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
}

static uint64_t configured_timeout_ms;
static bool configured_blocking;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static void read_settings(void)
{
	const char *text = getenv(DOUBLE_TIMEOUT_ENV);
	const char *blocking = getenv(DOUBLE_BLOCKING_ENV);

	configured_timeout_ms = text ? strtoull(text, NULL, 10) : 0;
	configured_blocking = blocking && strcmp(blocking, "0") != 0 && blocking[0];
}

bool double_blocking(void)
{
	double_library_init();
	return configured_blocking;
}

void double_library_init(void)
{
	pthread_once(&settings_once, read_settings);
}

uint64_t double_timeout_ms(void)
{
	double_library_init();
	return configured_timeout_ms;
}

bool double_peer_died(const struct ncclComm *comm, const bool *ignored_ranks)
{
	pid_t self = getpid();

	for (int peer = 0; peer < comm->nRanks; peer++) {
		pid_t pid = atomic_load(&comm->rank_states[peer].pid);

		if ((ignored_ranks && ignored_ranks[peer]) || pid == 0 || pid == self)
			continue;
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return true;
	}
	return false;
}

bool double_comm_failed(const struct ncclComm *comm)
{
	return atomic_load(&comm->header->broken) || atomic_load(&comm->local_abort);
}

enum double_progress double_stalled(struct double_op *op)
{
	if (!atomic_load(&op->comm->header->broken))
		return DOUBLE_NO_PROGRESS;
	op->result = ncclRemoteError;
	return DOUBLE_DONE;
}

void double_comm_break(struct ncclComm *comm, ncclResult_t reason)
{
	int no_error = ncclSuccess;

	atomic_compare_exchange_strong(&comm->async_error, &no_error, (int)reason);
	atomic_store(&comm->header->broken, 1);
	double_wake(comm);
}

ncclResult_t double_wait_for(struct ncclComm *comm, bool (*ready)(struct ncclComm *, void *),
			     void *context, const bool *ignored_ranks)
{
	uint64_t timeout = double_timeout_ms();
	uint64_t start = double_now_ms();
	uint64_t last_check = start;

	for (;;) {
		uint32_t seen = double_wake_word(comm);
		uint64_t now;

		if (ready(comm, context))
			return ncclSuccess;
		/* A shrink goes on over a broken parent: that is what it is for. */
		if (!ignored_ranks && double_comm_failed(comm))
			return ncclRemoteError;
		now = double_now_ms();
		if (timeout && now - start >= timeout) {
			fprintf(stderr,
				"NCCL WARN double: rank %d of comm %016llx timed out after %llu ms "
				"waiting for its peers\n",
				comm->rank, (unsigned long long)comm->commHash,
				(unsigned long long)timeout);
			double_comm_break(comm, ncclRemoteError);
			return ncclRemoteError;
		}
		if (now - last_check >= LIVENESS_PERIOD_MS) {
			last_check = now;
			if (double_peer_died(comm, ignored_ranks)) {
				fprintf(stderr,
					"NCCL WARN double: rank %d of comm %016llx: a peer died\n",
					comm->rank, (unsigned long long)comm->commHash);
				double_comm_break(comm, ncclRemoteError);
				return ncclRemoteError;
			}
		}
		double_wait(comm, seen, WAIT_SLICE_MS);
	}
}
