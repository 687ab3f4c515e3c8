/* SPDX-License-Identifier: MIT */
/*
 * Runs the hang and slowdown detectors on a stream of trace records, live
 * (the recorder hands it every record and a tick) or offline (`check`),
 * and writes what they find as lines for a person and JSON Lines events.
 */
#ifndef TCHECK_JOB_DIAGNOSIS_H
#define TCHECK_JOB_DIAGNOSIS_H

#include <stdint.h>
#include <stdio.h>

#include "diagnose/progress_model.h"
#include "model/trace_records.h"

struct job_diagnosis;
struct pause_tracker;

/*
 * 'text' gets one line per finding (NULL: none), 'events' one JSON object
 * per finding (NULL: none). NULL when out of memory.
 */
struct job_diagnosis *job_diagnosis_new(const struct progress_options *options, FILE *text,
					FILE *events);

/*
 * What CLOCK_REALTIME minus the records' clock is, for the wall-clock time
 * each finding carries ("wall_clock" in JSON, the start of its line): by
 * default the live offset from CLOCK_MONOTONIC; a recorded trace's comes
 * from its clock anchor, and traces already put on CLOCK_REALTIME take 0.
 */
void job_diagnosis_set_wall_clock(struct job_diagnosis *diagnosis, int64_t offset_ns);

/* One record; 'time_shift_ns' is added to its times (traces of several hosts on one clock). */
void job_diagnosis_record(struct job_diagnosis *diagnosis, const struct trace_record *record,
			  int64_t time_shift_ns);

/* A process's work-request counters (record kind 7), for telling network hangs from device ones. */
void job_diagnosis_network_sample(struct job_diagnosis *diagnosis,
				  const struct trace_network_sample *sample, int64_t time_shift_ns);

/* Time passes with no record: hangs show up here. 'now_ns' on the records' clock. */
void job_diagnosis_tick(struct job_diagnosis *diagnosis, uint64_t now_ns);

/*
 * tcheck-bpf's own tick (its loop live, with its CPU time; a statistics
 * record in a trace, cpu_ns 0): no silence is counted across a gap of more
 * than WATCHED_TIME_GAP_NS before it (watched_time.h), and a gap in which
 * tcheck-bpf did not run is said as a warning. Then a tick.
 */
void job_diagnosis_watch(struct job_diagnosis *diagnosis, uint64_t now_ns, uint64_t cpu_ns);

/*
 * How often a live loop should tick, in ms: a tenth of the job's step
 * between 20 and 100 ms, so a hang is reported within a tenth of a step (20 ms
 * at least) of the moment the silence passed its limit. 100 while the step is
 * unknown.
 */
int job_diagnosis_tick_interval_ms(const struct job_diagnosis *diagnosis);

/*
 * The stream ended. Findings are published as they are found: nothing is
 * held back; what is said is how long tcheck-bpf did not watch, if at all.
 */
void job_diagnosis_finish(struct job_diagnosis *diagnosis);

/*
 * Tells 'on_step' of every step a communicator completes, after the model
 * took the call that completed it (the agent's step-time metrics).
 */
typedef void (*job_step_fn)(void *context, const struct progress_comm *comm, int64_t step);
void job_diagnosis_on_step(struct job_diagnosis *diagnosis, job_step_fn on_step, void *context);

/* Tells 'on_pause' of every pause reported (the agent's pause counter). */
struct pause_finding;
typedef void (*job_pause_fn)(void *context, const struct pause_finding *pause);
void job_diagnosis_on_pause(struct job_diagnosis *diagnosis, job_pause_fn on_pause, void *context);

/* What each process did since its last call; a held stretch is a pause in progress. */
const struct pause_tracker *job_diagnosis_pauses(const struct job_diagnosis *diagnosis);

/* The progress the detectors judge from: who is where, on each communicator (for reading). */
const struct progress_model *job_diagnosis_model(const struct job_diagnosis *diagnosis);

unsigned job_diagnosis_hang_count(const struct job_diagnosis *diagnosis);
unsigned job_diagnosis_slowdown_count(const struct job_diagnosis *diagnosis);
/* Collectives whose ranks disagreed on the function or the element count. */
unsigned job_diagnosis_mismatch_count(const struct job_diagnosis *diagnosis);
/* Ranks that lagged at work of their own (a checkpoint, an evaluation): no hang, no slowdown. */
unsigned job_diagnosis_pause_count(const struct job_diagnosis *diagnosis);
/* Traced processes that died of a signal or exited with a non-zero status. */
unsigned job_diagnosis_crash_count(const struct job_diagnosis *diagnosis);
/* Records judged so far: calls (NCCL and c10d), processes, Python events. */
uint64_t job_diagnosis_judged_count(const struct job_diagnosis *diagnosis);

void job_diagnosis_free(struct job_diagnosis *diagnosis);

#endif /* TCHECK_JOB_DIAGNOSIS_H */
