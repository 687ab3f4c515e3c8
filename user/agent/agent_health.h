/* SPDX-License-Identifier: MIT */
/*
 * The agent's own health, for its operators: tcheck_build_info (version and
 * commit), when it last read the ring buffer
 * (tcheck_ring_buffer_last_read_timestamp_seconds), and the readiness test
 * /readyz asks: the probes are loaded and attached (the recorder's loop has
 * begun) and the ring buffer was read within AGENT_READY_MAX_POLL_AGE_SECONDS.
 */
#ifndef TCHECK_AGENT_HEALTH_H
#define TCHECK_AGENT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longer than this since the last read of the ring buffer: not ready. */
#define AGENT_READY_MAX_POLL_AGE_SECONDS 5

struct metrics_registry;
struct agent_health;

struct agent_health *agent_health_new(struct metrics_registry *registry);
void agent_health_free(struct agent_health *health);

/* The recorder read the ring buffer at now_ns (monotonic); its probes are attached. */
void agent_health_polled(struct agent_health *health, uint64_t now_ns);

/*
 * Whether the agent is ready at now_ns (monotonic); when not, a sentence in
 * reason. Safe from any thread.
 */
bool agent_health_ready_at(struct agent_health *health, uint64_t now_ns, char *reason,
			   size_t reason_size);

/* The same, now: a metrics_readiness test (context: the agent_health). */
bool agent_health_ready(void *context, char *reason, size_t reason_size);

#endif /* TCHECK_AGENT_HEALTH_H */
