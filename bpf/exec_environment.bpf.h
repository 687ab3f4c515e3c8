/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * RANK, LOCAL_RANK and WORLD_SIZE read from a new image's environment at
 * exec, while it is still there: a rank that dies at once (a bad argument,
 * a crash at import) is gone before the daemon can read /proc/PID/environ,
 * and its crash report would name no job rank. The same rules as the
 * daemon's reading of /proc (process_maps.c, environment_integer): the
 * first definition of a name counts, plain decimal digits only.
 */
#ifndef TCHECK_EXEC_ENVIRONMENT_BPF_H
#define TCHECK_EXEC_ENVIRONMENT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "tcheck/probe_abi.h"

#define ENVIRONMENT_CHUNK 128
#define ENVIRONMENT_NAME_BYTES 12
#define ENVIRONMENT_VALUE_LIMIT 0x7fffffff

/* "NAME=" of each value, in enum tcheck_environment_value's order. */
static const char environment_names[TCHECK_ENVIRONMENT_VALUES][ENVIRONMENT_NAME_BYTES] = {
	"RANK=", "LOCAL_RANK=", "WORLD_SIZE="
};

struct environment_scan {
	__u64 start, length;
	__s32 values[TCHECK_ENVIRONMENT_VALUES];
	__u32 settled;	  /* names whose first definition was seen */
	__u32 candidates; /* names the current variable still matches */
	__u32 position;	  /* bytes into the current variable */
	__s32 reading;	  /* the name whose value is being read, -1 none */
	__s64 value;	  /* its digits so far, -1 not a plain decimal */
	__u32 failed;	  /* a chunk could not be read */
	char chunk[ENVIRONMENT_CHUNK];
};

/*
 * The scan's state lives in a map slot of the CPU, not on the program's
 * stack: the verifier knows every byte of a stack it wrote and walks the
 * byte loop once for each value the state takes on (0.7 s a load), but
 * reads a map value as any value, so the loop's step is checked once.
 * An exec on a CPU ends before another can start there. bpf_loop passes
 * its step a pointer to the stack only: one that holds the slot's address.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct environment_scan);
} environment_scans SEC(".maps");

struct environment_loop {
	struct environment_scan *scan;
};

static __always_inline void environment_variable_ends(struct environment_scan *scan)
{
	__s32 reading = scan->reading;

	if (reading >= 0 && reading < TCHECK_ENVIRONMENT_VALUES)
		scan->values[reading] = scan->position > 0 ? (__s32)scan->value : -1;
	scan->reading = -1;
	scan->position = 0;
	scan->candidates = ((1u << TCHECK_ENVIRONMENT_VALUES) - 1) & ~scan->settled;
}

static __always_inline void environment_name_byte(struct environment_scan *scan, char c)
{
	__u32 position = scan->position;

	scan->position = position + 1;
	if (position >= ENVIRONMENT_NAME_BYTES)
		return;
#pragma unroll
	for (int name = 0; name < TCHECK_ENVIRONMENT_VALUES; name++) {
		if (!(scan->candidates & (1u << name)))
			continue;
		if (environment_names[name][position] != c) {
			scan->candidates &= ~(1u << name);
		} else if (c == '=') {
			scan->settled |= 1u << name;
			scan->candidates = 0;
			scan->reading = name;
			scan->value = 0;
			scan->position = 0; /* from here, digits of the value */
		}
	}
}

static __always_inline void environment_value_byte(struct environment_scan *scan, char c)
{
	scan->position++;
	if (scan->value < 0)
		return;
	if (c < '0' || c > '9') {
		scan->value = -1;
		return;
	}
	scan->value = scan->value * 10 + (c - '0');
	if (scan->value > ENVIRONMENT_VALUE_LIMIT)
		scan->value = -1;
}

/* bpf_loop's step: one byte of the environment, a fresh chunk read every ENVIRONMENT_CHUNK. */
static long environment_byte(__u32 index, void *context)
{
	struct environment_scan *scan = ((struct environment_loop *)context)->scan;
	__u64 left;
	char c;

	if (index >= scan->length)
		return 1;
	if ((index % ENVIRONMENT_CHUNK) == 0) {
		left = scan->length - index;
		if (left > ENVIRONMENT_CHUNK)
			left = ENVIRONMENT_CHUNK;
		/* Only the environment's own bytes: past its end the stack may end. */
		if (bpf_probe_read_user(scan->chunk, left, (const void *)(scan->start + index))) {
			scan->failed = 1;
			return 1;
		}
	}
	c = scan->chunk[index % ENVIRONMENT_CHUNK];
	if (c == '\0')
		environment_variable_ends(scan);
	else if (scan->reading >= 0)
		environment_value_byte(scan, c);
	else if (scan->candidates)
		environment_name_byte(scan, c);
	return 0;
}

/* Fills the exec record's environment values from the current task's environment. */
static __always_inline void read_exec_environment(struct task_struct *task,
						  struct tcheck_process_record *record)
{
	__u32 slot = 0;
	struct environment_scan *scan = bpf_map_lookup_elem(&environment_scans, &slot);
	struct environment_loop loop;

#pragma unroll
	for (int name = 0; name < TCHECK_ENVIRONMENT_VALUES; name++)
		record->environment_values[name] = -1;
	record->environment_read = 0;
	if (!scan)
		return;
	scan->start = BPF_CORE_READ(task, mm, env_start);
	scan->length = BPF_CORE_READ(task, mm, env_end) - scan->start;
	scan->settled = 0;
	scan->candidates = (1u << TCHECK_ENVIRONMENT_VALUES) - 1;
	scan->position = 0;
	scan->reading = -1;
	scan->value = 0;
	scan->failed = 0;
#pragma unroll
	for (int name = 0; name < TCHECK_ENVIRONMENT_VALUES; name++)
		scan->values[name] = -1;
	if (scan->length > TCHECK_ENVIRONMENT_BYTES)
		return;
	loop.scan = scan;
	bpf_loop((__u32)scan->length, environment_byte, &loop, 0);
	if (scan->failed)
		return;
	/* A last variable without its NUL (cannot happen after exec) still counts. */
	environment_variable_ends(scan);
#pragma unroll
	for (int name = 0; name < TCHECK_ENVIRONMENT_VALUES; name++)
		record->environment_values[name] = scan->values[name];
	record->environment_read = 1;
}

#endif /* TCHECK_EXEC_ENVIRONMENT_BPF_H */
