// SPDX-License-Identifier: MIT
/*
 * Fuzzes the agent's HTTP request handling: the metrics server
 * (libmicrohttpd and the agent's handler behind it) runs on loopback in
 * this process, each input is sent as the bytes of one connection, and
 * after each one a plain scrape must still be answered with 200 (within
 * two seconds, in one of three tries): a request that crashes the server,
 * wedges it or makes it stop answering is a finding (abort), as a crash
 * inside it already is. libmicrohttpd itself is not instrumented, so its
 * parser is exercised without coverage guidance.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent/metrics.h"
#include "agent/metrics_http.h"
#include "base/log.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A response is read up to this much; the rest is left unread. */
#define RESPONSE_LIMIT (1024 * 1024)

static struct metrics_server *server;
static uint16_t port;
static unsigned readiness_calls;

/* Ready and not ready by turns, so both answers of /readyz are reached. */
static bool ready_by_turns(void *context, char *reason, size_t reason_size)
{
	(void)context;
	if (__atomic_add_fetch(&readiness_calls, 1, __ATOMIC_RELAXED) % 2)
		return true;
	snprintf(reason, reason_size, "no process found yet");
	return false;
}

/* A registry like the agent's: a labelled counter and a histogram. */
static struct metrics_registry *sample_registry(void)
{
	static const char *const labels[] = { "comm", "rank" };
	static const char *const values[] = { "0x539731be23838e7e", "0" };
	static const double bounds[] = { 0.01, 0.1, 1, 10 };
	struct metrics_registry *registry = metrics_registry_new();
	struct metrics_family *calls, *steps;

	if (!registry)
		return NULL;
	calls = metrics_declare(registry, "tcheck_nccl_calls_total", "Calls.", METRICS_COUNTER,
				labels, 2);
	steps = metrics_declare_histogram(registry, "tcheck_step_seconds", "Step time.", labels, 2,
					  bounds, 4);
	if (!calls || !steps || metrics_add(calls, values, 42) ||
	    metrics_observe(steps, values, 0.3))
		return NULL;
	return registry;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const struct metrics_readiness readiness = { ready_by_turns, NULL };
	struct metrics_registry *registry;
	char error[512];

	log_set_quiet(1);
	registry = sample_registry();
	if (!registry) {
		fprintf(stderr, "cannot make the metrics registry\n");
		abort();
	}
	server = metrics_server_start(registry, "127.0.0.1:0", &readiness, error, sizeof(error));
	if (!server) {
		fprintf(stderr, "%s\n", error);
		abort();
	}
	port = metrics_server_port(server);
	return 0;
}

/* A connection to the server, each send and receive waiting at most 'limit'; -1 if none. */
static int connect_to_server(struct timeval limit)
{
	struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit)) ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof(limit)) ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    connect(fd, (struct sockaddr *)&address, sizeof(address))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Sends 'data' as the whole of one connection, then reads the answer into
 * 'response' (NUL-terminated, at most RESPONSE_LIMIT bytes) until the
 * server closes or is silent for 'limit'. Returns the bytes read, or -1
 * when no connection was made.
 */
static long exchange(const uint8_t *data, size_t size, struct timeval limit, char *response)
{
	size_t sent = 0, got = 0;
	int fd = connect_to_server(limit);

	if (fd < 0)
		return -1;
	while (sent < size) {
		ssize_t done = send(fd, data + sent, size - sent, MSG_NOSIGNAL);

		if (done <= 0)
			break;
		sent += (size_t)done;
	}
	shutdown(fd, SHUT_WR);
	while (got < RESPONSE_LIMIT) {
		ssize_t done = recv(fd, response + got, RESPONSE_LIMIT - got, 0);

		if (done <= 0)
			break;
		got += (size_t)done;
	}
	response[got] = '\0';
	close(fd);
	return (long)got;
}

/* A plain scrape answered with 200 and the sample series, within 'limit'. */
static bool scrape_answered(struct timeval limit, char *response)
{
	static const char scrape[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";

	return exchange((const uint8_t *)scrape, sizeof(scrape) - 1, limit, response) > 0 &&
	       strncmp(response, "HTTP/1.1 200", 12) == 0 &&
	       strstr(response,
		      "tcheck_nccl_calls_total{comm=\"0x539731be23838e7e\",rank=\"0\"} 42");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char response[RESPONSE_LIMIT + 1];
	/* A request cut short may be left waiting for the rest: its answer is not looked at. */
	const struct timeval brief = { .tv_usec = 50000 }, patient = { .tv_sec = 2 };
	int tries = 0;

	exchange(data, size, brief, response);
	/*
	 * Three tries of two seconds: a machine busy with other work can hold one
	 * scrape back, a server wedged by the input holds all three.
	 */
	while (!scrape_answered(patient, response))
		if (++tries == 3) {
			fprintf(stderr,
				"after this input no scrape was answered in 3 tries (%.80s)\n",
				response);
			abort();
		}
	return 0;
}
