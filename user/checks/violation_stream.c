// SPDX-License-Identifier: MIT
/* Rule violations as JSON Lines, with the job rank of their process. */
#include "checks/violation_stream.h"

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "base/identity_text.h"
#include "export/export_jsonl.h"
#include "infer/infer_event.h"
#include "infer/rule_checker.h"
#include "infer/rules.h"
#include "model/trace_records.h"

/*
 * An event: its process's job rank ("job_rank", null when it has none),
 * an NCCL call's rank in its communicator only beside the communicator
 * ("comm_rank"), and its step (null when unknown).
 */
static json_t *event_json(const struct violation_stream *stream, const struct infer_event *event)
{
	json_t *object = json_object(), *fields = json_object();

	for (uint32_t i = 0; i < event->field_count; i++)
		json_object_set_new(fields, event->fields[i].name,
				    json_string(event->fields[i].value));
	json_object_set_new(object, "name", json_string(event->name));
	json_object_set_new(object, "pid", json_integer(event->pid));
	json_object_set_new(object, "tid", json_integer(event->tid));
	json_object_set_new(
		object, "job_rank",
		export_json_known_or_null(violation_stream_event_job_rank(stream, event)));
	json_object_set_new(object, "step", export_json_known_or_null(event->step));
	if (event->comm_id) {
		char comm[IDENTITY_TEXT_SIZE];

		json_object_set_new(object, "comm",
				    json_string(identity_text(event->comm_id, comm)));
		json_object_set_new(object, "comm_rank", export_json_known_or_null(event->rank));
		json_object_set_new(object, "seq", json_integer(event->seq));
	}
	json_object_set_new(object, "entry_ns", json_integer((json_int_t)event->entry_ns));
	json_object_set_new(object, "python_context", json_string(event->context));
	if (event->module && *event->module)
		json_object_set_new(object, "module", json_string(event->module));
	if (event->call_path && *event->call_path)
		json_object_set_new(object, "call_path", json_string(event->call_path));
	json_object_set_new(object, "fields", fields);
	return object;
}

/*
 * A violation's details: relation, invariant, step (null when unknown),
 * and the offending event (and the one it disagrees with) with name, pid,
 * job rank, communicator, fields and Python context.
 */
static json_t *rule_violation_json(const struct violation_stream *stream,
				   const struct rule_violation *violation)
{
	json_t *line = json_object();

	json_object_set_new(line, "relation",
			    json_string(rule_relation_name(violation->rule->relation)));
	json_object_set_new(line, "invariant", json_string(violation->text));
	json_object_set_new(line, "step", export_json_known_or_null(violation->step));
	json_object_set_new(line, "event", event_json(stream, violation->event));
	if (violation->other)
		json_object_set_new(line, "other", event_json(stream, violation->other));
	return line;
}

void violation_stream_init(struct violation_stream *stream, FILE *out)
{
	stream->out = out;
	u64_map_init(&stream->job_ranks);
}

void violation_stream_free(struct violation_stream *stream)
{
	u64_map_free(&stream->job_ranks);
}

void violation_stream_note(struct violation_stream *stream, const struct trace_record *record)
{
	if (record->kind != TRACE_RECORD_PROCESS || record->process.rank < 0)
		return;
	/* Stored plus one: a map value is never NULL. Out of memory: the rank stays unknown. */
	(void)u64_map_put(&stream->job_ranks, record->process.pid,
			  (void *)(uintptr_t)(record->process.rank + 1));
}

int violation_stream_job_rank(const struct violation_stream *stream,
			      const struct rule_violation *violation)
{
	return violation_stream_event_job_rank(stream, violation->event);
}

int violation_stream_event_job_rank(const struct violation_stream *stream,
				    const struct infer_event *event)
{
	uintptr_t known = (uintptr_t)u64_map_get(&stream->job_ranks, event->pid);

	if (known)
		return (int)(known - 1);
	/* A Python event's rank is the job's; an NCCL call's is its communicator's. */
	return event->kind == INFER_EVENT_PYTHON ? event->rank : -1;
}

void violation_stream_write(struct violation_stream *stream, const struct rule_violation *violation)
{
	json_t *line, *details;

	if (!stream->out)
		return;
	line = json_pack("{s:s, s:I, s:I, s:o}", "kind", violation->notice ? "notice" : "violation",
			 "rule", (json_int_t)violation->rule_index, "pid",
			 (json_int_t)violation->event->pid, "job_rank",
			 export_json_known_or_null(violation_stream_job_rank(stream, violation)));
	details = rule_violation_json(stream, violation);
	if (line && details && json_object_update(line, details) == 0) {
		export_json_write(stream->out, "", line, JSON_COMPACT | JSON_PRESERVE_ORDER, "\n");
		fflush(stream->out);
	}
	json_decref(details);
	json_decref(line);
}
