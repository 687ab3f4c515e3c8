/* SPDX-License-Identifier: MIT */
/*
 * The series the agent exposes (tcheck_*), declared in a registry in the
 * order the exposition lists them: names, help texts and label names.
 * agent_metrics fills them from the recording's records.
 */
#ifndef TCHECK_AGENT_METRIC_FAMILIES_H
#define TCHECK_AGENT_METRIC_FAMILIES_H

#include <stdbool.h>

#include "agent/metrics.h"

/* The labels every per-process series starts with, in this order. */
enum process_label { LABEL_PID, LABEL_RANK, LABEL_POD, LABEL_NAMESPACE, LABEL_CONTAINER };
#define PROCESS_LABELS 5

struct agent_metric_families {
	struct metrics_family *calls, *bytes, *sequence, *progress, *attached_gauge, *drops,
		*process_drops, *python_lost, *in_flight, *bytes_in_flight, *findings, *crashes,
		*violations, *steps, *expected_step, *attach_failures, *in_flight_sequence,
		*in_flight_entry, *probe_hits, *training_step, *pauses, *pause_seconds;
};

/* Declares every family in 'registry'; false when one could not be (out of memory). */
bool agent_metric_families_declare(struct agent_metric_families *families,
				   struct metrics_registry *registry);

#endif /* TCHECK_AGENT_METRIC_FAMILIES_H */
