// SPDX-License-Identifier: MIT
/*
 * `tcheck-bpf analyze --prometheus URL`: localises a stalled job spread
 * over many nodes from what every node's agent exported to Prometheus:
 * per communicator, the ranks that never issued the collective the others
 * wait in.
 */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "cli/commands.h"
#include "diagnose/prometheus_query.h"
#include "diagnose/stall_localisation.h"
#include "export/export_jsonl.h"

#define DEFAULT_IDLE_SECONDS 60.0
#define QUERY_TIMEOUT_SECONDS 30.0

static const char analyze_help[] =
	"Usage: tcheck-bpf analyze --prometheus URL [--idle SECONDS] [--json]\n"
	"\n"
	"Asks Prometheus for every rank's collective sequence number per\n"
	"communicator (the one it is inside, tcheck_collective_in_flight_sequence,\n"
	"else its last, tcheck_collective_sequence, exported by the agents of all\n"
	"nodes) and reports each communicator idle for longer than --idle: the\n"
	"ranks at the lowest sequence never issued the collective the others wait\n"
	"in; when all ranks agree, the collective itself is stuck (network or\n"
	"device) or waits for another communicator. Exit status: 0 nothing\n"
	"stalled, 1 stalls found, 2 an error.\n"
	"\n"
	"Options:\n"
	"      --prometheus URL    the Prometheus server (http://host:9090)\n"
	"      --idle SECONDS      a communicator idle this long is stalled (default 60)\n"
	"      --json              one JSON object per finding\n"
	"  -h, --help              this text\n"
	"\n"
	"Examples:\n"
	"  tcheck-bpf analyze --prometheus http://prometheus.monitoring:9090\n"
	"  tcheck-bpf analyze --prometheus http://localhost:9090 --idle 30 --json\n";

/* The node a sample came from: the scrape's node label, else its instance. */
static const char *node_of(const json_t *sample)
{
	const char *node = prometheus_sample_label(sample, "node");

	return *node ? node : prometheus_sample_label(sample, "instance");
}

static void copy_label(char *out, size_t size, const char *value)
{
	snprintf(out, size, "%s", value);
}

/* Joins the two vectors on (node, pid, comm) into samples; returns how many. */
static size_t join_samples(const json_t *sequences, const json_t *progress,
			   struct stall_sample *samples)
{
	size_t count = 0, i, j;
	json_t *sample, *other;

	json_array_foreach(sequences, i, sample)
	{
		struct stall_sample *out = &samples[count];

		copy_label(out->comm, sizeof(out->comm), prometheus_sample_label(sample, "comm"));
		copy_label(out->rank, sizeof(out->rank), prometheus_sample_label(sample, "rank"));
		copy_label(out->pod, sizeof(out->pod), prometheus_sample_label(sample, "pod"));
		copy_label(out->node, sizeof(out->node), node_of(sample));
		copy_label(out->pid, sizeof(out->pid), prometheus_sample_label(sample, "pid"));
		out->sequence = (int64_t)prometheus_sample_value(sample);
		out->last_progress_seconds = 0;
		json_array_foreach(progress, j, other)
		{
			if (strcmp(prometheus_sample_label(other, "comm"), out->comm) == 0 &&
			    strcmp(prometheus_sample_label(other, "pid"), out->pid) == 0 &&
			    strcmp(node_of(other), out->node) == 0)
				out->last_progress_seconds = prometheus_sample_value(other);
		}
		count++;
	}
	return count;
}

static void print_text(const struct stall_finding *finding)
{
	if (finding->kind == STALL_ALL_WAITING) {
		printf("communicator %s: no progress for %.1f s; all %zu ranks issued collective "
		       "#%lld: it is stuck inside it (network or device), or its ranks wait on "
		       "another communicator\n",
		       finding->comm, finding->idle_seconds, finding->rank_count,
		       (long long)finding->stuck_sequence);
		return;
	}
	printf("communicator %s: no progress for %.1f s; %zu of %zu ranks never issued "
	       "collective #%lld that the others wait in (the furthest is at #%lld):\n",
	       finding->comm, finding->idle_seconds, finding->lagging_count, finding->rank_count,
	       (long long)finding->stuck_sequence, (long long)finding->highest_sequence);
	for (size_t i = 0; i < finding->lagging_count; i++) {
		const struct stall_sample *rank = finding->lagging[i];

		printf("  rank %s (pid %s%s%s, node %s), last issued #%lld\n", rank->rank,
		       rank->pid, *rank->pod ? ", pod " : "", rank->pod, rank->node,
		       (long long)rank->sequence);
	}
}

static void print_json(const struct stall_finding *finding)
{
	json_t *object = json_pack(
		"{s:s, s:s, s:s, s:I, s:I, s:f, s:I, s:[]}", "kind", "stall", "classification",
		finding->kind == STALL_RANKS_MISSING ? "ranks_missing" : "all_ranks_waiting",
		"comm", finding->comm, "stuck_seq", (json_int_t)finding->stuck_sequence,
		"highest_seq", (json_int_t)finding->highest_sequence, "idle_s",
		finding->idle_seconds, "ranks", (json_int_t)finding->rank_count, "lagging");
	json_t *lagging = object ? json_object_get(object, "lagging") : NULL;

	for (size_t i = 0; lagging && i < finding->lagging_count; i++) {
		const struct stall_sample *rank = finding->lagging[i];

		json_array_append_new(lagging,
				      json_pack("{s:s, s:s, s:s, s:s, s:I}", "rank", rank->rank,
						"pid", rank->pid, "pod", rank->pod, "node",
						rank->node, "seq", (json_int_t)rank->sequence));
	}
	if (object) {
		export_json_write(stdout, "", object, JSON_COMPACT, "\n");
		json_decref(object);
	}
}

static int analyze(const char *url, double idle_seconds, int json)
{
	char error[512];
	json_t *sequences, *progress = NULL;
	struct stall_sample *samples = NULL;
	struct stall_finding *findings = NULL;
	double now;
	long found;
	size_t count;
	int result = 2;

	/* Per rank: the collective it is inside (entered, not returned), else its last. */
	sequences = prometheus_query_vector(url,
					    "max without () (tcheck_collective_in_flight_sequence "
					    "or tcheck_collective_sequence)",
					    QUERY_TIMEOUT_SECONDS, error, sizeof(error));
	if (sequences)
		progress = prometheus_query_vector(
			url,
			"max without () "
			"({__name__=~\"tcheck_collective_(last_progress|in_flight_entry)"
			"_timestamp_seconds\"})",
			QUERY_TIMEOUT_SECONDS, error, sizeof(error));
	if (!sequences || !progress) {
		log_error("%s", error);
		goto out;
	}
	if (json_array_size(sequences) == 0) {
		if (!json)
			printf("no communicator is reported: no agent runs a job (or Prometheus "
			       "does not scrape the agents)\n");
		result = 0;
		goto out;
	}
	samples = calloc(json_array_size(sequences), sizeof(*samples));
	if (!samples) {
		log_error("out of memory");
		goto out;
	}
	count = join_samples(sequences, progress, samples);
	now = prometheus_sample_time(json_array_get(sequences, 0));
	found = stall_localise(samples, count, now, idle_seconds, &findings);
	if (found < 0) {
		log_error("out of memory");
		goto out;
	}
	for (long i = 0; i < found; i++) {
		if (json)
			print_json(&findings[i]);
		else
			print_text(&findings[i]);
	}
	if (!found && !json)
		printf("no communicator has been idle for more than %.0f s (%zu rank positions "
		       "seen)\n",
		       idle_seconds, count);
	result = found ? 1 : 0;
	stall_findings_free(findings, found);
out:
	free(samples);
	json_decref(sequences);
	json_decref(progress);
	return result;
}

int command_analyze(int argc, char **argv)
{
	static const struct option long_options[] = {
		{ "prometheus", required_argument, NULL, 'P' },
		{ "idle", required_argument, NULL, 'i' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *url = NULL;
	double idle_seconds = DEFAULT_IDLE_SECONDS;
	int option, json = 0;

	while ((option = getopt_long(argc, argv, "h", long_options, NULL)) != -1) {
		switch (option) {
		case 'P':
			url = optarg;
			break;
		case 'i':
			if (parse_seconds("--idle", optarg, false, &idle_seconds))
				return 2;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			fputs(analyze_help, stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'tcheck-bpf analyze --help'.\n");
			return 2;
		}
	}
	if (!url || optind < argc) {
		log_error("analyze needs --prometheus URL and nothing else; see tcheck-bpf analyze "
			  "--help");
		return 2;
	}
	return analyze(url, idle_seconds, json);
}
