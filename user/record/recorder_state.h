/* SPDX-License-Identifier: MIT */
/*
 * The recorder's own state, shared by the files of the recorder only
 * (recorder.c runs the loop; recorder_output.c hands records to the
 * consumers; recorder_processes.c follows the traced processes;
 * recorder_probe_records.c turns what the probes send into records).
 * Each file uses the ones listed before it, never one after.
 */
#ifndef TCHECK_RECORDER_STATE_H
#define TCHECK_RECORDER_STATE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/string_interner.h"
#include "model/trace_records.h"
#include "record/process_registry.h"
#include "record/record_consumers.h"
#include "record/recorder.h"
#include "record/recording_summary.h"
#include "record/started_command.h"
#include "tcheck/probe_abi.h"

struct recorder {
	const struct recorder_options *options;
	struct probe_session *session;
	struct library_discovery *discovery;
	struct call_builder *builder;
	struct c10d_calls *c10d;      /* PyTorch's own collectives, as calls */
	struct python_tracer *python; /* NULL unless --python */
	struct exec_hold *exec_hold;  /* first interpreter execs held; NULL without --python */
	struct work_requests *work_requests;
	struct record_consumers consumers;
	struct process_registry processes;
	struct string_interner notes; /* communicator notes, kept to the end */
	struct started_command command;
	int failed;
	struct recording_counts counts;
	/* Reading the calls in flight for the detectors only: they are not written. */
	int reading_calls_in_flight;
	struct tcheck_call_record *open_calls; /* OPEN_CALLS_MAX, read from the map, then handed */
	size_t open_call_count;
	bool libraries_changed; /* some process's libraries_changed is set */
};

/* Set by SIGINT/SIGTERM, or when a consumer cannot go on: the loop ends at its next turn. */
extern volatile sig_atomic_t recorder_stop_requested;

/* recorder_output.c: records handed to every consumer, counted for the closing lines. */
int recorder_write(struct recorder *recorder, const struct trace_record *record);
int recorder_emit_in_flight(void *context, const struct trace_record *record);
int recorder_emit_built(void *context, const struct trace_record *record);
int recorder_emit_library(void *context, const struct trace_library *library);
void recorder_emit_network_sample(void *context, const struct trace_network_sample *sample);
void recorder_write_process(struct recorder *recorder, const struct traced_process *process);
void recorder_write_activity(struct recorder *recorder, uint64_t now_ns);
void recorder_write_stats(struct recorder *recorder, const uint64_t *counters);

/* recorder_processes.c: the traced processes, as they come, change and end. */
/* The registry's release hook: each stage's slot of a process handed back to the stage. */
void recorder_release_stages(void *context, struct traced_process *process);
/*
 * The process's image ends (an exec, or its pid was reused): each stage
 * records what the image left open, then its slots are handed back.
 */
void recorder_end_image(struct recorder *recorder, struct traced_process *process, uint64_t end_ns);
void recorder_refresh_process(struct recorder *recorder, struct traced_process *process);
void recorder_take_process_group_rank(struct recorder *recorder, struct traced_process *process,
				      const struct tcheck_process_group_record *record);
void recorder_follow_python(struct recorder *recorder, struct traced_process *process);
/*
 * A fork or exec the probes reported at start_ns (new_image: an exec, whose
 * Python is followed anew; python_from_start: the probes followed its
 * Python from there themselves): a window its Python ran unseen is noted.
 */
void recorder_image_started(struct recorder *recorder, struct traced_process *process,
			    uint64_t start_ns, bool new_image, bool python_from_start);
struct traced_process *recorder_add_process(struct recorder *recorder, uint32_t pid,
					    uint32_t parent_pid);
void recorder_end_process(struct recorder *recorder, uint32_t pid, int exit_code);
struct traced_process *recorder_adopt_process(struct recorder *recorder, uint32_t pid);
void recorder_check_liveness(struct recorder *recorder);
/*
 * Looks for NCCL and torch in the libraries pid maps now, and follows its
 * Python where process (its entry, or NULL) is known.
 */
void recorder_scan_libraries(struct recorder *recorder, uint32_t pid,
			     struct traced_process *process);
void recorder_rescan_libraries(struct recorder *recorder);
/* Scans the processes that mapped libraries during the batch just read, once each. */
void recorder_scan_changed_libraries(struct recorder *recorder);
void recorder_add_discovered(struct recorder *recorder);

/* recorder_probe_records.c: what the probes send, turned into records. */
void recorder_resolve_communicator(void *context, uint32_t pid, uint64_t handle,
				   struct trace_communicator *communicator);
int recorder_handle_probe_record(void *context, const void *data, size_t size);
void recorder_read_open_calls(struct recorder *recorder, bool in_flight);

#endif /* TCHECK_RECORDER_STATE_H */
