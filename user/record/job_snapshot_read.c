// SPDX-License-Identifier: MIT
/*
 * Reads a job's processes for a snapshot, none of them for ever: a read of
 * another process's memory can wait in the kernel for as long as that
 * process lives (a page on a hung mount, or one a userfaultfd holds). The
 * processes are read in order by a worker thread; a step of it that does
 * not finish within JOB_SNAPSHOT_STALL_MS leaves that process unread, said
 * in its unread_note, and a new worker reads the ones after it. The worker
 * left behind keeps its own tables and frees them, and the reading's shared
 * state, whenever its read returns; nothing it reads after that counts.
 * Time this process did not run (the machine paused, or tcheck-bpf stopped:
 * its waits, 500 ms at most, came more than WATCHED_TIME_GAP_NS apart) is
 * not counted toward a step's limit: the read was stopped too.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/error_message.h"
#include "base/system_clock.h"
#include "base/watched_time.h"
#include "probe/kernel_wait.h"
#include "probe/proc_files.h"
#include "probe/process_maps.h"
#include "record/job_snapshot_process.h"

/* What the caller and the workers share; freed by the last to let go of it. */
struct snapshot_reading {
	pthread_mutex_t lock;
	pthread_cond_t changed; /* a process was read, or a worker failed */
	unsigned references;
	unsigned generation; /* the worker whose readings count */
	const pid_t *pids;   /* a copy, freed with the reading */
	size_t count;
	struct snapshot_process *processes; /* count slots; taken by the caller at the end */
	size_t next;			    /* slots below are final; this one is being read */
	int err; /* a process that could not be read: the reading fails */
	char error[512];
	pid_t reader_tid;	  /* the current worker's thread, to say where it waits */
	uint64_t step_started_ns; /* when the current worker began its current step */
	char step[320];		  /* that step, for the note of a process it never finishes */
	char *maps;		  /* the memory map of the process being read, as its read began */
};

struct snapshot_worker {
	struct snapshot_reading *reading;
	unsigned generation;
	size_t first;
};

static void reading_release(struct snapshot_reading *reading)
{
	bool last;

	pthread_mutex_lock(&reading->lock);
	last = --reading->references == 0;
	pthread_mutex_unlock(&reading->lock);
	if (!last)
		return;
	for (size_t i = 0; reading->processes && i < reading->count; i++)
		snapshot_process_free(&reading->processes[i]);
	free(reading->processes);
	free(reading->maps);
	free((void *)reading->pids);
	pthread_cond_destroy(&reading->changed);
	pthread_mutex_destroy(&reading->lock);
	free(reading);
}

/* The step a worker begins; a worker left behind is no longer heard. */
static void worker_step(void *context, const char *what)
{
	struct snapshot_worker *worker = context;
	struct snapshot_reading *reading = worker->reading;

	pthread_mutex_lock(&reading->lock);
	if (worker->generation == reading->generation) {
		reading->step_started_ns = monotonic_ns();
		snprintf(reading->step, sizeof(reading->step), "%s", what);
	}
	pthread_mutex_unlock(&reading->lock);
}

/*
 * Keeps the memory map of the process about to be read, so that a read that
 * stalls can be said with the mapping it waits on; the caller never opens
 * the process's own files while a worker may hold its memory lock.
 */
static void worker_keep_maps(struct snapshot_worker *worker, pid_t pid)
{
	struct snapshot_reading *reading = worker->reading;
	char *maps = NULL;
	size_t length;

	worker_step(worker, "reading its memory map");
	if (proc_file_read(pid, "maps", &maps, &length) != 0)
		maps = NULL;
	pthread_mutex_lock(&reading->lock);
	if (worker->generation == reading->generation) {
		free(reading->maps);
		reading->maps = maps;
		maps = NULL;
	}
	pthread_mutex_unlock(&reading->lock);
	free(maps);
}

static void *worker_run(void *argument)
{
	struct snapshot_worker *worker = argument;
	struct snapshot_reading *reading = worker->reading;
	struct snapshot_file_tables *tables = snapshot_file_tables_new();
	char error[sizeof(reading->error)];

	pthread_mutex_lock(&reading->lock);
	if (worker->generation == reading->generation)
		reading->reader_tid = gettid();
	pthread_mutex_unlock(&reading->lock);
	for (size_t i = worker->first; i < reading->count; i++) {
		struct snapshot_process process = { .pid = reading->pids[i], .rank = -1 };
		bool current;
		int err;

		worker_keep_maps(worker, process.pid);
		err = tables ? snapshot_process_read(&process, tables, worker_step, worker, error,
						     sizeof(error))
			     : error_fail(error, sizeof(error), ENOMEM, "out of memory");
		pthread_mutex_lock(&reading->lock);
		current = worker->generation == reading->generation;
		if (current && err) {
			reading->err = err;
			snprintf(reading->error, sizeof(reading->error), "%s", error);
		} else if (current) {
			reading->processes[i] = process;
			reading->next = i + 1;
			reading->step_started_ns = monotonic_ns();
		}
		if (current)
			pthread_cond_broadcast(&reading->changed);
		pthread_mutex_unlock(&reading->lock);
		if (!current || err) {
			snapshot_process_free(&process);
			break;
		}
	}
	snapshot_file_tables_free(tables);
	reading_release(reading);
	free(worker);
	return NULL;
}

/* A worker that reads from 'first' on; signals go to the caller's thread, not to it. */
static int worker_start(struct snapshot_reading *reading, size_t first)
{
	struct snapshot_worker *worker = malloc(sizeof(*worker));
	sigset_t all, previous;
	pthread_attr_t attributes;
	pthread_t thread;
	int err;

	if (!worker)
		return ENOMEM;
	*worker = (struct snapshot_worker){ reading, reading->generation, first };
	reading->references++;
	reading->step_started_ns = monotonic_ns();
	snprintf(reading->step, sizeof(reading->step), "starting");
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &previous);
	pthread_attr_init(&attributes);
	pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
	err = pthread_create(&thread, &attributes, worker_run, worker);
	pthread_attr_destroy(&attributes);
	pthread_sigmask(SIG_SETMASK, &previous, NULL);
	if (err) {
		reading->references--;
		free(worker);
	}
	return err;
}

/* The longest the caller waits without looking at the clock: shorter than a gap. */
#define WAIT_SLICE_NS 500000000ull

/*
 * Where the stalled reader waits, in words: the innermost functions of its
 * kernel stack, whether it sleeps or runs (a loop), and the memory it reads
 * with the mapping that holds it.
 */
static void reader_wait_said(const struct snapshot_reading *reading, char *text, size_t size)
{
	char waits_in[200] = "", holder[320] = "", reads[400] = "";
	struct remote_read_in_progress read;
	const char *state;

	text[0] = '\0';
	if (!reading->reader_tid)
		return;
	kernel_wait_of_own_thread(reading->reader_tid, waits_in, sizeof(waits_in));
	state = kernel_state_of_own_thread(reading->reader_tid);
	if (kernel_remote_read_of_own_thread(reading->reader_tid, &read)) {
		/* The map kept is the one of the process being read, which the read should be. */
		if (read.pid == reading->pids[reading->next])
			process_maps_text_describe_address(reading->maps, read.address, holder,
							   sizeof(holder));
		else
			snprintf(holder, sizeof(holder), "the memory of pid %d", (int)read.pid);
		snprintf(reads, sizeof(reads), ", reading %llu bytes at 0x%llx%s in %s",
			 (unsigned long long)read.size, (unsigned long long)read.address,
			 read.pieces > 1 ? " (the first of its pieces)" : "", holder);
	}
	if (waits_in[0])
		snprintf(text, size, "; the reader waits in the kernel in %s%s%s%s", waits_in,
			 state[0] ? " (" : "", state, state[0] ? ")" : "");
	else if (state[0])
		snprintf(text, size, "; the reader is %s in the kernel", state);
	if (reads[0] && text[0])
		snprintf(text + strlen(text), size - strlen(text), "%s", reads);
}

/*
 * Gives up on the process being read: said in its slot; the next worker
 * reads on. unwatched_ns: time of the step this process did not run.
 */
static int give_up_on_current(struct snapshot_reading *reading, uint64_t unwatched_ns)
{
	struct snapshot_process *process = &reading->processes[reading->next];
	char where[700] = "", not_counted[96] = "";

	/* Where the read waits names what holds it: a fault, a lock, a mount. */
	reader_wait_said(reading, where, sizeof(where));
	if (unwatched_ns)
		snprintf(not_counted, sizeof(not_counted),
			 " (not counting %.1f s in which tcheck-bpf did not run)",
			 (double)unwatched_ns / 1e9);
	process->pid = reading->pids[reading->next];
	process->rank = -1;
	snprintf(process->unread_note, sizeof(process->unread_note),
		 "pid %d was not read: %.200s did not finish within %d s%s%.500s (a page of its "
		 "memory that cannot be read now, one on a hung mount or held by userfaultfd, "
		 "keeps every reader waiting until it is served)",
		 (int)process->pid, reading->step, JOB_SNAPSHOT_STALL_MS / 1000, not_counted,
		 where);
	reading->generation++;
	reading->reader_tid = 0;
	reading->next++;
	return reading->next < reading->count ? worker_start(reading, reading->next) : 0;
}

static struct timespec monotonic_deadline(uint64_t ns)
{
	return (struct timespec){ (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };
}

static struct snapshot_reading *reading_new(const pid_t *pids, size_t count)
{
	struct snapshot_reading *reading = calloc(1, sizeof(*reading));
	pthread_condattr_t attributes;
	pid_t *copy;

	if (!reading)
		return NULL;
	copy = calloc(count ? count : 1, sizeof(*copy));
	reading->processes = calloc(count ? count : 1, sizeof(*reading->processes));
	if (!copy || !reading->processes) {
		free(copy);
		free(reading->processes);
		free(reading);
		return NULL;
	}
	memcpy(copy, pids, count * sizeof(*copy));
	reading->pids = copy;
	reading->count = count;
	reading->references = 1;
	pthread_mutex_init(&reading->lock, NULL);
	pthread_condattr_init(&attributes);
	pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC);
	pthread_cond_init(&reading->changed, &attributes);
	pthread_condattr_destroy(&attributes);
	return reading;
}

int job_snapshot_read(const pid_t *pids, size_t count, struct job_snapshot *snapshot, char *error,
		      size_t error_size)
{
	const uint64_t stall_ns = (uint64_t)JOB_SNAPSHOT_STALL_MS * 1000000ull;
	uint64_t started = monotonic_ns(), step_seen = 0, unwatched_in_step = 0;
	struct watched_time watched = { 0 };
	struct snapshot_reading *reading;
	struct timespec wall;
	int failure = 0; /* an errno: no thread could be started */
	int err = 0;

	memset(snapshot, 0, sizeof(*snapshot));
	clock_gettime(CLOCK_REALTIME, &wall);
	snapshot->time_ns = (uint64_t)wall.tv_sec * 1000000000ull + (uint64_t)wall.tv_nsec;
	snapshot->monotonic_ns = started;
	reading = reading_new(pids, count);
	if (!reading)
		return error_fail(error, error_size, ENOMEM, "out of memory");
	pthread_mutex_lock(&reading->lock);
	if (count)
		failure = worker_start(reading, 0);
	while (!failure && !reading->err && reading->next < reading->count) {
		uint64_t now = monotonic_ns(), deadline;
		struct watched_gap gap;

		if (reading->step_started_ns != step_seen) {
			step_seen = reading->step_started_ns;
			unwatched_in_step = 0;
		}
		/* Any gap counts here, whatever the CPU did: the read did not go on either. */
		if (watched_time_tick(&watched, now, 0, &gap) && now > step_seen)
			unwatched_in_step +=
				gap.length_ns < now - step_seen ? gap.length_ns : now - step_seen;
		deadline = step_seen + stall_ns + unwatched_in_step;
		if (now >= deadline) {
			failure = give_up_on_current(reading, unwatched_in_step);
		} else {
			struct timespec until = monotonic_deadline(
				deadline - now < WAIT_SLICE_NS ? deadline : now + WAIT_SLICE_NS);

			pthread_cond_timedwait(&reading->changed, &reading->lock, &until);
		}
	}
	if (failure)
		err = error_fail(error, error_size, failure,
				 "cannot start a thread to read the job: %s", strerror(failure));
	else if (reading->err) {
		err = reading->err;
		snprintf(error, error_size, "%s", reading->error);
	}
	/* Whatever happens next, no worker writes these slots any more. */
	reading->generation++;
	if (!err) {
		snapshot->processes = reading->processes;
		snapshot->count = count;
		reading->processes = NULL;
	}
	pthread_mutex_unlock(&reading->lock);
	reading_release(reading);
	snapshot->read_ns = monotonic_ns() - started;
	return err;
}

void job_snapshot_free(struct job_snapshot *snapshot)
{
	for (size_t i = 0; i < snapshot->count; i++)
		snapshot_process_free(&snapshot->processes[i]);
	free(snapshot->processes);
	memset(snapshot, 0, sizeof(*snapshot));
}
