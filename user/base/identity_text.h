/* SPDX-License-Identifier: MIT */
/*
 * The one way an identity (a communicator's comm_id, a unique id's hash) is
 * written for people and tools: "0x" and 16 lowercase hexadecimal digits,
 * the same in dumps, reports, rule violations and metric labels, so one
 * can be searched for across all of them.
 */
#ifndef TCHECK_IDENTITY_TEXT_H
#define TCHECK_IDENTITY_TEXT_H

#include <stdint.h>

/* "0x" + 16 digits + NUL. */
#define IDENTITY_TEXT_SIZE 19

/* Writes 'identity' into 'text' and returns text. */
const char *identity_text(uint64_t identity, char text[IDENTITY_TEXT_SIZE]);

#endif /* TCHECK_IDENTITY_TEXT_H */
