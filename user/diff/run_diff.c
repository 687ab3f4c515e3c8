// SPDX-License-Identifier: MIT
/*
 * Aligns two runs per job rank and per communicator (the n-th the rank used,
 * of the same size), call by call in order, and keeps the first place each
 * pair parts. A call of another function is told apart as missing or extra
 * by looking a few calls ahead for where the two sequences meet again; a
 * call missing on one communicator and extra on another at the same step
 * is one call made on a different communicator.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/growable_array.h"
#include "diff/run_diff.h"
#include "model/nccl_api.h"

/* How far ahead a missing or extra call is looked for. */
#define RESYNC_WINDOW 16

static struct run_value value_absent(void)
{
	return (struct run_value){ .kind = RUN_VALUE_ABSENT };
}

static struct run_value value_number(int64_t number)
{
	return (struct run_value){ .kind = RUN_VALUE_NUMBER, .number = number };
}

static struct run_value value_text(const char *text)
{
	struct run_value value = { .kind = RUN_VALUE_TEXT };

	snprintf(value.text, sizeof(value.text), "%s", text);
	return value;
}

static struct run_difference *add_difference(struct run_diff *diff, int job_rank, int step,
					     const char *communicator, uint64_t comm_id,
					     const char *what)
{
	struct run_difference *difference;

	if (growable_array_room_for_one((void **)&diff->differences, diff->count, &diff->capacity,
					sizeof(*diff->differences)))
		return NULL;
	difference = &diff->differences[diff->count++];
	*difference = (struct run_difference){
		.job_rank = job_rank, .step = step, .comm_id = comm_id, .what = what
	};
	snprintf(difference->communicator, sizeof(difference->communicator), "%s",
		 communicator ? communicator : "");
	return difference;
}

void run_value_describe(const struct run_value *value, char *text, size_t size)
{
	if (value->kind == RUN_VALUE_NUMBER)
		snprintf(text, size, "%lld", (long long)value->number);
	else if (value->kind == RUN_VALUE_TEXT)
		snprintf(text, size, "%s", value->text);
	else
		snprintf(text, size, "none");
}

void run_diff_destroy(struct run_diff *diff)
{
	free(diff->differences);
	*diff = (struct run_diff){ 0 };
}

static void value_name(char *text, size_t size, const char *name, int64_t value)
{
	if (name)
		snprintf(text, size, "%s", name);
	else
		snprintf(text, size, "%lld", (long long)value);
}

void run_call_describe(const struct run_call *call, char *text, size_t size)
{
	char datatype[32], op[32];
	int used = snprintf(text, size, "%s", call->api->name);

	if (call->count != RUN_VALUE_NONE && used >= 0 && (size_t)used < size)
		used += snprintf(text + used, size - (size_t)used, " count=%lld",
				 (long long)call->count);
	value_name(datatype, sizeof(datatype), nccl_datatype_name(call->datatype), call->datatype);
	if (call->datatype != RUN_VALUE_NONE && used >= 0 && (size_t)used < size)
		used += snprintf(text + used, size - (size_t)used, " datatype=%s", datatype);
	value_name(op, sizeof(op), nccl_redop_name(call->op), call->op);
	if (call->op != RUN_VALUE_NONE && used >= 0 && (size_t)used < size)
		used += snprintf(text + used, size - (size_t)used, " op=%s", op);
	if (call->root != RUN_VALUE_NONE && used >= 0 && (size_t)used < size)
		snprintf(text + used, size - (size_t)used, " root/peer=%lld",
			 (long long)call->root);
}

/* The first field two calls of one function differ in, with both values; NULL when none. */
static const char *field_difference(const struct run_call *reference,
				    const struct run_call *candidate, struct run_value *left,
				    struct run_value *right)
{
	if (reference->count != candidate->count) {
		*left = value_number(reference->count);
		*right = value_number(candidate->count);
		return "count";
	}
	if (reference->datatype != candidate->datatype) {
		*left = value_text(nccl_datatype_name(reference->datatype) ?: "unknown");
		*right = value_text(nccl_datatype_name(candidate->datatype) ?: "unknown");
		return "datatype";
	}
	if (reference->op != candidate->op) {
		*left = value_text(nccl_redop_name(reference->op) ?: "unknown");
		*right = value_text(nccl_redop_name(candidate->op) ?: "unknown");
		return "op";
	}
	if (reference->root != candidate->root) {
		*left = value_number(reference->root);
		*right = value_number(candidate->root);
		return reference->api->kind == NCCL_KIND_POINT_TO_POINT ? "peer" : "root";
	}
	return NULL;
}

/* A rank's calls on one communicator, in order. */
struct call_sequence {
	const struct run_call **calls;
	size_t count;
};

static int sequence_collect(const struct run_rank *rank, int communicator,
			    struct call_sequence *sequence)
{
	sequence->count = 0;
	sequence->calls = calloc(rank->call_count + 1, sizeof(*sequence->calls));
	if (!sequence->calls)
		return -ENOMEM;
	for (size_t i = 0; i < rank->call_count; i++)
		if (rank->calls[i].communicator == communicator)
			sequence->calls[sequence->count++] = &rank->calls[i];
	return 0;
}

/* Whether item i of sequence a and item j of sequence b are the same. */
typedef int (*same_item_fn)(const void *a, size_t i, const void *b, size_t j);

/*
 * The fewest items of b from j that, skipped, make b meet a[i] again (and
 * a[i + 1] after it); 0 when none within the window.
 */
static size_t items_to_skip(same_item_fn same, const void *a, size_t a_count, size_t i,
			    const void *b, size_t b_count, size_t j)
{
	for (size_t skip = 1; skip <= RESYNC_WINDOW && j + skip < b_count; skip++) {
		if (!same(b, j + skip, a, i))
			continue;
		if (i + 1 >= a_count || j + skip + 1 >= b_count || same(b, j + skip + 1, a, i + 1))
			return skip;
	}
	return 0;
}

enum parting {
	PARTING_OTHER,	 /* neither side meets the other again: the item changed */
	PARTING_MISSING, /* the candidate lacks the reference's item */
	PARTING_EXTRA,	 /* the candidate has an item more */
};

/*
 * How two sequences part at i: a missing item (the candidate meets the
 * reference again further on), an extra one, or another one. When both
 * readings fit, the longer side decides.
 */
static enum parting parting_at(same_item_fn same, const void *reference, size_t reference_count,
			       const void *candidate, size_t candidate_count, size_t i)
{
	size_t missing =
		items_to_skip(same, candidate, candidate_count, i, reference, reference_count, i);
	size_t extra =
		items_to_skip(same, reference, reference_count, i, candidate, candidate_count, i);

	if (missing && (!extra || reference_count > candidate_count))
		return PARTING_MISSING;
	return extra ? PARTING_EXTRA : PARTING_OTHER;
}

static int same_call_at(const void *a, size_t i, const void *b, size_t j)
{
	const struct call_sequence *left = a, *right = b;

	return run_call_same(left->calls[i], right->calls[j]);
}

/* Where one rank's two runs are compared: the rank and the communicator's name. */
struct comparison {
	struct run_diff *diff;
	int job_rank;
	char communicator[48];
	uint64_t comm_id; /* its identity in the run that names it, 0 unknown */
};

static int report_call(const struct comparison *at, const char *what,
		       const struct run_call *reference, const struct run_call *candidate,
		       size_t index)
{
	const struct run_call *shown = reference ? reference : candidate;
	struct run_difference *difference;
	char text[160];

	if (!shown)
		return -EINVAL;
	difference = add_difference(at->diff, at->job_rank, shown->step, at->communicator,
				    at->comm_id, what);
	if (!difference)
		return -ENOMEM;
	difference->reference = value_absent();
	difference->candidate = value_absent();
	if (reference) {
		run_call_describe(reference, text, sizeof(text));
		difference->reference = value_text(text);
		difference->reference_ns = reference->entry_ns;
	}
	if (candidate) {
		run_call_describe(candidate, text, sizeof(text));
		difference->candidate = value_text(text);
		difference->candidate_ns = candidate->entry_ns;
	}
	run_call_describe(shown, text, sizeof(text));
	snprintf(difference->event, sizeof(difference->event), "%s, call %zu on the communicator",
		 text, index);
	return 0;
}

static int report_fields(const struct comparison *at, const struct run_call *reference,
			 const struct run_call *candidate, size_t index)
{
	struct run_value left, right;
	const char *what = field_difference(reference, candidate, &left, &right);
	struct run_difference *difference;
	char text[160];

	difference = add_difference(at->diff, at->job_rank, reference->step, at->communicator,
				    at->comm_id, what ? what : "call");
	if (!difference)
		return -ENOMEM;
	difference->reference = left;
	difference->candidate = right;
	difference->reference_ns = reference->entry_ns;
	difference->candidate_ns = candidate->entry_ns;
	run_call_describe(reference, text, sizeof(text));
	snprintf(difference->event, sizeof(difference->event), "%s, call %zu on the communicator",
		 text, index);
	return 0;
}

/* The first place two sequences part: a missing call, an extra call, or another call. */
static int report_parting(const struct comparison *at, const struct call_sequence *reference,
			  const struct call_sequence *candidate, size_t i)
{
	switch (parting_at(same_call_at, reference, reference->count, candidate, candidate->count,
			   i)) {
	case PARTING_MISSING:
		return report_call(at, "missing_call", reference->calls[i], NULL, i);
	case PARTING_EXTRA:
		return report_call(at, "extra_call", NULL, candidate->calls[i], i);
	case PARTING_OTHER:
		break;
	}
	return report_call(at, "function", reference->calls[i], candidate->calls[i], i);
}

static int compare_sequences(const struct comparison *at, const struct call_sequence *reference,
			     const struct call_sequence *candidate)
{
	size_t i;

	for (i = 0; i < reference->count && i < candidate->count; i++) {
		const struct run_call *left = reference->calls[i], *right = candidate->calls[i];

		if (run_call_same(left, right))
			continue;
		/* As many calls on both sides: one of them changed, none is missing. */
		if (left->api == right->api &&
		    (reference->count == candidate->count ||
		     parting_at(same_call_at, reference, reference->count, candidate,
				candidate->count, i) == PARTING_OTHER))
			return report_fields(at, left, right, i);
		return report_parting(at, reference, candidate, i);
	}
	if (i < reference->count)
		return report_call(at, "missing_call", reference->calls[i], NULL, i);
	if (i < candidate->count)
		return report_call(at, "extra_call", NULL, candidate->calls[i], i);
	return 0;
}

/* A communicator one run has and the other has not, or of another size. */
static int report_communicator(struct comparison *at, const struct run_rank *reference,
			       const struct run_rank *candidate, int communicator)
{
	struct run_difference *difference = add_difference(
		at->diff, at->job_rank, -1, at->communicator, at->comm_id, "communicator");
	char name[48];

	if (!difference)
		return -ENOMEM;
	difference->reference = value_absent();
	difference->candidate = value_absent();
	if ((size_t)communicator < reference->communicator_count) {
		run_communicator_name(reference, communicator, name, sizeof(name));
		difference->reference = value_text(name);
	}
	if ((size_t)communicator < candidate->communicator_count) {
		run_communicator_name(candidate, communicator, name, sizeof(name));
		difference->candidate = value_text(name);
	}
	snprintf(difference->event, sizeof(difference->event),
		 "the rank's communicator number %d, by order of first use", communicator);
	return 0;
}

/* The communicator's comm_id, as check, dump and the agent name it; 0 when the rank knows none. */
static uint64_t communicator_identity(const struct run_rank *rank, int communicator)
{
	const struct run_communicator *found;

	if (communicator < 0 || (size_t)communicator >= rank->communicator_count)
		return 0;
	found = &rank->communicators[communicator];
	return found->shared ? found->key : 0;
}

static int compare_communicator(struct comparison *at, const struct run_rank *reference,
				const struct run_rank *candidate, int communicator)
{
	struct call_sequence left = { 0 }, right = { 0 };
	int result;

	run_communicator_name(reference, communicator, at->communicator, sizeof(at->communicator));
	at->comm_id = communicator_identity(reference, communicator);
	if ((size_t)communicator >= reference->communicator_count ||
	    (size_t)communicator >= candidate->communicator_count ||
	    reference->communicators[communicator].nranks !=
		    candidate->communicators[communicator].nranks) {
		if ((size_t)communicator >= reference->communicator_count) {
			run_communicator_name(candidate, communicator, at->communicator,
					      sizeof(at->communicator));
			at->comm_id = communicator_identity(candidate, communicator);
		}
		return report_communicator(at, reference, candidate, communicator);
	}
	result = sequence_collect(reference, communicator, &left);
	if (!result)
		result = sequence_collect(candidate, communicator, &right);
	if (!result)
		result = compare_sequences(at, &left, &right);
	free(left.calls);
	free(right.calls);
	return result;
}

/* A call missing on one communicator and made on another at the same step: one difference. */
static void merge_moved_calls(struct run_diff *diff, size_t first)
{
	for (size_t i = first; i < diff->count; i++) {
		struct run_difference *missing = &diff->differences[i];

		if (strcmp(missing->what, "missing_call") != 0)
			continue;
		for (size_t j = first; j < diff->count; j++) {
			struct run_difference *extra = &diff->differences[j];

			if (strcmp(extra->what, "extra_call") != 0 ||
			    extra->step != missing->step ||
			    strcmp(extra->candidate.text, missing->reference.text) != 0)
				continue;
			missing->what = "communicator";
			snprintf(missing->event, sizeof(missing->event), "%s",
				 missing->reference.text);
			missing->reference = value_text(missing->communicator);
			missing->candidate = value_text(extra->communicator);
			memmove(extra, extra + 1,
				(diff->count - j - 1) * sizeof(struct run_difference));
			diff->count--;
			if (j < i)
				i--;
			break;
		}
	}
}

static int same_python_event(const struct run_python_event *a, const struct run_python_event *b)
{
	return strcmp(a->name, b->name) == 0 && strcmp(a->arguments, b->arguments) == 0;
}

static int same_python_at(const void *a, size_t i, const void *b, size_t j)
{
	const struct run_rank *left = a, *right = b;

	return same_python_event(&left->python[i], &right->python[j]);
}

static int report_python(const struct comparison *at, const char *what,
			 const struct run_python_event *reference,
			 const struct run_python_event *candidate, int arguments)
{
	const struct run_python_event *shown = reference ? reference : candidate;
	struct run_difference *difference;

	if (!shown)
		return -EINVAL;
	if (shown->torch && strcmp(what, "python_argument") != 0)
		what = "torch_operator";
	difference = add_difference(at->diff, at->job_rank, shown->step, "", 0, what);
	if (!difference)
		return -ENOMEM;
	difference->reference = value_absent();
	difference->candidate = value_absent();
	if (reference) {
		difference->reference =
			value_text(arguments ? reference->arguments : reference->name);
		difference->reference_ns = reference->entry_ns;
	}
	if (candidate) {
		difference->candidate =
			value_text(arguments ? candidate->arguments : candidate->name);
		difference->candidate_ns = candidate->entry_ns;
	}
	snprintf(difference->event, sizeof(difference->event), "%s %s",
		 shown->torch ? "torch" : "Python call", shown->name);
	return 0;
}

static int compare_python(const struct comparison *at, const struct run_rank *reference,
			  const struct run_rank *candidate)
{
	size_t i;

	for (i = 0; i < reference->python_count && i < candidate->python_count; i++) {
		const struct run_python_event *left = &reference->python[i];
		const struct run_python_event *right = &candidate->python[i];

		if (same_python_event(left, right))
			continue;
		if (strcmp(left->name, right->name) == 0)
			return report_python(at, "python_argument", left, right, 1);
		switch (parting_at(same_python_at, reference, reference->python_count, candidate,
				   candidate->python_count, i)) {
		case PARTING_MISSING:
			return report_python(at, "missing_call", left, NULL, 0);
		case PARTING_EXTRA:
			return report_python(at, "extra_call", NULL, right, 0);
		case PARTING_OTHER:
			break;
		}
		return report_python(at, "python_call", left, right, 0);
	}
	if (i < reference->python_count)
		return report_python(at, "missing_call", &reference->python[i], NULL, 0);
	if (i < candidate->python_count)
		return report_python(at, "extra_call", NULL, &candidate->python[i], 0);
	return 0;
}

static int report_numbers(struct run_diff *diff, int job_rank, const char *what, int64_t left,
			  int64_t right, const char *event)
{
	struct run_difference *difference = add_difference(diff, job_rank, -1, "", 0, what);

	if (!difference)
		return -ENOMEM;
	difference->reference = value_number(left);
	difference->candidate = value_number(right);
	snprintf(difference->event, sizeof(difference->event), "%s", event);
	return 0;
}

static int compare_rank(struct run_diff *diff, const struct run_rank *reference,
			const struct run_rank *candidate)
{
	struct comparison at = { .diff = diff, .job_rank = reference->job_rank };
	size_t communicators = reference->communicator_count > candidate->communicator_count
				       ? reference->communicator_count
				       : candidate->communicator_count;
	size_t first = diff->count;
	int result = 0;

	if (reference->steps != candidate->steps)
		result = report_numbers(diff, reference->job_rank, "steps", reference->steps,
					candidate->steps, "the number of steps of the rank");
	for (size_t c = 0; c < communicators && !result; c++)
		result = compare_communicator(&at, reference, candidate, (int)c);
	if (!result)
		merge_moved_calls(diff, first);
	if (!result)
		result = compare_python(&at, reference, candidate);
	return result;
}

int run_diff_compare(const struct run_model *reference, const struct run_model *candidate,
		     struct run_diff *diff)
{
	int limit = run_model_rank_limit(reference) > run_model_rank_limit(candidate)
			    ? run_model_rank_limit(reference)
			    : run_model_rank_limit(candidate);
	int result = 0;

	if (run_model_rank_count(reference) != run_model_rank_count(candidate))
		result = report_numbers(diff, -1, "ranks", run_model_rank_count(reference),
					run_model_rank_count(candidate), "the number of ranks");
	for (int rank = 0; rank < limit && !result; rank++) {
		const struct run_rank *left = run_model_rank(reference, rank);
		const struct run_rank *right = run_model_rank(candidate, rank);

		if (left && right)
			result = compare_rank(diff, left, right);
		else if (left || right)
			result = report_numbers(diff, rank, "rank", left != NULL, right != NULL,
						"the rank is in one run only");
	}
	return result;
}
