// SPDX-License-Identifier: MIT
/*
 * The metrics registry and its exposition against text written out by hand
 * from the Prometheus text format, and the HTTP endpoint under concurrent
 * scrapes while counters move.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/agent_health.h"
#include "agent/metrics.h"
#include "agent/metrics_http.h"
#include "base/build_version.h"
#include "unit.h"

#define ERROR_SIZE 256

UNIT_TEST(metrics, exposition_matches_the_text_format)
{
	static const char *const call_labels[] = { "rank", "function" };
	static const char *const drop_labels[] = { "pid" };
	struct metrics_registry *registry = metrics_registry_new();
	struct metrics_family *calls, *sequence, *drops;
	static const char expected[] =
		"# HELP tcheck_nccl_calls_total NCCL calls by function.\n"
		"# TYPE tcheck_nccl_calls_total counter\n"
		"tcheck_nccl_calls_total{rank=\"0\",function=\"ncclAllReduce\"} 3\n"
		"tcheck_nccl_calls_total{rank=\"1\",function=\"ncclAllReduce\"} 1.5\n"
		"# HELP tcheck_collective_sequence Last sequence \\\\ issued,\\nper rank.\n"
		"# TYPE tcheck_collective_sequence gauge\n"
		"tcheck_collective_sequence -2\n"
		"# HELP tcheck_ringbuf_drops_total Events lost.\n"
		"# TYPE tcheck_ringbuf_drops_total counter\n"
		"tcheck_ringbuf_drops_total{pid=\"a\\\"b\\\\c\\nd\"} 12345678901234\n";
	const char *rank0[] = { "0", "ncclAllReduce" }, *rank1[] = { "1", "ncclAllReduce" };
	const char *odd[] = { "a\"b\\c\nd" };
	size_t length;
	char *text;

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	calls = metrics_declare(registry, "tcheck_nccl_calls_total", "NCCL calls by function.",
				METRICS_COUNTER, call_labels, 2);
	sequence = metrics_declare(registry, "tcheck_collective_sequence",
				   "Last sequence \\ issued,\nper rank.", METRICS_GAUGE, NULL, 0);
	drops = metrics_declare(registry, "tcheck_ringbuf_drops_total", "Events lost.",
				METRICS_COUNTER, drop_labels, 1);
	CU_ASSERT_FATAL(calls && sequence && drops);
	CU_ASSERT_EQUAL(metrics_add(calls, rank0, 1), 0);
	CU_ASSERT_EQUAL(metrics_add(calls, rank0, 2), 0);
	CU_ASSERT_EQUAL(metrics_add(calls, rank1, 1.5), 0);
	CU_ASSERT_EQUAL(metrics_set(sequence, NULL, -2), 0);
	CU_ASSERT_EQUAL(metrics_set(drops, odd, 12345678901234.0), 0);
	/* A counter never goes down. */
	CU_ASSERT_EQUAL(metrics_add(calls, rank0, -1), -EINVAL);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, rank0), 3, 0);

	text = metrics_render(registry, &length);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	CU_ASSERT_STRING_EQUAL(text, expected);
	CU_ASSERT_EQUAL(length, strlen(expected));
	free(text);

	/* A process gone: its series go, the others stay. */
	CU_ASSERT_EQUAL(metrics_remove_series(registry, "rank", "0"), 1);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, rank0), 0, 0);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, rank1), 1.5, 0);
	metrics_registry_free(registry);
}

/*
 * Series whose label values hold the same characters split differently
 * ("1","23" and "12","3") or a NULL value are told apart, among hundreds
 * of series, and each keeps its own count through removals of others.
 */
UNIT_TEST(metrics, many_series_are_each_found_again)
{
	static const char *const labels[] = { "pid", "function" };
	struct metrics_registry *registry = metrics_registry_new();
	struct metrics_family *calls;
	char pid[16], function[16];

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	calls = metrics_declare(registry, "tcheck_nccl_calls_total", "", METRICS_COUNTER, labels,
				2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	/* Series p (0..299): pid "p / 10", function "p % 10" with a suffix, p + 1 calls. */
	for (int round = 0; round < 2; round++)
		for (int p = 0; p < 300; p++) {
			snprintf(pid, sizeof(pid), "%d", p / 10);
			snprintf(function, sizeof(function), "%dx", p % 10);
			CU_ASSERT_EQUAL(metrics_add(calls, (const char *[]){ pid, function },
						    round ? p : 1),
					0);
		}
	CU_ASSERT_EQUAL(metrics_add(calls, (const char *[]){ "1", "23" }, 5), 0);
	CU_ASSERT_EQUAL(metrics_add(calls, (const char *[]){ "12", "3" }, 7), 0);
	CU_ASSERT_EQUAL(metrics_add(calls, (const char *[]){ "9", NULL }, 11), 0);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ "1", "23" }), 5, 0);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ "12", "3" }), 7, 0);
	/* A NULL value is the empty string, as the exposition writes it. */
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ "9", "" }), 11, 0);
	CU_ASSERT_EQUAL(metrics_remove_series(registry, "pid", "7"), 10);
	CU_ASSERT_EQUAL(metrics_unset(calls, (const char *[]){ "12", "3" }), 1);
	for (int p = 0; p < 300; p++) {
		snprintf(pid, sizeof(pid), "%d", p / 10);
		snprintf(function, sizeof(function), "%dx", p % 10);
		CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ pid, function }),
				       p / 10 == 7 ? 0 : p + 1, 0);
	}
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ "1", "23" }), 5, 0);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ "12", "3" }), 0, 0);
	metrics_registry_free(registry);
}

/*
 * A series updated through a handle stays the series of its labels while
 * others are added past the family's capacity (the series move) and
 * removed before it (its place changes), and is made again once removed.
 */
UNIT_TEST(metrics, a_remembered_series_stays_its_labels_series)
{
	static const char *const labels[] = { "pid", "function" };
	const char *mine[] = { "1", "ncclAllReduce" };
	struct metrics_registry *registry = metrics_registry_new();
	struct metrics_handle handle = { 0 };
	struct metrics_family *calls;
	char pid[16];

	CU_ASSERT_PTR_NOT_NULL_FATAL(registry);
	calls = metrics_declare(registry, "tcheck_nccl_calls_total", "", METRICS_COUNTER, labels,
				2);
	CU_ASSERT_PTR_NOT_NULL_FATAL(calls);
	CU_ASSERT_EQUAL(metrics_add(calls, (const char *[]){ "0", "ncclAllReduce" }, 1), 0);
	/* 100 more series, each added between two updates of the remembered one. */
	for (int p = 0; p < 100; p++) {
		CU_ASSERT_EQUAL(metrics_add_remembered(calls, &handle, mine, 1), 0);
		snprintf(pid, sizeof(pid), "%d", p + 2);
		CU_ASSERT_EQUAL(metrics_add(calls, (const char *[]){ pid, "ncclAllReduce" }, 5), 0);
	}
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, mine), 100, 0);
	/* The series before it removed: it moves one place down. */
	CU_ASSERT_EQUAL(metrics_unset(calls, (const char *[]){ "0", "ncclAllReduce" }), 1);
	CU_ASSERT_EQUAL(metrics_add_remembered(calls, &handle, mine, 1), 0);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, mine), 101, 0);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ "2", "ncclAllReduce" }), 5, 0);
	/* Its series removed: the next update makes it again. */
	CU_ASSERT_EQUAL(metrics_remove_series(registry, "pid", "1"), 1);
	CU_ASSERT_EQUAL(metrics_set_remembered(calls, &handle, mine, 3), 0);
	CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, mine), 3, 0);
	for (int p = 0; p < 100; p++) {
		snprintf(pid, sizeof(pid), "%d", p + 2);
		CU_ASSERT_DOUBLE_EQUAL(metrics_get(calls, (const char *[]){ pid, "ncclAllReduce" }),
				       5, 0);
	}
	metrics_registry_free(registry);
}

UNIT_TEST(metrics, malformed_or_conflicting_declarations_are_refused)
{
	static const char *const labels[] = { "rank" };
	static const char *const reserved[] = { "__name__" };
	static const char *const other[] = { "pid" };
	struct metrics_registry *registry = metrics_registry_new();
	struct metrics_family *family;

	CU_ASSERT_PTR_NULL(metrics_declare(registry, "9lives", "", METRICS_GAUGE, NULL, 0));
	CU_ASSERT_PTR_NULL(metrics_declare(registry, "has-dash", "", METRICS_GAUGE, NULL, 0));
	/* Counters end in _total. */
	CU_ASSERT_PTR_NULL(metrics_declare(registry, "tcheck_calls", "", METRICS_COUNTER, NULL, 0));
	CU_ASSERT_PTR_NULL(
		metrics_declare(registry, "tcheck_x_total", "", METRICS_COUNTER, reserved, 1));
	family = metrics_declare(registry, "tcheck_hangs_total", "", METRICS_COUNTER, labels, 1);
	CU_ASSERT_PTR_NOT_NULL(family);
	/* The same declaration again is the same family; another shape is refused. */
	CU_ASSERT_PTR_EQUAL(
		metrics_declare(registry, "tcheck_hangs_total", "", METRICS_COUNTER, labels, 1),
		family);
	CU_ASSERT_PTR_NULL(
		metrics_declare(registry, "tcheck_hangs_total", "", METRICS_COUNTER, other, 1));
	CU_ASSERT_PTR_NULL(
		metrics_declare(registry, "tcheck_hangs_total", "", METRICS_GAUGE, labels, 1));
	metrics_registry_free(registry);
}

UNIT_TEST(metrics, listen_addresses)
{
	char error[ERROR_SIZE];
	uint32_t address;
	uint16_t port;

	CU_ASSERT_EQUAL(
		metrics_parse_listen("127.0.0.1:9477", &address, &port, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(address, htonl(INADDR_LOOPBACK));
	CU_ASSERT_EQUAL(port, 9477);
	CU_ASSERT_EQUAL(metrics_parse_listen("*:0", &address, &port, error, sizeof(error)), 0);
	CU_ASSERT_EQUAL(address, htonl(INADDR_ANY));
	CU_ASSERT(metrics_parse_listen("9477", &address, &port, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "HOST:PORT") != NULL);
	CU_ASSERT(metrics_parse_listen("127.0.0.1:70000", &address, &port, error, sizeof(error)) <
		  0);
	CU_ASSERT(metrics_parse_listen("node-3:9477", &address, &port, error, sizeof(error)) < 0);
	CU_ASSERT(strstr(error, "not an IPv4 address") != NULL);
}

/* One HTTP GET over a plain socket; returns the whole response, malloc'ed. */
static char *http_get(uint16_t port, const char *path)
{
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(port) };
	size_t length = 0, capacity = 1 << 16;
	char request[256], *response = malloc(capacity);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ssize_t got;

	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || !response || connect(fd, (struct sockaddr *)&address, sizeof(address)) != 0) {
		if (fd >= 0)
			close(fd);
		free(response);
		return NULL;
	}
	snprintf(request, sizeof(request),
		 "GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", path);
	if (write(fd, request, strlen(request)) != (ssize_t)strlen(request)) {
		close(fd);
		free(response);
		return NULL;
	}
	while ((got = read(fd, response + length, capacity - length - 1)) > 0)
		length += (size_t)got;
	close(fd);
	response[length] = '\0';
	return response;
}

struct scrape_worker {
	uint16_t port;
	int scrapes;
	int good; /* responses that were 200, complete, and monotonic */
};

/* The counter's value in a scrape, or -1. */
static double scraped_counter(const char *response)
{
	const char *line = strstr(response, "\ntcheck_nccl_calls_total{rank=\"0\"} ");

	return line ? atof(line + strlen("\ntcheck_nccl_calls_total{rank=\"0\"} ")) : -1;
}

static void *scrape_repeatedly(void *argument)
{
	struct scrape_worker *worker = argument;
	double last = 0;

	for (int i = 0; i < worker->scrapes; i++) {
		char *response = http_get(worker->port, "/metrics");
		double value = response ? scraped_counter(response) : -1;

		if (response && strncmp(response, "HTTP/1.1 200", 12) == 0 &&
		    strstr(response, "text/plain; version=0.0.4") && value >= last) {
			worker->good++;
			last = value;
		}
		free(response);
	}
	return NULL;
}

UNIT_TEST(metrics, concurrent_scrapes_while_counters_move)
{
	enum { WORKERS = 6, SCRAPES = 40 };
	static const char *const labels[] = { "rank" };
	struct metrics_registry *registry = metrics_registry_new();
	struct scrape_worker workers[WORKERS];
	pthread_t threads[WORKERS];
	struct metrics_server *server;
	struct metrics_family *family;
	char error[ERROR_SIZE], *response;

	family = metrics_declare(registry, "tcheck_nccl_calls_total", "Calls.", METRICS_COUNTER,
				 labels, 1);
	server = metrics_server_start(registry, "127.0.0.1:0", NULL, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(server);
	CU_ASSERT(metrics_server_port(server) != 0);

	/* The series exists before the first scrape: every scrape must show it. */
	CU_ASSERT_EQUAL(metrics_add(family, (const char *[]){ "0" }, 0), 0);
	for (int i = 0; i < WORKERS; i++) {
		workers[i] = (struct scrape_worker){ .port = metrics_server_port(server),
						     .scrapes = SCRAPES };
		pthread_create(&threads[i], NULL, scrape_repeatedly, &workers[i]);
	}
	for (int i = 0; i < 2000; i++) {
		const char *rank0[] = { "0" };

		metrics_add(family, rank0, 1);
		if (i % 100 == 0)
			usleep(1000);
	}
	for (int i = 0; i < WORKERS; i++) {
		pthread_join(threads[i], NULL);
		CU_ASSERT_EQUAL(workers[i].good, SCRAPES);
	}
	CU_ASSERT_EQUAL(metrics_server_scrapes(server), WORKERS * SCRAPES);

	/* Other paths and methods get clear answers, not metrics. */
	response = http_get(metrics_server_port(server), "/nowhere");
	CU_ASSERT(response && strncmp(response, "HTTP/1.1 404", 12) == 0);
	free(response);
	metrics_server_stop(server);

	/* A taken port is an error that says what to do. */
	server = metrics_server_start(registry, "127.0.0.1:0", NULL, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(server);
	{
		char taken[32];
		struct metrics_server *second;

		snprintf(taken, sizeof(taken), "127.0.0.1:%u", metrics_server_port(server));
		second = metrics_server_start(registry, taken, NULL, error, sizeof(error));
		CU_ASSERT_PTR_NULL(second);
		CU_ASSERT(strstr(error, "--listen") != NULL);
		metrics_server_stop(second);
	}
	metrics_server_stop(server);
	metrics_registry_free(registry);
}

/* A readiness test the unit test controls. */
static bool test_readiness(void *context, char *reason, size_t reason_size)
{
	const bool *ready = context;

	if (!*ready)
		snprintf(reason, reason_size, "the probes are not attached yet");
	return *ready;
}

UNIT_TEST(metrics, liveness_and_readiness_endpoints)
{
	struct metrics_registry *registry = metrics_registry_new();
	bool ready = false;
	struct metrics_readiness readiness = { .ready = test_readiness, .context = &ready };
	struct metrics_server *server;
	char error[ERROR_SIZE], *response;

	server = metrics_server_start(registry, "127.0.0.1:0", &readiness, error, sizeof(error));
	CU_ASSERT_PTR_NOT_NULL_FATAL(server);
	response = http_get(metrics_server_port(server), "/healthz");
	CU_ASSERT(response && strncmp(response, "HTTP/1.1 200", 12) == 0);
	free(response);
	response = http_get(metrics_server_port(server), "/readyz");
	CU_ASSERT(response && strncmp(response, "HTTP/1.1 503", 12) == 0 &&
		  strstr(response, "not ready: the probes are not attached yet"));
	free(response);
	ready = true;
	response = http_get(metrics_server_port(server), "/readyz");
	CU_ASSERT(response && strncmp(response, "HTTP/1.1 200", 12) == 0 &&
		  strstr(response, "\r\n\r\nready\n"));
	free(response);
	/* A probe is no scrape. */
	CU_ASSERT_EQUAL(metrics_server_scrapes(server), 0);
	metrics_server_stop(server);
	metrics_registry_free(registry);
}

UNIT_TEST(metrics, agent_health_says_build_and_readiness)
{
	struct metrics_registry *registry = metrics_registry_new();
	struct agent_health *health = agent_health_new(registry);
	const uint64_t second = 1000000000ULL, start = 1000 * second;
	char reason[256], expected[128], *text;
	size_t length;

	CU_ASSERT_PTR_NOT_NULL_FATAL(health);
	CU_ASSERT_FALSE(agent_health_ready_at(health, start, reason, sizeof(reason)));
	CU_ASSERT_PTR_NOT_NULL(strstr(reason, "not loaded and attached yet"));
	agent_health_polled(health, start);
	CU_ASSERT_TRUE(agent_health_ready_at(health, start + 4 * second, reason, sizeof(reason)));
	CU_ASSERT_FALSE(agent_health_ready_at(health, start + 6 * second, reason, sizeof(reason)));
	CU_ASSERT_PTR_NOT_NULL(strstr(reason, "last read 6.0 s ago"));
	agent_health_polled(health, start + 6 * second);
	CU_ASSERT_TRUE(agent_health_ready_at(health, start + 6 * second, reason, sizeof(reason)));

	text = metrics_render(registry, &length);
	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	snprintf(expected, sizeof(expected), "tcheck_build_info{version=\"%s\",commit=\"%s\"} 1\n",
		 build_version(), build_commit());
	CU_ASSERT_PTR_NOT_NULL(strstr(text, expected));
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "tcheck_ring_buffer_last_read_timestamp_seconds "));
	free(text);
	agent_health_free(health);
	metrics_registry_free(registry);
}
