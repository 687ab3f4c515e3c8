/* SPDX-License-Identifier: MIT */
/*
 * What a process's work-request counters mean over time: requests and
 * bytes in flight (signalled requests not yet completed; NCCL signals only
 * the last request of a chain, so posted requests would drift), and the
 * completed bandwidth over a sliding window of samples.
 */
#ifndef TCHECK_NETWORK_WINDOW_H
#define TCHECK_NETWORK_WINDOW_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

#define NETWORK_WINDOW_SAMPLES 64

struct network_window {
	uint64_t window_ns; /* how far back the bandwidth looks */
	uint64_t timestamps_ns[NETWORK_WINDOW_SAMPLES];
	uint64_t bytes_completed[NETWORK_WINDOW_SAMPLES];
	size_t first; /* oldest sample kept */
	size_t count;
};

/* Completions still owed: signalled requests minus completions, never below zero. */
uint64_t network_requests_in_flight(const struct trace_network_sample *sample);

/* Bytes posted and not completed, never below zero. */
uint64_t network_bytes_in_flight(const struct trace_network_sample *sample);

void network_window_init(struct network_window *window, uint64_t window_ns);

/* Adds a sample; samples older than the window, or out of order, are dropped. */
void network_window_add(struct network_window *window, const struct trace_network_sample *sample);

/* Completed bytes per second across the samples in the window; 0 with fewer than two. */
double network_window_bandwidth(const struct network_window *window);

#endif /* TCHECK_NETWORK_WINDOW_H */
