// SPDX-License-Identifier: MIT
/* Calls ncclAllReduce on a NULL communicator in a tight loop and prints the time per call. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"
#include "tests/workloads/program_options.h"

#define MAX_THREADS 64
/* A paced thread sleeps at most this often, so that sleeping costs little. */
#define PACING_PERIOD_NS 500000ULL
/* A turn that does not come in this long means a process of the ring is gone. */
#define TURN_TIMEOUT_MS 60000

typedef __typeof__(ncclAllReduce) all_reduce_fn;
typedef __typeof__(ncclGetVersion) get_version_fn;

struct options {
	const char *library;
	const char *go_path;
	const char *ready_path;
	const char *turn_in_path;  /* a round starts on a byte read from here */
	const char *turn_out_path; /* and ends with a byte written here */
	long calls_per_round;
	long rounds;
	long threads;
	double seconds;		 /* run rounds until this long has passed; 0: count rounds */
	double calls_per_second; /* offered rate of the whole process; 0: full speed */
};

struct round_times {
	double *ns_per_call;
	size_t count;
	size_t capacity;
};

struct worker {
	pthread_t thread;
	const struct options *options;
	all_reduce_fn *all_reduce;
	pthread_barrier_t *start;
	int turn_in, turn_out; /* -1 when rounds do not take turns */
	uint64_t calls;
	int last_result;
	int failed;
	struct round_times rounds;
	/* The thread's own CPU time per call, the probes' kernel work included. */
	struct round_times cpu_rounds;
};

/* Every result lands here, so no call can be optimised away. */
static volatile int result_sink;
static float send_value = 1.0f, receive_value;

static void usage(FILE *out)
{
	fprintf(out,
		"usage: nccl-call-bench --lib PATH [--calls N] [--rounds R] [--seconds S]\n"
		"                       [--threads T] [--rate CALLS_PER_SECOND]\n"
		"                       [--ready FILE] [--go FILE] [--turn-in FIFO --turn-out "
		"FIFO]\n"
		"Loads the NCCL library at PATH with dlopen(RTLD_NOW | RTLD_GLOBAL), resolves\n"
		"ncclAllReduce through the global scope (so an LD_PRELOAD interposer wins),\n"
		"writes its pid to FILE given with --ready, waits until the --go FILE exists,\n"
		"then calls ncclAllReduce(send, recv, 1, ncclFloat32, ncclSum, NULL, NULL) on\n"
		"T threads (default 1): R rounds (default 11) of N calls (default 100000)\n"
		"each, or rounds until S seconds have passed. --rate paces the calls of the\n"
		"whole process to that many per second. With --turn-in and --turn-out (one\n"
		"thread), each round waits for a byte from the first FIFO and passes it on to\n"
		"the second when done: processes in a ring of FIFOs take turns, so that slow\n"
		"drifts of the machine's speed reach every variant alike.\n"
		"Prints one line of key=value pairs:\n"
		"ns_per_call (median over every thread's rounds), ns_per_call_min,\n"
		"cpu_ns_per_call (the median of the calling thread's own CPU time, user and\n"
		"kernel, per call: on a loaded machine it does not count the time the thread\n"
		"waits for a CPU, which wall time does), calls,\n"
		"seconds, calls_per_second, result (the return code), version (what\n"
		"ncclGetVersion says) and function (the file ncclAllReduce was found in).\n");
}

static uint64_t monotonic_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
	return (uint64_t)now.tv_sec * 1000000000ULL + (uint64_t)now.tv_nsec;
}

static void sleep_until_ns(uint64_t deadline_ns)
{
	struct timespec deadline = {
		.tv_sec = (time_t)(deadline_ns / 1000000000ULL),
		.tv_nsec = (long)(deadline_ns % 1000000000ULL),
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) == EINTR)
		;
}

static int parse_options(int argc, char **argv, struct options *options)
{
	const struct program_option table[] = {
		{ "lib", PROGRAM_OPTION_TEXT, &options->library },
		{ "calls", PROGRAM_OPTION_LONG, &options->calls_per_round, 1, LONG_MAX },
		{ "rounds", PROGRAM_OPTION_LONG, &options->rounds, 1, LONG_MAX },
		{ "seconds", PROGRAM_OPTION_DOUBLE, &options->seconds, 0, LONG_MAX },
		{ "threads", PROGRAM_OPTION_LONG, &options->threads, 1, MAX_THREADS },
		{ "rate", PROGRAM_OPTION_DOUBLE, &options->calls_per_second, 0, LONG_MAX },
		{ "ready", PROGRAM_OPTION_TEXT, &options->ready_path },
		{ "go", PROGRAM_OPTION_TEXT, &options->go_path },
		{ "turn-in", PROGRAM_OPTION_TEXT, &options->turn_in_path },
		{ "turn-out", PROGRAM_OPTION_TEXT, &options->turn_out_path },
	};

	*options = (struct options){ .calls_per_round = 100000, .rounds = 11, .threads = 1 };
	if (program_options_parse("nccl-call-bench", argc, argv, table,
				  sizeof(table) / sizeof(table[0]), usage))
		return -1;
	if (!options->turn_in_path != !options->turn_out_path ||
	    (options->turn_in_path && options->threads != 1) || !options->library) {
		usage(stderr);
		return -1;
	}
	return 0;
}

static int keep_round(struct round_times *rounds, double ns_per_call)
{
	if (rounds->count == rounds->capacity) {
		size_t capacity = rounds->capacity ? rounds->capacity * 2 : 64;
		double *grown = realloc(rounds->ns_per_call, capacity * sizeof(*grown));

		if (!grown)
			return -1;
		rounds->ns_per_call = grown;
		rounds->capacity = capacity;
	}
	rounds->ns_per_call[rounds->count++] = ns_per_call;
	return 0;
}

/* Waits for this process's turn; false when the ring is broken. */
static int take_turn(int turn_in)
{
	struct pollfd ready = { .fd = turn_in, .events = POLLIN };
	char token;
	int result;

	if (turn_in < 0)
		return 1;
	do
		result = poll(&ready, 1, TURN_TIMEOUT_MS);
	while (result < 0 && errno == EINTR);
	if (result != 1) {
		fprintf(stderr, "nccl-call-bench: no turn came in %d s\n", TURN_TIMEOUT_MS / 1000);
		return 0;
	}
	return read(turn_in, &token, 1) == 1;
}

static void pass_turn(int turn_out)
{
	char token = 't';

	if (turn_out < 0)
		return;
	while (write(turn_out, &token, 1) < 0 && errno == EINTR)
		;
}

static void *run_worker(void *argument)
{
	struct worker *worker = argument;
	const struct options *options = worker->options;
	double thread_rate = options->calls_per_second / (double)options->threads;
	uint64_t batch = 0, started_ns, deadline_ns = 0;

	if (thread_rate > 0) {
		batch = (uint64_t)(thread_rate * (double)PACING_PERIOD_NS / 1e9);
		if (batch == 0)
			batch = 1;
	}
	pthread_barrier_wait(worker->start);
	started_ns = monotonic_ns();
	if (options->seconds > 0)
		deadline_ns = started_ns + (uint64_t)(options->seconds * 1e9);
	for (long round = 0;; round++) {
		uint64_t round_start_ns, round_ns, round_start_cpu_ns, round_cpu_ns;

		if (deadline_ns ? monotonic_ns() >= deadline_ns : round >= options->rounds)
			break;
		if (!take_turn(worker->turn_in)) {
			worker->failed = 1;
			break;
		}
		round_start_ns = monotonic_ns();
		round_start_cpu_ns = thread_cpu_ns();
		for (long call = 0; call < options->calls_per_round; call++) {
			result_sink = worker->all_reduce(&send_value, &receive_value, 1,
							 ncclFloat32, ncclSum, NULL, NULL);
			worker->calls++;
			if (batch && worker->calls % batch == 0)
				sleep_until_ns(started_ns + (uint64_t)((double)worker->calls * 1e9 /
								       thread_rate));
		}
		round_ns = monotonic_ns() - round_start_ns;
		round_cpu_ns = thread_cpu_ns() - round_start_cpu_ns;
		pass_turn(worker->turn_out);
		if (keep_round(&worker->rounds,
			       (double)round_ns / (double)options->calls_per_round) ||
		    keep_round(&worker->cpu_rounds,
			       (double)round_cpu_ns / (double)options->calls_per_round)) {
			worker->failed = 1;
			break;
		}
	}
	worker->last_result = result_sink;
	return NULL;
}

static int compare_doubles(const void *left, const void *right)
{
	double a = *(const double *)left, b = *(const double *)right;

	return (a > b) - (a < b);
}

static int write_ready_file(const char *path)
{
	FILE *file = fopen(path, "w");

	if (!file)
		return -1;
	fprintf(file, "%d\n", (int)getpid());
	return fclose(file);
}

/* Read-write, so that opening never waits for the other end, and writes never fail. */
static int open_turn_fifo(const char *path)
{
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		fprintf(stderr, "nccl-call-bench: cannot open %s: %s\n", path, strerror(errno));
	return fd;
}

static void wait_for_go(const char *path)
{
	while (access(path, F_OK) != 0)
		usleep(1000);
}

/* Resolves ncclAllReduce the way a program linked against NCCL would find it. */
static all_reduce_fn *resolve_all_reduce(const char *path, const char **found_in, int *version)
{
	all_reduce_fn *global, *own;
	get_version_fn *get_version;
	Dl_info info;
	void *library;

	library = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!library) {
		fprintf(stderr, "nccl-call-bench: cannot load %s: %s\n", path, dlerror());
		return NULL;
	}
	get_version = (get_version_fn *)dlsym(library, "ncclGetVersion");
	if (!get_version || get_version(version) != ncclSuccess)
		*version = 0;
	own = (all_reduce_fn *)dlsym(library, "ncclAllReduce");
	global = (all_reduce_fn *)dlsym(RTLD_DEFAULT, "ncclAllReduce");
	if (!own || !global) {
		fprintf(stderr, "nccl-call-bench: %s has no ncclAllReduce\n", path);
		return NULL;
	}
	*found_in = dladdr((void *)global, &info) && info.dli_fname ? info.dli_fname : "?";
	/* Only an LD_PRELOAD interposer may stand between the program and PATH. */
	if (global != own && !getenv("LD_PRELOAD")) {
		fprintf(stderr, "nccl-call-bench: ncclAllReduce resolves to %s, not to %s\n",
			*found_in, path);
		return NULL;
	}
	return global;
}

/* Every thread's wall (or, with 'cpu', CPU) times of its rounds in one sorted list. */
static int gather_rounds(const struct worker *workers, long thread_count, int cpu,
			 struct round_times *all)
{
	memset(all, 0, sizeof(*all));
	for (long i = 0; i < thread_count; i++) {
		const struct round_times *rounds =
			cpu ? &workers[i].cpu_rounds : &workers[i].rounds;

		for (size_t j = 0; j < rounds->count; j++)
			if (keep_round(all, rounds->ns_per_call[j])) {
				fprintf(stderr, "nccl-call-bench: out of memory\n");
				free(all->ns_per_call);
				return -1;
			}
	}
	if (all->count == 0) {
		fprintf(stderr, "nccl-call-bench: no round completed\n");
		free(all->ns_per_call);
		return -1;
	}
	qsort(all->ns_per_call, all->count, sizeof(double), compare_doubles);
	return 0;
}

static double median_round(const struct round_times *sorted)
{
	return sorted->count % 2 ? sorted->ns_per_call[sorted->count / 2]
				 : (sorted->ns_per_call[sorted->count / 2 - 1] +
				    sorted->ns_per_call[sorted->count / 2]) /
					   2;
}

static int report(const struct worker *workers, long thread_count, uint64_t wall_ns, int version,
		  const char *found_in)
{
	struct round_times all, cpu;
	uint64_t calls = 0;

	for (long i = 0; i < thread_count; i++)
		calls += workers[i].calls;
	if (gather_rounds(workers, thread_count, 0, &all))
		return -1;
	if (gather_rounds(workers, thread_count, 1, &cpu)) {
		free(all.ns_per_call);
		return -1;
	}
	printf("ns_per_call=%.1f ns_per_call_min=%.1f cpu_ns_per_call=%.1f calls=%llu seconds=%.3f "
	       "calls_per_second=%.0f result=%d version=%d.%d.%d function=%s\n",
	       median_round(&all), all.ns_per_call[0], median_round(&cpu),
	       (unsigned long long)calls, (double)wall_ns / 1e9,
	       (double)calls * 1e9 / (double)wall_ns, workers[0].last_result, version / 10000,
	       version / 100 % 100, version % 100, found_in);
	free(all.ns_per_call);
	free(cpu.ns_per_call);
	return 0;
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	pthread_barrier_t start;
	int turn_in = -1, turn_out = -1;
	struct options options;
	all_reduce_fn *all_reduce;
	const char *found_in = "?";
	uint64_t started_ns, wall_ns;
	int status = 0, version = 0;

	if (parse_options(argc, argv, &options))
		return 2;
	all_reduce = resolve_all_reduce(options.library, &found_in, &version);
	if (!all_reduce)
		return 1;
	if (options.turn_in_path) {
		turn_in = open_turn_fifo(options.turn_in_path);
		turn_out = open_turn_fifo(options.turn_out_path);
		if (turn_in < 0 || turn_out < 0)
			return 1;
	}
	if (options.ready_path && write_ready_file(options.ready_path)) {
		fprintf(stderr, "nccl-call-bench: cannot write %s: %s\n", options.ready_path,
			strerror(errno));
		return 1;
	}
	if (options.go_path)
		wait_for_go(options.go_path);
	pthread_barrier_init(&start, NULL, (unsigned)options.threads + 1);
	for (long i = 0; i < options.threads; i++) {
		workers[i].options = &options;
		workers[i].all_reduce = all_reduce;
		workers[i].start = &start;
		workers[i].turn_in = turn_in;
		workers[i].turn_out = turn_out;
		if (pthread_create(&workers[i].thread, NULL, run_worker, &workers[i])) {
			fprintf(stderr, "nccl-call-bench: cannot start thread %ld\n", i);
			return 1;
		}
	}
	pthread_barrier_wait(&start);
	started_ns = monotonic_ns();
	for (long i = 0; i < options.threads; i++) {
		pthread_join(workers[i].thread, NULL);
		status |= workers[i].failed;
	}
	wall_ns = monotonic_ns() - started_ns;
	pthread_barrier_destroy(&start);
	if (status) {
		fprintf(stderr, "nccl-call-bench: out of memory, or the ring of turns broke\n");
		return 1;
	}
	if (report(workers, options.threads, wall_ns, version, found_in))
		return 1;
	for (long i = 0; i < options.threads; i++) {
		free(workers[i].rounds.ns_per_call);
		free(workers[i].cpu_rounds.ns_per_call);
	}
	return 0;
}
