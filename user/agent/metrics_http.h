/* SPDX-License-Identifier: MIT */
/*
 * Serves a metrics registry to Prometheus over HTTP (GET /metrics), with
 * libmicrohttpd on its own threads. Binds to 127.0.0.1 unless told
 * otherwise.
 */
#ifndef TCHECK_METRICS_HTTP_H
#define TCHECK_METRICS_HTTP_H

#include <stddef.h>
#include <stdint.h>

struct metrics_registry;
struct metrics_server;

/* The address the agent listens on when none is configured. */
#define METRICS_DEFAULT_LISTEN "127.0.0.1:9477"

/*
 * Parses "HOST:PORT" (HOST an IPv4 address, "localhost" or "*" for every
 * address; PORT 0 picks a free one). Returns 0, or -EINVAL with error
 * filled.
 */
int metrics_parse_listen(const char *listen, uint32_t *address, uint16_t *port, char *error,
			 size_t error_size);

/* Starts serving; NULL with error filled when the address is bad or taken. */
struct metrics_server *metrics_server_start(struct metrics_registry *registry, const char *listen,
					    char *error, size_t error_size);
/* The port it listens on (useful after port 0). */
uint16_t metrics_server_port(const struct metrics_server *server);
/* Scrapes answered so far. */
uint64_t metrics_server_scrapes(const struct metrics_server *server);
void metrics_server_stop(struct metrics_server *server);

#endif /* TCHECK_METRICS_HTTP_H */
