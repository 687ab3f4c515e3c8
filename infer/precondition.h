/* SPDX-License-Identifier: MIT */
/*
 * Preconditions of an invariant: the condition on meta variables and
 * arguments under which it holds. Deduced from passing and failing
 * examples (an event, and for cross-rank relations a peer event of the
 * same group): the CONSTANT, CONSISTENT, UNEQUAL and EXIST clauses true
 * on every passing example, less those no failing example violates; safe
 * when every failing example violates the conjunction; else the passing
 * examples are split into groups by one variable, a disjunction of
 * conjunctions (bounded).
 */
#ifndef TCHECK_PRECONDITION_H
#define TCHECK_PRECONDITION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infer_event.h"

#define PRECONDITION_CLAUSES_MAX 8
#define PRECONDITION_GROUPS_MAX 4

enum precondition_clause_type {
	CLAUSE_CONSTANT = 1,   /* the variable has this value */
	CLAUSE_EXIST = 2,      /* the variable has a value */
	CLAUSE_CONSISTENT = 3, /* the event and its peer have the same value */
	CLAUSE_UNEQUAL = 4,    /* the event and its peer have different values */
};

struct precondition_clause {
	uint32_t type;
	const char *variable; /* interned */
	const char *value;    /* interned, CONSTANT only */
};

struct precondition_group {
	uint32_t clause_count;
	struct precondition_clause clauses[PRECONDITION_CLAUSES_MAX];
};

/* A disjunction of conjunctions; no group at all means "always". */
struct precondition {
	uint32_t group_count;
	struct precondition_group groups[PRECONDITION_GROUPS_MAX];
};

/*
 * Deduces a safe precondition separating 'passing' from 'failing'
 * examples; 'excluded' names a variable it may not use (the one the
 * invariant is about), or NULL. Returns 1 and fills 'out' when one was
 * found (no group when there is no failing example), 0 when none is safe
 * (the invariant is superficial), -1 when out of memory.
 */
int precondition_deduce(struct string_pool *pool, const struct infer_event *const *passing,
			size_t passing_count, const struct infer_event *const *failing,
			size_t failing_count, const char *excluded, struct precondition *out);

/*
 * The same over examples of two events: passing[i] with passing_peers[i]
 * (NULL for none; the array itself may be NULL). CONSISTENT and UNEQUAL
 * clauses compare an event with its peer and fail without one.
 */
int precondition_deduce_pairs(struct string_pool *pool, const struct infer_event *const *passing,
			      const struct infer_event *const *passing_peers, size_t passing_count,
			      const struct infer_event *const *failing,
			      const struct infer_event *const *failing_peers, size_t failing_count,
			      const char *excluded, struct precondition *out);

/* Whether a clause of the precondition reads 'variable' ("stage", "first_step"). */
bool precondition_reads(const struct precondition *precondition, const char *variable);

/* Whether the precondition holds for an event. */
int precondition_holds(struct string_pool *pool, const struct precondition *precondition,
		       const struct infer_event *event);

/* Whether it holds for an event and its peer (NULL for none). */
int precondition_holds_pair(struct string_pool *pool, const struct precondition *precondition,
			    const struct infer_event *event, const struct infer_event *peer);

/* The clause type's name in rules files ("constant", ...), and back (0: unknown). */
const char *precondition_clause_name(uint32_t type);
uint32_t precondition_clause_type(const char *name);

#endif /* TCHECK_PRECONDITION_H */
