/* SPDX-License-Identifier: MIT */
/*
 * Instant queries to a Prometheus server's HTTP API (/api/v1/query), with
 * libcurl; the result's vector comes back as jansson values.
 */
#ifndef TCHECK_PROMETHEUS_QUERY_H
#define TCHECK_PROMETHEUS_QUERY_H

#include <jansson.h>
#include <stddef.h>

/*
 * Runs query at base_url ("http://host:9090"). Returns the "result" array
 * of a vector answer (a new reference), or NULL with error filled: the
 * server unreachable, an HTTP error, a query Prometheus refused.
 */
json_t *prometheus_query_vector(const char *base_url, const char *query, double timeout_seconds,
				char *error, size_t error_size);

/* The server's "now" as the answer's sample times give it: the time of the first sample. */
double prometheus_sample_time(const json_t *sample);
/* A sample's value (the second item of "value"), NaN when malformed. */
double prometheus_sample_value(const json_t *sample);
/* A label of a sample, "" when absent. */
const char *prometheus_sample_label(const json_t *sample, const char *name);

#endif /* TCHECK_PROMETHEUS_QUERY_H */
