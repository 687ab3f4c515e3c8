/* SPDX-License-Identifier: MIT */
/*
 * The agent's view of what it records, as Prometheus metrics: per process
 * (labelled with its pid, rank, pod, namespace and container) the NCCL calls
 * and bytes by function, and per communicator the last collective sequence
 * and when it was issued; for the agent, attached processes and losses.
 * Series of an ended process are kept for a retention time so a final
 * scrape still sees them, then removed: the label sets stay bounded.
 */
#ifndef TCHECK_AGENT_METRICS_H
#define TCHECK_AGENT_METRICS_H

#include <stdint.h>

#include "trace_records.h"

struct metrics_registry;
struct agent_metrics;

/* containers_dir: where pod names are looked up (NULL: the kubelet's). */
struct agent_metrics *agent_metrics_new(struct metrics_registry *registry,
					const char *containers_dir, double retention_seconds);
void agent_metrics_free(struct agent_metrics *metrics);

/* Takes a record of the recording: calls, processes, stats. */
void agent_metrics_observe(struct agent_metrics *metrics, const struct trace_record *record);

/* The detectors' totals so far (hangs, slowdowns). */
void agent_metrics_findings(struct agent_metrics *metrics, unsigned hangs, unsigned slowdowns);

/* Removes the series of processes that ended longer ago than the retention. */
void agent_metrics_expire(struct agent_metrics *metrics, uint64_t now_ns);

/* Processes attached now. */
unsigned agent_metrics_attached(const struct agent_metrics *metrics);

#endif /* TCHECK_AGENT_METRICS_H */
