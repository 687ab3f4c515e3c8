/* SPDX-License-Identifier: MIT */
/*
 * Which calls each process has made: the names (interned) seen per process
 * of a pipeline, and the values some of their fields held. A rule about
 * calls only some programs make applies to a process only once it has made
 * them (docs/rules-format.md, "Scope").
 */
#ifndef TCHECK_PROCESS_USES_H
#define TCHECK_PROCESS_USES_H

#include <stdbool.h>

#include "base/u64_map.h"
#include "infer_event.h"

struct process_uses {
	/* FNV-1a of (pipeline, pid, name pointer) -> non-NULL; a 64-bit key, not compared again. */
	struct u64_map seen;
};

void process_uses_init(struct process_uses *uses);
void process_uses_free(struct process_uses *uses);

/* Notes that the event's process called the event's name; 0 or -ENOMEM. */
int process_uses_add(struct process_uses *uses, const struct infer_event *event);

/* Whether the process of 'event' has called 'name' (interned in the same pool). */
bool process_uses_name(const struct process_uses *uses, const struct infer_event *event,
		       const char *name);

/*
 * Notes that the event's process made the event's call with 'field' (an
 * interned name) at the value the event holds; 0 or -ENOMEM. Nothing is
 * noted for a field the event lacks.
 */
int process_uses_add_value(struct process_uses *uses, const struct infer_event *event,
			   const char *field);

/* Whether the process of 'event' has made a call of its name with 'field' = 'value' (interned). */
bool process_uses_value(const struct process_uses *uses, const struct infer_event *event,
			const char *field, const char *value);

#endif /* TCHECK_PROCESS_USES_H */
