/* SPDX-License-Identifier: MIT */
/*
 * Serves a metrics registry to Prometheus over HTTP (GET /metrics), and the
 * liveness (/healthz: the process answers) and readiness (/readyz: the
 * owner's own test) probes, with libmicrohttpd on its own threads. Binds to
 * 127.0.0.1 unless told otherwise. Idle connections are closed after
 * METRICS_CONNECTION_TIMEOUT_SECONDS, and at most METRICS_CONNECTION_LIMIT
 * are held at once, so clients that open connections and send nothing
 * cannot keep a scrape out.
 */
#ifndef TCHECK_METRICS_HTTP_H
#define TCHECK_METRICS_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct metrics_registry;
struct metrics_server;

/* The address the agent listens on when none is configured. */
#define METRICS_DEFAULT_LISTEN "127.0.0.1:9477"

/* Connections held at once (fewer when the open-file limit is lower). */
#define METRICS_CONNECTION_LIMIT 4096
/* A connection that sends or reads nothing for this long is closed. */
#define METRICS_CONNECTION_TIMEOUT_SECONDS 10

/*
 * The owner's readiness test, asked on each GET /readyz from the server's
 * threads: true when ready; when not, a sentence saying why in reason.
 */
struct metrics_readiness {
	bool (*ready)(void *context, char *reason, size_t reason_size);
	void *context;
};

/*
 * Parses "HOST:PORT" (HOST an IPv4 address, "localhost" or "*" for every
 * address; PORT 0 picks a free one). Returns 0, or -EINVAL with error
 * filled.
 */
int metrics_parse_listen(const char *listen, uint32_t *address, uint16_t *port, char *error,
			 size_t error_size);

/*
 * Starts serving; NULL with error filled when the address is bad or taken.
 * readiness NULL: /readyz always answers ready. Raises this process's soft
 * open-file limit to its hard limit so the connection limit fits in it.
 */
struct metrics_server *metrics_server_start(struct metrics_registry *registry, const char *listen,
					    const struct metrics_readiness *readiness, char *error,
					    size_t error_size);
/* The port it listens on (useful after port 0). */
uint16_t metrics_server_port(const struct metrics_server *server);
/* Scrapes answered so far. */
uint64_t metrics_server_scrapes(const struct metrics_server *server);
void metrics_server_stop(struct metrics_server *server);

#endif /* TCHECK_METRICS_HTTP_H */
