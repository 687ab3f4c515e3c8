/* SPDX-License-Identifier: MIT */
/*
 * What each rank of a data-parallel job does to its replica in a step: the
 * in-place update operators (those naming the tensor they change,
 * "tensor:self") a process ran in one step, with their scalar arguments,
 * as one signature ("aten::add_.Tensor arg:alpha=-0.05 x4, aten::mul_.Tensor
 * x8"), followed by a digest of what the tensors the optimizer's step
 * updates (parameters and their momentum or moment buffers) held at the
 * entry of their updates, where the trace has their contents ("digest:self",
 * host memory only). Every replica applies the same updates with the same
 * scalars to the same values, so the signatures of one step agree across
 * the ranks of a job; a rank that clips, skips, rescales or zeroes alone, or
 * whose parameters were changed behind the optimizer's back (a checkpoint
 * loaded on one rank), shows as a step whose signature differs from its
 * peers'. Rules name it as Consistent on the field "updates" of the step.
 * An update of a 0-dim tensor counts only inside the optimizer's step (its
 * step counter): outside it, it is a number the program computed (a
 * metric's mean on rank 0 alone), no part of the replica.
 *
 * The ranks of a job are the processes of one source (trace) and job size
 * whose widest communicator (NCCL's, or c10d's over gloo: the job's world)
 * is the same: two jobs of the same size on one node, watched by one agent,
 * are two jobs, not one. A process whose communicators are not seen yet is
 * grouped by its source and size alone.
 *
 * Only replicas are compared. A step also names the shapes of the tensors
 * its optimizer updated, in order (RANK_UPDATES_SHARD_FIELD, host memory
 * only): ranks whose optimizers updated tensors of other shapes hold other
 * shards of a sharded optimizer (ZeRO-style: each rank updates its own part
 * of the parameters by design). A job step where any two ranks hold other
 * shards is neither an example nor checked: ranks whose shards happen to
 * have the same shapes (two equal layers owned by two ranks) are not told
 * apart from replicas by their shapes alone. A rank whose optimizer did not step at all
 * still differs from its peers.
 *
 * Nor are ranks of other parts of a model with tensors of equal shapes (the
 * stages of a pipeline, the shards of a tensor-parallel layer) replicas: a
 * rank's class is what the parameters its optimizer updated (the tensors
 * that require grad) held at the first step of its job judged with it, and
 * a rank is compared with the first rank of its class to join the step: a
 * replica that diverged later is still found, a stage is not compared with
 * another stage, and a rank whose class no other rank shares (a replica
 * that had diverged before the tool arrived) is not compared at all. Where
 * the trace has no contents (device memory), ranks are compared with the
 * first as before.
 *
 * Nor do replicas that train alone agree: local SGD and federated
 * averaging all-reduce the parameters every few steps, and between two
 * averagings each rank's replica moves with its own data (its momentum
 * buffers for good). Replicas agree after every step only where their
 * ranks communicate in every step (a data-parallel job all-reduces the
 * gradients each step consumes). A process's steps from the first in
 * which it made no collective on (the step its collectives carry) are
 * neither examples nor checked.
 */
#ifndef TCHECK_RANK_UPDATES_H
#define TCHECK_RANK_UPDATES_H

#include <stdbool.h>
#include <stdint.h>

#include "base/u64_map.h"
#include "infer_event.h"
#include "rules.h"

#define RANK_UPDATES_FIELD "updates"
/* The shapes the optimizer's step updated: a tensor field, never a value or precondition. */
#define RANK_UPDATES_SHARD_FIELD "shape:updated"
/* What the parameters held as the optimizer's step updated them: a tensor field. */
#define RANK_UPDATES_PARAMETERS_FIELD "digest:parameters"
/* Where a signature's digest of the optimizer's tensors starts. */
#define RANK_UPDATES_CONTENTS_MARK "; contents of the "

struct rank_updates {
	struct string_pool *pool;
	const char *step_name;		   /* interned STEP_PARENT_NAME */
	const char *field_name;		   /* interned RANK_UPDATES_FIELD */
	const char *shard_field_name;	   /* interned RANK_UPDATES_SHARD_FIELD */
	const char *parameters_field_name; /* interned RANK_UPDATES_PARAMETERS_FIELD */
	struct u64_map processes;	   /* (source, pid) -> the step being gathered */
	struct u64_map groups; /* (source, job size, world, step) -> the ranks' steps so far */
	struct u64_map jobs;   /* (source, job size) -> the ranks seen (struct rank_job) */
	struct u64_map worlds; /* (source, pid) -> its widest communicator (the job's world) */
	struct u64_map
		classes; /* (source, pid) -> its replica class (the contents it started from) */
};

/* Whether a rule is about this: Consistent on the field "updates" of the step. */
bool rule_checks_rank_updates(const struct rule *rule);

/*
 * Whether two ranks' steps ran the same updates with the same scalars on
 * tensors that held other values: replicas that diverged before the step.
 */
bool rank_updates_only_contents_differ(const struct infer_event *step,
				       const struct infer_event *peer);

/*
 * Notes a rank's step among the steps of the same job step: true when its
 * optimizer's step updated tensors of other shapes than the first rank
 * noted in '*seen' that updated any (shards, not replicas). A rank that
 * updated nothing in its step (an empty share) holds no shard to compare;
 * '*seen' starts NULL and keeps the first shard met, whichever rank's.
 */
bool rank_updates_note_shard(const char **seen, const struct infer_event *step);

/* 0 or -ENOMEM. */
int rank_updates_init(struct rank_updates *updates, struct string_pool *pool);
void rank_updates_free(struct rank_updates *updates);

/*
 * Whether an event counts: an update operator, or an optimizer's step, of a
 * rank in a job of two ranks or more.
 */
bool rank_updates_wants(const struct infer_event *event);

/*
 * Adds an event rank_updates_wants accepts (others are ignored). When it
 * opens a later step of its process, the step just finished is written to
 * 'finished' (kind INFER_EVENT_STEP, its signature as the field "updates",
 * the shapes its optimizer updated as RANK_UPDATES_SHARD_FIELD) and 1 is returned; else 0; -ENOMEM
 * when out of memory. A process's last step stays open: it may have been cut short.
 * 'cache' holds the caller's slots for the event's process (NULL: looked up
 * each time; u64_map_get_or_add_cached).
 */
struct rank_updates_cache {
	void *process; /* its steps so far */
	void *seen;    /* when it was last seen among its job's ranks */
	void *world;   /* its widest communicator */
};
int rank_updates_observe(struct rank_updates *updates, const struct infer_event *event,
			 struct rank_updates_cache *cache, struct infer_event *finished);

/* A rank's step whose signature differs from 'peer', the first rank's step of that job step. */
typedef void (*rank_updates_differs_fn)(void *context, const struct infer_event *step,
					const struct infer_event *peer);

/*
 * Joins a finished step to the other ranks' same step (same source and job
 * size). A step is judged once every rank of the job that this checker
 * sees has joined it (a node agent sees its node's ranks only; a rank
 * quiet for two minutes, one that ended, is not waited for), or once a
 * later step of the job has been judged (a rank that ended or lost the
 * step holds nothing up). As inference takes its examples: when any rank's
 * optimizer updated tensors of other shapes than the first's, the ranks
 * hold shards and none is compared; otherwise each rank's step whose
 * signature differs from the first's is passed to 'differs'. Returns 1 when
 * this rank was the last to join (the group is then judged and
 * forgotten), 0 when not, -ENOMEM.
 */
int rank_updates_join(struct rank_updates *updates, const struct infer_event *finished,
		      rank_updates_differs_fn differs, void *context);

/* Judges, as above, the steps some rank never joined (its step was lost, or the trace ended). */
void rank_updates_flush(struct rank_updates *updates, rank_updates_differs_fn differs,
			void *context);

#endif /* TCHECK_RANK_UPDATES_H */
