/* SPDX-License-Identifier: MIT */
/*
 * Invariants (rules): a relation over event descriptors, the precondition
 * under which it holds and the evidence for it; kept in a rule set that
 * is saved and loaded as versioned JSON (docs/rules-format.md).
 */
#ifndef TCHECK_RULES_H
#define TCHECK_RULES_H

#include <stddef.h>
#include <stdint.h>

#include "infer_event.h"
#include "precondition.h"

#define RULES_FORMAT_NAME "tcheck-bpf-rules"
#define RULES_FORMAT_VERSION 9

/* Room for a rule in words (rule_describe). */
#define RULE_TEXT_SIZE 1024
/*
 * The oldest version still read: version 1 has no EventContain and no peer
 * clauses, version 2 no scope (its rules apply to every process), version
 * 3 no ScalarsSteady, version 4 no FrozenUnchanged or TrainableUpdated,
 * version 5 no EvalModeRespected, version 6 no OnePrecision, version 7 no
 * TrainOverrideRan, version 8 no InitialisedOnce.
 */
#define RULES_FORMAT_OLDEST_VERSION 1

enum rule_relation {
	RELATION_CONSISTENT = 1,    /* a field agrees across the ranks of a group */
	RELATION_API_ARG = 2,	    /* an argument is constant */
	RELATION_API_OUTPUT = 3,    /* a result is constant */
	RELATION_API_SEQUENCE = 4,  /* within a step, 'first' is entered before 'event' */
	RELATION_EVENT_CONTAIN = 5, /* 'event' (a call or a step) contains 'child' (n times) */
	/* every weight a step's forward reads is changed by 'event', the optimizer's step */
	RELATION_PARAMETERS_UPDATED = 6,
	/* 'event' (an optimizer's step of the implementation 'value') applies its scalars steadily
	 */
	RELATION_SCALARS_STEADY = 7,
	/* no weight a step's forward reads frozen (requires_grad False) is changed by 'event' */
	RELATION_FROZEN_UNCHANGED = 8,
	/* once 'event' changes a weight the forward reads, it changes every one read trainable */
	RELATION_TRAINABLE_UPDATED = 9,
	/* in an evaluation phase, 'event' (an operator with a training flag) runs as in evaluation
	 */
	RELATION_EVAL_MODE_RESPECTED = 10,
	/* in every step, 'event' (an operator reading a weight) computes in one dtype */
	RELATION_ONE_PRECISION = 11,
	/* 'event' (a module call in training) runs after its class's train() override ran */
	RELATION_TRAIN_OVERRIDE_RAN = 12,
	/* no initialiser sets a parameter twice, by 'event' (zero_), before an optimizer step */
	RELATION_INITIALISED_ONCE = 13,
	RELATION_LAST = RELATION_INITIALISED_ONCE,
};

/*
 * Where a rule applies (docs/rules-format.md, "Scope"): to every process, for
 * what every reference program does; or to a process only once it has made
 * the calls the rule names, for what only some programs do.
 */
enum rule_scope {
	RULE_SCOPE_ALL = 0,
	RULE_SCOPE_USED = 1,
};

/* Events described by kind and name, never by identity. */
struct rule_descriptor {
	uint32_t kind;	  /* enum infer_event_kind */
	const char *name; /* interned */
};

struct rule {
	uint32_t relation;
	struct rule_descriptor event;
	struct rule_descriptor first; /* API_SEQUENCE only */
	struct rule_descriptor child; /* EVENT_CONTAIN only */
	const char *field; /* CONSISTENT, API_ARG, API_OUTPUT, SCALARS_STEADY, ONE_PRECISION */
	/* API_ARG, API_OUTPUT: the constant; EVENT_CONTAIN: the count or NULL;
	 * SCALARS_STEADY: the implementation */
	const char *value;
	/* API_ARG without a value: the field differs between the events of every group. */
	uint32_t distinct;
	struct precondition precondition;
	uint64_t passing;
	uint64_t failing;
	uint32_t scope;	    /* enum rule_scope */
	uint32_t pipelines; /* how many reference programs' traces support it; 0 unknown */
};

struct rule_set {
	struct string_pool *pool;
	struct rule *rules;
	size_t count;
	size_t capacity;
	char **sources; /* the traces the rules were inferred from */
	size_t source_count, source_capacity;
	size_t repeated_count; /* rules dropped on loading: they repeated an earlier one */
};

struct rule_set *rule_set_new(void);
void rule_set_free(struct rule_set *set);
int rule_set_add(struct rule_set *set, const struct rule *rule);
int rule_set_add_source(struct rule_set *set, const char *path);

/*
 * Orders the rules by relation, then by their description, so that the
 * same traces always give the same file. 0 or -ENOMEM.
 */
int rule_set_sort(struct rule_set *set);

const char *rule_relation_name(uint32_t relation);
const char *rule_scope_name(uint32_t scope);
/*
 * The call a process must have made before an APISequence of scope "used"
 * applies to it (its first call); NULL for other rules. An EventContain of
 * scope "used" waits instead for the process's parent to hold its child
 * (contain_checker.h).
 */
const char *rule_used_name(const struct rule *rule);

/* The invariant in words, with its precondition. */
void rule_describe(const struct rule *rule, char *text, size_t size);

/* Writes the rule set as JSON; 0, or -1 with 'error' filled. */
int rule_set_save(const struct rule_set *set, const char *path, char *error, size_t size);

/*
 * Whether two rules state the same: the same relation, events, field,
 * value, precondition and scope (the evidence counts aside).
 */
bool rules_state_the_same(const struct rule *left, const struct rule *right);

/*
 * Drops every rule that states what an earlier one states (the same
 * relation, events, field, value, precondition and scope; the evidence
 * counts aside), keeping the first; counted in repeated_count. 0 or -ENOMEM.
 */
int rule_set_drop_repeats(struct rule_set *set);

/*
 * Loads a rule set; NULL with 'error' filled when the file cannot be read,
 * is not a rules file, has an unknown version, a malformed rule (a count
 * that is negative or not a number among them) or no rule at all. Repeated
 * rules are dropped (repeated_count says how many).
 */
struct rule_set *rule_set_load(const char *path, char *error, size_t size);

#endif /* TCHECK_RULES_H */
