/* SPDX-License-Identifier: MIT */
/*
 * The once-a-second line `attach` prints: calls in the last second and in
 * all, the busiest functions, and losses, so an operator sees at a glance
 * that the job is talking and that nothing is being dropped.
 */
#ifndef TCHECK_LIVE_STATUS_H
#define TCHECK_LIVE_STATUS_H

#include <stdint.h>
#include <stdio.h>

#include "model/nccl_api.h"
#include "model/record_consumer.h"
#include "tcheck/probe_abi.h"

struct live_status {
	uint64_t calls_by_function[64];
	uint64_t previous_total;
	uint64_t total;
	uint64_t started_ns;
};

void live_status_init(struct live_status *status, uint64_t now_ns);
void live_status_count(struct live_status *status, const struct nccl_function *function);
/* Prints one line; counters are the BPF loss counters (TCHECK_COUNTER_*). */
void live_status_print(struct live_status *status, FILE *out, uint64_t now_ns,
		       const uint64_t *counters, unsigned processes, unsigned communicators);

/* The consumer that counts the calls and prints the line once a second (attach). */
struct record_consumer live_status_consumer(struct live_status *status);

#endif /* TCHECK_LIVE_STATUS_H */
