/* SPDX-License-Identifier: MIT */
/*
 * The hang, slowdown, mismatch and crash detectors as one consumer of a
 * live recording (record, attach, agent): every record and every call in
 * flight fed to them, their clock ticked at the pace they ask for, and
 * their findings closed when the recording ends.
 */
#ifndef TCHECK_DIAGNOSIS_CONSUMER_H
#define TCHECK_DIAGNOSIS_CONSUMER_H

#include "model/record_consumer.h"

struct job_diagnosis;

struct record_consumer diagnosis_consumer(struct job_diagnosis *diagnosis);

#endif /* TCHECK_DIAGNOSIS_CONSUMER_H */
