// SPDX-License-Identifier: MIT
/* The time tcheck-bpf was there to see; see watched_time.h. */
#include "base/watched_time.h"

bool watched_time_tick(struct watched_time *watched, uint64_t now_ns, uint64_t cpu_ns,
		       struct watched_gap *gap)
{
	uint64_t last = watched->last_tick_ns, last_cpu = watched->last_cpu_ns;
	bool found;

	if (now_ns <= last)
		return false;
	found = last && now_ns - last > WATCHED_TIME_GAP_NS;
	if (found) {
		watched->gap_start_ns = last;
		watched->resumed_ns = now_ns;
		watched->unwatched_ns += now_ns - last;
		watched->gaps++;
		if (gap)
			*gap = (struct watched_gap){
				.start_ns = last,
				.length_ns = now_ns - last,
				.stopped = cpu_ns && last_cpu && cpu_ns >= last_cpu &&
					   cpu_ns - last_cpu < (now_ns - last) / 2,
			};
	}
	watched->last_tick_ns = now_ns;
	/* Ticks read from a trace know no CPU time: the latest one known is kept. */
	if (cpu_ns)
		watched->last_cpu_ns = cpu_ns;
	return found;
}

bool watched_time_current(const struct watched_time *watched, uint64_t now_ns)
{
	uint64_t last = watched->last_tick_ns;

	return !last || now_ns <= last || now_ns - last <= WATCHED_TIME_GAP_NS;
}

uint64_t watched_time_silent_since(const struct watched_time *watched, uint64_t since_ns)
{
	return watched->resumed_ns > since_ns ? watched->resumed_ns : since_ns;
}

bool watched_time_spans_gap(const struct watched_time *watched, uint64_t from_ns, uint64_t to_ns)
{
	return watched->resumed_ns && watched->gap_start_ns < to_ns &&
	       watched->resumed_ns > from_ns;
}
