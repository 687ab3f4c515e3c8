/* SPDX-License-Identifier: MIT */
/*
 * The meta variables of one traced process (training step, stage) as they
 * changed over time. Records reach the daemon at their calls' returns, so
 * an event's step and stage are looked up at its entry time, not taken from
 * whatever was last seen. Needs no kernel.
 */
#ifndef TCHECK_PYTHON_META_H
#define TCHECK_PYTHON_META_H

#include <stdbool.h>
#include <stdint.h>

/* Changes remembered; older ones are folded into the state before them. */
#define PYTHON_META_CHANGES 64

struct python_meta_state {
	int32_t step;	/* training step, starting at 0 */
	uint32_t stage; /* enum trace_stage */
};

struct python_meta_change {
	uint64_t at_ns; /* CLOCK_MONOTONIC of the change */
	struct python_meta_state after;
};

struct python_meta_timeline {
	struct python_meta_state initial; /* before the oldest change remembered */
	struct python_meta_state current; /* after the newest */
	struct python_meta_change changes[PYTHON_META_CHANGES];
	uint32_t count; /* changes remembered */
	uint32_t next;	/* slot of the next change */
	/* The last step's end (once a step ended): its slot, and when its marker was entered. */
	bool step_ended;
	uint32_t step_end_slot;
	uint64_t step_end_entry_ns;
	/* The latest backward pass's entry (0: none seen). */
	uint64_t backward_entry_ns;
	/* A second optimizer's step is running in the step that ended: its end is pending. */
	bool continuing;
	/* The outermost step marker seen opening and not yet returned: its entry (0: none). */
	uint64_t open_marker_entry_ns;
	/* A marker nested in it returned: the step's end is held until the outer one returns. */
	bool nested_end_held;
};

void python_meta_init(struct python_meta_timeline *timeline);

/* The step advances (the step marker ended) at at_ns. */
void python_meta_advance_step(struct python_meta_timeline *timeline, uint64_t at_ns);

/*
 * The step marker entered at entry_ns returned at return_ns. A marker whose
 * span holds the marker that ended the last step is the same step seen from
 * outside (ZeroRedundancyOptimizer.step runs its local optimizer's step,
 * each a torch scope Optimizer.step#...): that step's end moves to this
 * return and no step is added. When the outer marker was seen opening
 * (python_meta_marker_opens), the inner one's end is held from the start,
 * so that what runs between the two returns (the shards' broadcasts) stays
 * in the step; otherwise it was already placed in the next step. So does a
 * marker that continues the last step (python_meta_marker_opens). Any other
 * marker advances the step.
 */
void python_meta_end_step(struct python_meta_timeline *timeline, uint64_t entry_ns,
			  uint64_t return_ns);

/*
 * A step marker opened at entry_ns (known before the operators it runs
 * arrive). When it opens after the last step's marker returned, with no
 * backward pass since, and that step's backward ran before its marker
 * rather than inside it (an LBFGS closure), it is a second optimizer of the
 * same step (a model's parameters split between two optimizers): the last
 * step's end is held until this marker returns, so that what it runs is in
 * that step, and python_meta_end_step moves the end there.
 */
void python_meta_marker_opens(struct python_meta_timeline *timeline, uint64_t entry_ns);

/* A backward pass entered at entry_ns (an end still held is placed there). */
void python_meta_note_backward(struct python_meta_timeline *timeline, uint64_t entry_ns);

/* The stage became stage (Module.training was set) at at_ns. */
void python_meta_set_stage(struct python_meta_timeline *timeline, uint64_t at_ns, uint32_t stage);

/* The state at at_ns: after the latest change made at or before it. */
struct python_meta_state python_meta_at(const struct python_meta_timeline *timeline,
					uint64_t at_ns);

#endif /* TCHECK_PYTHON_META_H */
