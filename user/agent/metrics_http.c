// SPDX-License-Identifier: MIT
/*
 * The agent's HTTP endpoints: /metrics (libmicrohttpd renders the registry on
 * each scrape), /healthz and /readyz for the probes of a DaemonSet.
 */
#include "agent/metrics_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "agent/metrics.h"
#include "base/error_message.h"
#include "base/log.h"

/* Threads serving requests; scrapes are short. */
#define SERVER_THREADS 2
/* Descriptors kept for the probes, maps and files beside the connections. */
#define DESCRIPTORS_RESERVED 512

struct metrics_server {
	struct MHD_Daemon *daemon;
	struct metrics_registry *registry;
	struct metrics_readiness readiness; /* ready NULL: always ready */
	uint16_t port;
	atomic_uint_least64_t scrapes;
};

int metrics_parse_listen(const char *listen, uint32_t *address, uint16_t *port, char *error,
			 size_t error_size)
{
	const char *colon = listen ? strrchr(listen, ':') : NULL;
	char host[64];
	struct in_addr parsed;
	unsigned long number;
	char *end;

	if (!colon || (size_t)(colon - listen) >= sizeof(host) || !colon[1])
		return error_fail(error, error_size, EINVAL,
				  "listen address '%s' is not HOST:PORT (e.g. %s)",
				  listen ? listen : "", METRICS_DEFAULT_LISTEN);
	memcpy(host, listen, (size_t)(colon - listen));
	host[colon - listen] = '\0';
	errno = 0;
	number = strtoul(colon + 1, &end, 10);
	if (*end || errno || number > 65535)
		return error_fail(error, error_size, EINVAL,
				  "listen address '%s': the port must be a number from 0 to 65535",
				  listen);
	if (strcmp(host, "*") == 0 || strcmp(host, "0.0.0.0") == 0)
		parsed.s_addr = htonl(INADDR_ANY);
	else if (strcmp(host, "localhost") == 0)
		parsed.s_addr = htonl(INADDR_LOOPBACK);
	else if (inet_pton(AF_INET, host, &parsed) != 1)
		return error_fail(error, error_size, EINVAL,
				  "listen address '%s': '%s' is not an IPv4 address", listen, host);
	*address = parsed.s_addr;
	*port = (uint16_t)number;
	return 0;
}

/* libmicrohttpd's own messages: only with -vv; failures reach the user as our sentences. */
static void log_server_message(void *context, const char *format, va_list arguments)
{
	char message[512];

	(void)context;
	vsnprintf(message, sizeof(message), format, arguments);
	log_debug("metrics server: %s", message);
}

static enum MHD_Result respond(struct MHD_Connection *connection, unsigned status,
			       const char *content_type, char *body, size_t length)
{
	struct MHD_Response *response =
		MHD_create_response_from_buffer(length, body, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result result;

	if (!response) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
	result = MHD_queue_response(connection, status, response);
	MHD_destroy_response(response);
	return result;
}

static enum MHD_Result respond_text(struct MHD_Connection *connection, unsigned status,
				    const char *text)
{
	char *copy = strdup(text);

	return copy ? respond(connection, status, "text/plain; charset=utf-8", copy, strlen(copy))
		    : MHD_NO;
}

/* 200 "ready", or 503 with the owner's reason. */
static enum MHD_Result respond_readiness(struct metrics_server *server,
					 struct MHD_Connection *connection)
{
	char reason[256] = "", text[300];

	if (!server->readiness.ready ||
	    server->readiness.ready(server->readiness.context, reason, sizeof(reason)))
		return respond_text(connection, MHD_HTTP_OK, "ready\n");
	snprintf(text, sizeof(text), "not ready: %s\n", reason[0] ? reason : "no reason given");
	return respond_text(connection, MHD_HTTP_SERVICE_UNAVAILABLE, text);
}

/*
 * The connections the server may hold: METRICS_CONNECTION_LIMIT, within the
 * open-file limit (raised to its hard limit first) less what the rest of the
 * process needs.
 */
static unsigned connection_limit(void)
{
	struct rlimit files;
	rlim_t room;

	if (getrlimit(RLIMIT_NOFILE, &files))
		return 64;
	if (files.rlim_cur < files.rlim_max) {
		struct rlimit raised = { .rlim_cur = files.rlim_max, .rlim_max = files.rlim_max };

		if (setrlimit(RLIMIT_NOFILE, &raised) == 0)
			files = raised;
	}
	room = files.rlim_cur > 2 * DESCRIPTORS_RESERVED ? files.rlim_cur - DESCRIPTORS_RESERVED
							 : files.rlim_cur / 2;
	return room < METRICS_CONNECTION_LIMIT ? (unsigned)room : METRICS_CONNECTION_LIMIT;
}

static enum MHD_Result handle(void *context, struct MHD_Connection *connection, const char *url,
			      const char *method, const char *version, const char *upload_data,
			      size_t *upload_data_size, void **request_state)
{
	struct metrics_server *server = context;
	size_t length;
	char *body;

	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)request_state;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return respond_text(connection, MHD_HTTP_METHOD_NOT_ALLOWED,
				    "only GET is served here\n");
	if (strcmp(url, "/") == 0)
		return respond_text(connection, MHD_HTTP_OK,
				    "tcheck-bpf agent: metrics at /metrics, probes at /healthz "
				    "and /readyz\n");
	if (strcmp(url, "/healthz") == 0)
		return respond_text(connection, MHD_HTTP_OK, "ok\n");
	if (strcmp(url, "/readyz") == 0)
		return respond_readiness(server, connection);
	if (strcmp(url, "/metrics") != 0)
		return respond_text(connection, MHD_HTTP_NOT_FOUND,
				    "not found: try /metrics, /healthz or /readyz\n");
	body = metrics_render(server->registry, &length);
	if (!body)
		return respond_text(connection, MHD_HTTP_INTERNAL_SERVER_ERROR,
				    "out of memory while rendering the metrics\n");
	atomic_fetch_add(&server->scrapes, 1);
	return respond(connection, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", body,
		       length);
}

struct metrics_server *metrics_server_start(struct metrics_registry *registry, const char *listen,
					    const struct metrics_readiness *readiness, char *error,
					    size_t error_size)
{
	struct sockaddr_in bind_address = { .sin_family = AF_INET };
	struct metrics_server *server;
	const union MHD_DaemonInfo *info;
	uint32_t address = 0;
	uint16_t port = 0;

	if (metrics_parse_listen(listen, &address, &port, error, error_size))
		return NULL;
	bind_address.sin_addr.s_addr = address;
	bind_address.sin_port = htons(port);
	server = calloc(1, sizeof(*server));
	if (!server) {
		error_format(error, error_size, "out of memory");
		return NULL;
	}
	server->registry = registry;
	if (readiness)
		server->readiness = *readiness;
	server->daemon = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, port, NULL, NULL, handle, server,
		MHD_OPTION_SOCK_ADDR, &bind_address, MHD_OPTION_THREAD_POOL_SIZE,
		(unsigned)SERVER_THREADS, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned)METRICS_CONNECTION_TIMEOUT_SECONDS, MHD_OPTION_CONNECTION_LIMIT,
		connection_limit(), MHD_OPTION_EXTERNAL_LOGGER, log_server_message, NULL,
		MHD_OPTION_END);
	if (!server->daemon) {
		error_format(error, error_size,
			     "cannot serve metrics on %s: the address is taken or not on this "
			     "host; choose another with --listen",
			     listen);
		free(server);
		return NULL;
	}
	info = MHD_get_daemon_info(server->daemon, MHD_DAEMON_INFO_BIND_PORT);
	server->port = info ? info->port : port;
	return server;
}

uint16_t metrics_server_port(const struct metrics_server *server)
{
	return server->port;
}

uint64_t metrics_server_scrapes(const struct metrics_server *server)
{
	return atomic_load(&((struct metrics_server *)server)->scrapes);
}

void metrics_server_stop(struct metrics_server *server)
{
	if (!server)
		return;
	MHD_stop_daemon(server->daemon);
	free(server);
}
