/* SPDX-License-Identifier: MIT */
/*
 * What the recorder says, at its end, about the Python events it knows it
 * missed: calls, scopes and operators the kernel dropped, events of
 * processes whose Python was not followed, and those processes. Losses are
 * counted and said, never silent. The sentences need no kernel.
 */
#ifndef TCHECK_PYTHON_LOSSES_H
#define TCHECK_PYTHON_LOSSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "python/python_tracer.h"

#define PYTHON_LOSSES_SENTENCES 6

/* The probes' counts of Python events lost in the kernel, by cause. */
struct python_kernel_drops {
	uint64_t ring_full; /* TCHECK_COUNTER_PYTHON_DROPS */
	/* TCHECK_COUNTER_PYTHON_TOO_DEEP: calls of followed or not yet named code nested deeper
	   than the probe's stack of Python frames, and torch scopes deeper than its stack of scopes
	 */
	uint64_t too_deep;
};

/* The probes' counts as the counters array (TCHECK_COUNTER_*) holds them. */
struct python_kernel_drops python_kernel_drops_of(const uint64_t *counters);

/*
 * Fills sentences with one warning per kind of loss, each a sentence the
 * user can act on; returns how many.
 */
size_t python_losses_sentences(const struct python_tracer_losses *losses,
			       struct python_kernel_drops kernel,
			       char sentences[PYTHON_LOSSES_SENTENCES][320]);

/* The Python events the tracer knows it missed: all its losses and the kernel's. */
uint64_t python_losses_events(const struct python_tracer_losses *losses,
			      struct python_kernel_drops kernel);

/*
 * A call whose code object could not be named: a loss when its process has
 * ended (the tracer read it too late; said once per process, 'said'),
 * else a code object freed at once (a module body run at import).
 */
void python_losses_count_unnamed(struct python_tracer_losses *losses, uint32_t pid, bool *said);

/* An event of a process whose Python was not followed: counted, its pid kept. */
void python_losses_count_unfollowed(struct python_tracer_losses *losses, uint32_t pid);

/* Warns of each of the tracer's losses (python_tracer_get_losses; nothing when there was none). */
void python_losses_report(const struct python_tracer_losses *losses,
			  struct python_kernel_drops kernel);

#endif /* TCHECK_PYTHON_LOSSES_H */
