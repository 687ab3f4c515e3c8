// SPDX-License-Identifier: MIT
/* The rule runner: checks records against a rules file, offline over traces or live
 * as a recorder observes them, and reports each violation. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/exit_status.h"
#include "base/identity_text.h"
#include "base/log.h"
#include "base/output_file.h"
#include "checks/rule_findings.h"
#include "checks/rule_runner.h"
#include "checks/violation_stream.h"
#include "infer/contain_checker.h"
#include "infer/rank_updates.h"
#include "infer/rule_checker.h"
#include "model/record_consumer.h"
#include "trace/trace_replay.h"

struct report {
	struct violation_stream stream; /* --jsonl or --events, when given */
	struct rule_findings findings;	/* what the text output shows */
	struct u64_map noticed;		/* rules whose notice the text has shown */
};

static void report_init(struct report *report, FILE *stream)
{
	violation_stream_init(&report->stream, stream);
	rule_findings_init(&report->findings);
	u64_map_init(&report->noticed);
}

/* The findings, one line each, then the report is freed. */
static void report_finish(struct report *report, const struct rule_set *rules)
{
	rule_findings_print(&report->findings, rules, stdout);
	fflush(stdout);
	rule_findings_free(&report->findings);
	u64_map_free(&report->noticed);
	violation_stream_free(&report->stream);
}

/* What the trace says of an operator's tensor ("shape", "requires_grad"), or NULL. */
static const char *tensor_detail(const struct infer_event *event, const char *detail)
{
	char name[64];
	const char *value;

	snprintf(name, sizeof(name), "%s:weight", detail);
	value = infer_event_field(event, name);
	if (value)
		return value;
	snprintf(name, sizeof(name), "%s:self", detail);
	return infer_event_field(event, name);
}

/*
 * Whether the event's tensor requires grad, in words. An initialisation
 * (the probe read its callers) of a tensor that does not set a parameter
 * through an alias sharing its storage (.data): InitialisedOnce judges no
 * other. Any other such tensor is frozen.
 */
static const char *requires_grad_text(const struct infer_event *event, const char *requires_grad)
{
	if (strcmp(requires_grad, "True") == 0)
		return " (requires grad)";
	if (event->call_path && *event->call_path)
		return " (does not require grad: the parameter set through .data)";
	return " (does not require grad: frozen)";
}

/*
 * An event in words. Its process is named by its job rank, as the JSON
 * Lines name it ("job_rank"), when known; an NCCL call's rank in its
 * communicator comes with the communicator.
 */
static void describe_event(const struct infer_event *event, int job_rank, const char *field,
			   char *text, size_t size)
{
	const char *shape = tensor_detail(event, "shape");
	const char *requires_grad = tensor_detail(event, "requires_grad");
	int used = job_rank >= 0 ? snprintf(text, size, "%s on job rank %d (pid %u)", event->name,
					    job_rank, event->pid)
				 : snprintf(text, size, "%s (pid %u)", event->name, event->pid);

	if (event->module && *event->module && used > 0 && (size_t)used < size)
		used += snprintf(text + used, size - (size_t)used, " of the module %s",
				 event->module);
	if (shape && used > 0 && (size_t)used < size) {
		size_t length = strlen(shape);
		bool quoted = length >= 2 && shape[0] == '\'' && shape[length - 1] == '\'';

		/* A string argument comes quoted, as Python prints it. */
		used += snprintf(text + used, size - (size_t)used, " of the tensor %.*s",
				 (int)(quoted ? length - 2 : length), quoted ? shape + 1 : shape);
	}
	if (requires_grad && used > 0 && (size_t)used < size)
		used += snprintf(text + used, size - (size_t)used, "%s",
				 requires_grad_text(event, requires_grad));
	if (field && used > 0 && (size_t)used < size)
		used += snprintf(text + used, size - (size_t)used, " with %s = %s", field,
				 infer_event_field(event, field) ? infer_event_field(event, field)
								 : "(none)");
	if (event->comm_id && used > 0 && (size_t)used < size) {
		char comm[IDENTITY_TEXT_SIZE];

		used += snprintf(text + used, size - (size_t)used,
				 ", rank %d of communicator %s call %" PRId64, event->rank,
				 identity_text(event->comm_id, comm), event->seq);
	}
	/* An operator whose callers the probe read (an initialisation) gives them all. */
	if (event->call_path && *event->call_path && used > 0 && (size_t)used < size)
		snprintf(text + used, size - (size_t)used, ", called from %s", event->call_path);
	else if (*event->context && used > 0 && (size_t)used < size)
		snprintf(text + used, size - (size_t)used, ", called from %s", event->context);
}

/* The first scalar argument ("arg:...") two updates apply with different values, or NULL. */
static const char *changed_scalar(const struct infer_event *event, const struct infer_event *other)
{
	for (uint32_t i = 0; other && i < event->field_count; i++) {
		const char *before = infer_event_field(other, event->fields[i].name);

		if (strncmp(event->fields[i].name, "arg:", 4) == 0 && before &&
		    strcmp(before, event->fields[i].value) != 0)
			return event->fields[i].name;
	}
	return NULL;
}

/*
 * A notice: the text shows a rule's first, in full; the stream has each.
 * It says what the program did on purpose by its own word, in case that
 * was the mistake (a freeze schedule with its condition inverted).
 */
static void report_notice(struct report *report, const struct rule_violation *notice)
{
	int job_rank = violation_stream_job_rank(&report->stream, notice);
	char frozen[512];

	violation_stream_write(&report->stream, notice);
	if (u64_map_get(&report->noticed, notice->rule_index + 1) ||
	    u64_map_put(&report->noticed, notice->rule_index + 1, report))
		return;
	describe_event(notice->event, job_rank, NULL, frozen, sizeof(frozen));
	printf("notice at step %d (not a violation): %s, except for weights the program froze: "
	       "one it had updated is read with requires_grad False from here on and no longer "
	       "changes, as a frozen weight should; say so if that freeze was not meant\n",
	       notice->step, notice->text);
	printf("  frozen: %s\n", frozen);
}

static void report_violation(const struct rule_violation *violation, void *context)
{
	struct report *report = context;
	char offending[512], other[512] = "", contained[160];
	const char *field = violation->rule->field;

	if (violation->notice) {
		report_notice(report, violation);
		return;
	}
	if (violation->rule->relation == RELATION_EVENT_CONTAIN) {
		snprintf(contained, sizeof(contained), "contains:%s", violation->rule->child.name);
		field = contained;
	} else if (violation->rule->relation == RELATION_SCALARS_STEADY) {
		field = changed_scalar(violation->event, violation->other);
	}
	int job_rank = violation_stream_job_rank(&report->stream, violation);
	int other_job_rank = violation->other ? violation_stream_event_job_rank(&report->stream,
										violation->other)
					      : -1;
	int first = rule_findings_note(&report->findings, violation->rule_index, violation->step,
				       job_rank);

	violation_stream_write(&report->stream, violation);
	/* The text shows a rule's first violation; the finding sums up the others at the end. */
	if (first == 0)
		return;
	describe_event(violation->event, job_rank, field, offending, sizeof(offending));
	if (violation->other)
		describe_event(violation->other, other_job_rank,
			       violation->rule->relation == RELATION_EVENT_CONTAIN
				       ? violation->rule->field
				       : field,
			       other, sizeof(other));
	if (violation->step >= 0)
		printf("violation at step %d: %s\n", violation->step, violation->text);
	else
		printf("violation at an unknown step: %s\n", violation->text);
	printf("  offending: %s\n", offending);
	if (violation->other)
		printf("  %s: %s\n",
		       violation->rule->relation == RELATION_API_SEQUENCE ? "expected first"
		       : violation->rule->relation == RELATION_SCALARS_STEADY
			       ? "the step before applied"
			       : "disagrees with",
		       other);
	if (violation->rule->relation == RELATION_EVENT_CONTAIN &&
	    infer_event_field(violation->event, CONTAIN_CLEARED_UNUSED_FIELD))
		printf("  it cleared gradients a backward had filled before any optimizer step or "
		       "change of a parameter used them: an optimizer step skipped?\n");
	if (rule_checks_rank_updates(violation->rule) && violation->other &&
	    rank_updates_only_contents_differ(violation->event, violation->other))
		printf("  the same updates with the same scalars, applied to other values: job "
		       "rank %d's replica no longer holds what job rank %d's does (changed "
		       "outside the optimizer's updates, or diverged in an earlier step)\n",
		       job_rank, other_job_rank);
}

/* Offline: the checker and the report the trace's records go to. */
struct offline_check {
	struct rule_checker *checker;
	struct report *report;
};

static int observe(void *context, const struct trace_record *record)
{
	struct offline_check *check = context;

	violation_stream_note(&check->report->stream, record);
	return rule_checker_observe(check->checker, record);
}

struct rule_set *rules_file_load(const char *rules_path)
{
	char error[512];
	struct rule_set *rules = rule_set_load(rules_path, error, sizeof(error));

	if (!rules) {
		log_error("%s", error);
		return NULL;
	}
	if (rules->repeated_count)
		log_warning("%s repeats %zu rule%s: each is checked once (%zu different rule%s)",
			    rules_path, rules->repeated_count,
			    rules->repeated_count == 1 ? "" : "s", rules->count,
			    rules->count == 1 ? "" : "s");
	return rules;
}

int check_rules_offline(const char *rules_path, char **traces, int trace_count,
			const char *jsonl_path)
{
	struct report report;
	struct offline_check check = { NULL, &report };
	struct rule_set *rules;
	struct output_file jsonl = { 0 };
	char error[512];
	int status = 2;

	rules = rules_file_load(rules_path);
	if (!rules)
		return EXIT_BAD_INPUT;
	if (jsonl_path && output_file_open(&jsonl, jsonl_path, 0, error, sizeof(error))) {
		log_error("%s", error);
		rule_set_free(rules);
		return EXIT_BAD_INPUT;
	}
	report_init(&report, jsonl.stream);
	check.checker = rule_checker_new(rules, report_violation, &report);
	if (!check.checker) {
		log_error("out of memory");
		goto out;
	}
	for (int i = 0; i < trace_count; i++)
		if (trace_replay(traces[i], observe, &check, 0) < 0)
			goto out;
	/* "0 violations" is said only when something was checked. */
	if (!rule_checker_events(check.checker)) {
		rule_checker_finish(check.checker);
		log_error(
			"nothing to judge: the %d trace(s) hold no event the rules check (no call "
			"and no Python event)",
			trace_count);
		status = EXIT_NOTHING_TO_JUDGE;
		goto out;
	}
	rule_check_finish(check.checker, rules, "");
	status = rule_checker_violations(check.checker) ? EXIT_FINDINGS : EXIT_CLEAN;
out:
	report_finish(&report, rules);
	/* Violations of a run that could not be read whole never take the file's place. */
	if (output_file_close(&jsonl, status != EXIT_BAD_INPUT, error, sizeof(error))) {
		log_error("%s", error);
		status = EXIT_FAILED;
	}
	if (fflush(stdout) || ferror(stdout)) {
		log_error("cannot write the violations to standard output: %m");
		status = EXIT_FAILED;
	}
	rule_checker_free(check.checker);
	rule_set_free(rules);
	return status;
}

/*
 * "No silent zero": Python processes checked none of which ended a step
 * (no Optimizer.step scope, the default step marker, ran: weights updated
 * by hand) were not judged by the rules about steps.
 */
static void warn_unstepped(const struct rule_checker *checker)
{
	uint32_t pids[4];
	char listed[64] = "";
	bool stepped;
	size_t count = rule_checker_python_processes(checker, &stepped, pids, 4);
	size_t used = 0;

	if (count == 0 || stepped)
		return;
	for (size_t i = 0; i < count && i < 4 && used < sizeof(listed); i++)
		used += (size_t)snprintf(listed + used, sizeof(listed) - used, "%s%u",
					 i ? ", " : "", pids[i]);
	log_warning("no training step ended in the %zu Python process(es) checked (pid %s%s): no "
		    "Optimizer.step scope, the step marker, ran, so the rules about steps "
		    "judged none of their calls; a program that updates its weights without a "
		    "torch optimizer can name its step function with record --step-marker NAME",
		    count, listed, count > 4 ? ", ..." : "");
}

void rule_check_finish(struct rule_checker *checker, const struct rule_set *rules, const char *how)
{
	rule_checker_finish(checker);
	warn_unstepped(checker);
	log_notice("%" PRIu64 " events checked%s against %zu rules: %" PRIu64 " violation(s)%s",
		   rule_checker_events(checker), how, rules->count,
		   rule_checker_violations(checker),
		   rule_checker_notices(checker) ? " and notices (above)" : "");
}

struct live_rules {
	struct rule_set *rules;
	struct rule_checker *checker;
	struct report report;
};

static int observe_live(void *context, const struct trace_record *record)
{
	struct live_rules *live = context;

	violation_stream_note(&live->report.stream, record);
	if (rule_checker_observe(live->checker, record))
		log_warning("out of memory checking rules: a call was not checked");
	fflush(stdout);
	return 0;
}

struct live_rules *live_rules_start(const char *rules_path, struct record_consumer *consumer,
				    FILE *events)
{
	struct live_rules *live = calloc(1, sizeof(*live));

	if (!live) {
		log_error("out of memory");
		return NULL;
	}
	report_init(&live->report, events);
	live->rules = rules_file_load(rules_path);
	if (!live->rules) {
		free(live);
		return NULL;
	}
	live->checker = rule_checker_new(live->rules, report_violation, &live->report);
	if (!live->checker) {
		log_error("out of memory");
		rule_set_free(live->rules);
		free(live);
		return NULL;
	}
	*consumer = (struct record_consumer){ .context = live, .record = observe_live };
	return live;
}

const struct rule_set *live_rules_set(const struct live_rules *live)
{
	return live->rules;
}

int live_rules_finish(struct live_rules *live, int status)
{
	rule_check_finish(live->checker, live->rules, " live");
	report_finish(&live->report, live->rules);
	rule_checker_free(live->checker);
	rule_set_free(live->rules);
	free(live);
	return status;
}
