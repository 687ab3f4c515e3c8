/* SPDX-License-Identifier: MIT */
/* The callback every reader of whole traces (ours, TrainCheck's) hands its records to. */
#ifndef TCHECK_TRACE_RECORD_CALLBACK_H
#define TCHECK_TRACE_RECORD_CALLBACK_H

#include "model/trace_records.h"

/*
 * Receives one record (context first, as every callback here). Returns 0 to
 * go on, a negative errno to stop.
 */
typedef int (*trace_replay_fn)(void *context, const struct trace_record *record);

#endif /* TCHECK_TRACE_RECORD_CALLBACK_H */
