// SPDX-License-Identifier: MIT
/*
 * `tcheck-bpf agent`: the node agent. Finds training processes on the node
 * as they start, attaches to them, detaches when they end, and serves what
 * it sees as Prometheus metrics; process events, hangs, slowdowns, crashes and rule
 * violations go to a JSON Lines stream.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_health.h"
#include "agent/agent_metrics.h"
#include "agent/agent_rules.h"
#include "agent/metrics.h"
#include "agent/metrics_http.h"
#include "base/log.h"
#include "base/output_targets.h"
#include "base/small_file.h"
#include "base/number_parse.h"
#include "base/system_clock.h"
#include "base/u64_map.h"
#include "checks/rules_selection.h"
#include "cli/commands.h"
#include "diagnose/diagnosis_consumer.h"
#include "diagnose/flight_recorder.h"
#include "diagnose/job_diagnosis.h"
#include "diagnose/step_time.h"
#include "export/export_jsonl.h"
#include "model/record_consumer.h"
#include "probe/probe_session.h"
#include "probe/process_finder.h"
#include "probe/process_info.h"
#include "record/job_snapshot.h"
#include "record/recorder.h"

/* How often /proc is searched for new training processes. */
#define DISCOVERY_INTERVAL_NS 2000000000ULL
#define DEFAULT_RETENTION_SECONDS 300.0
/* The config file's size limit: a few dozen settings fit many times over. */
#define CONFIG_MAX_BYTES (64 * 1024)

static const char agent_help[] =
	"Usage: tcheck-bpf agent [--config FILE] [OPTIONS]\n"
	"\n"
	"Runs on a node (a Kubernetes DaemonSet, or a sidecar sharing the training\n"
	"pod's PID namespace): finds training processes as they start (those that\n"
	"map libnccl or libtorch_cuda), attaches to them, detaches when they end,\n"
	"and serves Prometheus metrics over HTTP. Needs CAP_BPF, CAP_PERFMON and\n"
	"CAP_SYS_PTRACE (or root). Runs until SIGINT or SIGTERM.\n"
	"\n"
	"Options (each also a 'key = value' line of the config file, without --):\n"
	"      --config FILE         read options from FILE first (a regular file, at most\n"
	"                            64 KiB)\n"
	"      --listen HOST:PORT    serve /metrics, /healthz and /readyz there (default\n"
	"                            " METRICS_DEFAULT_LISTEN
	"; 0.0.0.0:9477 to let Prometheus reach it)\n"
	"      --events FILE         append process events, hangs, slowdowns, crashes and rule\n"
	"                            violations as JSON Lines (- for stdout)\n"
	"      --rules FILE          check every process's calls against this rules file (and\n"
	"                            trace the Python functions and torch operators it names)\n"
	"                            (made by tcheck-bpf infer)\n"
	"      --select TEXT         only processes whose command line, or an ancestor's\n"
	"                            (mp.spawn workers: the script's), contains TEXT\n"
	"      --ranks FIRST-LAST    only processes whose RANK lies in this range (one\n"
	"                            agent per group of ranks sharing a host); one with\n"
	"                            no RANK (a spawn worker) is placed by the rank its\n"
	"                            communicator or c10d group holds, once readable\n"
	"      --torch               also processes running torch without NCCL (CPU): their\n"
	"                            c10d (gloo) collectives and steps, through torch's\n"
	"                            probes; without it each is named on the log, once,\n"
	"                            as not followed\n"
	"      --python              also trace their Python calls (implies --torch)\n"
	"      --retention SECONDS   keep an ended process's series this long (default 300)\n"
	"      --containers-dir DIR  the kubelet's container log links (default\n"
	"                            /var/log/containers): pod and container names\n"
	"      --ring-buffer-mb N    kernel-to-agent buffer size (default 16, 64 with\n"
	"                            --python)\n"
	"      --flight-calls N      last calls a crash report gives per process (default\n"
	"                            16, at most 256)\n"
	"  -d, --duration SECONDS    stop after this long\n"
	"  -h, --help                this text\n"
	"\n"
	"Examples:\n"
	"  sudo tcheck-bpf agent --listen 0.0.0.0:9477 --events /var/log/tcheck-bpf/events.jsonl\n"
	"  sudo tcheck-bpf agent --config /etc/tcheck-bpf/agent.conf\n"
	"  sudo tcheck-bpf agent --rules /etc/tcheck-bpf/rules.json --events -\n"
	"  curl -s localhost:9477/metrics | grep tcheck_collective_sequence\n";

struct agent_settings {
	char *listen;
	char *events_path;
	char *select;
	char *containers_dir;
	char *rules_path;
	const char *config_path;   /* --config FILE, as the command line gives it; NULL: none */
	int first_rank, last_rank; /* last_rank -1: every process */
	bool torch;
	bool python;
	double retention_seconds;
	double duration_seconds;
	size_t ring_buffer_bytes; /* --ring-buffer-mb, rounded; 0: the default */
	double flight_calls;	  /* --flight-calls; 0: the default */
};

struct agent {
	struct agent_settings *settings;
	struct agent_metrics *metrics;
	FILE *events;
	struct job_diagnosis *diagnosis; /* hang and slowdown detectors */
	struct agent_rules *rules;	 /* NULL without --rules */
	struct agent_health *health;	 /* build, last read of the ring buffer, readiness */
	struct u64_map skipped_said;	 /* pids said to be left unfollowed */
	struct u64_map placed;		 /* pid with no RANK -> 1 + the rank read from it */
	uint64_t last_discovery_ns;
};

enum agent_option {
	OPTION_CONFIG = 256,
	OPTION_LISTEN,
	OPTION_EVENTS,
	OPTION_SELECT,
	OPTION_TORCH,
	OPTION_PYTHON,
	OPTION_RETENTION,
	OPTION_CONTAINERS_DIR,
	OPTION_RING_BUFFER_MB,
	OPTION_RANKS,
	OPTION_RULES,
	OPTION_FLIGHT_CALLS,
	OPTION_DURATION = 'd',
	OPTION_HELP = 'h',
};

static const struct option long_options[] = {
	{ "config", required_argument, NULL, OPTION_CONFIG },
	{ "listen", required_argument, NULL, OPTION_LISTEN },
	{ "events", required_argument, NULL, OPTION_EVENTS },
	{ "select", required_argument, NULL, OPTION_SELECT },
	{ "torch", no_argument, NULL, OPTION_TORCH },
	{ "python", no_argument, NULL, OPTION_PYTHON },
	{ "retention", required_argument, NULL, OPTION_RETENTION },
	{ "containers-dir", required_argument, NULL, OPTION_CONTAINERS_DIR },
	{ "ring-buffer-mb", required_argument, NULL, OPTION_RING_BUFFER_MB },
	{ "ranks", required_argument, NULL, OPTION_RANKS },
	{ "rules", required_argument, NULL, OPTION_RULES },
	{ "flight-calls", required_argument, NULL, OPTION_FLIGHT_CALLS },
	{ "duration", required_argument, NULL, OPTION_DURATION },
	{ "help", no_argument, NULL, OPTION_HELP },
	{ NULL, 0, NULL, 0 },
};

static int replace_text(char **slot, const char *value)
{
	char *copy = value ? strdup(value) : NULL;

	if (!copy) {
		log_error("out of memory");
		return -1;
	}
	free(*slot);
	*slot = copy;
	return 0;
}

/* "FIRST-LAST" or a single rank. */
static int parse_ranks(struct agent_settings *settings, const char *value)
{
	const struct number_bounds bounds = { .maximum = 1000000, .whole = true };
	const char *dash = value ? strchr(value, '-') : NULL;
	char first_text[32];
	double first, last;
	bool valid;

	snprintf(first_text, sizeof(first_text), "%.*s",
		 dash ? (int)(dash - value) : (int)sizeof(first_text), value ? value : "");
	valid = !number_parse("ranks", first_text, &bounds, &first, NULL, 0);
	last = first;
	if (valid && dash)
		valid = !number_parse("ranks", dash + 1, &bounds, &last, NULL, 0);
	if (!valid || last < first) {
		log_error("--ranks needs FIRST-LAST (e.g. 0-7) or one rank, not '%s'", value);
		return -1;
	}
	settings->first_rank = (int)first;
	settings->last_rank = (int)last;
	return 0;
}

/* A flag's value: none, true, yes or 1 sets it; false, no or 0 clears it. */
static int flag_value(const char *name, const char *value, bool *flag)
{
	if (!value || !*value || strcmp(value, "true") == 0 || strcmp(value, "yes") == 0 ||
	    strcmp(value, "1") == 0) {
		*flag = true;
		return 0;
	}
	if (strcmp(value, "false") == 0 || strcmp(value, "no") == 0 || strcmp(value, "0") == 0) {
		*flag = false;
		return 0;
	}
	log_error("%s is yes or no (true/false, 1/0), not '%s'", name, value);
	return -1;
}

/* One option, from the command line or a config line; value NULL for a flag. */
static int apply_option(struct agent_settings *settings, int option, const char *name,
			const char *value)
{
	if (!value && option != OPTION_TORCH && option != OPTION_PYTHON) {
		log_error("%s needs a value", name);
		return -1;
	}
	switch (option) {
	case OPTION_LISTEN:
		return replace_text(&settings->listen, value);
	case OPTION_EVENTS:
		return replace_text(&settings->events_path, value);
	case OPTION_SELECT:
		return replace_text(&settings->select, value);
	case OPTION_CONTAINERS_DIR:
		return replace_text(&settings->containers_dir, value);
	case OPTION_RULES:
		return replace_text(&settings->rules_path, value);
	case OPTION_RANKS:
		return parse_ranks(settings, value);
	case OPTION_TORCH:
		return flag_value("torch", value, &settings->torch);
	case OPTION_PYTHON:
		return flag_value("python", value, &settings->python);
	case OPTION_RETENTION:
		return parse_seconds("--retention", value, false, &settings->retention_seconds);
	case OPTION_RING_BUFFER_MB:
		return parse_ring_buffer_mb(value, &settings->ring_buffer_bytes);
	case OPTION_DURATION:
		return parse_seconds("--duration", value, false, &settings->duration_seconds);
	case OPTION_FLIGHT_CALLS:
		return parse_whole_number("--flight-calls", value, 1, FLIGHT_CALLS_MAX,
					  &settings->flight_calls);
	}
	log_error("unknown option %s", name);
	return -1;
}

static char *trimmed(char *text)
{
	char *end;

	while (*text == ' ' || *text == '\t')
		text++;
	end = text + strlen(text);
	while (end > text &&
	       (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return text;
}

/* The first byte of a line that no text file holds (NUL, escape...), or -1. */
static int control_byte(const char *line, size_t length)
{
	for (size_t i = 0; i < length; i++) {
		unsigned char byte = (unsigned char)line[i];

		if ((byte < 0x20 && byte != '\t' && byte != '\n' && byte != '\r') || byte == 0x7f)
			return byte;
	}
	return -1;
}

/* One "key = value" line of the config file (number: its line number), NUL-ended. */
static int apply_config_line(struct agent_settings *settings, const char *path, int number,
			     char *line, size_t length)
{
	char *text, *equals, *key, *value = NULL;
	const struct option *option;
	int result;

	if (control_byte(line, length) >= 0) {
		log_error("%s:%d: the line holds the control byte 0x%02x: is this a text file?",
			  path, number, control_byte(line, length));
		return -1;
	}
	text = trimmed(line);
	if (!*text || *text == '#')
		return 0;
	equals = strchr(text, '=');
	if (equals) {
		*equals = '\0';
		value = trimmed(equals + 1);
	}
	key = trimmed(text);
	for (option = long_options; option->name; option++)
		if (strcmp(option->name, key) == 0)
			break;
	if (!option->name || option->val == OPTION_CONFIG || option->val == OPTION_HELP ||
	    (option->has_arg == required_argument && (!value || !*value))) {
		log_error("%s:%d: '%s' is not a setting of tcheck-bpf agent (or lacks a value); "
			  "see tcheck-bpf agent --help",
			  path, number, key);
		return -1;
	}
	result = apply_option(settings, option->val, key, value);
	if (result)
		log_error("in %s, line %d", path, number);
	return result;
}

/*
 * "key = value" lines, '#' comments; keys are the long options without --.
 * A regular file of at most CONFIG_MAX_BYTES, read whole first.
 */
static int read_config(struct agent_settings *settings, const char *path)
{
	char error[512], *contents = NULL, *line;
	size_t length = 0;
	int number = 0, result = 0;

	if (small_file_read(path, "the config file", CONFIG_MAX_BYTES, &contents, &length, error,
			    sizeof(error))) {
		log_error("%s", error);
		return -1;
	}
	for (line = contents; !result && line < contents + length;) {
		char *newline = memchr(line, '\n', (size_t)(contents + length - line));
		size_t line_length =
			newline ? (size_t)(newline - line) : (size_t)(contents + length - line);

		line[line_length] = '\0';
		number++;
		result = apply_config_line(settings, path, number, line, line_length);
		line += line_length + 1;
	}
	free(contents);
	return result;
}

static int parse_arguments(struct agent_settings *settings, int argc, char **argv)
{
	int option;

	/*
	 * The config file first, so the command line overrides it: found by
	 * getopt too, so every spelling it takes (--conf FILE) is read.
	 */
	optind = 0;
	opterr = 0;
	while ((option = getopt_long(argc, argv, "d:h", long_options, NULL)) != -1)
		if (option == OPTION_CONFIG) {
			settings->config_path = optarg;
			if (read_config(settings, optarg)) {
				opterr = 1;
				return -1;
			}
		}
	opterr = 1;
	optind = 0;
	while ((option = getopt_long(argc, argv, "d:h", long_options, NULL)) != -1) {
		if (option == OPTION_HELP) {
			fputs(agent_help, stdout);
			return 1;
		}
		if (option == OPTION_CONFIG)
			continue;
		if (option == '?' || apply_option(settings, option, argv[optind - 1], optarg)) {
			fprintf(stderr, "Try 'tcheck-bpf agent --help'.\n");
			return -1;
		}
	}
	if (optind < argc) {
		log_error("agent takes no arguments ('%s'); see tcheck-bpf agent --help",
			  argv[optind]);
		return -1;
	}
	return 0;
}

/* A process event on the JSON Lines stream. */
static void write_event(struct agent *agent, const struct trace_process *process)
{
	json_t *object;

	if (!agent->events)
		return;
	object = json_pack("{s:s, s:s, s:I, s:o, s:s}", "kind", "process", "event",
			   process->end_ns ? "ended" : "attached", "pid", (json_int_t)process->pid,
			   "rank", export_json_known_or_null(process->rank), "command",
			   process->command ? process->command : "");
	if (object) {
		export_json_write(agent->events, "", object, JSON_COMPACT, "\n");
		fflush(agent->events);
		json_decref(object);
	}
}

static int observe_record(void *context, const struct trace_record *record)
{
	struct agent *agent = context;

	if (record->kind == TRACE_RECORD_PROCESS &&
	    (record->process.end_ns || record->process.start_ns))
		write_event(agent, &record->process);
	agent_metrics_observe(agent->metrics, record);
	if (agent->rules)
		agent_rules_observe(agent->rules, record);
	return 0;
}

/* Each rank's time for a step a communicator completed, into the step-time histogram. */
static void observe_step(void *context, const struct progress_comm *comm, int64_t step)
{
	struct agent *agent = context;
	struct rank_step_time times[PROGRESS_MAX_RANKS];
	size_t count = step_time_of_ranks(comm, step, times, PROGRESS_MAX_RANKS);

	for (size_t i = 0; i < count; i++)
		agent_metrics_step(agent->metrics, times[i].pid, comm->comm_id, times[i].seconds,
				   comm->expected_step_ns / 1e9);
}

static void observe_pause(void *context, const struct pause_finding *pause)
{
	struct agent *agent = context;

	agent_metrics_pause(agent->metrics, pause);
}

static void attach_failed(void *context, const char *path)
{
	struct agent *agent = context;

	agent_metrics_attach_failure(agent->metrics, path);
}

static void polled(void *context, uint64_t now_ns, bool read_ok)
{
	struct agent *agent = context;

	if (read_ok)
		agent_health_polled(agent->health, now_ns);
}

/*
 * A training process left alone, said once per process: a torch process
 * without NCCL without --torch, or one --ranks cannot place.
 */
static void process_skipped(void *context, pid_t pid, enum process_skip_reason reason)
{
	struct agent *agent = context;
	struct process_info info;
	char error[256];

	if (u64_map_get(&agent->skipped_said, (uint64_t)pid))
		return;
	if (u64_map_put(&agent->skipped_said, (uint64_t)pid, agent))
		return;
	if (process_info_read(pid, &info, error, sizeof(error)) != 0)
		return;
	if (reason == PROCESS_SKIP_CPU_JOB)
		log_warning("process %d (%s) runs torch without NCCL (a CPU job): not followed; "
			    "start the agent with --torch to follow it",
			    (int)pid, info.command ? info.command : "?");
	else
		log_warning("process %d (%s) has no RANK in its environment (a launcher, or a "
			    "torch.multiprocessing.spawn worker) and no communicator or c10d "
			    "process group gives one yet, so --ranks %d-%d cannot place it: not "
			    "followed until one does; an agent without --ranks follows every "
			    "process",
			    (int)pid, info.command ? info.command : "?",
			    agent->settings->first_rank, agent->settings->last_rank);
	process_info_free(&info);
}

/* In 'placed': a process whose memory could not be read in time (the snapshot's stall). */
#define UNREADABLE_RANK UINTPTR_MAX

/*
 * The rank of a process with no RANK, as the arrival snapshot reads it (its
 * widest communicator, or its widest c10d group), kept once read. A process
 * whose read stalled is not read again: each try would hold the agent for
 * the snapshot's deadline.
 */
static int rank_of_unranked(void *context, pid_t pid)
{
	struct agent *agent = context;
	uintptr_t placed = (uintptr_t)u64_map_get(&agent->placed, (uint64_t)pid);
	struct job_snapshot snapshot;
	char error[512];
	bool stalled;
	int rank;

	if (placed)
		return placed == UNREADABLE_RANK ? -1 : (int)(placed - 1);
	if (job_snapshot_read(&pid, 1, &snapshot, error, sizeof(error)) != 0)
		return -1;
	rank = snapshot.count == 1 ? snapshot.processes[0].rank : -1;
	stalled = snapshot.count == 1 && snapshot.processes[0].unread_note[0];
	if (stalled) {
		log_warning("%s: --ranks cannot place it, and it is not read again",
			    snapshot.processes[0].unread_note);
		(void)u64_map_put(&agent->placed, (uint64_t)pid, (void *)UNREADABLE_RANK);
	}
	job_snapshot_free(&snapshot);
	if (rank < 0 || u64_map_put(&agent->placed, (uint64_t)pid, (void *)(uintptr_t)(rank + 1)))
		return -1;
	log_notice("process %d has no RANK in its environment; its memory says it is rank %d: %s "
		   "by --ranks %d-%d",
		   (int)pid, rank,
		   rank >= agent->settings->first_rank && rank <= agent->settings->last_rank
			   ? "followed"
			   : "left out",
		   agent->settings->first_rank, agent->settings->last_rank);
	return rank;
}

/* Forgets the pids of a map whose processes ended: a new process with a reused pid is new. */
static void forget_ended(struct u64_map *pids)
{
	uint64_t pid;
	void *value;

	for (size_t i = 0; u64_map_next(pids, &i, &pid, &value);) {
		char path[32];

		snprintf(path, sizeof(path), "/proc/%llu", (unsigned long long)pid);
		if (access(path, F_OK) != 0) {
			u64_map_remove(pids, pid);
			i = 0;
		}
	}
}

static size_t discover(void *context, pid_t *pids, size_t capacity)
{
	struct agent *agent = context;
	struct process_finder_options options = {
		.torch_without_nccl = agent->settings->torch || agent->settings->python,
		.command_contains = agent->settings->select,
		.first_rank = agent->settings->first_rank,
		.last_rank = agent->settings->last_rank,
		.skipped = process_skipped,
		.rank_of_unranked = rank_of_unranked,
		.context = agent,
	};
	uint64_t now = monotonic_ns();

	if (agent->last_discovery_ns && now - agent->last_discovery_ns < DISCOVERY_INTERVAL_NS)
		return 0;
	agent->last_discovery_ns = now;
	forget_ended(&agent->skipped_said);
	forget_ended(&agent->placed);
	agent_metrics_expire(agent->metrics, now);
	agent_metrics_findings(agent->metrics, job_diagnosis_hang_count(agent->diagnosis),
			       job_diagnosis_slowdown_count(agent->diagnosis),
			       job_diagnosis_mismatch_count(agent->diagnosis),
			       job_diagnosis_crash_count(agent->diagnosis));
	agent_metrics_in_flight(agent->metrics, job_diagnosis_model(agent->diagnosis));
	agent_metrics_pauses(agent->metrics, job_diagnosis_pauses(agent->diagnosis), now);
	return process_finder_scan(&options, pids, capacity);
}

static FILE *open_events(const char *path)
{
	FILE *file;

	if (!path)
		return NULL;
	if (strcmp(path, "-") == 0 || strcmp(path, "/dev/stdout") == 0)
		return stdout;
	file = fopen(path, "ae");
	if (!file)
		log_error("cannot open the events file %s: %s", path, strerror(errno));
	return file;
}

static void free_settings(struct agent_settings *settings)
{
	free(settings->listen);
	free(settings->events_path);
	free(settings->select);
	free(settings->containers_dir);
	free(settings->rules_path);
}

int command_agent(int argc, char **argv)
{
	struct agent_settings settings = { .retention_seconds = DEFAULT_RETENTION_SECONDS,
					   .last_rank = -1 };
	struct agent agent = { .settings = &settings };
	struct recorder_observer observer = { .context = &agent,
					      .discover = discover,
					      .attach_failed = attach_failed };
	/* The metrics and rules first, then the detectors: as each record comes. */
	struct record_consumer consumers[2] = {
		{ .context = &agent, .record = observe_record, .tick = polled },
	};
	struct recorder_options options = { 0 };
	struct rules_selection selection = { 0 };
	struct metrics_registry *registry = NULL;
	struct metrics_server *server = NULL;
	struct metrics_readiness readiness = { .ready = agent_health_ready };
	char error[512];
	int result = 1, parsed;

	parsed = parse_arguments(&settings, argc, argv);
	/* Findings appended to the rules or the config would spoil it for the next start. */
	if (!parsed &&
	    output_targets_refuse_overlap(
		    &(struct output_target){ "--events", settings.events_path }, 1,
		    (const struct input_files[]){
			    { "--rules file", (const char *const *)&settings.rules_path, 1 },
			    { "--config file", &settings.config_path, 1 } },
		    2))
		parsed = -1;
	if (parsed) {
		free_settings(&settings);
		return parsed > 0 ? 0 : 2;
	}
	registry = metrics_registry_new();
	agent.metrics = registry ? agent_metrics_new(registry, settings.containers_dir,
						     settings.retention_seconds)
				 : NULL;
	agent.health = registry ? agent_health_new(registry) : NULL;
	u64_map_init(&agent.skipped_said);
	u64_map_init(&agent.placed);
	if (!agent.metrics || !agent.health) {
		log_error("out of memory");
		goto out;
	}
	readiness.context = agent.health;
	if (settings.events_path && !(agent.events = open_events(settings.events_path)))
		goto out;
	{
		struct progress_options detection;

		progress_options_default(&detection);
		detection.flight_calls = (unsigned)settings.flight_calls;
		/* Findings go to the events stream and the log, as in attach. */
		agent.diagnosis = job_diagnosis_new(&detection, stderr, agent.events);
		if (!agent.diagnosis) {
			log_error("out of memory");
			goto out;
		}
		job_diagnosis_on_step(agent.diagnosis, observe_step, &agent);
		job_diagnosis_on_pause(agent.diagnosis, observe_pause, &agent);
	}
	if (settings.rules_path &&
	    !(agent.rules = agent_rules_start(settings.rules_path, agent.metrics, agent.events))) {
		result = 2;
		goto out;
	}
	server = metrics_server_start(registry,
				      settings.listen ? settings.listen : METRICS_DEFAULT_LISTEN,
				      &readiness, error, sizeof(error));
	if (!server) {
		log_error("%s", error);
		goto out;
	}
	log_notice("serving metrics on %s (port %u)",
		   settings.listen ? settings.listen : METRICS_DEFAULT_LISTEN,
		   metrics_server_port(server));
	log_notice("following the processes that map libnccl or libtorch_cuda%s as they start",
		   settings.torch || settings.python ? " or libtorch_cpu" : "");
	options.observer = &observer;
	consumers[1] = diagnosis_consumer(agent.diagnosis);
	options.consumers = consumers;
	options.consumer_count = 2;
	options.until_stopped = true;
	options.follow_children = true;
	options.python = settings.python;
	/* As record --python: what training does to the model too. */
	options.training_ops = settings.python;
	if (agent.rules &&
	    rules_selection_configure(agent_rules_set(agent.rules), &options, &selection))
		goto out;
	/*
	 * --torch: a CPU job's collectives are c10d's (gloo), its steps torch's
	 * scopes: followed through torch's probes, CPython's evaluator unprobed.
	 */
	if (settings.torch && !options.python) {
		options.python = true;
		options.torch_events_only = true;
	}
	options.duration_seconds = settings.duration_seconds;
	options.ring_buffer_bytes = settings.ring_buffer_bytes;
	options.argc = argc;
	options.argv = argv;
	result = recorder_run(&options);
out:
	metrics_server_stop(server);
	rules_selection_free(&selection);
	agent_rules_finish(agent.rules);
	job_diagnosis_free(agent.diagnosis);
	if (agent.events && agent.events != stdout)
		fclose(agent.events);
	agent_metrics_free(agent.metrics);
	agent_health_free(agent.health);
	u64_map_free(&agent.skipped_said);
	u64_map_free(&agent.placed);
	metrics_registry_free(registry);
	free_settings(&settings);
	return result;
}
