// SPDX-License-Identifier: MIT
/* The update operators of each rank's step as a signature, compared across the ranks of a job. */
#include "rank_updates.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fnv_hash.h"
#include "base/growable_array.h"
#include "event_contain.h"
#include "parameter_updates.h"

#define UPDATED_FIELD "tensor:self"
#define DIGEST_FIELD "digest:self"
#define SHAPE_FIELD "shape:self"
#define REQUIRES_GRAD_FIELD "requires_grad:self"
#define SCALAR_PREFIX "arg:"
/* Distinct (operator, scalars) pairs kept per step; more are marked, not listed. */
#define UPDATE_KINDS_MAX 32
/* Optimizer steps and updated tensors' digests kept per step; later ones are left out. */
#define OPTIMIZER_STEPS_MAX 4
#define DIGESTS_MAX 512
/* Updates of 0-dim tensors kept per step until its optimizer steps are known. */
#define SCALAR_UPDATES_MAX 64
#define SIGNATURE_SIZE 2048

struct update_kind {
	const char *what; /* interned "operator arg:x=v" */
	uint32_t count;
};

/* An updated tensor's contents at the entry of the operator that changes it, and its shape. */
struct update_digest {
	uint32_t tid;
	uint64_t entry_ns;
	const char *digest; /* interned, as the trace gave it; NULL when it has none */
	const char *shape;  /* "Float[16, 10]", or NULL */
	bool parameter;	    /* the tensor requires grad: a parameter, not the optimizer's state */
};

/* An update of a 0-dim tensor: part of the signature only inside an optimizer's step. */
struct scalar_update {
	const char *what; /* interned "operator arg:x=v" */
	uint32_t tid;
	uint64_t entry_ns;
};

/* The step of one process being gathered. */
struct process_updates {
	struct infer_event step;
	uint32_t kind_count;
	bool overflow;
	struct update_kind kinds[UPDATE_KINDS_MAX];
	uint32_t optimizer_step_count;
	struct infer_event optimizer_steps[OPTIMIZER_STEPS_MAX];
	uint32_t digest_count;
	struct update_digest digests[DIGESTS_MAX];
	uint32_t scalar_update_count;
	struct scalar_update scalar_updates[SCALAR_UPDATES_MAX];
	/* A step of the process made no collective: its replicas train alone (rank_updates.h). */
	bool trains_alone;
};

/*
 * The ranks' finished steps of one step number, in the order they joined
 * (judged once every rank has joined), and whether any two hold other
 * shards.
 */
struct rank_group {
	uint64_t world;	   /* the job's world communicator, 0 unknown */
	const char *shard; /* the first shard a member held (NULL: none yet) */
	bool sharded;
	struct infer_event *members; /* at least one once the group exists */
	size_t member_count, member_capacity;
	struct rank_group *next; /* same hash */
};

/*
 * What a rank's optimizer found in its tensors at the first step of its job
 * judged with it: ranks that started from the same contents are replicas;
 * ranks that started from others hold other parts of the model (a pipeline
 * stage, a tensor-parallel shard) whatever their shapes.
 */
struct replica_class {
	int32_t step;
	const char *parameters; /* interned RANK_UPDATES_PARAMETERS_FIELD; NULL: none known */
};

/*
 * A process's widest communicator so far: its job's world; and the two
 * latest steps in which it made a collective (step + 1, 0 for none): a
 * step's collectives can come before the last update of the step before.
 */
struct process_world {
	uint64_t comm_id;
	int32_t nranks;
	int32_t collective_steps[2];
};

/* The ranks of one job (source, size) whose events the checker saw. */
struct rank_job {
	struct u64_map pids; /* pid -> struct rank_seen */
};

/* When a rank's last event happened: a rank quiet for RANK_QUIET_NS is waited for no more. */
struct rank_seen {
	uint64_t last_ns;
	int32_t nranks; /* of the job it is counted in */
};

/*
 * Longer than any step or pause its peers would not share (they wait in
 * the step's collectives), so only a rank that ended or stopped being
 * traced goes quiet this long.
 */
#define RANK_QUIET_NS (120ULL * 1000000000ULL)

static void free_group(struct rank_group *group)
{
	free(group->members);
	free(group);
}

bool rule_checks_rank_updates(const struct rule *rule)
{
	return rule->relation == RELATION_CONSISTENT && rule->event.kind == INFER_EVENT_STEP &&
	       rule->field && strcmp(rule->field, RANK_UPDATES_FIELD) == 0;
}

int rank_updates_init(struct rank_updates *updates, struct string_pool *pool)
{
	memset(updates, 0, sizeof(*updates));
	updates->pool = pool;
	updates->step_name = string_pool_intern(pool, STEP_PARENT_NAME);
	updates->field_name = string_pool_intern(pool, RANK_UPDATES_FIELD);
	updates->shard_field_name = string_pool_intern(pool, RANK_UPDATES_SHARD_FIELD);
	updates->parameters_field_name = string_pool_intern(pool, RANK_UPDATES_PARAMETERS_FIELD);
	u64_map_init(&updates->processes);
	u64_map_init(&updates->groups);
	u64_map_init(&updates->jobs);
	u64_map_init(&updates->worlds);
	u64_map_init(&updates->classes);
	return updates->step_name && updates->field_name && updates->shard_field_name &&
			       updates->parameters_field_name
		       ? 0
		       : -ENOMEM;
}

void rank_updates_free(struct rank_updates *updates)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&updates->processes, &i, &key, &value);)
		free(value);
	for (size_t i = 0; u64_map_next(&updates->groups, &i, &key, &value);) {
		for (struct rank_group *group = value, *next; group; group = next) {
			next = group->next;
			free_group(group);
		}
	}
	for (size_t i = 0; u64_map_next(&updates->jobs, &i, &key, &value);) {
		struct rank_job *job = value;

		u64_map_free_with_values(&job->pids);
		free(job);
	}
	u64_map_free(&updates->processes);
	u64_map_free(&updates->groups);
	u64_map_free(&updates->jobs);
	u64_map_free_with_values(&updates->worlds);
	u64_map_free_with_values(&updates->classes);
}

static uint64_t process_key(uint32_t pipeline, uint32_t pid)
{
	return fnv1a_add_u64(fnv1a_add_u64(3, pipeline), pid);
}

static void note_collective_step(struct process_world *world, int32_t step)
{
	int32_t mark = step + 1;

	if (step < 0 || mark == world->collective_steps[0] || mark == world->collective_steps[1])
		return;
	if (mark > world->collective_steps[0]) {
		world->collective_steps[1] = world->collective_steps[0];
		world->collective_steps[0] = mark;
	} else if (mark > world->collective_steps[1]) {
		world->collective_steps[1] = mark;
	}
}

/*
 * Notes a communicator a process calls on (NCCL's, or c10d's): the widest
 * is its job's world, shared by its ranks and by no other job's. 0 or
 * -ENOMEM.
 */
static int see_communicator(struct rank_updates *updates, const struct infer_event *event,
			    void **cached)
{
	struct process_world *world;

	if (event->kind != INFER_EVENT_NCCL || !event->comm_id || event->nranks < 2)
		return 0;
	world = u64_map_get_or_add_cached(&updates->worlds,
					  process_key(event->pipeline, event->pid), sizeof(*world),
					  NULL, cached);
	if (!world)
		return -ENOMEM;
	if (event->nranks > world->nranks) {
		world->comm_id = event->comm_id;
		world->nranks = event->nranks;
	}
	note_collective_step(world, event->step);
	return 0;
}

/* The world communicator of a process in a job of 'nranks', 0 when not known. */
static uint64_t world_of(const struct rank_updates *updates, uint32_t pipeline, uint32_t pid,
			 int32_t nranks)
{
	const struct process_world *world =
		u64_map_get(&updates->worlds, process_key(pipeline, pid));

	return world && world->nranks == nranks ? world->comm_id : 0;
}

/*
 * Whether a process made a collective in 'step' (its event's step), as far
 * as the two latest steps with one tell: finished steps are asked in order.
 */
static bool collective_in_step(const struct rank_updates *updates, uint32_t pipeline, uint32_t pid,
			       int32_t step)
{
	const struct process_world *world =
		u64_map_get(&updates->worlds, process_key(pipeline, pid));

	return world && step >= 0 &&
	       (world->collective_steps[0] == step + 1 || world->collective_steps[1] == step + 1);
}

static uint64_t job_key(uint32_t pipeline, int32_t nranks)
{
	return fnv1a_add_u64(fnv1a_add_u64(7, pipeline), (uint64_t)(int64_t)nranks);
}

/*
 * Counts the process of an event of a rank among its job's, seen now; 0 or
 * -ENOMEM. 'cached' (may be NULL) keeps its note while the job's size stays.
 */
static int see_rank(struct rank_updates *updates, const struct infer_event *event, void **cached)
{
	uint64_t at = event->exit_ns > event->entry_ns ? event->exit_ns : event->entry_ns;
	struct rank_seen *seen = cached ? *cached : NULL;
	struct rank_job *job;
	int added;

	if (!seen || seen->nranks != event->nranks) {
		job = u64_map_get_or_add(&updates->jobs, job_key(event->pipeline, event->nranks),
					 sizeof(*job), &added);
		if (!job)
			return -ENOMEM;
		if (added)
			u64_map_init(&job->pids);
		seen = u64_map_get_or_add(&job->pids, event->pid, sizeof(*seen), NULL);
		if (!seen)
			return -ENOMEM;
		seen->nranks = event->nranks;
		if (cached)
			*cached = seen;
	}
	if (at > seen->last_ns)
		seen->last_ns = at;
	return 0;
}

/*
 * How many ranks of a finished step's job (its world communicator 'world')
 * this checker sees now (at least 1): those with an event in the
 * RANK_QUIET_NS before the step's end.
 */
static uint32_t ranks_seen(const struct rank_updates *updates, const struct infer_event *step,
			   uint64_t world)
{
	const struct rank_job *job =
		u64_map_get(&updates->jobs, job_key(step->pipeline, step->nranks));
	uint32_t count = 0;
	uint64_t pid;
	void *value;

	for (size_t i = 0; job && u64_map_next(&job->pids, &i, &pid, &value);) {
		const struct rank_seen *seen = value;

		count += seen->last_ns + RANK_QUIET_NS >= step->exit_ns &&
			 world_of(updates, step->pipeline, (uint32_t)pid, step->nranks) == world;
	}
	return count ? count : 1;
}

bool rank_updates_wants(const struct infer_event *event)
{
	if (event->kind != INFER_EVENT_PYTHON || event->rank < 0 || event->nranks < 2 ||
	    event->step < 0)
		return false;
	return parameter_updates_is_optimizer_step(event) ||
	       ((event->flags & TRACE_PYTHON_TORCH_OP) && infer_event_field(event, UPDATED_FIELD));
}

/* "operator arg:x=v ..." for an update: what it is, without the tensor it changes. */
static const char *describe_update(struct string_pool *pool, const struct infer_event *event)
{
	char text[512];
	size_t used = (size_t)snprintf(text, sizeof(text), "%s", event->name);

	for (uint32_t i = 0; i < event->field_count && used < sizeof(text); i++)
		if (strncmp(event->fields[i].name, SCALAR_PREFIX, strlen(SCALAR_PREFIX)) == 0)
			used += (size_t)snprintf(text + used, sizeof(text) - used, " %s=%s",
						 event->fields[i].name, event->fields[i].value);
	return string_pool_intern(pool, text);
}

static int by_what(const void *left, const void *right)
{
	return strcmp(((const struct update_kind *)left)->what,
		      ((const struct update_kind *)right)->what);
}

static int by_entry(const void *left, const void *right)
{
	const struct update_digest *a = left, *b = right;

	return a->entry_ns < b->entry_ns ? -1 : a->entry_ns > b->entry_ns;
}

/* Whether an update a thread entered then ran inside one of the step's optimizer steps. */
static bool in_optimizer_step(const struct process_updates *state, uint32_t tid, uint64_t entry_ns)
{
	for (uint32_t i = 0; i < state->optimizer_step_count; i++) {
		const struct infer_event *step = &state->optimizer_steps[i];

		if (step->tid == tid && entry_ns >= step->entry_ns && entry_ns <= step->exit_ns)
			return true;
	}
	return false;
}

/* Counts one update of a kind into the step's signature. */
static void count_kind(struct process_updates *state, const char *what)
{
	uint32_t i;

	for (i = 0; i < state->kind_count && state->kinds[i].what != what; i++)
		;
	if (i < state->kind_count)
		state->kinds[i].count++;
	else if (i < UPDATE_KINDS_MAX)
		state->kinds[state->kind_count++] = (struct update_kind){ what, 1 };
	else
		state->overflow = true;
}

/*
 * Whether an update is of a 0-dim tensor ("Float[]"). Outside the
 * optimizer's step such a tensor is a number the program computed (an
 * evaluation's accuracy, a metric's mean on rank 0 alone), no part of the
 * replica; inside it, an optimizer's step counter.
 */
static bool of_no_dimension(const char *shape)
{
	return shape && strstr(shape, "[]") != NULL;
}

/* The step's 0-dim updates that ran inside its optimizer steps, into the signature. */
static void count_scalar_updates(struct process_updates *state)
{
	for (uint32_t i = 0; i < state->scalar_update_count; i++) {
		const struct scalar_update *update = &state->scalar_updates[i];

		if (in_optimizer_step(state, update->tid, update->entry_ns))
			count_kind(state, update->what);
	}
}

/* What of the tensors the optimizer's step updated a hash is taken over. */
enum digest_part {
	DIGEST_CONTENTS,   /* every tensor's contents */
	DIGEST_PARAMETERS, /* the contents of the tensors that require grad */
	DIGEST_SHAPES,	   /* every tensor's shape */
};

/*
 * A hash of one part of the digests of the tensors the optimizer's step
 * updated, in the order it updated them (finish_step sorts them by entry),
 * and in '*read' how many it took; those that lack the part are left out.
 */
static uint64_t hash_digests(const struct process_updates *state, enum digest_part part,
			     uint32_t *read)
{
	uint64_t hash = FNV1A_OFFSET_BASIS;

	*read = 0;
	for (uint32_t i = 0; i < state->digest_count; i++) {
		const struct update_digest *digest = &state->digests[i];
		const char *text = part == DIGEST_SHAPES ? digest->shape : digest->digest;

		if (!text || (part == DIGEST_PARAMETERS && !digest->parameter) ||
		    !in_optimizer_step(state, digest->tid, digest->entry_ns))
			continue;
		hash = fnv1a_add_u64(hash, fnv1a_string(text));
		(*read)++;
	}
	return hash;
}

/*
 * What the optimizer's step found in the tensors it updates (parameters,
 * momentum and moment buffers), in the order it updated them: their
 * contents after the step before, the same on every replica. Gradients are
 * left out: before their all-reduce they are each rank's own.
 */
static size_t describe_contents(const struct process_updates *state, char *text, size_t size)
{
	uint32_t read;
	uint64_t hash = hash_digests(state, DIGEST_CONTENTS, &read);

	if (!read)
		return 0;
	return (size_t)snprintf(text, size,
				RANK_UPDATES_CONTENTS_MARK
				"%u tensors the optimizer updates, before: %016llx",
				read, (unsigned long long)hash);
}

/*
 * What the parameters the optimizer's step updated held at the entry of
 * their updates, in order (a hash, as text), or NULL when the trace has no
 * contents of any: at a job's first step, the same on replicas and other on
 * ranks that hold other parts of a model.
 */
static const char *describe_parameters(struct rank_updates *updates,
				       const struct process_updates *state)
{
	uint32_t read;
	uint64_t hash = hash_digests(state, DIGEST_PARAMETERS, &read);
	char text[64];

	if (!read)
		return NULL;
	snprintf(text, sizeof(text), "%u parameters held %016llx", read, (unsigned long long)hash);
	return string_pool_intern(updates->pool, text);
}

/* The shapes of the tensors the optimizer's step updated, in order, or NULL when none known. */
static const char *describe_shard(struct rank_updates *updates, const struct process_updates *state)
{
	uint32_t shapes;
	uint64_t hash = hash_digests(state, DIGEST_SHAPES, &shapes);
	char text[64];

	if (!shapes)
		return NULL;
	snprintf(text, sizeof(text), "%u updates of tensors shaped %016llx", shapes,
		 (unsigned long long)hash);
	return string_pool_intern(updates->pool, text);
}

bool rank_updates_note_shard(const char **seen, const struct infer_event *step)
{
	const char *mine = infer_event_field(step, RANK_UPDATES_SHARD_FIELD);

	if (!mine)
		return false;
	if (!*seen)
		*seen = mine;
	return mine != *seen;
}

bool rank_updates_only_contents_differ(const struct infer_event *step,
				       const struct infer_event *peer)
{
	const char *mine = infer_event_field(step, RANK_UPDATES_FIELD);
	const char *theirs = infer_event_field(peer, RANK_UPDATES_FIELD);
	const char *my_contents, *their_contents;

	if (!mine || !theirs || mine == theirs)
		return false;
	my_contents = strstr(mine, RANK_UPDATES_CONTENTS_MARK);
	their_contents = strstr(theirs, RANK_UPDATES_CONTENTS_MARK);
	return my_contents && their_contents && my_contents - mine == their_contents - theirs &&
	       strncmp(mine, theirs, (size_t)(my_contents - mine)) == 0;
}

/* Fills 'finished' from a process's gathered step: its signature as the field "updates". */
static int finish_step(struct rank_updates *updates, struct process_updates *state,
		       struct infer_event *finished)
{
	char signature[SIGNATURE_SIZE] = "";
	size_t used = 0;
	struct infer_field fields[3];
	uint32_t field_count = 1;

	count_scalar_updates(state);
	qsort(state->kinds, state->kind_count, sizeof(state->kinds[0]), by_what);
	qsort(state->digests, state->digest_count, sizeof(state->digests[0]), by_entry);
	for (uint32_t i = 0; i < state->kind_count && used < sizeof(signature); i++)
		used += (size_t)snprintf(signature + used, sizeof(signature) - used, "%s%s x%u",
					 i ? ", " : "", state->kinds[i].what,
					 state->kinds[i].count);
	if (state->overflow && used < sizeof(signature))
		used += (size_t)snprintf(signature + used, sizeof(signature) - used, ", ...");
	if (used < sizeof(signature))
		describe_contents(state, signature + used, sizeof(signature) - used);
	fields[0].name = updates->field_name;
	fields[0].value = string_pool_intern(updates->pool, signature);
	fields[field_count].name = updates->shard_field_name;
	fields[field_count].value = describe_shard(updates, state);
	if (fields[field_count].value)
		field_count++;
	fields[field_count].name = updates->parameters_field_name;
	fields[field_count].value = describe_parameters(updates, state);
	if (fields[field_count].value)
		field_count++;
	*finished = state->step;
	finished->field_count = field_count;
	finished->fields = fields[0].value
				   ? string_pool_intern_fields(updates->pool, fields, field_count)
				   : NULL;
	return finished->fields ? 0 : -ENOMEM;
}

static void start_step(struct rank_updates *updates, struct process_updates *state,
		       const struct infer_event *event)
{
	state->kind_count = 0;
	state->overflow = false;
	state->optimizer_step_count = 0;
	state->digest_count = 0;
	state->scalar_update_count = 0;
	state->step = (struct infer_event){ .kind = INFER_EVENT_STEP,
					    .name = updates->step_name,
					    .pipeline = event->pipeline,
					    .pid = event->pid,
					    .tid = event->pid,
					    .rank = event->rank,
					    .nranks = event->nranks,
					    .step = event->step,
					    .stage = event->stage,
					    .seq = -1,
					    .entry_ns = event->entry_ns,
					    .exit_ns = event->exit_ns,
					    .context = event->context };
}

int rank_updates_observe(struct rank_updates *updates, const struct infer_event *event,
			 struct rank_updates_cache *cache, struct infer_event *finished)
{
	uint64_t key = process_key(event->pipeline, event->pid);
	struct process_updates *state;
	const char *what, *digest, *shape;
	int added, result = 0;

	if (event->rank >= 0 && event->nranks >= 2 &&
	    see_rank(updates, event, cache ? &cache->seen : NULL))
		return -ENOMEM;
	if (see_communicator(updates, event, cache ? &cache->world : NULL))
		return -ENOMEM;
	if (!rank_updates_wants(event))
		return 0;
	state = u64_map_get_or_add_cached(&updates->processes, key, sizeof(*state), &added,
					  cache ? &cache->process : NULL);
	if (!state)
		return -ENOMEM;
	if (added)
		start_step(updates, state, event);
	if (event->step < state->step.step)
		return 0; /* a late record of a step already finished */
	if (event->step > state->step.step) {
		state->trains_alone |=
			!collective_in_step(updates, event->pipeline, event->pid, state->step.step);
		if (finish_step(updates, state, finished))
			return -ENOMEM;
		/* From a step with no collective on: neither examples nor checked. */
		result = !state->trains_alone;
		start_step(updates, state, event);
	}
	if (event->exit_ns > state->step.exit_ns)
		state->step.exit_ns = event->exit_ns;
	if (parameter_updates_is_optimizer_step(event)) {
		if (state->optimizer_step_count < OPTIMIZER_STEPS_MAX)
			state->optimizer_steps[state->optimizer_step_count++] = *event;
		return result;
	}
	digest = infer_event_field(event, DIGEST_FIELD);
	shape = infer_event_field(event, SHAPE_FIELD);
	if ((digest || shape) && state->digest_count < DIGESTS_MAX)
		state->digests[state->digest_count++] =
			(struct update_digest){ event->tid, event->entry_ns, digest, shape,
						infer_event_field_is_true(event,
									  REQUIRES_GRAD_FIELD) };
	what = describe_update(updates->pool, event);
	if (!what)
		return -ENOMEM;
	/* Judged when the step's optimizer steps are known (their records end the step). */
	if (of_no_dimension(shape) && state->scalar_update_count < SCALAR_UPDATES_MAX) {
		state->scalar_updates[state->scalar_update_count++] =
			(struct scalar_update){ what, event->tid, event->entry_ns };
		return result;
	}
	count_kind(state, what);
	return result;
}

static bool same_step(const struct infer_event *a, const struct infer_event *b)
{
	return a->pipeline == b->pipeline && a->nranks == b->nranks && a->step == b->step;
}

/* The class of a member's rank, given at the first judged step of its job that it joined. */
static const struct replica_class *class_of(struct rank_updates *updates,
					    const struct rank_group *group,
					    const struct infer_event *member)
{
	int added;
	struct replica_class *class =
		u64_map_get_or_add(&updates->classes, process_key(member->pipeline, member->pid),
				   sizeof(*class), &added);

	/* Out of memory: no class, and the rank is compared with the first as before. */
	if (class && added)
		*class = (struct replica_class){ group->members[0].step,
						 infer_event_field(member,
								   RANK_UPDATES_PARAMETERS_FIELD) };
	return class;
}

static bool same_class(const struct replica_class *a, const struct replica_class *b)
{
	return a->step == b->step && a->parameters == b->parameters;
}

/*
 * The member a rank whose updates differ from the first's is compared
 * with: the first member of its own class (NULL when it is that member: no
 * replica joined before it); the first, where the class of either is not
 * known (device memory: no contents read).
 */
static const struct infer_event *replica_to_compare(const struct rank_group *group, size_t index,
						    const struct replica_class *const *classes)
{
	if (!classes[index] || !classes[index]->parameters || !classes[0] ||
	    !classes[0]->parameters)
		return &group->members[0];
	for (size_t j = 0; j < index; j++)
		if (classes[j] && same_class(classes[j], classes[index]))
			return &group->members[j];
	return NULL;
}

/*
 * A group all of whose ranks joined (or the last look at one): each member
 * whose updates differ from those of the replica it is compared with. Out
 * of memory for the classes, each is compared with the first.
 */
static void judge_group(struct rank_updates *updates, const struct rank_group *group,
			rank_updates_differs_fn differs, void *context)
{
	const struct replica_class **classes;

	if (group->sharded || group->member_count < 2)
		return;
	classes = calloc(group->member_count, sizeof(*classes));
	for (size_t i = 0; classes && i < group->member_count; i++)
		classes[i] = class_of(updates, group, &group->members[i]);
	for (size_t i = 1; i < group->member_count; i++) {
		const struct infer_event *member = &group->members[i], *peer;

		if (infer_event_field(member, RANK_UPDATES_FIELD) ==
		    infer_event_field(&group->members[0], RANK_UPDATES_FIELD))
			continue;
		peer = classes ? replica_to_compare(group, i, classes) : &group->members[0];
		if (peer && infer_event_field(member, RANK_UPDATES_FIELD) !=
				    infer_event_field(peer, RANK_UPDATES_FIELD))
			differs(context, member, peer);
	}
	free((void *)classes);
}

/* Takes a group out of its hash chain, and the chain's head out of the map when it empties. */
static void remove_group(struct rank_updates *updates, uint64_t key, struct rank_group *group)
{
	struct rank_group *head = u64_map_get(&updates->groups, key), **link = &head;

	while (*link != group)
		link = &(*link)->next;
	*link = group->next;
	/* Removed first, the key's slot is free again: the put never grows the map. */
	u64_map_remove(&updates->groups, key);
	if (head)
		(void)u64_map_put(&updates->groups, key, head);
}

static uint64_t group_key(const struct infer_event *step, uint64_t world)
{
	return fnv1a_add_u64(fnv1a_add_u64(fnv1a_add_u64(fnv1a_add_u64(5, step->pipeline),
							 (uint64_t)(int64_t)step->nranks),
					   world),
			     (uint64_t)(int64_t)step->step);
}

/* Groups of the job at most this many are judged at once when a later step completes. */
#define EARLIER_STEPS_MAX 64

/*
 * A later step of the job was judged: its ranks have moved on, so the
 * earlier steps some rank never finished are judged with the ranks that did.
 */
static void judge_earlier_steps(struct rank_updates *updates, const struct infer_event *later,
				uint64_t world, rank_updates_differs_fn differs, void *context)
{
	struct rank_group *earlier[EARLIER_STEPS_MAX];
	size_t count = 0;
	uint64_t key;
	void *value;

	for (size_t i = 0;
	     count < EARLIER_STEPS_MAX && u64_map_next(&updates->groups, &i, &key, &value);)
		for (struct rank_group *group = value; group && count < EARLIER_STEPS_MAX;
		     group = group->next)
			if (group->members[0].pipeline == later->pipeline &&
			    group->members[0].nranks == later->nranks && group->world == world &&
			    group->members[0].step < later->step)
				earlier[count++] = group;
	for (size_t i = 0; i < count; i++) {
		remove_group(updates, group_key(&earlier[i]->members[0], earlier[i]->world),
			     earlier[i]);
		judge_group(updates, earlier[i], differs, context);
		free_group(earlier[i]);
	}
}

/* Adds a rank's finished step to its group, and whether it holds another shard. */
static int add_member(struct rank_group *group, const struct infer_event *finished)
{
	if (growable_array_room_for_one((void **)&group->members, group->member_count,
					&group->member_capacity, sizeof(*group->members)))
		return -ENOMEM;
	group->members[group->member_count++] = *finished;
	group->sharded |= rank_updates_note_shard(&group->shard, finished);
	return 0;
}

int rank_updates_join(struct rank_updates *updates, const struct infer_event *finished,
		      rank_updates_differs_fn differs, void *context)
{
	uint64_t world = world_of(updates, finished->pipeline, finished->pid, finished->nranks);
	uint64_t key = group_key(finished, world);
	struct rank_group *head = u64_map_get(&updates->groups, key), *group;
	uint32_t expected = ranks_seen(updates, finished, world);

	for (group = head;
	     group && !(group->world == world && same_step(&group->members[0], finished));
	     group = group->next)
		;
	if (group) {
		if (add_member(group, finished))
			return -ENOMEM;
	} else {
		group = calloc(1, sizeof(*group));
		if (!group)
			return -ENOMEM;
		group->world = world;
		group->next = head;
		if (add_member(group, finished) || u64_map_put(&updates->groups, key, group)) {
			free_group(group);
			return -ENOMEM;
		}
	}
	if (expected > (uint32_t)finished->nranks)
		expected = (uint32_t)finished->nranks;
	if (group->member_count < expected)
		return 0;
	remove_group(updates, key, group);
	judge_group(updates, group, differs, context);
	judge_earlier_steps(updates, finished, world, differs, context);
	free_group(group);
	return 1;
}

void rank_updates_flush(struct rank_updates *updates, rank_updates_differs_fn differs,
			void *context)
{
	uint64_t key;
	void *value;

	for (size_t i = 0; u64_map_next(&updates->groups, &i, &key, &value);)
		for (struct rank_group *group = value, *next; group; group = next) {
			next = group->next;
			judge_group(updates, group, differs, context);
			free_group(group);
		}
	u64_map_free(&updates->groups);
	u64_map_init(&updates->groups);
}
