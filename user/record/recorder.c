// SPDX-License-Identifier: MIT
/*
 * The record/attach/agent loop: drains the probes, follows the processes,
 * builds records from what the probes send, and hands each record to the
 * consumers the verb registered.
 */
#include "record/recorder.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "base/system_clock.h"
#include "network/work_requests.h"
#include "probe/library_discovery.h"
#include "probe/probe_session.h"
#include "probe/process_info.h"
#include "python/python_tracer.h"
#include "record/c10d_calls.h"
#include "record/call_builder.h"
#include "record/exec_hold.h"
#include "record/job_snapshot.h"
#include "record/recorder_state.h"

#define POLL_INTERVAL_MS 100
#define FLUSH_INTERVAL_NS 200000000ULL
#define STATUS_INTERVAL_NS 1000000000ULL
#define RESCAN_INTERVAL_NS 500000000ULL
/*
 * The calls the threads are inside, for the detectors: the task iterator
 * walks every thread of the machine, so it runs at most this often, not on
 * each wake-up of the loop (at 5,000 calls a second it was a third of the
 * agent's time). A hang is judged after a second of silence at the least.
 */
#define IN_FLIGHT_INTERVAL_NS 100000000ULL
#define DEFAULT_RING_BUFFER_BYTES (16u << 20)
/*
 * Python tracing sends a burst of records while ranks import torch (each code
 * object met for the first time): four torch 1.13 ranks importing at once on
 * 2 CPUs overflowed 16 MiB (about 75,000 records lost, Optimizer.step scopes
 * among them); 64 MiB lost none.
 */
#define DEFAULT_PYTHON_RING_BUFFER_BYTES (64u << 20)

static void request_stop(int signal_number)
{
	(void)signal_number;
	recorder_stop_requested = 1;
}

static int check_work_request_file(void *context, const char *host_path, uint32_t pid)
{
	return work_requests_check_file(context, host_path, pid);
}

static int finished(struct recorder *recorder, uint64_t started_ns)
{
	const struct recorder_options *options = recorder->options;

	if (recorder_stop_requested)
		return 1;
	if (options->duration_seconds > 0 &&
	    (double)(monotonic_ns() - started_ns) / 1e9 >= options->duration_seconds)
		return 1;
	if (options->until_stopped)
		return 0;
	if (options->command)
		return recorder->command.exited && recorder->processes.alive_count == 0;
	return recorder->processes.alive_count == 0;
}

/* A held exec's interpreter file: probed before the process runs it. */
static int follow_interpreter_file(void *context, const char *host_path)
{
	struct recorder *recorder = context;
	char error[512];
	int followed;

	if (!recorder->python)
		return 0;
	followed = python_tracer_follow_file(recorder->python, host_path, error, sizeof(error));
	if (followed < 0)
		log_debug("%s: %s", host_path, error);
	return followed;
}

static void serve_held_execs(void *context)
{
	struct recorder *recorder = context;

	exec_hold_serve(recorder->exec_hold, follow_interpreter_file, recorder);
}

static int set_up(struct recorder *recorder)
{
	const struct recorder_options *options = recorder->options;
	struct probe_session_config config = {
		.ring_buffer_bytes = options->ring_buffer_bytes ? options->ring_buffer_bytes
				     : options->python		? DEFAULT_PYTHON_RING_BUFFER_BYTES
								: DEFAULT_RING_BUFFER_BYTES,
		.python = options->python,
		.torch_ops =
			options->python && (options->torch_op_count > 0 || options->training_ops),
		.freeze_on_crash = options->freeze_on_crash,
	};
	char error[512];

	for (size_t i = 0; i < options->pid_count; i++) {
		if (process_check(options->pids[i], error, sizeof(error))) {
			log_error("%s", error);
			return -1;
		}
		if (process_is_kernel_thread(options->pids[i])) {
			log_error("pid %d is a kernel thread: it runs no program that could load "
				  "NCCL; give the pid of a training process",
				  (int)options->pids[i]);
			return -1;
		}
	}
	recorder->session = probe_session_new(&config, recorder_handle_probe_record, recorder,
					      error, sizeof(error));
	if (!recorder->session) {
		log_error("%s", error);
		return -1;
	}
	/*
	 * Forked before any thread or listening socket exists; only for the
	 * frame evaluator's probe. Without it a first run's unseen start is
	 * said, as it always was.
	 */
	if (options->python && !options->torch_events_only) {
		recorder->exec_hold = exec_hold_start(recorder->session, error, sizeof(error));
		if (!recorder->exec_hold)
			log_debug("%s", error);
	}
	if (options->observer && options->observer->attach_failed)
		probe_session_on_attach_failure(recorder->session, options->observer->attach_failed,
						options->observer->context);
	if (record_consumers_start(&recorder->consumers))
		return -1;
	/*
	 * A job already stuck makes no call to see: read where it stands before
	 * any probe is attached, into the trace and the detectors.
	 */
	if (options->pid_count)
		job_snapshot_log_arrival(options->pids, options->pid_count,
					 options->follow_children, recorder_emit_built, recorder);
	recorder->discovery =
		library_discovery_new(recorder->session, recorder_emit_library, recorder);
	recorder->work_requests = work_requests_new(recorder->session);
	if (recorder->discovery && recorder->work_requests)
		library_discovery_set_file_hook(recorder->discovery, check_work_request_file,
						recorder->work_requests);
	recorder->builder =
		call_builder_new(recorder_emit_built, recorder_resolve_communicator, recorder);
	recorder->c10d = c10d_calls_new(recorder_emit_built, recorder_emit_in_flight, recorder);
	if (options->python)
		recorder->python = python_tracer_new(recorder->session, options->python_prefixes,
						     recorder_emit_built, recorder);
	if (recorder->python) {
		python_tracer_set_step_marker(recorder->python, options->step_marker);
		python_tracer_set_torch_ops(recorder->python, options->torch_ops,
					    options->torch_op_count);
		python_tracer_watch_training(recorder->python, options->training_ops);
		python_tracer_set_torch_events_only(recorder->python, options->torch_events_only);
	}
	if (!recorder->discovery || !recorder->builder || !recorder->c10d ||
	    !recorder->work_requests || (options->python && !recorder->python)) {
		log_error("out of memory");
		return -1;
	}
	if (options->nccl_library &&
	    library_discovery_add_path(recorder->discovery, options->nccl_library, 0, error,
				       sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	if (options->command) {
		library_discovery_scan_command(recorder->discovery, options->command[0], error,
					       sizeof(error));
		if (started_command_start(&recorder->command, options->command))
			return -1;
		recorder_add_process(recorder, (uint32_t)recorder->command.pid, (uint32_t)getpid());
	}
	for (size_t i = 0; i < options->pid_count; i++) {
		recorder_add_process(recorder, (uint32_t)options->pids[i], 0);
		if (options->follow_children) {
			pid_t *children = NULL;
			size_t count = 0;

			if (process_children(options->pids[i], true, &children, &count, error,
					     sizeof(error)) == 0)
				for (size_t j = 0; j < count; j++)
					recorder_add_process(recorder, (uint32_t)children[j],
							     (uint32_t)options->pids[i]);
			free(children);
		}
	}
	if (!options->command && !options->until_stopped &&
	    !library_discovery_library_count(recorder->discovery))
		log_warning("no NCCL library is mapped yet; probes will be attached when one is "
			    "loaded (or name it with --nccl-lib)");
	return 0;
}

static void tear_down(struct recorder *recorder)
{
	exec_hold_stop(recorder->exec_hold);
	process_registry_destroy(&recorder->processes);
	string_interner_destroy(&recorder->notes);
	call_builder_free(recorder->builder);
	c10d_calls_free(recorder->c10d);
	python_tracer_free(recorder->python);
	library_discovery_free(recorder->discovery);
	work_requests_free(recorder->work_requests);
	probe_session_free(recorder->session);
	free(recorder->open_calls);
}

/* Once a second, to the consumers that show where the recording stands (attach's line). */
static void show_progress(struct recorder *recorder, uint64_t started_ns, uint64_t now_ns,
			  const uint64_t *counters)
{
	struct recording_progress progress = {
		.started_ns = started_ns,
		.now_ns = now_ns,
		.counters = counters,
		.processes = recorder->processes.alive_count,
		.communicators = (unsigned)call_builder_communicator_count(recorder->builder),
		.network = recorder->work_requests,
	};

	record_consumers_progress(&recorder->consumers, &progress);
}

static void run_loop(struct recorder *recorder)
{
	uint64_t started_ns = monotonic_ns(), last_flush = started_ns, last_status = started_ns;
	uint64_t last_rescan = started_ns, last_in_flight = 0, counters[TCHECK_COUNTER_COUNT];
	bool in_flight = record_consumers_want_in_flight(&recorder->consumers);
	bool progress = record_consumers_want_progress(&recorder->consumers);
	struct traced_process *process;

	while (!finished(recorder, started_ns)) {
		int poll_ms =
			record_consumers_tick_interval_ms(&recorder->consumers, POLL_INTERVAL_MS);
		bool read_failed = probe_session_poll(recorder->session, poll_ms) < 0;
		uint64_t now;

		recorder_scan_changed_libraries(recorder);
		serve_held_execs(recorder);
		if (read_failed && !recorder_stop_requested)
			log_warning("reading the ring buffer failed: %s", strerror(errno));
		started_command_reap(&recorder->command);
		now = monotonic_ns();
		if (c10d_calls_tick(recorder->c10d, now) == -ENOMEM)
			log_warning("out of memory for the c10d calls");
		if (in_flight && now - last_in_flight >= IN_FLIGHT_INTERVAL_NS) {
			recorder_read_open_calls(recorder, true);
			last_in_flight = now;
		}
		record_consumers_tick(&recorder->consumers, now, !read_failed);
		if (now - last_rescan >= RESCAN_INTERVAL_NS) {
			recorder_check_liveness(recorder);
			recorder_add_discovered(recorder);
			recorder_rescan_libraries(recorder);
			last_rescan = now;
		}
		if (now - last_flush >= FLUSH_INTERVAL_NS) {
			probe_session_counters(recorder->session, counters);
			recorder_write_activity(recorder, now);
			recorder_write_stats(recorder, counters);
			work_requests_sample(recorder->work_requests, now,
					     recorder_emit_network_sample, recorder);
			record_consumers_flush(&recorder->consumers);
			last_flush = now;
		}
		if (progress && now - last_status >= STATUS_INTERVAL_NS) {
			probe_session_counters(recorder->session, counters);
			show_progress(recorder, started_ns, now, counters);
			last_status = now;
		}
	}
	/* Everything the kernel already holds belongs in the trace, and what is still open. */
	probe_session_drain(recorder->session);
	recorder_read_open_calls(recorder, false);
	if (recorder->python)
		for (size_t i = 0; (process = process_registry_next(&recorder->processes, &i));)
			python_tracer_end_process(recorder->python, process->stages.python);
	if (c10d_calls_end(recorder->c10d, 0, monotonic_ns()) == -ENOMEM)
		log_warning("out of memory for the c10d calls");
	probe_session_counters(recorder->session, counters);
	recorder_write_stats(recorder, counters);
	work_requests_sample(recorder->work_requests, monotonic_ns(), recorder_emit_network_sample,
			     recorder);
	recording_report_losses(recorder->python, counters);
	recorder->counts.python_lost = recording_python_events_lost(recorder->python, counters);
	if (recorder->python)
		recorder->counts.python_unseen = recording_report_unseen(&recorder->processes);
	record_consumers_finish(&recorder->consumers);
}

int recorder_run(const struct recorder_options *options)
{
	struct recorder recorder = {
		.options = options,
		.consumers = { options->consumers, options->consumer_count },
	};
	struct sigaction action = { .sa_handler = request_stop };
	size_t libraries;
	int result = 0;

	process_registry_init(&recorder.processes);
	process_registry_set_release(&recorder.processes, recorder_release_stages, &recorder);
	string_interner_init(&recorder.notes);
	started_command_init(&recorder.command);
	sigaction(SIGINT, &action, NULL);
	sigaction(SIGTERM, &action, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (set_up(&recorder)) {
		/* Nothing was recorded: no trace file is left to look like one. */
		record_consumers_close(&recorder.consumers, false);
		/* Never leave a started command waiting at its gate. */
		started_command_abandon(&recorder.command);
		tear_down(&recorder);
		return 1;
	}
	if (options->command) {
		struct started_command_waiter waiter = {
			.fd = exec_hold_request_fd(recorder.exec_hold),
			.serve = serve_held_execs,
			.context = &recorder,
		};

		result = started_command_release(&recorder.command, options->command[0], &waiter);
		if (result) {
			/* The command never ran: no trace is left to look like a recording. */
			record_consumers_close(&recorder.consumers, false);
			tear_down(&recorder);
			return result;
		}
	}
	libraries = library_discovery_library_count(recorder.discovery);
	log_notice("tracing %u process%s, %zu NCCL librar%s probed%s",
		   recorder.processes.alive_count, recorder.processes.alive_count == 1 ? "" : "es",
		   libraries, libraries == 1 ? "y" : "ies",
		   options->command || options->duration_seconds > 0 ? "" : "; Ctrl-C to detach");
	run_loop(&recorder);
	if (options->command && !recorder.command.exited) {
		/* Stopped early by the user: the command keeps running, untouched. */
		log_notice("detached; %s (pid %d) keeps running", options->command[0],
			   recorder.command.pid);
	}
	result = options->command ? started_command_exit_status(&recorder.command) : 0;
	if (recorder.failed)
		result = 1;
	recorder.counts.processes_seen = recorder.processes.seen_count;
	recording_report_totals(&recorder.counts, options->output_path);
	if (recorder.python) {
		recording_report_python(recorder.python, &recorder.counts, options->step_marker);
		recording_report_hits_per_step(&recorder.counts);
	}
	if (record_consumers_close(&recorder.consumers, true))
		result = 1;
	tear_down(&recorder);
	return result;
}
