// SPDX-License-Identifier: MIT
/* In-flight work requests and sliding-window bandwidth from cumulative samples. */
#include "network/network_window.h"

#include <string.h>

uint64_t network_requests_in_flight(const struct trace_network_sample *sample)
{
	if (sample->completions >= sample->requests_signalled)
		return 0;
	return sample->requests_signalled - sample->completions;
}

uint64_t network_bytes_in_flight(const struct trace_network_sample *sample)
{
	if (sample->bytes_completed >= sample->bytes_posted)
		return 0;
	return sample->bytes_posted - sample->bytes_completed;
}

void network_window_init(struct network_window *window, uint64_t window_ns)
{
	memset(window, 0, sizeof(*window));
	window->window_ns = window_ns;
}

static size_t slot(const struct network_window *window, size_t index)
{
	return (window->first + index) % NETWORK_WINDOW_SAMPLES;
}

void network_window_add(struct network_window *window, const struct trace_network_sample *sample)
{
	size_t last;

	if (window->count) {
		last = slot(window, window->count - 1);
		if (sample->timestamp_ns <= window->timestamps_ns[last] ||
		    sample->bytes_completed < window->bytes_completed[last])
			return;
	}
	if (window->count == NETWORK_WINDOW_SAMPLES) {
		window->first = slot(window, 1);
		window->count--;
	}
	last = slot(window, window->count);
	window->timestamps_ns[last] = sample->timestamp_ns;
	window->bytes_completed[last] = sample->bytes_completed;
	window->count++;
	/* Keep the newest sample at or before the window's start: it bounds the window. */
	while (window->count > 2 &&
	       sample->timestamp_ns - window->timestamps_ns[slot(window, 1)] >= window->window_ns) {
		window->first = slot(window, 1);
		window->count--;
	}
}

double network_window_bandwidth(const struct network_window *window)
{
	size_t oldest, newest;
	uint64_t elapsed;

	if (window->count < 2)
		return 0;
	oldest = slot(window, 0);
	newest = slot(window, window->count - 1);
	elapsed = window->timestamps_ns[newest] - window->timestamps_ns[oldest];
	if (!elapsed)
		return 0;
	return (double)(window->bytes_completed[newest] - window->bytes_completed[oldest]) * 1e9 /
	       (double)elapsed;
}
