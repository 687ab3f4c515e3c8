// SPDX-License-Identifier: MIT
/* The calls each process has made, by interned name, and values their fields held. */
#include "process_uses.h"

#include <errno.h>
#include <stdint.h>

#include "base/fnv_hash.h"

static uint64_t use_key(const struct infer_event *event, const char *name)
{
	uint64_t hash = fnv1a_add_u64(FNV1A_OFFSET_BASIS, event->pipeline);

	hash = fnv1a_add_u64(hash, event->pid);
	return fnv1a_add_u64(hash, (uintptr_t)name);
}

void process_uses_init(struct process_uses *uses)
{
	u64_map_init(&uses->seen);
}

void process_uses_free(struct process_uses *uses)
{
	u64_map_free(&uses->seen);
}

int process_uses_add(struct process_uses *uses, const struct infer_event *event)
{
	uint64_t key = use_key(event, event->name);

	if (u64_map_get(&uses->seen, key))
		return 0;
	return u64_map_put(&uses->seen, key, uses) ? -ENOMEM : 0;
}

bool process_uses_name(const struct process_uses *uses, const struct infer_event *event,
		       const char *name)
{
	return u64_map_get(&uses->seen, use_key(event, name)) != NULL;
}

static uint64_t value_key(const struct infer_event *event, const char *field, const char *value)
{
	uint64_t hash = fnv1a_add_u64(use_key(event, event->name), (uintptr_t)field);

	return fnv1a_add_u64(hash, (uintptr_t)value);
}

int process_uses_add_value(struct process_uses *uses, const struct infer_event *event,
			   const char *field)
{
	const char *value = infer_event_field(event, field);
	uint64_t key;

	if (!value)
		return 0;
	key = value_key(event, field, value);
	if (u64_map_get(&uses->seen, key))
		return 0;
	return u64_map_put(&uses->seen, key, uses) ? -ENOMEM : 0;
}

bool process_uses_value(const struct process_uses *uses, const struct infer_event *event,
			const char *field, const char *value)
{
	return u64_map_get(&uses->seen, value_key(event, field, value)) != NULL;
}
