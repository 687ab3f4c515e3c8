/* SPDX-License-Identifier: MIT */
/*
 * Work-request tracking: finds where a traced process posts and completes
 * RDMA work requests (NCCL's IB transport functions when its library keeps
 * them in .symtab, otherwise the verbs provider functions reached through
 * the ops table of each device context opened after attach), probes them,
 * and turns the probes' per-process counters into samples (trace kind 7)
 * for the trace, the live line and the live detectors.
 */
#ifndef TCHECK_WORK_REQUESTS_H
#define TCHECK_WORK_REQUESTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model/trace_records.h"
#include "probe/probe_session.h"

struct work_requests;

/* Told each period about each process whose work requests are counted. */
typedef void (*network_sample_fn)(void *context, const struct trace_network_sample *sample);

struct work_requests *work_requests_new(struct probe_session *session);
void work_requests_free(struct work_requests *tracker);

/*
 * Registers an observer (the live detector): it is called with every
 * sample work_requests_sample takes. One observer; NULL removes it.
 */
void work_requests_set_observer(struct work_requests *tracker, network_sample_fn observer,
				void *context);

/*
 * Looks at a library a traced process maps (host path): libibverbs gets a
 * uretprobe on ibv_open_device, an NCCL with ncclIb* in .symtab gets the
 * transport probes. Each file once. Returns 1 when probes were attached.
 */
int work_requests_check_file(struct work_requests *tracker, const char *host_path, uint32_t pid);

/*
 * A traced process opened a verbs device (a TCHECK_RECORD_VERBS_CONTEXT
 * record): reads its provider's post_send, post_recv and poll_cq from the
 * context's ops table and probes them. Returns 0, or -errno with error set.
 */
int work_requests_handle_record(struct work_requests *tracker, const void *data, size_t size,
				char *error, size_t error_size);

/*
 * Reads the counters of every process with work-request probes, at now_ns
 * (CLOCK_MONOTONIC), and hands each sample to on_sample and to the
 * observer. Returns the number of samples.
 */
size_t work_requests_sample(struct work_requests *tracker, uint64_t now_ns,
			    network_sample_fn on_sample, void *context);

/*
 * A process ended: one last sample of it goes to on_sample and the
 * observer, then its counters are dropped so it is sampled no more.
 */
void work_requests_forget_process(struct work_requests *tracker, uint32_t pid, uint64_t now_ns,
				  network_sample_fn on_sample, void *context);

/* The latest sample of pid, or NULL when it has none. */
const struct trace_network_sample *work_requests_latest(const struct work_requests *tracker,
							uint32_t pid);

/* One line per process for `attach`'s live view: in flight, and the window's bandwidth. */
void work_requests_print_live(const struct work_requests *tracker, FILE *out);

#endif /* TCHECK_WORK_REQUESTS_H */
