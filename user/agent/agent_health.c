// SPDX-License-Identifier: MIT
/* The agent's build, its last read of the ring buffer, and its readiness. */
#include "agent/agent_health.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "agent/metrics.h"
#include "base/build_version.h"
#include "base/system_clock.h"

struct agent_health {
	struct metrics_family *last_read;
	atomic_uint_least64_t last_poll_ns; /* 0: the probes are not attached yet */
	uint64_t last_published_ns;	    /* the gauge is set at most once a second */
};

struct agent_health *agent_health_new(struct metrics_registry *registry)
{
	static const char *const build_labels[] = { "version", "commit" };
	struct agent_health *health = calloc(1, sizeof(*health));
	struct metrics_family *build;

	if (!health)
		return NULL;
	build = metrics_declare(registry, "tcheck_build_info",
				"The agent's version and the git commit it was built from "
				"(always 1).",
				METRICS_GAUGE, build_labels, 2);
	health->last_read = metrics_declare(
		registry, "tcheck_ring_buffer_last_read_timestamp_seconds",
		"When the agent last read the kernel-to-agent ring buffer (Unix time); absent "
		"until its probes are attached.",
		METRICS_GAUGE, NULL, 0);
	if (!build || !health->last_read ||
	    metrics_set(build, (const char *[]){ build_version(), build_commit() }, 1)) {
		free(health);
		return NULL;
	}
	return health;
}

void agent_health_free(struct agent_health *health)
{
	free(health);
}

void agent_health_polled(struct agent_health *health, uint64_t now_ns)
{
	atomic_store(&health->last_poll_ns, now_ns);
	if (now_ns - health->last_published_ns < 1000000000ULL)
		return;
	health->last_published_ns = now_ns;
	{
		struct timespec wall;

		clock_gettime(CLOCK_REALTIME, &wall);
		metrics_set(health->last_read, NULL, (double)wall.tv_sec + wall.tv_nsec / 1e9);
	}
}

bool agent_health_ready_at(struct agent_health *health, uint64_t now_ns, char *reason,
			   size_t reason_size)
{
	uint64_t last = atomic_load(&health->last_poll_ns);

	if (!last) {
		snprintf(reason, reason_size, "the probes are not loaded and attached yet");
		return false;
	}
	if (now_ns > last && now_ns - last > AGENT_READY_MAX_POLL_AGE_SECONDS * 1000000000ULL) {
		snprintf(reason, reason_size,
			 "the ring buffer was last read %.1f s ago (more than %d s): the agent's "
			 "loop is stuck",
			 (double)(now_ns - last) / 1e9, AGENT_READY_MAX_POLL_AGE_SECONDS);
		return false;
	}
	return true;
}

bool agent_health_ready(void *context, char *reason, size_t reason_size)
{
	return agent_health_ready_at(context, monotonic_ns(), reason, reason_size);
}
