// SPDX-License-Identifier: MIT
/* Rule sets in memory, in words, and as versioned JSON through jansson. */
#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "base/output_file.h"
#include "base/u64_map.h"
#include "rules.h"

static const char *const relation_names[] = {
	NULL,
	"Consistent",
	"APIArg",
	"APIOutput",
	"APISequence",
	"EventContain",
	"ParametersUpdated",
	"ScalarsSteady",
	"FrozenUnchanged",
	"TrainableUpdated",
	"EvalModeRespected",
	"OnePrecision",
	"TrainOverrideRan",
	"InitialisedOnce",
};

/* A rule with its description, for sorting. */
struct described_rule {
	struct rule rule;
	char text[RULE_TEXT_SIZE];
};

static int compare_described(const void *a, const void *b)
{
	const struct described_rule *left = a, *right = b;

	if (left->rule.relation != right->rule.relation)
		return left->rule.relation < right->rule.relation ? -1 : 1;
	return strcmp(left->text, right->text);
}

int rule_set_sort(struct rule_set *set)
{
	struct described_rule *described = calloc(set->count ? set->count : 1, sizeof(*described));

	if (!described)
		return -ENOMEM;
	for (size_t i = 0; i < set->count; i++) {
		described[i].rule = set->rules[i];
		rule_describe(&set->rules[i], described[i].text, sizeof(described[i].text));
	}
	qsort(described, set->count, sizeof(*described), compare_described);
	for (size_t i = 0; i < set->count; i++)
		set->rules[i] = described[i].rule;
	free(described);
	return 0;
}

const char *rule_relation_name(uint32_t relation)
{
	if (relation >= 1 && relation <= RELATION_LAST)
		return relation_names[relation];
	return "unknown";
}

const char *rule_scope_name(uint32_t scope)
{
	return scope == RULE_SCOPE_USED ? "used" : "all";
}

const char *rule_used_name(const struct rule *rule)
{
	if (rule->scope != RULE_SCOPE_USED)
		return NULL;
	return rule->relation == RELATION_API_SEQUENCE ? rule->first.name : NULL;
}

static uint32_t relation_from_name(const char *name)
{
	for (uint32_t i = 1; i <= RELATION_LAST; i++)
		if (strcmp(relation_names[i], name) == 0)
			return i;
	return 0;
}

struct rule_set *rule_set_new(void)
{
	struct rule_set *set = calloc(1, sizeof(*set));

	if (!set)
		return NULL;
	set->pool = string_pool_new();
	if (!set->pool) {
		free(set);
		return NULL;
	}
	return set;
}

void rule_set_free(struct rule_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->source_count; i++)
		free(set->sources[i]);
	free(set->sources);
	free(set->rules);
	string_pool_free(set->pool);
	free(set);
}

int rule_set_add(struct rule_set *set, const struct rule *rule)
{
	if (growable_array_room_for_one((void **)&set->rules, set->count, &set->capacity,
					sizeof(*set->rules)))
		return -ENOMEM;
	set->rules[set->count++] = *rule;
	return 0;
}

int rule_set_add_source(struct rule_set *set, const char *path)
{
	if (growable_array_room_for_one((void **)&set->sources, set->source_count,
					&set->source_capacity, sizeof(*set->sources)))
		return -ENOMEM;
	set->sources[set->source_count] = strdup(path);
	if (!set->sources[set->source_count])
		return -ENOMEM;
	set->source_count++;
	return 0;
}

static size_t describe_precondition(const struct precondition *precondition, char *text,
				    size_t size)
{
	size_t used = 0;

	for (uint32_t g = 0; g < precondition->group_count && used < size; g++) {
		const struct precondition_group *group = &precondition->groups[g];

		used += (size_t)snprintf(text + used, size - used, "%s", g ? " or " : " when ");
		for (uint32_t c = 0; c < group->clause_count && used < size; c++) {
			const struct precondition_clause *clause = &group->clauses[c];

			if (clause->type == CLAUSE_EXIST)
				used += (size_t)snprintf(text + used, size - used, "%s%s is known",
							 c ? " and " : "", clause->variable);
			else if (clause->type == CLAUSE_CONSISTENT)
				used += (size_t)snprintf(text + used, size - used,
							 "%s%s is the same on both sides",
							 c ? " and " : "", clause->variable);
			else if (clause->type == CLAUSE_UNEQUAL)
				used += (size_t)snprintf(text + used, size - used,
							 "%s%s differs between the sides",
							 c ? " and " : "", clause->variable);
			else
				used += (size_t)snprintf(text + used, size - used, "%s%s = %s",
							 c ? " and " : "", clause->variable,
							 clause->value);
		}
	}
	return used;
}

void rule_describe(const struct rule *rule, char *text, size_t size)
{
	size_t used = 0;

	switch (rule->relation) {
	case RELATION_CONSISTENT:
		if (rule->event.kind == INFER_EVENT_STEP) {
			used = (size_t)snprintf(text, size,
						"the %s of a step (in-place operators and their "
						"scalars, and what the optimizer's tensors held "
						"before them) agree across the ranks of the job",
						rule->field);
			break;
		}
		used = (size_t)snprintf(text, size,
					"%s of %s agrees across ranks (same communicator and "
					"sequence number, or same step and occurrence)",
					rule->field, rule->event.name);
		break;
	case RELATION_API_ARG:
	case RELATION_API_OUTPUT:
		if (rule->distinct)
			used = (size_t)snprintf(
				text, size,
				"%s of %s differs across ranks (same communicator and "
				"sequence number, or same step and occurrence)",
				rule->field, rule->event.name);
		else
			used = (size_t)snprintf(text, size, "%s of %s is always %s", rule->field,
						rule->event.name, rule->value);
		break;
	case RELATION_API_SEQUENCE:
		used = (size_t)snprintf(text, size, "in every step with %s, %s comes first",
					rule->event.name, rule->first.name);
		break;
	case RELATION_EVENT_CONTAIN:
		if (rule->value)
			used = (size_t)snprintf(text, size, "every %s contains %s exactly %s times",
						rule->event.name, rule->child.name, rule->value);
		else
			used = (size_t)snprintf(text, size, "every %s contains %s",
						rule->event.name, rule->child.name);
		break;
	case RELATION_PARAMETERS_UPDATED:
		used = (size_t)snprintf(
			text, size,
			"in every step, every weight the forward reads (linear, conv, "
			"embedding) is changed by %s",
			rule->event.name);
		break;
	case RELATION_FROZEN_UNCHANGED:
		used = (size_t)snprintf(text, size,
					"in every step, %s changes no weight the forward reads "
					"frozen (requires_grad False)",
					rule->event.name);
		break;
	case RELATION_TRAINABLE_UPDATED:
		used = (size_t)snprintf(
			text, size,
			"in every step where %s changes a weight the forward reads, "
			"it changes every one read trainable (requires_grad True), "
			"outside a job of several ranks",
			rule->event.name);
		break;
	case RELATION_EVAL_MODE_RESPECTED:
		used = (size_t)snprintf(text, size,
					"in an evaluation phase (eval(), then training again), %s "
					"runs as in evaluation (%s = False)",
					rule->event.name, rule->field);
		break;
	case RELATION_ONE_PRECISION:
		used = (size_t)snprintf(
			text, size,
			"in every step, every %s computes in one dtype (its weight's, "
			"in %s; under autocast, that of the call on the cast weight)",
			rule->event.name, rule->field);
		break;
	case RELATION_TRAIN_OVERRIDE_RAN:
		used = (size_t)snprintf(text, size,
					"every %s in training runs after the module's own train() "
					"override, if its class has one, was run by a train() or "
					"eval() call",
					rule->event.name);
		break;
	case RELATION_INITIALISED_ONCE:
		used = (size_t)snprintf(
			text, size,
			"no initialiser (the first Python function outside torch "
			"that calls %s on a parameter) sets a parameter again along "
			"another call path before an optimizer step",
			rule->event.name);
		break;
	case RELATION_SCALARS_STEADY:
		used = (size_t)snprintf(
			text, size,
			"in every step, %s with %s = %s applies the scalars of its previous "
			"step (learning rate, momentum, ...) when a state is loaded into the "
			"optimizer (a resume), in a process that runs no learning-rate scheduler",
			rule->event.name, rule->field, rule->value);
		break;
	default:
		used = (size_t)snprintf(text, size, "unknown relation");
	}
	if (used < size)
		used += describe_precondition(&rule->precondition, text + used, size - used);
	if (rule->scope == RULE_SCOPE_USED && rule->relation == RELATION_EVENT_CONTAIN &&
	    used < size)
		snprintf(text + used, size - used, " (in a process whose %s has held %s)",
			 rule->event.name, rule->child.name);
	else if (rule_used_name(rule) && used < size)
		snprintf(text + used, size - used, " (in a process that calls %s)",
			 rule_used_name(rule));
}

static const char *kind_name(uint32_t kind)
{
	return kind == INFER_EVENT_NCCL ? "nccl" : kind == INFER_EVENT_STEP ? "step" : "python";
}

static json_t *descriptor_json(const struct rule_descriptor *descriptor)
{
	return json_pack("{s:s, s:s}", "kind", kind_name(descriptor->kind), "name",
			 descriptor->name);
}

static json_t *precondition_json(const struct precondition *precondition)
{
	json_t *groups = json_array();

	for (uint32_t g = 0; g < precondition->group_count; g++) {
		json_t *clauses = json_array();

		for (uint32_t c = 0; c < precondition->groups[g].clause_count; c++) {
			const struct precondition_clause *clause =
				&precondition->groups[g].clauses[c];

			if (clause->type != CLAUSE_CONSTANT)
				json_array_append_new(
					clauses, json_pack("{s:s, s:s}", "clause",
							   precondition_clause_name(clause->type),
							   "variable", clause->variable));
			else
				json_array_append_new(
					clauses, json_pack("{s:s, s:s, s:s}", "clause", "constant",
							   "variable", clause->variable, "value",
							   clause->value));
		}
		json_array_append_new(groups, clauses);
	}
	return groups;
}

int rule_set_save(const struct rule_set *set, const char *path, char *error, size_t size)
{
	json_t *root = json_object(), *rules = json_array(), *sources = json_array();
	struct output_file out;
	int failed;

	for (size_t i = 0; i < set->source_count; i++)
		json_array_append_new(sources, json_string(set->sources[i]));
	for (size_t i = 0; i < set->count; i++) {
		const struct rule *rule = &set->rules[i];
		char words[1024];
		json_t *object = json_object();

		rule_describe(rule, words, sizeof(words));
		json_object_set_new(object, "relation",
				    json_string(rule_relation_name(rule->relation)));
		json_object_set_new(object, "event", descriptor_json(&rule->event));
		if (rule->relation == RELATION_API_SEQUENCE)
			json_object_set_new(object, "first", descriptor_json(&rule->first));
		if (rule->relation == RELATION_EVENT_CONTAIN)
			json_object_set_new(object, "child", descriptor_json(&rule->child));
		if (rule->field)
			json_object_set_new(object, "field", json_string(rule->field));
		if (rule->value)
			json_object_set_new(object, "value", json_string(rule->value));
		if (rule->distinct)
			json_object_set_new(object, "distinct", json_true());
		json_object_set_new(object, "precondition", precondition_json(&rule->precondition));
		json_object_set_new(object, "passing", json_integer((json_int_t)rule->passing));
		json_object_set_new(object, "failing", json_integer((json_int_t)rule->failing));
		json_object_set_new(object, "scope", json_string(rule_scope_name(rule->scope)));
		json_object_set_new(object, "pipelines", json_integer(rule->pipelines));
		json_object_set_new(object, "text", json_string(words));
		json_array_append_new(rules, object);
	}
	json_object_set_new(root, "format", json_string(RULES_FORMAT_NAME));
	json_object_set_new(root, "version", json_integer(RULES_FORMAT_VERSION));
	json_object_set_new(root, "sources", sources);
	json_object_set_new(root, "rules", rules);
	if (output_file_open(&out, path, 0, error, size)) {
		json_decref(root);
		return -1;
	}
	failed = json_dumpf(root, out.stream, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (failed)
		snprintf(error, size, "cannot write the rules to %s: %s", path, strerror(errno));
	if (output_file_close(&out, !failed, failed ? NULL : error, size))
		failed = 1;
	return failed ? -1 : 0;
}

/* The invariant a rule states, without its evidence; strings are interned, so pointers compare. */
static uint64_t rule_identity_hash(const struct rule *rule)
{
	const struct precondition *precondition = &rule->precondition;
	uint64_t hash = FNV1A_OFFSET_BASIS;

	hash = fnv1a_add_u64(hash, rule->relation);
	hash = fnv1a_add_u64(hash, ((uint64_t)rule->event.kind << 32) | rule->scope);
	hash = fnv1a_add_u64(hash, (uintptr_t)rule->event.name);
	hash = fnv1a_add_u64(hash, (uintptr_t)rule->first.name);
	hash = fnv1a_add_u64(hash, (uintptr_t)rule->child.name);
	hash = fnv1a_add_u64(hash, (uintptr_t)rule->field);
	hash = fnv1a_add_u64(hash, (uintptr_t)rule->value);
	hash = fnv1a_add_u64(hash, precondition->group_count);
	for (uint32_t g = 0; g < precondition->group_count; g++)
		for (uint32_t c = 0; c < precondition->groups[g].clause_count; c++) {
			const struct precondition_clause *clause =
				&precondition->groups[g].clauses[c];

			hash = fnv1a_add_u64(hash, clause->type);
			hash = fnv1a_add_u64(hash, (uintptr_t)clause->variable);
			hash = fnv1a_add_u64(hash, (uintptr_t)clause->value);
		}
	return hash;
}

static bool descriptors_equal(const struct rule_descriptor *left,
			      const struct rule_descriptor *right)
{
	return left->kind == right->kind && left->name == right->name;
}

static bool preconditions_equal(const struct precondition *left, const struct precondition *right)
{
	if (left->group_count != right->group_count)
		return false;
	for (uint32_t g = 0; g < left->group_count; g++) {
		const struct precondition_group *one = &left->groups[g], *other = &right->groups[g];

		if (one->clause_count != other->clause_count)
			return false;
		for (uint32_t c = 0; c < one->clause_count; c++)
			if (one->clauses[c].type != other->clauses[c].type ||
			    one->clauses[c].variable != other->clauses[c].variable ||
			    one->clauses[c].value != other->clauses[c].value)
				return false;
	}
	return true;
}

bool rules_state_the_same(const struct rule *left, const struct rule *right)
{
	return left->relation == right->relation && left->scope == right->scope &&
	       left->distinct == right->distinct && left->field == right->field &&
	       left->value == right->value && descriptors_equal(&left->event, &right->event) &&
	       descriptors_equal(&left->first, &right->first) &&
	       descriptors_equal(&left->child, &right->child) &&
	       preconditions_equal(&left->precondition, &right->precondition);
}

int rule_set_drop_repeats(struct rule_set *set)
{
	struct u64_map first_of; /* identity hash -> index + 1 of the first rule with it */
	size_t kept = 0;

	u64_map_init(&first_of);
	for (size_t i = 0; i < set->count; i++) {
		uint64_t hash = rule_identity_hash(&set->rules[i]);
		uintptr_t first = (uintptr_t)u64_map_get(&first_of, hash);

		if (first && rules_state_the_same(&set->rules[first - 1], &set->rules[i]))
			continue;
		set->rules[kept] = set->rules[i];
		if (!first && u64_map_put(&first_of, hash, (void *)(uintptr_t)(kept + 1))) {
			u64_map_free(&first_of);
			return -ENOMEM;
		}
		kept++;
	}
	u64_map_free(&first_of);
	set->repeated_count += set->count - kept;
	set->count = kept;
	return 0;
}

static int descriptor_load(struct rule_set *set, json_t *object, struct rule_descriptor *out)
{
	const char *kind = NULL, *name = NULL;

	if (json_unpack(object, "{s:s, s:s}", "kind", &kind, "name", &name))
		return -1;
	if (strcmp(kind, "nccl") == 0)
		out->kind = INFER_EVENT_NCCL;
	else if (strcmp(kind, "python") == 0)
		out->kind = INFER_EVENT_PYTHON;
	else if (strcmp(kind, "step") == 0)
		out->kind = INFER_EVENT_STEP;
	else
		return -1;
	out->name = string_pool_intern(set->pool, name);
	return out->name ? 0 : -1;
}

static int precondition_load(struct rule_set *set, json_t *groups, struct precondition *out)
{
	size_t g, c;
	json_t *clauses, *clause;

	memset(out, 0, sizeof(*out));
	if (!json_is_array(groups) || json_array_size(groups) > PRECONDITION_GROUPS_MAX)
		return -1;
	json_array_foreach(groups, g, clauses)
	{
		struct precondition_group *group = &out->groups[g];

		if (!json_is_array(clauses) || json_array_size(clauses) > PRECONDITION_CLAUSES_MAX)
			return -1;
		json_array_foreach(clauses, c, clause)
		{
			struct precondition_clause *into = &group->clauses[c];
			const char *type = NULL, *variable = NULL, *value = NULL;

			if (json_unpack(clause, "{s:s, s:s, s?s}", "clause", &type, "variable",
					&variable, "value", &value))
				return -1;
			into->type = precondition_clause_type(type);
			if (into->type == CLAUSE_CONSTANT) {
				if (!value)
					return -1;
				into->value = string_pool_intern(set->pool, value);
			} else if (!into->type) {
				return -1;
			}
			into->variable = string_pool_intern(set->pool, variable);
		}
		group->clause_count = (uint32_t)json_array_size(clauses);
	}
	out->group_count = (uint32_t)json_array_size(groups);
	return 0;
}

/*
 * An evidence count ("passing", "failing", "pipelines"): absent is 0, else a
 * whole number from 0 to 'max'; 'why' says what else it was.
 */
static int count_load(json_t *value, const char *key, uint64_t max, uint64_t *out, char *why,
		      size_t size)
{
	char *text;

	*out = 0;
	if (!value)
		return 0;
	if (json_is_integer(value) && json_integer_value(value) >= 0 &&
	    (uint64_t)json_integer_value(value) <= max) {
		*out = (uint64_t)json_integer_value(value);
		return 0;
	}
	text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
	if (max == INT64_MAX)
		snprintf(why, size, "\"%s\" is %.40s, not a count (a whole number, 0 or more)", key,
			 text ? text : "not a number");
	else
		snprintf(why, size, "\"%s\" is %.40s, not a count (a whole number from 0 to %llu)",
			 key, text ? text : "not a number", (unsigned long long)max);
	free(text);
	return -1;
}

/* An EventContain's "value": how many times the child occurs, a whole number of 1 or more. */
static int contain_count_valid(const char *value, char *why, size_t size)
{
	size_t length = strspn(value, "0123456789");
	char *end;

	errno = 0;
	if (length && value[length] == '\0' && value[0] != '0' &&
	    strtoull(value, &end, 10) <= UINT32_MAX && errno == 0)
		return 0;
	snprintf(why, size,
		 "EventContain's \"value\" is \"%.40s\", not a count (how many times the child "
		 "occurs: a whole number from 1 to %u, as text)",
		 value, UINT32_MAX);
	return -1;
}

/* One rule; -1 when malformed, 'why' filled when a sentence says more than "malformed". */
static int rule_load(struct rule_set *set, json_t *object, struct rule *rule, char *why,
		     size_t size)
{
	const char *relation = NULL, *field = NULL, *value = NULL, *scope = "all";
	json_t *event = NULL, *first = NULL, *child = NULL, *precondition = NULL;
	json_t *passing = NULL, *failing = NULL, *pipelines = NULL;
	uint64_t pipeline_count;
	int distinct = 0;

	memset(rule, 0, sizeof(*rule));
	if (json_unpack(object, "{s:s, s:o, s?o, s?o, s?s, s?s, s?b, s:o, s?o, s?o, s?s, s?o}",
			"relation", &relation, "event", &event, "first", &first, "child", &child,
			"field", &field, "value", &value, "distinct", &distinct, "precondition",
			&precondition, "passing", &passing, "failing", &failing, "scope", &scope,
			"pipelines", &pipelines))
		return -1;
	if (count_load(passing, "passing", INT64_MAX, &rule->passing, why, size) ||
	    count_load(failing, "failing", INT64_MAX, &rule->failing, why, size) ||
	    count_load(pipelines, "pipelines", UINT32_MAX, &pipeline_count, why, size))
		return -1;
	rule->pipelines = (uint32_t)pipeline_count;
	if (strcmp(scope, "all") == 0)
		rule->scope = RULE_SCOPE_ALL;
	else if (strcmp(scope, "used") == 0)
		rule->scope = RULE_SCOPE_USED;
	else
		return -1;
	rule->relation = relation_from_name(relation);
	if (!rule->relation || descriptor_load(set, event, &rule->event) ||
	    precondition_load(set, precondition, &rule->precondition))
		return -1;
	if (rule->relation == RELATION_API_SEQUENCE) {
		if (!first || descriptor_load(set, first, &rule->first))
			return -1;
	} else if (rule->relation == RELATION_EVENT_CONTAIN) {
		if (!child || descriptor_load(set, child, &rule->child))
			return -1;
		if (value && contain_count_valid(value, why, size))
			return -1;
	} else if (!field && rule->relation != RELATION_PARAMETERS_UPDATED &&
		   rule->relation != RELATION_FROZEN_UNCHANGED &&
		   rule->relation != RELATION_TRAINABLE_UPDATED &&
		   rule->relation != RELATION_TRAIN_OVERRIDE_RAN &&
		   rule->relation != RELATION_INITIALISED_ONCE) {
		return -1;
	}
	rule->distinct = rule->relation == RELATION_API_ARG && distinct;
	if ((rule->relation == RELATION_API_ARG || rule->relation == RELATION_API_OUTPUT ||
	     rule->relation == RELATION_SCALARS_STEADY) &&
	    !value && !rule->distinct)
		return -1;
	rule->field = field ? string_pool_intern(set->pool, field) : NULL;
	rule->value = value ? string_pool_intern(set->pool, value) : NULL;
	return 0;
}

struct rule_set *rule_set_load(const char *path, char *error, size_t size)
{
	json_error_t json_error;
	json_t *root, *rules, *item;
	const char *format = NULL;
	json_int_t version = 0;
	struct rule_set *set;
	struct stat status;
	size_t i;

	if (stat(path, &status) == 0 && S_ISDIR(status.st_mode)) {
		snprintf(error, size,
			 "%s is a directory, not a rules file: give the file "
			 "'tcheck-bpf infer -o' wrote",
			 path);
		return NULL;
	}
	root = json_load_file(path, 0, &json_error);

	if (!root && json_error.line < 1) {
		/* Not opened or not read: jansson's text already names the file and why. */
		snprintf(error, size, "cannot read the rules file %s: %s", path, json_error.text);
		return NULL;
	}
	if (!root) {
		snprintf(error, size,
			 "the rules file %s is not valid JSON: %s (line %d, column %d)", path,
			 json_error.text, json_error.line, json_error.column);
		return NULL;
	}
	if (json_unpack(root, "{s:s, s:I, s:o}", "format", &format, "version", &version, "rules",
			&rules) ||
	    strcmp(format, RULES_FORMAT_NAME) != 0 || !json_is_array(rules)) {
		snprintf(error, size,
			 "%s is not a tcheck-bpf rules file (it needs \"format\": \"%s\", "
			 "\"version\" and \"rules\"); make one with 'tcheck-bpf infer'",
			 path, RULES_FORMAT_NAME);
		json_decref(root);
		return NULL;
	}
	if (version < RULES_FORMAT_OLDEST_VERSION || version > RULES_FORMAT_VERSION) {
		snprintf(error, size,
			 "%s has rules format version %lld, this tcheck-bpf reads versions %d to "
			 "%d: "
			 "infer the rules again with this version",
			 path, (long long)version, RULES_FORMAT_OLDEST_VERSION,
			 RULES_FORMAT_VERSION);
		json_decref(root);
		return NULL;
	}
	set = rule_set_new();
	if (!set) {
		snprintf(error, size, "out of memory loading %s", path);
		json_decref(root);
		return NULL;
	}
	json_array_foreach(rules, i, item)
	{
		struct rule rule;
		char why[256] = "";

		if (rule_load(set, item, &rule, why, sizeof(why)) || rule_set_add(set, &rule)) {
			if (why[0])
				snprintf(error, size, "rule %zu of %s: %s", i + 1, path, why);
			else
				snprintf(error, size,
					 "rule %zu of %s is malformed (see docs/rules-format.md)",
					 i + 1, path);
			rule_set_free(set);
			json_decref(root);
			return NULL;
		}
	}
	json_decref(root);
	if (!set->count) {
		snprintf(error, size,
			 "%s holds no rules: nothing would be checked; infer rules from traces "
			 "of healthy programs with 'tcheck-bpf infer'",
			 path);
		rule_set_free(set);
		return NULL;
	}
	if (rule_set_drop_repeats(set)) {
		snprintf(error, size, "out of memory loading %s", path);
		rule_set_free(set);
		return NULL;
	}
	return set;
}
