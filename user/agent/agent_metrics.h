/* SPDX-License-Identifier: MIT */
/*
 * The agent's view of what it records, as Prometheus metrics: per process
 * (labelled with its pid, rank, pod, namespace and container) the NCCL calls
 * and bytes by function, per communicator the last collective sequence
 * and when it was issued, the step time, the rules violated, and pauses
 * (reported, and in progress); for the agent, attached processes, losses
 * and probe attachments refused.
 * Series of an ended process are kept for a retention time so a final
 * scrape still sees them, then removed: the label sets stay bounded.
 */
#ifndef TCHECK_AGENT_METRICS_H
#define TCHECK_AGENT_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "model/trace_records.h"

/*
 * Communicators a process has series of its own for (per-communicator
 * series: 25 each); calls on the others still count in the per-function
 * series.
 */
#define AGENT_METRICS_MAX_COMMS 32

struct metrics_registry;
struct agent_metrics;
struct progress_model;
struct pause_finding;
struct pause_tracker;

/* containers_dir: where pod names are looked up (NULL: the kubelet's). */
struct agent_metrics *agent_metrics_new(struct metrics_registry *registry,
					const char *containers_dir, double retention_seconds);
void agent_metrics_free(struct agent_metrics *metrics);

/* Takes a record of the recording: calls, processes, stats. */
void agent_metrics_observe(struct agent_metrics *metrics, const struct trace_record *record);

/* The detectors' totals so far (hangs, slowdowns). */
void agent_metrics_findings(struct agent_metrics *metrics, unsigned hangs, unsigned slowdowns,
			    unsigned mismatches, unsigned crashes);

/*
 * A violation of rule 'rule' (its position in the rules file) by process
 * pid; relation and function are the rule's, for reading.
 */
void agent_metrics_violation(struct agent_metrics *metrics, uint32_t pid, const char *rule,
			     const char *relation, const char *function);

/* One step of process pid on a communicator, and the step time expected there (0: not yet). */
void agent_metrics_step(struct agent_metrics *metrics, uint32_t pid, uint64_t comm_id,
			double seconds, double expected_seconds);

/*
 * The calls each rank is inside now, from the detectors' progress model:
 * tcheck_collective_in_flight_* set for a rank seen inside a call, removed
 * once it returned. Called on each refresh.
 */
void agent_metrics_in_flight(struct agent_metrics *metrics, const struct progress_model *model);

/* A pause reported (job_diagnosis_on_pause): tcheck_pauses_total by what the rank was doing. */
void agent_metrics_pause(struct agent_metrics *metrics, const struct pause_finding *pause);

/*
 * The pauses in progress, from the pause tracker ('now_ns' on its clock):
 * tcheck_pause_in_progress_seconds set for a rank whose stretch the hang
 * detector holds back as a pause, removed once it came back, ended, or
 * was reported as a hang. Called on each refresh.
 */
void agent_metrics_pauses(struct agent_metrics *metrics, const struct pause_tracker *pauses,
			  uint64_t now_ns);

/* A probe attachment the kernel refused, on the library at path. */
void agent_metrics_attach_failure(struct agent_metrics *metrics, const char *path);

/* The library label of a path: its file name up to ".so" ("libnccl.so" for libnccl.so.2.21). */
void agent_metrics_library_name(const char *path, char *name, size_t size);

/* Removes the series of processes that ended longer ago than the retention. */
void agent_metrics_expire(struct agent_metrics *metrics, uint64_t now_ns);

/* Processes attached now. */
unsigned agent_metrics_attached(const struct agent_metrics *metrics);

#endif /* TCHECK_AGENT_METRICS_H */
